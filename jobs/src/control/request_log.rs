//! The request log (`--checkpoints DIR`): every live request is on disk before it is
//! acknowledged, so an acknowledged request survives a crash even when no checkpoint holds it.
//!
//! Each process appends the requests it took to `DIR/requests-p<P>.log`, one JSON line per
//! request: a checkpoint's [`LoggedRequest`] (its fence, its typed text, its id) and `at`, its
//! place in the order every worker applied the live requests. The lines a fence agreed are
//! written together and synced once (`fdatasync`) before any of their acknowledgements leaves
//! (group commit: the acknowledgements of one fence are released together anyway, so one sync
//! per fence costs no request more than its own sync would).
//!
//! A restart reads every process' log ([`RequestLog::recover`]) and applies, after the
//! checkpoint's own request log, each logged request whose id that log does not hold, at the
//! fence it was acknowledged with, in the order it was applied: the synopsis is there and answers
//! from its fence on as it would have without the crash. The checkpoints written from then on
//! hold it (with its id), so a later restart does not apply it twice.
//!
//! Ids are the hub's tickets: process `P` numbers its tickets from `P << 40` on, continuing after
//! the highest ticket in its log, so an id names one request for the life of the directory,
//! whatever `-n`/`-w` the job is restarted with.
//!
//! ```
//! use saams::checkpoint::LoggedRequest;
//! use saams_jobs::control::request_log::RequestLog;
//! let dir = std::env::temp_dir().join(format!("saams-doc-request-log-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let (mut log, first) = RequestLog::open(&dir, 1).unwrap();
//! assert_eq!(first, (1 << 40) + 1);
//! let r = |id, fence_ms| LoggedRequest { fence_ms, text: "[]".into(), id: Some(id) };
//! log.append(&[(0, r(first, 60_000)), (1, r(first + 1, 60_000))]).unwrap();
//! // A checkpoint that holds the first: a restart applies the second only, and goes on counting.
//! let recovered = RequestLog::recover(&dir, &[r(first, 60_000)]).unwrap();
//! assert_eq!(recovered.pending, vec![r(first + 1, 60_000)]);
//! assert_eq!(recovered.next_at, 2);
//! assert_eq!(RequestLog::open(&dir, 1).unwrap().1, first + 2);
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use saams::checkpoint::LoggedRequest;
use serde::{Deserialize, Serialize};

/// How far apart the ticket ranges of two processes are.
const PROCESS_SHIFT: u32 = 40;

/// One line of a request log.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// The request's place in the order the live requests were applied (one counter on every
    /// worker, continued across restarts).
    at: u64,
    #[serde(flatten)]
    request: LoggedRequest,
    /// The request topic's record it came from (none: HTTP, stdin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    topic: Option<TopicRecord>,
}

/// Where a live request came from on the request topic (`--request-topic`): its record's
/// partition and offset. The request log keeps it beside the request, so the log says how far
/// the topic was read ([`RequestLog::topic_read`]): a restart or a job taking over follows the
/// topic from there, and applies no record twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicRecord {
    /// The record's partition.
    pub partition: i32,
    /// Its offset there.
    pub offset: i64,
}

/// A process' request log, open for appending.
#[derive(Debug)]
pub struct RequestLog {
    file: File,
    path: PathBuf,
}

/// What a restart takes from the request logs.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Acknowledged requests the checkpoint resumed from does not hold, in the order they were
    /// applied: applied after its own, each at its logged fence.
    pub pending: Vec<LoggedRequest>,
    /// Where the order of applied requests goes on.
    pub next_at: u64,
}

/// What a job with checkpoints starts its live requests from: those to apply before reading on,
/// where their order goes on, and its process' request log with the hub's first ticket.
#[derive(Debug)]
pub struct LiveRequests {
    /// The checkpoint's request log, then the acknowledged requests the request logs hold
    /// beyond it, in the order applied.
    pub requests: Vec<LoggedRequest>,
    /// Where the order of applied live requests goes on (the logs' `at`).
    pub next_at: u64,
    /// The first ticket of this process' hub.
    pub first_ticket: u64,
    log: std::sync::Mutex<Option<RequestLog>>,
}

impl LiveRequests {
    /// The requests to apply, where their order goes on, and the open log with its first ticket.
    pub fn new(requests: Vec<LoggedRequest>, next_at: u64, (log, first_ticket): (RequestLog, u64)) -> LiveRequests {
        LiveRequests { requests, next_at, first_ticket, log: std::sync::Mutex::new(Some(log)) }
    }

