//! The running job's side of a hand-off: every process watches its checkpoint directory for a
//! take-over request; on one, it stops taking live requests and tells worker 0 (which asks for
//! the job's last checkpoint, see [`crate::control::fence::Fences::hand_off`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::control::hub::Hub;

use super::{HandOff, Request, now_unix_ms, request_path};

/// How often the directory is looked at: a take-over waits at most this long to be seen.
const POLL: Duration = Duration::from_millis(20);

/// Watch `dir` for a take-over request from a live process, asked after this job started (or,
/// for a job that took over, after it did): then stop taking requests on `hub` and mark the
/// hand-off asked. The thread ends then (or with the process).
pub fn watch_for_take_over(dir: PathBuf, hub: Arc<Hub>, handoff: Arc<HandOff>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut since = now_unix_ms();
        loop {
            std::thread::sleep(POLL);
            if handoff.taking() {
                // Catching up: the directory is not this job's yet; its own request is older
                // than the moment it takes over.
                since = now_unix_ms();
                continue;
            }
            let Some(request) = read_request(&dir) else { continue };
            if request.asked_unix_ms < since || !alive(&request) {
                continue;
            }
            eprintln!(
                "saams: pid {} on host {} takes over (-n {} -w {}): handing off at the next window boundary",
                request.pid, request.host, request.processes, request.workers
            );
            hub.stop_taking();
            handoff.asked.store(true, Ordering::Relaxed);
            return;
        }
    })
}

/// The request in `dir`, if there is one that parses (a half-written one cannot be seen: it is
/// renamed into place).
fn read_request(dir: &std::path::Path) -> Option<Request> {
    let text = std::fs::read_to_string(request_path(dir)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether the asking process still runs (on another host: assumed so).
fn alive(request: &Request) -> bool {
    if request.host != crate::writer_lock::host_name() {
        return true;
    }
    let Ok(pid) = libc::pid_t::try_from(request.pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists; it touches no memory.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
