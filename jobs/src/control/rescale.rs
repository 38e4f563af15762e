//! Rescales as the request path sees them: what a process knows about its job's active workers
//! and the rescale under way ([`RescaleBoard`]), and how a rescale's reply becomes a
//! [`RescaleAck`] or a [`RescaleError`] with its HTTP status.
//!
//! A rescale travels as every live request does (hub → fence → plan, logged before it is
//! acknowledged): [`crate::control::hub::Hub::submit_rescale`] queues the typed
//! `Request::rescale(n)` and waits for the plan's reply, which leaves only once the fence is
//! agreed and the new bin map applied (`saams_operators::plan::rescale`). Here it is checked
//! first against what the process knows, so a rescale that cannot be (0 workers, more than the
//! job has) or one sent while another is still moving is refused at once and nothing moves; the
//! plan checks again at the fence (two processes may take one each), and its refusal comes back
//! with the same statuses.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};

use serde_json::{Value, json};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

/// Where rescales are counted for `/metrics` (handles of the job's registry).
#[derive(Clone, Default)]
pub struct RescaleCounters {
    /// `saams_rescales_total`.
    pub rescales: Counter,
    /// `saams_bins_moved_total`.
    pub bins_moved: Counter,
    /// `saams_rescale_bytes_moved_total`.
    pub bytes_moved: Counter,
    /// `saams_active_workers`.
    pub active_workers: Gauge,
}

/// A rescale the job applied: the reply of `POST /rescale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RescaleAck {
    /// Workers holding the synopses from `effective_from` on.
    pub active_workers: usize,
    /// The fence: the window (start, event-time ms) the new bin map takes effect in.
    pub effective_from: u64,
    /// Bins that changed worker.
    pub moves: usize,
    /// The fence of the last batch of moved state (`effective_from` unless it moves a few bins
    /// a window: `--rescale-batch`, `binsPerFence`); another rescale is refused until then.
    pub moved_by: u64,
}

impl RescaleAck {
    /// `{"accepted":true,"activeWorkers":N,"effectiveFrom":ms,"moves":bins,"movedBy":ms}`.
    pub fn to_json(&self) -> Value {
        json!({"accepted": true, "activeWorkers": self.active_workers, "effectiveFrom": self.effective_from,
               "moves": self.moves, "movedBy": self.moved_by})
    }
}

/// Why a rescale was not applied (nothing moved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RescaleError {
    /// 0 workers, or more than the job has (400).
    BadCount(String),
    /// Another rescale is still moving (409).
    Busy(String),
    /// The job takes no requests now, or stopped before replying (503).
    Unavailable(String),
    /// No reply in time (504): the rescale may still take effect at its fence.
    Timeout(String),
}

impl RescaleError {
    /// The HTTP status that says so.
    pub fn status(&self) -> u16 {
        match self {
            RescaleError::BadCount(_) => 400,
            RescaleError::Busy(_) => 409,
            RescaleError::Unavailable(_) => 503,
            RescaleError::Timeout(_) => 504,
        }
    }

    /// The reason.
    pub fn message(&self) -> &str {
        match self {
            RescaleError::BadCount(m)
            | RescaleError::Busy(m)
            | RescaleError::Unavailable(m)
            | RescaleError::Timeout(m) => m,
        }
    }
}

impl std::fmt::Display for RescaleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message(), self.status())
    }
}

impl std::error::Error for RescaleError {}

