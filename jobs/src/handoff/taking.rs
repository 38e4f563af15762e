//! The new job's side of a hand-off (`saams --take-over`): the checks before it starts, and the
//! thread of each process that asks, waits for the running job to let go, and takes over its
//! directory and outputs (steps 2 and 4 of [`crate::handoff`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use saams::checkpoint::{LoggedRequest, Manifest};
use serde::{Deserialize, Serialize};

use crate::atomic_file::replace_durably;
use crate::checkpoint::resume::output_offsets;
use crate::checkpoint::take_over_start::{START_FILE, START_FRESH_MS, Start, read_start};
use crate::checkpoint::{CheckpointStore, TEMP_PREFIX, manifest_file_name};
use crate::cli::Cli;
use crate::clock::now_unix_ms;
use crate::control::hub::Hub;
use crate::control::request_log::RequestLog;
use crate::kafka::KafkaJob;
use crate::sink::file::LineSink;
use crate::stats::Stats;
use crate::writer_lock::{WriterLock, lock_output_files};

use super::{FRONTIER_FILE, Frontier, HandOff, Request, request_path};

/// How often the new job looks at the directory and tries the locks.
const POLL: Duration = Duration::from_millis(10);

/// The file process 0 of the new job writes once the running job has let go of every lock:
/// the other processes take theirs then, and take over at the checkpoint it names.
const DONE_FILE: &str = "take-over-done.json";

/// What `DIR/take-over-done.json` says.
#[derive(Debug, Serialize, Deserialize)]
struct Done {
    /// When process 0 found every lock of the running job free (Unix ms).
    done_unix_ms: u64,
    /// The running job's last checkpoint: the newest complete one then. Every process takes
    /// over at this one, named, rather than at the newest it finds itself: a process that took
    /// a later one (this job's own) for the running job's would drop the answers between the
    /// two boundaries, which no job then writes. (The barrier in `take_over` also keeps this
    /// job from writing any before every process has taken over.)
    checkpoint: u64,
}

/// What a step's file `DIR/take-over-<step>-p<P>.json` says ([`barrier`]).
#[derive(Debug, Serialize, Deserialize)]
struct Reached {
    /// When process P had reached the step (Unix ms).
    reached_unix_ms: u64,
}

/// What a process of a job taking over holds while it catches up and takes over.
pub struct TakeOver {
    /// The job's command line.
    pub cli: Cli,
    /// The answers' sink ([`LineSink::detached`] until the hand-off).
    pub sink: Arc<LineSink>,
    /// The dead letters' sink, when they go to a file or stdout (detached too).
    pub dead: Option<Arc<LineSink>>,
    /// The process' hub: opened once the process is the writer.
    pub hub: Arc<Hub>,
    /// The counters (the input's epoch says how far the job has read).
    pub stats: Arc<Stats>,
    /// The live requests the job applied at its start (the checkpoint's and the request logs').
    pub known: Vec<LoggedRequest>,
    /// The Kafka side, when answers or dead letters go to topics (attached to them then).
    pub kafka: Option<Arc<KafkaJob>>,
}

/// Refuse a take-over that cannot work, before anything is opened: no checkpoint, or no running
/// job.
///
/// # Errors
/// The reason, and what to do instead.
pub fn check_take_over(cli: &Cli) -> Result<(), String> {
    let Some(dir) = &cli.checkpoints else { return Err("--take-over needs --checkpoints DIR".into()) };
    let Some((id, _)) = newest_boundary(dir) else {
        return Err(format!(
            "--take-over: {} holds no complete checkpoint to take over from: start the job without --take-over",
            dir.display()
        ));
    };
    let lock = dir.join("writer-p0.lock");
    if let Ok(free) = WriterLock::acquire(&lock, "the checkpoint directory") {
        drop(free);
        return Err(format!(
            "--take-over: no job is running on {} (its writer lock is free): start the job without --take-over, it resumes from checkpoint {id}",
            dir.display()
        ));
    }
    Ok(())
}

