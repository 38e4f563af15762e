//! One writer: the exclusive OS lock a job holds, for its whole life, on what it writes — its
//! checkpoint directory (`--checkpoints DIR`, one lock per process index) and its output and
//! dead-letter files.
//!
//! Why: two jobs started on the same checkpoint directory both resume from its newest checkpoint,
//! both cut the output file back to it, and then both write checkpoints and answers, each undoing
//! the other's. Nothing on disk shows it until the answers are wrong. So a job takes the lock
//! before it reads or cuts anything there, and a second job refuses at once, naming the holder,
//! as Kafka Streams refuses with "failed to lock the state directory".
//!
//! The lock is `flock(2)` (`LOCK_EX | LOCK_NB`) on a lock file, held through an open descriptor:
//! the kernel releases it when the process ends however it ends, so a job killed with `kill -9`
//! leaves nothing to clean up and the same command starts again at once. The lock file itself
//! stays (removing it would race with a job that has just opened it); it holds the holder's host,
//! pid and start time as one JSON line, which a refused job prints. What matters is the lock,
//! never the file's presence or contents.
//!
//! | what | lock file |
//! |---|---|
//! | `--checkpoints DIR`, process `-p I` | `DIR/writer-pI.lock` |
//! | `--out FILE`, `--dead-letter FILE` (a regular file: not `-`, a device such as `/dev/null`, or a Kafka topic) | `FILE.lock` beside it |
//!
//! A process of a multi-process job locks its own part of the checkpoint directory, so the
//! processes of one job do not exclude each other, while a second job's process `I` meets the
//! first job's process `I` (and process 0 meets process 0 whatever `-n` each has).
//!
//! **Hand-off.** A hand-off of a directory between two jobs (`saams --take-over`,
//! `crate::handoff`) goes through this lock: the new job waits for the lock, and the old one
//! writes nothing after releasing it. No other signal (a marker file, a pid in a file) says who
//! may write: the hand-off's files only ask the old job to stop soon.
//!
//! (`crate::kafka::lock` is unrelated: it takes a thread `Mutex` inside one process.)
//!
//! ```
//! use saams_jobs::writer_lock::WriterLock;
//! let dir = std::env::temp_dir().join(format!("saams-doc-writer-lock-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("writer-p0.lock");
//! let held = WriterLock::acquire(&path, "the checkpoint directory").unwrap();
//! // A second holder (another open file, as another process would have) is refused, by name.
//! let refused = WriterLock::acquire(&path, "the checkpoint directory").unwrap_err();
//! assert!(refused.starts_with("failed to lock the checkpoint directory"), "{refused}");
//! assert!(refused.contains(&format!("pid {}", std::process::id())), "{refused}");
//! drop(held);
//! let again = WriterLock::acquire(&path, "the checkpoint directory").unwrap();
//! assert_eq!(again.holder().pid, std::process::id());
//! # drop(again);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cli::Cli;

/// Who holds a lock: what its lock file says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The holder's host name.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// When it took the lock (ISO 8601, UTC).
    pub started: String,
}

impl Holder {
    /// This process, now.
    fn me() -> Holder {
        let now = crate::clock::now_unix_ms();
        let started = saams::api::time::format_timestamp(i64::try_from(now).unwrap_or(i64::MAX));
        Holder { host: host_name(), pid: std::process::id(), started }
    }
}

/// An exclusive lock held while this value lives (its descriptor open).
#[derive(Debug)]
pub struct WriterLock {
    /// The open lock file: closing it releases the lock.
    _file: File,
    path: PathBuf,
    holder: Holder,
}

impl WriterLock {
    /// Take the lock on `path` (created when missing), or fail at once when another open file
    /// holds it. `what` names what the lock guards, for the error ("the checkpoint directory
    /// /x").
    ///
    /// # Errors
    /// When the lock is held (the message names the holder), or the file cannot be opened.
    pub fn acquire(path: &Path, what: &str) -> Result<WriterLock, String> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("failed to lock {what}: cannot open its lock file {}: {e}", path.display()))?;
        // SAFETY: flock on a descriptor this function owns; it touches no memory.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(format!("failed to lock {what} ({}): {e}", path.display()));
            }
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let by = match serde_json::from_str::<Holder>(text.trim()) {
                Ok(h) => format!("pid {} on host {}, started {}", h.pid, h.host, h.started),
                // Between the holder's lock and its write: it has just started.
                Err(_) => "a job that is starting now".to_string(),
            };
            return Err(format!(
                "failed to lock {what}: another job holds it ({by}; lock file {}). One job writes there \
                 at a time: stop that job first (a job that ended, even by kill -9, holds nothing)",
                path.display()
            ));
        }
        let holder = Holder::me();
        let line = serde_json::to_string(&holder).map_err(|e| format!("lock file: {e}"))? + "\n";
        let write = |file: &mut File| -> std::io::Result<()> {
            file.set_len(0)?;
            file.seek(SeekFrom::Start(0))?;
            file.write_all(line.as_bytes())?;
            file.flush()
        };
        write(&mut file).map_err(|e| format!("failed to lock {what}: cannot write {}: {e}", path.display()))?;
        Ok(WriterLock { _file: file, path: path.to_path_buf(), holder })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// This process, as the lock file names it.
    pub fn holder(&self) -> &Holder {
        &self.holder
    }
}

