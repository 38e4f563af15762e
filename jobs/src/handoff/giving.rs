//! The running job's side of a hand-off: every process watches its checkpoint directory for a
//! take-over request; on one, it stops taking live requests and tells worker 0 (which asks for
//! the job's last checkpoint, see [`crate::control::fence::Fences::hand_off`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::clock::now_unix_ms;
use crate::control::hub::Hub;
use crate::stats::Stats;

use super::{FRONTIER_FILE, Frontier, HandOff, Request, request_path};

/// How often the directory is looked at: a take-over waits at most this long to be seen.
const POLL: Duration = Duration::from_millis(20);

/// Watch `dir` for a take-over request from a live process, asked after this job started (or,
/// for a job that took over, after it did). While the new job catches up: take no new live
/// requests on `hub` (taken again if the new job ends), and, on process 0 (`publish`), publish
/// how far the input has read. Once it is ready: mark the hand-off asked. The thread ends then
/// (or with the process).
pub fn watch_for_take_over(
    dir: PathBuf,
    (hub, stats): (Arc<Hub>, Arc<Stats>),
    handoff: Arc<HandOff>,
    publish: bool,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let (mut since, mut refusing) = (now_unix_ms(), false);
        loop {
            std::thread::sleep(POLL);
            if handoff.taking() {
                // Catching up: the directory is not this job's yet; its own request is older
                // than the moment it takes over.
                since = now_unix_ms();
                continue;
            }
            let Some(request) = read_request(&dir).filter(|r| r.asked_unix_ms >= since) else { continue };
            if !alive(&request) {
                if refusing {
                    eprintln!(
                        "saams: the job taking over (pid {}) has ended: live requests are taken again",
                        request.pid
                    );
                    hub.open();
                    refusing = false;
                }
                continue;
            }
            if !refusing {
                // Every live request this job acknowledges from now on would be one the new job
                // has not applied.
                eprintln!(
                    "saams: pid {} on host {} catches up to take over (-n {} -w {}): live requests are refused until it has",
                    request.pid, request.host, request.processes, request.workers
                );
                hub.stop_taking();
                refusing = true;
            }
            if !request.ready {
                if publish {
                    let frontier = Frontier { epoch_ms: stats.epoch.load(Ordering::Relaxed), unix_ms: now_unix_ms() };
                    write_frontier(&dir, &frontier);
                }
                continue;
            }
            eprintln!("saams: pid {} has caught up: handing off at the next window boundary", request.pid);
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

/// Write the frontier for the new job (replaced whole by a rename; not synced: it only paces the
/// hand-off, and a crash ends the hand-off anyway).
fn write_frontier(dir: &std::path::Path, frontier: &Frontier) {
    let temp = dir.join(format!("{}{FRONTIER_FILE}.{}", crate::checkpoint::TEMP_PREFIX, std::process::id()));
    let Ok(text) = serde_json::to_string(frontier) else { return };
    if std::fs::write(&temp, text).and_then(|()| std::fs::rename(&temp, dir.join(FRONTIER_FILE))).is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}