/// For a job taking over: the checkpoint its processes resume from — process 0 chooses the
/// newest complete one and says so in the directory, the others wait for it to say (the
/// running job may complete a checkpoint between their starts, and processes resumed from two
/// would count the values between them twice). `None` for other jobs.
///
/// # Errors
/// When there is no checkpoint, or process 0 does not say within a minute.
pub fn start_checkpoint(cli: &Cli) -> Result<Option<u64>, String> {
    let (true, Some(dir)) = (cli.take_over, &cli.checkpoints) else { return Ok(None) };
    if cli.process == 0 {
        let (id, _) = newest_boundary(dir).ok_or("the checkpoint directory holds no complete checkpoint")?;
        let start = Start { id, unix_ms: now_unix_ms() };
        write_atomically(&dir.join(START_FILE), &serde_json::to_string(&start).map_err(|e| e.to_string())?)?;
        return Ok(Some(id));
    }
    let since = now_unix_ms().saturating_sub(START_FRESH_MS);
    let waited = std::time::Instant::now();
    loop {
        if let Some(start) = read_start(dir, since) {
            return Ok(Some(start.id));
        }
        if waited.elapsed() > Duration::from_secs(60) {
            return Err(format!(
                "process 0 did not say within a minute which checkpoint of {} it starts from",
                dir.display()
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// When this take-over began (Unix ms): when process 0 wrote the start file, which every
/// process read at its start ([`start_checkpoint`]; process 0 removes it only once every process
/// has taken over). The files of this take-over are those written since. Not this thread's own
/// start: a process stalled between connecting to the others and starting this thread (stopped,
/// or starved of CPU) while process 0 caught up and found the running job gone began after
/// process 0 had said so, took its `take-over-done.json` for an earlier take-over's and waited
/// for it for ever (and process 0 at the barrier for it).
fn take_over_began(dir: &Path) -> u64 {
    read_start(dir, 0).map_or_else(now_unix_ms, |s| s.unix_ms)
}

/// The newest checkpoint of `dir` whose every process' manifest is there, by its manifests
/// alone (cheap enough to ask every few milliseconds): its id and boundary.
fn newest_boundary(dir: &Path) -> Option<(u64, u64)> {
    let mut ids: Vec<u64> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().filter(|n| n.len() == 10).and_then(|n| n.parse().ok()))
        .collect();
    ids.sort_unstable();
    ids.into_iter().rev().find_map(|id| {
        let folder = dir.join(crate::checkpoint::folder_name(id));
        let first = read_manifest(&folder, 0)?;
        (1..first.processes).all(|p| folder.join(manifest_file_name(p)).exists()).then_some((id, first.boundary_ms))
    })
}

fn read_manifest(folder: &Path, process: u32) -> Option<Manifest> {
    let text = std::fs::read_to_string(folder.join(manifest_file_name(process))).ok()?;
    Manifest::from_json(&text).ok()
}

/// Start the thread that takes over for this process; it ends once the process is the writer.
/// A failure ends the process (exit 2) before it has written anything.
pub fn start_taking_over(take: TakeOver, handoff: Arc<HandOff>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        if let Err(e) = take_over(&take, &handoff) {
            eprintln!("saams: --take-over: {e}");
            std::process::exit(2);
        }
    })
}

fn take_over(take: &TakeOver, handoff: &HandOff) -> Result<(), String> {
    let Some(dir) = take.cli.checkpoints.clone() else { return Err("no --checkpoints".into()) };
    let started = take_over_began(&dir);
    let (mut locks, last) = catch_up_and_ask(take, handoff, &dir, started)?;
    // Every lock of the running job is free: `last` is its last checkpoint.
    locks.extend(wait_for(|| lock_output_files(&take.cli))?);
    let store = CheckpointStore::open(&dir, take.cli.checkpoint_keep)?;
    let restored = store
        .newest_at_most(last)?
        .0
        .filter(|r| r.id == last)
        .ok_or(format!("the running job's last checkpoint {last} is not complete in the directory"))?;
    let first = restored.manifests.first().ok_or("a checkpoint without a manifest")?;
    let boundary = first.boundary_ms;
    check_requests(&dir, &first.requests, &take.known, restored.id)?;
    attach_outputs(take, (&dir, started), (restored.id, &restored.manifests), boundary)?;
    // No process of this job asks for or commits a checkpoint before every one holds its
    // output: a process whose sink was still detached committed its held answers to nowhere,
    // and recorded its output's length as nothing (its answers between the running job's last
    // boundary and that checkpoint's were lost, and a restart from it would cut the rest).
    barrier(&dir, &take.cli, started, "attached")?;
    let (log, first_ticket) = RequestLog::open(&dir, take.cli.process)?;
    take.hub.continue_tickets(first_ticket);
    handoff.took_over(boundary, store.next_id(), log, locks);
    // The intake worker syncs requests to the log before acknowledging them: it must have it
    // before the hub takes any.
    while handoff.log.lock().map(|l| l.is_some()).unwrap_or(false)
        && !handoff.workers_done.load(std::sync::atomic::Ordering::Relaxed)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    take.hub.open();
    let at = saams::api::time::format_timestamp(boundary.min(i64::MAX as u64) as i64);
    eprintln!("saams: took over at checkpoint {} ({at}): answers from then on are this job's", restored.id);
    if take.cli.process == 0 {
        let _ = std::fs::remove_file(request_path(&dir));
        let _ = std::fs::remove_file(dir.join(START_FILE));
    }
    Ok(())
}

/// Catch up (dropping the answers the running job has checkpointed), ask (process 0, once its
/// input has reached the running job's newest checkpoint), and wait until the running job has
/// let go of the directory: this process' writer lock, held from then on, and the running
/// job's last checkpoint, which process 0 names ([`Done`]).
fn catch_up_and_ask(
    take: &TakeOver,
    handoff: &HandOff,
    dir: &Path,
    started: u64,
) -> Result<(Vec<WriterLock>, u64), String> {
    let process = take.cli.process;
    let mine = dir.join(format!("writer-p{process}.lock"));
    let mut ready = false;
    // The running job's frontier is asked for now (its wait counts from here, not from the
    // start file: a start slow to load its checkpoint would fall back at once).
    let asked = now_unix_ms();
    if process == 0 {
        write_request(dir, &take.cli, false)?;
    }
    loop {
        std::thread::sleep(POLL);
        // The newest checkpoint here is always the running job's: this job asks for none before
        // every process has passed this loop and attached its outputs (the barrier in
        // `take_over`).
        let newest = newest_boundary(dir).map(|(_, b)| b);
        if let Some(boundary) = newest {
            take.sink.drop_before(boundary);
        }
        let done = if process == 0 { None } else { done_since(dir, started) };
        if process == 0
            && !ready
            && let Some(target) = caught_up_with(take, handoff, dir, newest, asked)
        {
            write_request(dir, &take.cli, true)?;
            eprintln!("saams: --take-over: caught up with the running job ({target}): asked it to hand off");
            ready = true;
        }
        let may_lock = if process == 0 { ready && others_free(dir) } else { done.is_some() };
        if !may_lock {
            continue;
        }
        if let Ok(lock) =
            WriterLock::acquire(&mine, &format!("the checkpoint directory {} (process {process})", dir.display()))
        {
            if process == 0 && !others_free(dir) {
                continue;
            }
            let last = match done {
                Some(last) => last,
                None => {
                    // Every lock is free and this job has asked for no checkpoint yet: the
                    // newest complete one is the running job's last.
                    let (last, _) =
                        newest_boundary(dir).ok_or("the checkpoint directory holds no complete checkpoint now")?;
                    let done = Done { done_unix_ms: now_unix_ms(), checkpoint: last };
                    let text = serde_json::to_string(&done).map_err(|e| e.to_string())?;
                    write_atomically(&dir.join(DONE_FILE), &text)?;
                    last
                }
            };
            return Ok((vec![lock], last));
        }
    }
}

/// Whether this job's input has reached the running job's: the frontier it publishes (asked
/// at `asked`), or, when it publishes none within [`FRONTIER_WAIT_MS`], its newest
/// checkpoint's boundary (`newest`); or this job's input has ended. What was reached, in words.
fn caught_up_with(take: &TakeOver, handoff: &HandOff, dir: &Path, newest: Option<u64>, asked: u64) -> Option<String> {
    if handoff.workers_done.load(std::sync::atomic::Ordering::Relaxed) {
        return Some("this job's input has ended".into());
    }
    let own = take.stats.epoch.load(std::sync::atomic::Ordering::Relaxed);
    let published = std::fs::read_to_string(dir.join(FRONTIER_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<Frontier>(&t).ok())
        .filter(|f| f.unix_ms >= asked);
    match published {
        Some(f) => (own >= f.epoch_ms).then(|| format!("its input's window {}", format_ms(f.epoch_ms))),
        None if now_unix_ms() >= asked + FRONTIER_WAIT_MS => newest
            .filter(|&b| own >= b as i64)
            .map(|b| format!("its newest checkpoint's boundary {}", format_ms(b as i64))),
        None => None,
    }
}

/// How long the new job waits for the running job's frontier before it falls back on the
/// newest checkpoint's boundary.
const FRONTIER_WAIT_MS: u64 = 2_000;

fn format_ms(ms: i64) -> String {
    saams::api::time::format_timestamp(ms)
}

/// Whether the writer locks of processes 1.. are free: the running job's other processes have
/// ended (whatever `-n` either job has).
fn others_free(dir: &Path) -> bool {
    let Ok(listing) = std::fs::read_dir(dir) else { return false };
    listing.filter_map(Result::ok).all(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(index) = name.strip_prefix("writer-p").and_then(|n| n.strip_suffix(".lock")) else { return true };
        let Ok(index) = index.parse::<usize>() else { return true };
        // (This job's other processes take theirs only once process 0 has found them free.)
        index == 0 || WriterLock::acquire(&e.path(), "a process' part of the directory").is_ok()
    })
}

/// Whether process 0 has found the running job gone since `since` (Unix ms): the running
/// job's last checkpoint if so.
fn done_since(dir: &Path, since: u64) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join(DONE_FILE)).ok()?;
    serde_json::from_str::<Done>(&text).ok().filter(|d| d.done_unix_ms >= since).map(|d| d.checkpoint)
}

