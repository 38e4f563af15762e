//! Writing checkpoints: every worker its part, the last worker of a process the output commit
//! and the process' manifest.
//!
//! A worker writes its part of the checkpoint at boundary `b` once its three stateful operators
//! have copied their state at `b` ([`saams_operators::checkpoint`]) and its probe has passed `b`
//! (every answer line before `b` has reached the process' sink). The last of a process' workers
//! then commits the sink (its held lines before `b` are written and fsynced: the output's length
//! goes into the manifest; answers to Kafka are produced and delivered, and the topic's end
//! offsets go into the manifest, see [`crate::kafka::produce`]), makes the dead letters durable (the
//! file flushed and synced, its length in the manifest; a topic's records delivered) and writes
//! the manifest, last: the checkpoint is complete once every process' manifest is there.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use saams::checkpoint::{
    CheckpointPart, LoggedRequest, MANIFEST_FORMAT, Manifest, OutputMark, PartEntry, SourcePosition, StateRole,
    SynopsisState, TopicOffsets,
};
use saams_operators::Plan;
use saams_operators::checkpoint::Taken;
use saams_operators::device_replies::RepliesCopy;
use saams_operators::plan::Mode;

use crate::checkpoint::CheckpointStore;
use crate::sink::file::LineSink;

/// A checkpoint's parts this process has written: its boundary, their entries, the synopses'
/// own bytes in them.
type PartsSoFar = (u64, Vec<PartEntry>, u64);

/// Reads the answer topic's end offsets once a commit's answers are delivered (a job writing its
/// answers to Kafka: [`crate::kafka::produce`]'s deduplication on restart starts there).
pub type OutputOffsets = Box<dyn Fn() -> Result<TopicOffsets, String> + Send + Sync>;

/// A process' checkpoint writer, shared by its workers.
pub struct CheckpointJob {
    store: CheckpointStore,
    /// This process, the processes, workers per process.
    shape: (u32, u32, u32),
    window_ms: u64,
    /// The request script the job started with (a restart must start with the same).
    script: String,
    /// What the job reads (a restart must read the same).
    inputs: Vec<String>,
    sink: Arc<LineSink>,
    /// The output file (`None`: stdout or Kafka, nothing to cut back).
    out_path: Option<String>,
    /// The dead letters' sink, made durable before each manifest, and its file (`None`: stdout
    /// or Kafka, nothing to cut back).
    dead: Option<(Arc<LineSink>, Option<String>)>,
    /// The answer topic's offsets (`None`: answers go to a file or stdout).
    output_offsets: Option<OutputOffsets>,
    /// Parts written so far, by checkpoint id.
    parts: Mutex<BTreeMap<u64, PartsSoFar>>,
    /// A test hook: end the process (as `kill -9` would) after the parts of this checkpoint are
    /// written and before its manifest (`SAAMS_CRASH_BEFORE_MANIFEST`).
    crash_before_manifest: Option<u64>,
    /// A test hook: end the process after this checkpoint's answers are written (delivered, for
    /// Kafka) and before its manifest (`SAAMS_CRASH_AFTER_OUTPUT`): the output is then ahead of
    /// the newest checkpoint.
    crash_after_output: Option<u64>,
    /// Checkpoints this process completed.
    pub completed: AtomicU64,
    /// The bytes of this process' parts of its last checkpoint.
    pub last_bytes: AtomicU64,
    /// The synopses' own encoded bytes in them.
    pub last_synopsis_bytes: AtomicU64,
    /// Time spent writing checkpoints (µs).
    pub writing_us: AtomicU64,
    /// A hand-off (`crate::handoff`): the job's last checkpoint (`u64::MAX`: none yet), and
    /// whether this process has written it.
    last: (AtomicU64, std::sync::atomic::AtomicBool),
}

/// What a process' checkpoints need to know of the job.
pub struct JobShape {
    /// This process' index.
    pub process: usize,
    /// Processes in the job.
    pub processes: usize,
    /// Workers per process.
    pub workers: usize,
    /// The window (ms).
    pub window_ms: u64,
    /// The request script (process 0 has it).
    pub script: String,
    /// The inputs' names (as the job names them: `saams_jobs::job::input_names`).
    pub inputs: Vec<String>,
    /// The output file (`None`: stdout).
    pub out_path: Option<String>,
    /// The answer topic's offsets, when answers go to Kafka.
    pub output_offsets: Option<OutputOffsets>,
    /// The dead letters' sink and its file (`None`: stdout or a topic).
    pub dead: Option<(Arc<LineSink>, Option<String>)>,
}