/// The locks of a job's process: its part of the checkpoint directory, then its output and
/// dead-letter files (those it writes as files). Held until dropped (the process' end).
///
/// # Errors
/// The first lock another job holds, naming it.
pub fn lock_what_the_job_writes(cli: &Cli) -> Result<Vec<WriterLock>, String> {
    let mut locks = Vec::new();
    if let Some(dir) = &cli.checkpoints {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create checkpoint directory {}: {e}", dir.display()))?;
        let what = format!("the checkpoint directory {} (process {})", dir.display(), cli.process);
        locks.push(WriterLock::acquire(&dir.join(format!("writer-p{}.lock", cli.process)), &what)?);
    }
    locks.extend(lock_output_files(cli)?);
    Ok(locks)
}

/// The locks on the output and dead-letter files a process writes as files (a job taking over
/// takes them once the other job has let go of them, `crate::handoff`).
///
/// # Errors
/// The first lock another job holds, naming it.
pub fn lock_output_files(cli: &Cli) -> Result<Vec<WriterLock>, String> {
    let mut locks = Vec::new();
    let out = (cli.kafka.output_topic.is_none() && cli.out != "-").then(|| PathBuf::from(&cli.out));
    let dead = cli.dead_letter.clone().filter(|p| cli.kafka.dead_letter_topic.is_none() && p.as_os_str() != "-");
    for (file, name) in [(out, "output file"), (dead, "dead-letter file")] {
        let Some(file) = file.filter(|f| is_a_file_of_its_own(f)) else { continue };
        let what = format!("the {name} {}", file.display());
        locks.push(WriterLock::acquire(&beside(&file), &what)?);
    }
    Ok(locks)
}

/// Whether `path` is (or will be created as) a regular file a job owns: not a device, a pipe or
/// a name for one (`/dev/null`, `/dev/stdout`, `/proc/self/fd/1`), which many jobs may share and
/// beside which no lock file belongs.
fn is_a_file_of_its_own(path: &Path) -> bool {
    if path.starts_with("/dev") || path.starts_with("/proc") {
        return false;
    }
    match std::fs::metadata(path) {
        Ok(m) => m.is_file(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// `FILE.lock`, beside `file`.
fn beside(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// This host's name (`gethostname(2)`), or `unknown`.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is what is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if rc != 0 || end == 0 {
        return "unknown".to_string();
    }
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn cli(args: &[&str]) -> Cli {
        Cli::parse_from(std::iter::once("saams").chain(args.iter().copied()))
    }

    #[test]
    fn the_processes_of_one_job_lock_their_own_parts_and_meet_another_jobs_same_index() {
        let dir = std::env::temp_dir().join(format!("saams-writer-lock-parts-{}", std::process::id()));
        let d = dir.display().to_string();
        let p0 = lock_what_the_job_writes(&cli(&["-n", "2", "-p", "0", "--checkpoints", &d])).expect("process 0");
        let p1 = lock_what_the_job_writes(&cli(&["-n", "2", "-p", "1", "--checkpoints", &d])).expect("process 1");
        assert_eq!(p0[0].path(), dir.join("writer-p0.lock"));
        assert_eq!(p1[0].path(), dir.join("writer-p1.lock"));
        // Another job's process 0, whatever its -n, meets this job's process 0.
        let e = lock_what_the_job_writes(&cli(&["--checkpoints", &d])).unwrap_err();
        assert!(e.starts_with(&format!("failed to lock the checkpoint directory {d} (process 0)")), "{e}");
        drop((p0, p1));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn stdout_and_kafka_outputs_take_no_file_lock() {
        assert!(lock_what_the_job_writes(&cli(&[])).expect("stdout").is_empty());
        let out = std::env::temp_dir().join(format!("saams-writer-lock-out-{}.jsonl", std::process::id()));
        let o = out.display().to_string();
        let locks = lock_what_the_job_writes(&cli(&["--out", &o])).expect("file");
        assert_eq!(locks[0].path(), beside(&out));
        assert!(!out.exists(), "the lock does not create the output");
        let kafka = lock_what_the_job_writes(&cli(&["--out", &o, "--output-topic", "t"])).expect("topic");
        assert!(kafka.is_empty());
        // Devices are shared: every process of a measurement writes to /dev/null.
        let null = lock_what_the_job_writes(&cli(&["--out", "/dev/null", "--dead-letter", "/dev/null"]));
        assert!(null.expect("/dev/null").is_empty());
        drop(locks);
        let _ = std::fs::remove_file(beside(&out));
    }
}
