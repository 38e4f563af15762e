//! What `--checkpoints` sets up before the workers start: the checkpoint to resume from (if
//! any), the output cut back to it, and the schedule.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::checkpoint::CheckpointStore;
use crate::checkpoint::resume::Resume;
use crate::control::request_log::{LiveRequests, RequestLog};
use crate::duration::parse_duration_ms;
use crate::sink::file::LineSink;

/// What recovery reads of the job's command line: the `--checkpoint-*` flags, the inputs a
/// restart could not read again, and where this process writes its answers.
///
/// Why not the whole `Cli`: the command line names every part of the job (sources among them,
/// which use checkpoints), so taking it made the modules depend on each other in a circle.
#[derive(Clone, Copy, Debug)]
pub struct RecoveryOptions<'a> {
    /// Wall-clock time between checkpoints, as given (`--checkpoint-interval`, e.g. `10s`).
    pub interval: &'a str,
    /// How many complete checkpoints to keep (`--checkpoint-keep`).
    pub keep: usize,
    /// Whether tuples are read from stdin (`--data -`).
    pub reads_stdin: bool,
    /// This process' index (`-p`).
    pub process: usize,
    /// The job's processes (`-n`).
    pub processes: usize,
    /// Where this process writes its answers (`--out`, `-` for stdout).
    pub out: &'a str,
    /// `--take-over`: the directory is another job's until it hands off, so nothing in it is
    /// opened for writing (the request log is opened at the hand-off, `crate::handoff`).
    pub take_over: bool,
    /// The newest checkpoint id to resume from (`u64::MAX`: any; a process of a job taking
    /// over resumes from the one its process 0 chose, exactly).
    pub at_most: u64,
}

/// A job's checkpoint settings and the checkpoint it resumes from.
pub struct Recovery {
    /// The checkpoint directory.
    pub dir: PathBuf,
    /// How many complete checkpoints to keep.
    pub keep: usize,
    /// The newest complete checkpoint (`None`: the job starts from the beginning).
    pub resume: Option<Arc<Resume>>,
    /// Wall-clock time between checkpoints.
    pub every: Duration,
    /// The id the next checkpoint gets.
    pub first_id: u64,
    /// The live requests to apply before reading on, and this process' request log.
    pub live: Arc<LiveRequests>,
}

impl Recovery {
    /// Open `dir` and find the checkpoint to resume from, checked against this job (`window_ms`,
    /// the request script where this process has it, the input names: one list per way the job
    /// can cut its files into ranges, its own first, as [`Resume::newest`] takes them).
    ///
    /// # Errors
    /// For inputs that cannot be read again (stdin), a bad interval, an
    /// unreadable directory, or a checkpoint of another job.
    pub fn open(
        options: &RecoveryOptions<'_>,
        dir: &Path,
        (window_ms, script, inputs): (u64, Option<&str>, &[Vec<String>]),
    ) -> Result<Recovery, String> {
        refuse_what_cannot_be_resumed(options)?;
        let every = parse_duration_ms(options.interval)?;
        if every == 0 {
            return Err("--checkpoint-interval must be longer than 0".into());
        }
        if options.keep == 0 {
            return Err("--checkpoint-keep must be at least 1".into());
        }
        let store = CheckpointStore::open(dir, options.keep)?;
        let resume = Resume::newest_at_most(&store, options.at_most, window_ms, script, inputs)?;
        if options.at_most != u64::MAX && resume.as_ref().is_none_or(|r| r.id != options.at_most) {
            return Err(format!(
                "checkpoint {} that process 0 starts from is no longer complete in {} (removed as newer ones were written): start the take-over again",
                options.at_most,
                dir.display()
            ));
        }
        if let Some(r) = &resume {
            let at = saams::api::time::format_timestamp(r.boundary_ms.min(i64::MAX as u64) as i64);
            eprintln!("saams: resuming from checkpoint {} at {at}: values from then on are read again", r.id);
        }
        // This process' log first: it cuts a line a crash left half-written (not a job taking
        // over: the log is the running job's, and may be growing).
        let opened = if options.take_over { None } else { Some(RequestLog::open(dir, options.process)?) };
        let mut requests = resume.as_ref().map(|r| r.requests().to_vec()).unwrap_or_default();
        let recovered = RequestLog::recover(dir, &requests)?;
        if !recovered.pending.is_empty() {
            eprintln!(
                "saams: request log: {} acknowledged live request(s) the checkpoint does not hold are applied again at their fences",
                recovered.pending.len()
            );
        }
        requests.extend(recovered.pending);
        let live = Arc::new(match opened {
            Some(log) => LiveRequests::new(requests, recovered.next_at, log),
            None => LiveRequests::without_log(requests, recovered.next_at),
        });
        Ok(Recovery {
            dir: dir.to_path_buf(),
            keep: options.keep,
            resume: resume.map(Arc::new),
            every: Duration::from_millis(every as u64),
            first_id: store.next_id(),
            live,
        })
    }

    /// The output sink: the file cut back to the length the checkpoint recorded (created anew
    /// without one), its lines held until each checkpoint is written.
    ///
    /// # Errors
    /// When the file cannot be opened or is shorter than recorded.
    pub fn open_output(&self, options: &RecoveryOptions<'_>) -> Result<LineSink, String> {
        let keep = self.resume.as_ref().and_then(|r| r.output_bytes(options.process, options.out));
        if options.process == 0
            && let Some(r) = &self.resume
        {
            // A job resumed with fewer processes: their outputs, where they are on this host.
            for (path, bytes) in r.outputs_beyond(options.processes) {
                if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&path) {
                    f.set_len(bytes).map_err(|e| format!("cannot cut {path} back to {bytes} bytes: {e}"))?;
                }
            }
        }
        Ok(LineSink::open_at(options.out, keep)?.hold_until_commit())
    }

    /// The dead-letter file `path`: a job that resumes keeps it, cut back to the length the
    /// checkpoint recorded (the dead letters of the lines read again after the checkpoint are
    /// written again; those of earlier lines stay, as no restart reads those lines again), or
    /// whole when the checkpoint recorded none for it or it is shorter than recorded. A job that
    /// does not resume starts it anew.
    ///
    /// Why: a resumed job that truncated the file lost every dead letter from before the crash.
    ///
    /// # Errors
    /// When the file cannot be opened or cut.
    pub fn open_dead_letters(&self, process: usize, path: &str) -> Result<LineSink, String> {
        let Some(resume) = &self.resume else { return LineSink::open(path) };
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        let keep = resume.dead_letter_bytes(process, path).map_or(len, |bytes| bytes.min(len));
        LineSink::open_at(path, Some(keep))
    }
}

/// `--checkpoints` with inputs a restart cannot read again: stdin. (A request topic can be: its
/// position is in the request log, `crate::job::request_topic`.)
/// Checked before anything is opened, so the message comes first.
///
/// # Errors
/// The message saying which input and what to do instead.
pub fn refuse_what_cannot_be_resumed(options: &RecoveryOptions<'_>) -> Result<(), String> {
    if options.reads_stdin {
        return Err(
            "--checkpoints: stdin (--data -) cannot be read again after a restart; read files or the generator".into(),
        );
    }
    Ok(())
}