impl CheckpointJob {
    /// A writer into `store` for this process.
    pub fn new(store: CheckpointStore, shape: JobShape, sink: Arc<LineSink>) -> CheckpointJob {
        let crash_before_manifest = std::env::var("SAAMS_CRASH_BEFORE_MANIFEST").ok().and_then(|v| v.parse().ok());
        let crash_after_output = std::env::var("SAAMS_CRASH_AFTER_OUTPUT").ok().and_then(|v| v.parse().ok());
        CheckpointJob {
            store,
            shape: (shape.process as u32, shape.processes as u32, shape.workers as u32),
            window_ms: shape.window_ms,
            script: shape.script,
            inputs: shape.inputs,
            sink,
            out_path: shape.out_path,
            output_offsets: shape.output_offsets,
            dead: shape.dead,
            parts: Mutex::new(BTreeMap::new()),
            crash_before_manifest,
            crash_after_output,
            completed: AtomicU64::new(0),
            last_bytes: AtomicU64::new(0),
            last_synopsis_bytes: AtomicU64::new(0),
            writing_us: AtomicU64::new(0),
            last: (AtomicU64::new(u64::MAX), std::sync::atomic::AtomicBool::new(false)),
        }
    }

    /// A new job takes over from checkpoint `id` (`crate::handoff`): it is this job's last.
    /// Its answers at or after its boundary are the new job's to write: this process' output
    /// drops them, and writes no checkpoint after it.
    pub fn end_with(&self, id: u64) {
        self.last.0.fetch_min(id, Ordering::Relaxed);
    }

    /// Whether this process has written its part and manifest of its last checkpoint
    /// ([`CheckpointJob::end_with`]): the job may stop.
    pub fn ended(&self) -> bool {
        self.last.1.load(Ordering::Relaxed)
    }

    /// A worker has taken its part at `boundary` (its plan forgets the boundary): the output
    /// holds lines at or after it until the process commits.
    pub fn begin(&self, boundary: u64) {
        self.sink.begin(boundary);
    }

    /// This worker's part of checkpoint `id` at `boundary`: the operators' copies, where its
    /// inputs stand and, in a job merging devices, its process' table of devices' replies.
    pub fn part(
        &self,
        plan: &Plan,
        (id, boundary, worker): (u64, u64, usize),
        taken: Taken,
        sources: Vec<SourcePosition>,
    ) -> CheckpointPart {
        let synopses = taken
            .states
            .into_iter()
            .map(|h| {
                let role = match (h.latest, h.pane, plan.routing.synopses.get(h.syn as usize).map(|s| s.mode)) {
                    (true, ..) => StateRole::Latest,
                    (false, true, _) => StateRole::Pane,
                    (false, false, Some(Mode::Owned)) => StateRole::Owned,
                    (false, false, _) => StateRole::Spread,
                };
                SynopsisState {
                    syn: h.syn,
                    role,
                    items: h.items,
                    loads_merged: h.loads_merged as u32,
                    since: h.since,
                    until: h.until,
                    bytes: h.state.encode_exact(),
                }
            })
            .collect();
        // A job merging devices: the asks waiting for their devices' answers, as this process'
        // table is now (a resumed job starts from each process' last copy); any job: the asks
        // this worker sent before the boundary for requests fenced after it.
        let (attached, sent_before) = {
            let mut checkpoints = plan.checkpoints.borrow_mut();
            (checkpoints.replies_attached, checkpoints.sent_before(boundary))
        };
        let device_replies = match (attached, sent_before.is_empty()) {
            (false, true) => Vec::new(),
            (true, _) => RepliesCopy { sent_before, ..plan.device_replies.copy_at(worker, boundary) }.encode(),
            (false, false) => RepliesCopy { sent_before, ..RepliesCopy::default() }.encode(),
        };
        CheckpointPart {
            id,
            boundary_ms: boundary,
            process: self.shape.0,
            worker: worker as u32,
            processes: self.shape.1,
            workers: self.shape.2,
            synopses,
            previous_sets: taken.sets,
            sources,
            monitors: taken.monitors,
            device_replies,
            // What the worker has read when it writes (the caller's to set).
            tuples: 0,
        }
    }