/// Write the take-over request, `ready` once this job has caught up (atomically: it is read
/// by polling).
fn write_request(dir: &Path, cli: &Cli, ready: bool) -> Result<(), String> {
    let request = Request {
        host: crate::writer_lock::host_name(),
        pid: std::process::id(),
        asked_unix_ms: now_unix_ms(),
        processes: cli.processes,
        workers: cli.workers,
        ready,
    };
    write_atomically(&request_path(dir), &serde_json::to_string(&request).map_err(|e| e.to_string())?)
}

/// Write `text` to `path` atomically (a reader sees the old file or the new one) and durably.
fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    replace_durably(path, TEMP_PREFIX, text.as_bytes())
}

/// The file process `p` of the new job writes once it has reached `step` of taking over.
fn step_path(dir: &Path, step: &str, p: usize) -> PathBuf {
    dir.join(format!("take-over-{step}-p{p}.json"))
}

/// Say this process has reached `step`, and wait until every process of the job has (since
/// `started`, Unix ms: a file of an earlier take-over does not count).
fn barrier(dir: &Path, cli: &Cli, started: u64, step: &str) -> Result<(), String> {
    let reached = Reached { reached_unix_ms: now_unix_ms() };
    let text = serde_json::to_string(&reached).map_err(|e| e.to_string())?;
    write_atomically(&step_path(dir, step, cli.process), &text)?;
    wait_for(|| {
        let waiting: Vec<usize> = (0..cli.processes)
            .filter(|&p| {
                let text = std::fs::read_to_string(step_path(dir, step, p)).ok();
                text.and_then(|t| serde_json::from_str::<Reached>(&t).ok()).is_none_or(|r| r.reached_unix_ms < started)
            })
            .collect();
        if waiting.is_empty() { Ok(()) } else { Err(format!("processes {waiting:?} did not reach {step}")) }
    })
}

