//! The counters one `saams` process keeps for its progress lines and exit report.
//!
//! Why a module of its own: the sources (files, Kafka) and the job's loop all fill these counters;
//! keeping them here lets a source count what it rejects without importing the job module
//! (`crate::job`), which in turn imports the sources.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::time::Instant;

/// Counters of one process, shared by its workers and the progress thread.
#[derive(Default)]
pub struct Stats {
    /// Valid tuples read.
    pub tuples: AtomicU64,
    /// Lines rejected (malformed or late).
    pub dead_letters: AtomicU64,
    /// Tuples older than the lateness bound (also dead letters).
    pub late: AtomicU64,
    /// Oldest input epoch over the workers (window start, ms).
    pub epoch: AtomicI64,
    /// Newest window seen (start, ms).
    pub newest: AtomicI64,
    /// When the first tuple was read.
    pub first: OnceLock<Instant>,
    /// Request fields outside the reference's request class (ignored, or refused with
    /// `--strict-requests`).
    pub request_warnings: AtomicU64,
    /// Time each of this process' workers parked (the autoscaler's busy fractions).
    pub parked: ParkedClocks,
}

/// Nanoseconds each worker of the process spent parked (waiting for input, for `--rate`'s
/// pace, or for the dataflow to catch up): busy is the rest of the wall time. Sized once, at
/// the start; a worker adds its own parks, the autoscaler reads them all.
///
/// ```
/// use saams_jobs::stats::ParkedClocks;
/// let clocks = ParkedClocks::default();
/// clocks.size(2);
/// clocks.add(1, 500);
/// clocks.add(7, 9); // not a worker of this process: ignored
/// assert_eq!(clocks.read(), vec![0, 500]);
/// ```
#[derive(Default)]
pub struct ParkedClocks(OnceLock<Vec<AtomicU64>>);

impl ParkedClocks {
    /// The process has `workers` workers (the first call counts).
    pub fn size(&self, workers: usize) {
        let _ = self.0.set((0..workers).map(|_| AtomicU64::new(0)).collect());
    }

    /// Worker `local` (its index within the process) parked `nanos`.
    pub fn add(&self, local: usize, nanos: u64) {
        if let Some(c) = self.0.get().and_then(|v| v.get(local)) {
            c.fetch_add(nanos, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Nanoseconds parked so far, per worker of the process.
    pub fn read(&self) -> Vec<u64> {
        self.0.get().map_or_else(Vec::new, |v| v.iter().map(|c| c.load(std::sync::atomic::Ordering::Relaxed)).collect())
    }
}