    /// Write a worker's part; the process' last one also commits the output and writes the
    /// manifest. Returns true if the checkpoint is now complete for this process.
    ///
    /// # Errors
    /// When a file cannot be written (the checkpoint is then incomplete: a restart uses the one
    /// before).
    pub fn write(&self, part: &CheckpointPart, log: &[LoggedRequest]) -> Result<bool, String> {
        let last = self.last.0.load(Ordering::Relaxed);
        if part.id > last {
            // After the last checkpoint of a hand-off: the directory is the new job's.
            return Ok(false);
        }
        let started = Instant::now();
        let entry = self.store.write_part(part)?;
        let synopsis_bytes: u64 = part.synopses.iter().map(|s| s.bytes.len() as u64).sum();
        let mut parts = self.parts.lock().map_err(|_| "checkpoint writer poisoned".to_string())?;
        let (_, entries, own) = parts.entry(part.id).or_insert_with(|| (part.boundary_ms, Vec::new(), 0));
        entries.push(entry);
        *own += synopsis_bytes;
        if entries.len() < self.shape.2 as usize {
            self.writing_us.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            return Ok(false);
        }
        let Some((boundary, mut entries, own)) = parts.remove(&part.id) else { return Ok(false) };
        entries.sort_by(|a, b| a.file.cmp(&b.file));
        if self.crash_before_manifest == Some(part.id) {
            eprintln!("saams: SAAMS_CRASH_BEFORE_MANIFEST={}: ending the process", part.id);
            std::process::abort();
        }
        if part.id == last {
            // Before the cut: no answer at or after the boundary is written from now on.
            self.sink.end_at(boundary);
        }
        let bytes = self.sink.commit(boundary)?;
        // Dead letters of the lines before the checkpoint's positions are not written again
        // after a restart (those lines are not read again): flushed and synced (delivered, to a
        // topic) before the manifest, their file's length recorded.
        let dead_letters = match &self.dead {
            Some((dead, path)) => {
                let bytes = dead.commit(boundary)?;
                path.clone().map(|path| OutputMark { path, bytes })
            }
            None => None,
        };
        if self.crash_after_output == Some(part.id) {
            eprintln!("saams: SAAMS_CRASH_AFTER_OUTPUT={}: ending the process", part.id);
            std::process::abort();
        }
        let output_offsets = self.output_offsets.as_ref().map(|read| read()).transpose()?;
        let manifest = Manifest {
            format: MANIFEST_FORMAT,
            id: part.id,
            boundary_ms: boundary,
            process: self.shape.0,
            processes: self.shape.1,
            workers: self.shape.2,
            window_ms: self.window_ms,
            created_unix_ms: crate::clock::now_unix_ms(),
            parts: entries.clone(),
            output: self.out_path.as_ref().map(|path| OutputMark { path: path.clone(), bytes }),
            dead_letters,
            script: self.script.clone(),
            requests: log.to_vec(),
            inputs: self.inputs.clone(),
            output_offsets,
        };
        self.store.commit(&manifest, self.shape.0 == 0)?;
        self.completed.fetch_add(1, Ordering::Relaxed);
        if part.id == last {
            self.last.1.store(true, Ordering::Relaxed);
        }
        self.last_bytes.store(entries.iter().map(|e| e.bytes).sum(), Ordering::Relaxed);
        self.last_synopsis_bytes.store(own, Ordering::Relaxed);
        self.writing_us.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        Ok(true)
    }

    /// The summary line of the checkpoints written (stderr at the end).
    pub fn report(&self) -> String {
        format!(
            "checkpoints written={} last_checkpoint_bytes={} its_synopses_bytes={} writing_ms={}",
            self.completed.load(Ordering::Relaxed),
            self.last_bytes.load(Ordering::Relaxed),
            self.last_synopsis_bytes.load(Ordering::Relaxed),
            self.writing_us.load(Ordering::Relaxed) / 1000
        )
    }
}
