//! Hand-off: a second job with another shape (`-n`/`-w`) takes over from a running one on the
//! same checkpoint directory and outputs (`saams --take-over`), and every answer is written
//! exactly once.
//!
//! How the two jobs talk: through the checkpoint directory, which both already share, and the
//! writer locks ([`crate::writer_lock`]), which already say who may write there. No port, no
//! topic: the jobs may run on different hosts as long as they see the same directory.
//!
//! 1. **Catch up, read-only.** The new job loads the running job's newest checkpoint (checking
//!    that a job holds the directory's lock and that there is a checkpoint: a clear error
//!    otherwise), and reads its inputs from the checkpoint's positions with the state it holds,
//!    writing nothing: it takes no lock, opens no request log, asks for no checkpoint, takes no
//!    live request, and holds its answers in memory, dropping those before the running job's
//!    newest checkpoint (that job has written them) as newer checkpoints appear.
//! 2. **Ask.** Process 0 of the new job writes `DIR/take-over.json` (atomically: temporary file,
//!    rename) at its start; process 0 of the running job, polling for it, publishes how far its
//!    input has read in `DIR/take-over-frontier.json` (every 20 ms) while the new job catches
//!    up. Once the new job's input has reached that frontier, it marks its request ready.
//!    (Without a frontier after two seconds, a running job that does not publish one, it asks
//!    once it has reached the running job's newest checkpoint.)
//! 3. **Hand off.** Every process of the running job polls for that file; on seeing it ready (from
//!    a live process) it stops taking live requests and worker 0 asks at once for a checkpoint
//!    marked as the job's last: its boundary `E` is agreed like any checkpoint's (the window after
//!    the newest any worker routed). Every process writes that checkpoint as usual (answers
//!    before `E` cut into the output, synced), drops every answer at or after `E`, writes no
//!    checkpoint after it, then stops reading, ends and exits 0 — and the kernel releases its
//!    locks with it.
//! 4. **Take over.** Each process of the new job waits for its writer lock (and process 0 for the
//!    locks of process indexes it does not have), then for its output files' locks. It reads the
//!    newest complete checkpoint — the running job's last, at `E` — cuts its output back to the
//!    length that checkpoint recorded and writes its held answers from `E` on; from then on it
//!    is the writer: it opens its request log, takes live requests, and writes checkpoints (ids
//!    after the old job's, boundaries at or after `E`).
//!
//! Why the lock and the newest checkpoint decide, not the marker files: a running job that
//! crashes or ends on its own (its input ended) during the hand-off releases its locks just the
//! same, and its newest checkpoint and the output cut to it are then exactly what a restart
//! would resume from — so the new job's output is right whatever the old job did. The request
//! file only makes the old job stop soon.
//!
//! What the gap in answers is: windows after `E` are answered by the new job once it has the
//! lock and has read up to them: the time to write the last checkpoint and end the old job,
//! plus the new job's distance behind `E` (it asks once it has reached the old job's frontier,
//! so about what the old job reads in the few milliseconds of the exchange; at most one
//! checkpoint interval when it falls back on the newest checkpoint).
//!
//! Live requests: the running job stops taking them when it sees the request, and the new job
//! takes them once it is the writer. If the running job acknowledged requests the new job has
//! not applied (taken between the checkpoint the new job started from and the request), the new
//! job stops with an error once it holds the directory, before writing anything: started again
//! without `--take-over` it resumes from the hand-off checkpoint, which holds them. The request
//! topic's follower takes records only while its hub takes requests, so the running job reads
//! none after it sees the request; the new job follows the topic from after the newest record
//! the request logs hold once it is the writer (`crate::job::request_topic`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::control::request_log::RequestLog;
use crate::writer_lock::WriterLock;

mod giving;
mod taking;

pub use giving::watch_for_take_over;
pub use taking::{TakeOver, check_take_over, start_checkpoint, start_taking_over};

/// The request file a job taking over writes in the checkpoint directory.
pub const REQUEST_FILE: &str = "take-over.json";

/// What `DIR/take-over.json` says: who asks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The asking process' host.
    pub host: String,
    /// Its pid.
    pub pid: u32,
    /// When it asked (Unix ms).
    pub asked_unix_ms: u64,
    /// The new job's shape: processes and workers per process.
    pub processes: usize,
    /// Workers per process.
    pub workers: usize,
    /// False while the new job catches up (the running job then publishes its frontier in
    /// [`FRONTIER_FILE`]); true once it has reached that frontier: the running job hands off.
    #[serde(default)]
    pub ready: bool,
}

/// The file where a running job asked to hand off publishes how far it has read.
pub const FRONTIER_FILE: &str = "take-over-frontier.json";

/// What `DIR/take-over-frontier.json` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frontier {
    /// The window the running job's input has reached (event-time ms: its epoch's window).
    pub epoch_ms: i64,
    /// When it was written (Unix ms).
    pub unix_ms: u64,
}

/// Where the request file of `dir` is.
pub fn request_path(dir: &Path) -> PathBuf {
    dir.join(REQUEST_FILE)
}

/// What a process' workers and its hand-off thread share.
#[derive(Debug, Default)]
pub struct HandOff {
    /// The running job: a take-over was asked for (worker 0 asks for the last checkpoint).
    asked: AtomicBool,
    /// The job taking over: whether it is still catching up (set at the start, cleared by
    /// [`HandOff::took_over`]).
    taking: AtomicBool,
    /// The job taking over: the boundary taken over at and the next checkpoint id, once it
    /// holds the directory.
    taken: Mutex<Option<(u64, u64)>>,
    /// The job taking over: the process' request log, for its intake worker.
    log: Mutex<Option<RequestLog>>,
    /// The locks taken over, held for the process' life.
    locks: Mutex<Vec<WriterLock>>,
    /// The job taking over: its workers have ended (its input ended before it took over).
    workers_done: AtomicBool,
}

impl HandOff {
    /// The shared state of a job that takes over (`taking`) or may hand off.
    pub fn new(taking: bool) -> Arc<HandOff> {
        let h = HandOff::default();
        h.taking.store(taking, Ordering::Relaxed);
        Arc::new(h)
    }

    /// Whether another job has asked to take over from this one.
    pub fn asked(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    /// Whether this job is still catching up, before it holds the directory.
    pub fn taking(&self) -> bool {
        self.taking.load(Ordering::Relaxed)
    }

    /// Once this job holds the directory: the boundary it took over at and the first id of its
    /// own checkpoints.
    pub fn taken_over(&self) -> Option<(u64, u64)> {
        *lock(&self.taken)
    }

    /// The request log, for the intake worker of a job that has taken over (the first call).
    pub fn take_log(&self) -> Option<RequestLog> {
        lock(&self.log).take()
    }

    /// This process' workers have ended.
    pub fn set_workers_done(&self) {
        self.workers_done.store(true, Ordering::Relaxed);
    }

    /// Block until this process has taken over (or the hand-off failed: the process ended).
    pub fn wait_taken_over(&self) {
        while self.taking() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    fn took_over(&self, boundary: u64, next_id: u64, log: RequestLog, locks: Vec<WriterLock>) {
        *lock(&self.log) = Some(log);
        lock(&self.locks).extend(locks);
        *lock(&self.taken) = Some((boundary, next_id));
        self.taking.store(false, Ordering::Relaxed);
    }
}

/// A lock a panicked holder does not poison.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