/// What one process knows about its job's rescales: the job's workers, the active ones, and
/// the rescale under way. Shared by the workers (which tell it what the plan applied) and the
/// request path (HTTP, an autoscaler).
///
/// ```
/// use saams_jobs::control::rescale::{RescaleBoard, RescaleError};
/// let board = RescaleBoard::default();
/// board.start(4, 4);
/// assert!(matches!(board.check(0), Err(RescaleError::BadCount(_))));
/// assert!(matches!(board.check(5), Err(RescaleError::BadCount(_))));
/// board.check(2).unwrap();
/// assert!(matches!(board.check(3), Err(RescaleError::Busy(_))), "one at a time");
/// board.applied(2, 120_000, 2048);
/// assert!(board.moving(60_000) && !board.moving(120_000), "moving until the fence's window opens");
/// assert!(matches!(board.check(3), Err(RescaleError::Busy(_))));
/// board.set_open_window(120_000);
/// board.check(3).unwrap();
/// ```
#[derive(Default)]
pub struct RescaleBoard {
    workers: AtomicUsize,
    active: AtomicUsize,
    /// A rescale submitted here waits for its fence.
    pending: AtomicBool,
    /// The fence of the last rescale applied (0: none).
    fence: AtomicU64,
    /// The oldest window the inputs are in (start, ms), as the workers publish it.
    open_window: AtomicI64,
    /// Rescales applied, bins moved, bytes of state moved.
    totals: [AtomicU64; 3],
    /// Rescales of the plan seen (a resumed job's replayed ones count here, not in `totals`).
    seen: AtomicUsize,
    /// Where the totals are counted for `/metrics` too.
    metrics: std::sync::OnceLock<RescaleCounters>,
}

impl RescaleBoard {
    /// The job has `workers` workers (-w × -n), `active` of them holding the synopses.
    pub fn start(&self, workers: usize, active: usize) {
        self.workers.store(workers, Ordering::Relaxed);
        self.active.store(active, Ordering::Relaxed);
        if let Some(m) = self.metrics.get() {
            m.active_workers.set(active as i64);
        }
    }

    /// Count into `metrics` too (`saams_rescales_total`, `saams_bins_moved_total`,
    /// `saams_rescale_bytes_moved_total`, `saams_active_workers`); once.
    pub fn count_into(&self, metrics: RescaleCounters) {
        metrics.active_workers.set(self.active_workers() as i64);
        let _ = self.metrics.set(metrics);
    }

    /// A plan (built, or resumed with `seen` rescales replayed) holds `active` workers: not
    /// counted as rescales of this run.
    pub fn resumed(&self, active: usize, seen: usize) {
        self.seen.store(seen, Ordering::Relaxed);
        let workers = self.workers.load(Ordering::Relaxed);
        self.start(workers, active);
    }

    /// Rescales of the plan seen so far ([`RescaleBoard::applied`], [`RescaleBoard::resumed`]).
    pub fn seen(&self) -> usize {
        self.seen.load(Ordering::Relaxed)
    }

    /// May a rescale to `n` workers be submitted now? If so, it is pending from now on (a
    /// second one is refused until the first is applied and moved, or [`RescaleBoard::settle`]).
    ///
    /// # Errors
    /// [`RescaleError::BadCount`] or [`RescaleError::Busy`].
    pub fn check(&self, n: usize) -> Result<(), RescaleError> {
        let workers = self.workers.load(Ordering::Relaxed);
        if n == 0 || (workers > 0 && n > workers) {
            return Err(RescaleError::BadCount(format!(
                "activeWorkers must be between 1 and {workers} (the job's workers, -w × -n), got {n}"
            )));
        }
        let open = self.open_window.load(Ordering::Relaxed).max(0) as u64;
        if self.moving(open) {
            let fence = self.fence.load(Ordering::Relaxed);
            return Err(RescaleError::Busy(format!(
                "another rescale is still moving (effective from {fence} ms, the inputs are at {open} ms); \
                 try again once GET /status says \"rescaling\": false"
            )));
        }
        if self.pending.swap(true, Ordering::AcqRel) {
            return Err(RescaleError::Busy(
                "another rescale is waiting for its fence; try again once it is applied".into(),
            ));
        }
        Ok(())
    }

    /// The rescale submitted here got its reply (or none): the next may be submitted.
    pub fn settle(&self) {
        self.pending.store(false, Ordering::Release);
    }