    /// The requests to apply and where their order goes on, without the log: a job taking over
    /// another's directory (`crate::handoff`) opens it only once the other job has let go.
    pub fn without_log(requests: Vec<LoggedRequest>, next_at: u64) -> LiveRequests {
        LiveRequests { requests, next_at, first_ticket: 1, log: std::sync::Mutex::new(None) }
    }

    /// The request log, for the process' intake worker (the first call has it).
    pub fn take_log(&self) -> Option<RequestLog> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl RequestLog {
    /// The log of process `process` in `dir`.
    pub fn path(dir: &Path, process: usize) -> PathBuf {
        dir.join(format!("requests-p{process}.log"))
    }

    /// Open (or create) process `process`'s log in `dir` for appending, and the first ticket its
    /// hub gives. A line a crash left half-written (never synced, so never acknowledged) is cut.
    ///
    /// # Errors
    /// When the file cannot be read, cut, created or synced.
    pub fn open(dir: &Path, process: usize) -> Result<(RequestLog, u64), String> {
        let path = RequestLog::path(dir, process);
        let fail = |e: io::Error| format!("request log {}: {e}", path.display());
        let existed = path.exists();
        let text = if existed { std::fs::read(&path).map_err(fail)? } else { Vec::new() };
        let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(fail)?;
        if whole < text.len() {
            file.set_len(whole as u64).map_err(fail)?;
            file.sync_all().map_err(fail)?;
        }
        if !existed {
            // The file's name must survive a power cut before anything is acknowledged in it.
            crate::atomic_file::sync_dir(dir).map_err(fail)?;
        }
        let base = (process as u64) << PROCESS_SHIFT;
        let newest = entries(&path, &text[..whole]).filter_map(|e| e.request.id).max().unwrap_or(base);
        Ok((RequestLog { file, path }, newest.max(base) + 1))
    }

    /// Append `(at, request)` lines and sync them: when this returns `Ok`, they survive a crash.
    ///
    /// # Errors
    /// When the write or the sync fails (the caller must not acknowledge the requests).
    pub fn append(&mut self, requests: &[(u64, LoggedRequest)]) -> io::Result<()> {
        let read: Vec<_> = requests.iter().map(|(at, r)| (*at, r.clone(), None)).collect();
        self.append_read(&read)
    }

    /// [`RequestLog::append`] with each request's record on the request topic, if it came from
    /// there.
    ///
    /// # Errors
    /// As [`RequestLog::append`].
    pub fn append_read(&mut self, requests: &[(u64, LoggedRequest, Option<TopicRecord>)]) -> io::Result<()> {
        if requests.is_empty() {
            return Ok(());
        }
        let mut lines = String::new();
        for (at, request, topic) in requests {
            let entry = Entry { at: *at, request: request.clone(), topic: *topic };
            lines.push_str(&serde_json::to_string(&entry).map_err(io::Error::other)?);
            lines.push('\n');
        }
        self.file.write_all(lines.as_bytes())?;
        self.file.sync_data()
    }

    /// The file written to.
    pub fn file(&self) -> &Path {
        &self.path
    }

    /// Every process' log in `dir`, less the requests `applied` (a checkpoint's request log)
    /// holds. Lines that do not parse are skipped with a message on stderr.
    ///
    /// # Errors
    /// When the directory or a log cannot be read.
    pub fn recover(dir: &Path, applied: &[LoggedRequest]) -> Result<Recovered, String> {
        let mut all = every_entry(dir)?;
        let next_at = all.iter().map(|e| e.at + 1).max().unwrap_or(0);
        let held: HashSet<u64> = applied.iter().filter_map(|r| r.id).collect();
        all.retain(|e| e.request.id.is_some_and(|id| !held.contains(&id)));
        all.sort_by_key(|e| e.at);
        Ok(Recovered { pending: all.into_iter().map(|e| e.request).collect(), next_at })
    }
}

impl RequestLog {
    /// How far the request topic was read by the requests logged in `dir` (every process'
    /// log): per partition, the offset after the newest record a logged request came from.
    /// Every record before it was applied (or was no request to apply: malformed, an ad-hoc
    /// query), the records from it on were not.
    ///
    /// # Errors
    /// When the directory or a log cannot be read.
    pub fn topic_read(dir: &Path) -> Result<BTreeMap<i32, i64>, String> {
        let mut read = BTreeMap::new();
        for t in every_entry(dir)?.into_iter().filter_map(|e| e.topic) {
            let after = read.entry(t.partition).or_insert(0);
            *after = (*after).max(t.offset + 1);
        }
        Ok(read)
    }
}

/// The entries of every process' log in `dir`, as the files hold them.
fn every_entry(dir: &Path) -> Result<Vec<Entry>, String> {
    let listing = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut all = Vec::new();
    for entry in listing.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("requests-p") && name.ends_with(".log")) {
            continue;
        }
        let path = entry.path();
        let text = std::fs::read(&path).map_err(|e| format!("request log {}: {e}", path.display()))?;
        let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        all.extend(entries(&path, &text[..whole]));
    }
    Ok(all)
}

