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
    /// On process 0: every worker's latest load report, by global worker index (the
    /// autoscaler's figures for the whole job under `-n > 1`).
    pub job_load: JobLoad,
}

impl Stats {
    /// The counters of a process of `workers` workers, its park clocks sized before any worker
    /// parks (unsized, every park went uncounted: the autoscaler saw every worker 100 % busy).
    pub fn for_workers(workers: usize) -> Stats {
        let stats = Stats::default();
        stats.parked.size(workers);
        stats
    }
}

/// One worker's load, as it reports it to worker 0 (every [`LOAD_REPORT_MS`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerLoad {
    /// Nanoseconds it has parked since it started.
    pub parked_ns: u64,
    /// Bytes its files (and byte ranges) have left to read; `None`: it reads none (or stdin).
    pub file_bytes: Option<u64>,
    /// Records its Kafka partitions lag by (high watermark less the next record it takes,
    /// summed); `None`: it reads none, or the client has not reported yet.
    pub kafka_records: Option<u64>,
}

/// How often a worker reports its load to worker 0 (ms).
pub const LOAD_REPORT_MS: u64 = 250;

/// The load reports worker 0 has received, by global worker index.
///
/// ```
/// use saams_jobs::stats::{JobLoad, WorkerLoad};
/// let load = JobLoad::default();
/// load.report(1, WorkerLoad { parked_ns: 5, file_bytes: None, kafka_records: Some(700) });
/// load.report(0, WorkerLoad { parked_ns: 9, file_bytes: None, kafka_records: Some(300) });
/// let all = load.read();
/// assert_eq!(all.len(), 2);
/// assert_eq!(JobLoad::kafka_records(&all), Some(1000));
/// assert_eq!(JobLoad::file_bytes(&all), None);
/// ```
#[derive(Default)]
pub struct JobLoad(std::sync::Mutex<std::collections::BTreeMap<usize, WorkerLoad>>);

impl JobLoad {
    /// Worker `index` (global) reports `load`.
    pub fn report(&self, index: usize, load: WorkerLoad) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(index, load);
    }

    /// The latest report of every worker heard from.
    pub fn read(&self) -> std::collections::BTreeMap<usize, WorkerLoad> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The Kafka lag summed over the workers that know theirs (`None`: none does).
    pub fn kafka_records(all: &std::collections::BTreeMap<usize, WorkerLoad>) -> Option<u64> {
        all.values().filter_map(|l| l.kafka_records).reduce(|a, b| a.saturating_add(b))
    }

    /// The bytes left in files summed over the workers reading files (`None`: none does).
    pub fn file_bytes(all: &std::collections::BTreeMap<usize, WorkerLoad>) -> Option<u64> {
        all.values().filter_map(|l| l.file_bytes).reduce(|a, b| a.saturating_add(b))
    }
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