    /// The plan applied a rescale to `active` workers, moving `moves` bins by `fence` (its last
    /// batch's: the rescale is moving until that window opens).
    pub fn applied(&self, active: usize, fence: u64, moves: usize) {
        self.seen.fetch_add(1, Ordering::Relaxed);
        self.active.store(active, Ordering::Relaxed);
        self.fence.store(fence, Ordering::Relaxed);
        self.totals[0].fetch_add(1, Ordering::Relaxed);
        self.totals[1].fetch_add(moves as u64, Ordering::Relaxed);
        if let Some(m) = self.metrics.get() {
            m.rescales.inc();
            m.bins_moved.inc_by(moves as u64);
            m.active_workers.set(active as i64);
        }
        self.settle();
    }

    /// Bytes of synopsis state sent to a bin's new worker.
    pub fn moved_bytes(&self, bytes: u64) {
        self.totals[2].fetch_add(bytes, Ordering::Relaxed);
        if let Some(m) = self.metrics.get() {
            m.bytes_moved.inc_by(bytes);
        }
    }

    /// The oldest window the inputs are in (start, ms).
    pub fn set_open_window(&self, window: i64) {
        self.open_window.store(window, Ordering::Relaxed);
    }

    /// The oldest window the job's dataflow is in (start, ms), as the workers last published it.
    pub fn open_window(&self) -> i64 {
        self.open_window.load(Ordering::Relaxed)
    }

    /// Whether a rescale is waiting for its fence or moving (its fence's window not yet opened
    /// at `open_window`).
    pub fn moving(&self, open_window: u64) -> bool {
        self.pending.load(Ordering::Acquire) || open_window < self.fence.load(Ordering::Relaxed)
    }

    /// Workers holding the synopses now.
    pub fn active_workers(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// (rescales applied, bins moved, bytes of state moved) so far.
    pub fn totals(&self) -> (u64, u64, u64) {
        let t = |i: usize| self.totals[i].load(Ordering::Relaxed);
        (t(0), t(1), t(2))
    }

    /// What `GET /status` adds: `activeWorkers` and `rescaling`.
    pub fn status(&self) -> Value {
        let open = self.open_window.load(Ordering::Relaxed).max(0) as u64;
        json!({"activeWorkers": self.active_workers(), "rescaling": self.moving(open)})
    }
}

/// The plan's reply to a rescale (`{"accepted":true,…}` or `{"error":…,"status":…}`) as an ack
/// or an error.
///
/// ```
/// use saams_jobs::control::rescale::{RescaleAck, RescaleError, read_reply};
/// let ack = read_reply(r#"{"accepted":true,"activeWorkers":2,"effectiveFrom":60000,"moves":2048,"movedBy":62000,"requestID":"req-1"}"#);
/// assert_eq!(ack, Ok(RescaleAck { active_workers: 2, effective_from: 60_000, moves: 2048, moved_by: 62_000 }));
/// let busy = read_reply(r#"{"error":"another rescale is still moving","status":409}"#);
/// assert!(matches!(busy, Err(RescaleError::Busy(_))));
/// ```
///
/// # Errors
/// The plan's refusal, or a reply that is none.
pub fn read_reply(line: &str) -> Result<RescaleAck, RescaleError> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| RescaleError::Unavailable(format!("the job's reply to a rescale is not JSON ({e}): {line}")))?;
    if let Some(message) = v["error"].as_str() {
        return Err(match v["status"].as_u64() {
            Some(409) => RescaleError::Busy(message.to_string()),
            _ => RescaleError::BadCount(message.to_string()),
        });
    }
    let field = |k: &str| v[k].as_u64();
    match (v["accepted"].as_bool(), field("activeWorkers"), field("effectiveFrom"), field("moves")) {
        (Some(true), Some(active), Some(from), Some(moves)) => {
            let moved_by = field("movedBy").unwrap_or(from);
            Ok(RescaleAck { active_workers: active as usize, effective_from: from, moves: moves as usize, moved_by })
        }
        _ => Err(RescaleError::Unavailable(format!("the job's reply to a rescale is no acknowledgement: {line}"))),
    }
}
