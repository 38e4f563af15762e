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
}