/// Retry `f` until it succeeds (a lock another job still holds).
fn wait_for<T>(mut f: impl FnMut() -> Result<T, String>) -> Result<T, String> {
    let waited = std::time::Instant::now();
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) if waited.elapsed() > Duration::from_secs(600) => return Err(e),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Every live request the running job applied (its last checkpoint's log, then the request
/// logs beyond it) must be one this job applied at its start.
fn check_requests(dir: &Path, applied: &[LoggedRequest], known: &[LoggedRequest], id: u64) -> Result<(), String> {
    let known: HashSet<u64> = known.iter().filter_map(|r| r.id).collect();
    let beyond = RequestLog::recover(dir, applied)?.pending;
    let missed: Vec<String> = applied
        .iter()
        .chain(&beyond)
        .filter_map(|r| r.id)
        .filter(|id| !known.contains(id))
        .map(|id| id.to_string())
        .collect();
    if missed.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the running job took live requests after this job started (ids {}): start this job again without --take-over, it resumes from checkpoint {id}, which holds them; nothing was written",
        missed.join(", ")
    ))
}

/// Cut the outputs back to the last checkpoint's lengths and write the held answers from
/// `boundary` on; process 0 also cuts the outputs of the running job's processes this job does
/// not have.
fn attach_outputs(
    take: &TakeOver,
    (dir, started): (&Path, u64),
    (id, manifests): (u64, &[Manifest]),
    boundary: u64,
) -> Result<(), String> {
    let cli = &take.cli;
    let mine = manifests.iter().find(|m| m.process as usize == cli.process);
    match take.kafka.as_ref().and_then(|k| k.estimation_writer().map(|w| (k, w))) {
        Some((kafka, writer)) => {
            // What the running job produced past its last checkpoint is not produced again
            // (nothing, when it handed off: it dropped its answers from the boundary on).
            let found = kafka.skip_delivered_after(id, output_offsets(manifests))?;
            if found > 0 {
                eprintln!("saams: {found} answers are in the output topic past checkpoint {id}: not produced again");
            }
            // Every process reads the topic's tail before any produces: a process reading it
            // after another had produced would take that one's answers for the running job's
            // (an answer both produce, e.g. of a synopsis kept on each, would then be skipped).
            barrier(dir, cli, started, "tail-read")?;
            take.sink.attach_writer(writer, boundary)?;
        }
        None => {
            let output = mine.and_then(|m| m.output.as_ref()).filter(|o| o.path == cli.out).map(|o| o.bytes);
            take.sink.attach(&cli.out, Some(output.unwrap_or(0)), boundary)?;
        }
    }
    if let (Some(dead), Some(writer)) = (&take.dead, take.kafka.as_ref().and_then(|k| k.dead_letter_writer())) {
        // Dead letters are at least once: those of the records read again are produced again.
        dead.attach_writer(writer, 0)?;
    } else if let (Some(dead), Some(path)) = (&take.dead, &cli.dead_letter) {
        let path = path.display().to_string();
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        let recorded = mine.and_then(|m| m.dead_letters.as_ref()).filter(|o| o.path == path).map(|o| o.bytes);
        // Dead letters are at least once: those of the lines read again are written again.
        dead.attach(&path, Some(recorded.map_or(len, |b| b.min(len))), 0)?;
    }
    if cli.process == 0 {
        for m in manifests.iter().filter(|m| m.process as usize >= cli.processes) {
            if let Some(o) = &m.output
                && let Ok(f) = std::fs::OpenOptions::new().write(true).open(&o.path)
            {
                f.set_len(o.bytes).map_err(|e| format!("cannot cut {} back to {} bytes: {e}", o.path, o.bytes))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn write<T: Serialize>(path: PathBuf, value: &T) {
        write_atomically(&path, &serde_json::to_string(value).expect("json")).expect("write");
    }

    /// Process 1 stalled until process 0 had found the running job gone and reached the barrier:
    /// its take-over, begun then, still sees both (they are this take-over's, written after
    /// process 0's start file), and its barrier opens.
    #[test]
    fn a_process_that_begins_taking_over_after_process_0_said_done_still_sees_it() {
        let d = std::env::temp_dir().join(format!("saams-taking-late-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("dir");
        let t0 = now_unix_ms();
        write(d.join(START_FILE), &Start { id: 7, unix_ms: t0 });
        write(d.join(DONE_FILE), &Done { done_unix_ms: t0 + 1, checkpoint: 7 });
        write(step_path(&d, "attached", 0), &Reached { reached_unix_ms: t0 + 2 });
        std::thread::sleep(Duration::from_millis(20));
        let began = take_over_began(&d);
        assert_eq!(began, t0);
        assert_eq!(done_since(&d, began), Some(7));
        let ck = d.display().to_string();
        let cli = Cli::parse_from(["saams", "-n", "2", "-p", "1", "-h", "hosts", "--take-over", "--checkpoints", &ck]);
        barrier(&d, &cli, began, "attached").expect("every process reached it");
        // A done file of an earlier take-over (before the start file) is not this one's.
        write(d.join(DONE_FILE), &Done { done_unix_ms: t0 - 1, checkpoint: 5 });
        assert_eq!(done_since(&d, began), None);
        let _ = std::fs::remove_dir_all(&d);
    }
}