/// The entries of a log's whole lines (`path` names it in messages).
fn entries<'a>(path: &'a Path, text: &'a [u8]) -> impl Iterator<Item = Entry> + 'a {
    text.split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.is_empty()).filter_map(move |(i, line)| {
        serde_json::from_slice(line)
            .map_err(|e| eprintln!("saams: request log {} line {}: {e}; skipped", path.display(), i + 1))
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("saams-request-log-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch dir");
        d
    }

    fn r(id: u64, fence_ms: u64) -> LoggedRequest {
        LoggedRequest { fence_ms, text: format!("[{id}]"), id: Some(id) }
    }

    #[test]
    fn a_half_written_line_is_cut_and_the_next_append_is_whole() {
        let dir = scratch("torn");
        let (mut log, first) = RequestLog::open(&dir, 0).expect("open");
        assert_eq!(first, 1);
        log.append(&[(0, r(1, 10))]).expect("append");
        drop(log);
        let path = RequestLog::path(&dir, 0);
        let mut f = OpenOptions::new().append(true).open(&path).expect("reopen");
        f.write_all(br#"{"at":1,"fence_ms":20,"te"#).expect("torn write");
        drop(f);
        let (mut log, next) = RequestLog::open(&dir, 0).expect("open again");
        assert_eq!(next, 2);
        log.append(&[(1, r(2, 20))]).expect("append");
        let recovered = RequestLog::recover(&dir, &[]).expect("recover");
        assert_eq!(recovered.pending, vec![r(1, 10), r(2, 20)]);
        assert_eq!(recovered.next_at, 2);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn the_logs_say_how_far_the_request_topic_was_read() {
        let dir = scratch("topic");
        let (mut p0, a) = RequestLog::open(&dir, 0).expect("p0");
        let (mut p1, b) = RequestLog::open(&dir, 1).expect("p1");
        assert!(RequestLog::topic_read(&dir).expect("empty").is_empty());
        let at = |partition, offset| Some(TopicRecord { partition, offset });
        p0.append_read(&[(0, r(a, 10), at(0, 4)), (1, r(a + 1, 10), None), (3, r(a + 2, 20), at(0, 6))]).expect("p0");
        p1.append_read(&[(2, r(b, 20), at(1, 0))]).expect("p1");
        let read = RequestLog::topic_read(&dir).expect("read");
        assert_eq!(read, BTreeMap::from([(0, 7), (1, 1)]));
        // The lines read back as before for a restart.
        assert_eq!(RequestLog::recover(&dir, &[]).expect("recover").pending.len(), 4);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn the_logs_of_several_processes_replay_in_the_order_applied_less_the_checkpointed() {
        let dir = scratch("merge");
        let (mut p0, a) = RequestLog::open(&dir, 0).expect("p0");
        let (mut p1, b) = RequestLog::open(&dir, 1).expect("p1");
        assert_ne!(a, b);
        p1.append(&[(0, r(b, 10)), (3, r(b + 1, 40))]).expect("p1 append");
        p0.append(&[(1, r(a, 20)), (2, r(a + 1, 30))]).expect("p0 append");
        let recovered = RequestLog::recover(&dir, &[r(b, 10), r(a, 20)]).expect("recover");
        assert_eq!(recovered.pending, vec![r(a + 1, 30), r(b + 1, 40)]);
        assert_eq!(recovered.next_at, 4);
        std::fs::write(dir.join("requests-p2.log"), "not json\n").expect("bad log");
        assert_eq!(RequestLog::recover(&dir, &[]).expect("recover").pending.len(), 4);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
