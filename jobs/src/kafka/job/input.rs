//! One worker's input from the data topic ([`KafkaInput`]): polls a batch, parses and routes the
//! tuples, sends malformed and late records to the dead letters, follows the epoch idle workers
//! share, and commits the offsets of flushed windows.
//!
//! Why its own file: it is the per-record path of the Kafka job, driven from each worker's loop.
//! How the process opens it ([`KafkaJob::worker_input`]) is here too, so that this file uses the
//! process' side and not the other way round.

use std::str::Utf8Error;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use saams::api::Tuple;
use saams_datasets::LineContext;

use super::marks::Marks;
use super::process::{Awaited, KafkaJob};
use crate::checkpoint::resume::Resume;
use crate::kafka::consume::positions::PartitionPositions;
use crate::kafka::consume::records::RecordRef;
use crate::kafka::consume::tuple_source::KafkaTupleSource;
use crate::kafka::format::{MAX_LINES_PER_RECORD, RecordLines, for_each_line};
use crate::sink::file::LineSink;
use crate::stats::Stats;

/// How often a worker commits the offsets of flushed windows.
const COMMIT_INTERVAL: Duration = Duration::from_secs(1);
/// How many records one poll hands to the dataflow before the worker steps it.
const POLL_BATCH: usize = 8192;
/// A record's line number is kept below this in a tuple's sequence number: a record of the
/// batched format carries at most [`MAX_LINES_PER_RECORD`] tuples.
const LINE_BITS: u32 = MAX_LINES_PER_RECORD.trailing_zeros();
/// Offsets are kept in this many bits of a tuple's sequence number, above the line.
const OFFSET_BITS: u32 = 38;
/// The partition is kept in this many bits above the offset (below the Kafka flag, bit 63).
const PARTITION_BITS: u32 = 11;

/// One worker's input from the data topic, driven from the worker's loop without blocking the
/// dataflow: [`poll`](Self::poll) a batch, downgrade the input to [`low`](Self::low), step, then
/// [`maybe_commit`](Self::maybe_commit) what the probe shows flushed; [`finish`](Self::finish) at
/// the end.
pub struct KafkaInput {
    job: Arc<KafkaJob>,
    ctx: LineContext,
    topic: String,
    source: KafkaTupleSource,
    file_dead: Option<Arc<LineSink>>,
    /// The answers' sink when it writes a file (or stdout): flushed before offsets are committed.
    file_answers: Option<Arc<LineSink>>,
    marks: Marks,
    /// The partitions' positions at checkpoint boundaries (a job with `--checkpoints`).
    positions: Option<PartitionPositions>,
    /// Resumed mid-record: `(partition, offset, line)` of a record whose lines before `line`
    /// were counted before the checkpoint (removed once that record is read).
    resume_lines: Vec<(i32, i64, usize)>,
    committed_through: Option<u64>,
    /// Windows through `.0` closed, waiting for the producers to acknowledge what they were
    /// handed before `.1` (the answers of those windows, the dead letters of their records)
    /// before their offsets are committed.
    prepared: Option<(u64, Awaited)>,
    last_commit: Instant,
    quiet: bool,
    /// Lines (tuples) per record in the last poll that read any: 1 for a topic of one tuple per
    /// record. `max` and [`POLL_BATCH`] count tuples; a poll takes that many over this records.
    lines_per_record: f64,
    floor_ms: i64,
    /// The tuple every line is parsed into and routed from, by reference: its strings and field
    /// vector are reused line after line. Handing each line's tuple to the worker by value (and
    /// back to the parsers' thread-local pool) copied its ~90 bytes once more a line, about a
    /// quarter of the line loop's samples (docs/figures.md, "The batched format's cost per line").
    tuple: Tuple,
}

impl KafkaInput {
    /// The input of one worker of `job` from its share `source` of `topic`; records are parsed as
    /// JSON tuples with `ctx`; rejected ones go to the job's dead-letter topic, else to `file_dead`.
    /// `file_answers` is the answers' sink when they go to a file or stdout (not to a topic).
    fn new(
        job: Arc<KafkaJob>,
        ctx: LineContext,
        topic: String,
        mut source: KafkaTupleSource,
        (file_dead, file_answers): (Option<Arc<LineSink>>, Option<Arc<LineSink>>),
        (positions, resume_lines): (Option<PartitionPositions>, Vec<(i32, i64, usize)>),
    ) -> Self {
        // The worker that polls this input opens it (`worker_input`), and parks when it is quiet.
        source.wake_on_records(std::thread::current());
        KafkaInput {
            job,
            ctx,
            topic,
            source,
            file_dead,
            file_answers,
            marks: Marks::default(),
            positions,
            resume_lines,
            committed_through: None,
            prepared: None,
            last_commit: Instant::now(),
            quiet: false,
            lines_per_record: 1.0,
            floor_ms: 0,
            tuple: Tuple::default(),
        }
    }

    /// Records this worker's partitions lag by (see [`KafkaTupleSource::lag`]).
    pub fn lag(&self) -> Option<u64> {
        self.source.lag()
    }

    /// True while this worker should keep reading (see [`KafkaJob::running`]); a worker without
    /// partitions stops at once so it never holds windows open.
    pub fn running(&self) -> bool {
        !self.source.partitions().is_empty() && self.job.running()
    }

    /// True when this worker may read on after [`KafkaInput::running`] turned false: it has
    /// partitions and only `--exit-when-idle` ended the input (no signal, no fatal error). A job
    /// merging devices does while a device owes an answer (`crate::edge::devices::owed`).
    pub fn may_read_on(&self) -> bool {
        !self.source.partitions().is_empty() && !self.job.stopped()
    }

    /// Whether the last poll found nothing: the worker may then park until records come (they
    /// wake it, see [`KafkaTupleSource::wake_on_records`]).
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// Polls, without waiting, up to one batch of records holding about `max` tuples
    /// (`--rate`'s allowance), parses each line of each record (one, or
    /// many in the batched format) as a JSON tuple (event time: the tuple's, else the record
    /// timestamp) and hands valid, on-time tuples to `route(seq, tuple)`, which returns the
    /// tuple's window (the tuple is lent: the next line is parsed into it). Malformed and late lines go to the dead letters and are counted in
    /// `stats`; the rest of their record is still read. Returns the records handled.
    pub fn poll(&mut self, max: u64, stats: &Stats, mut route: impl FnMut(u64, &Tuple) -> u64) -> usize {
        // below the watermark, or below the epoch this worker's input already passed: late
        let late_below = self.source.watermark().map_or(self.floor_ms, |w| w.max(self.floor_ms));
        let KafkaInput { job, ctx, topic, source, file_dead, marks, positions, resume_lines, tuple, .. } = self;
        let max = usize::try_from(max).map_or(POLL_BATCH, |m| m.min(POLL_BATCH));
        // `max` counts tuples: `--rate` and the batch a step handles hold for batched records
        // too (give or take the last record's lines).
        let records = ((max as f64 / self.lines_per_record).ceil() as usize).max(1);
        let mut lines_read = 0usize;
        let polled = source.poll_with(records, Duration::ZERO, |r| {
            let skip = resume_skip(resume_lines, r.partition, r.offset);
            // One line of the record: its bytes and their text (the reason when not UTF-8).
            let handle = |line: usize, bytes: &[u8], text: Result<&str, Utf8Error>| {
                lines_read += 1;
                let line = line as u64;
                match admit((ctx, &mut *tuple), (&r, text, line), late_below, &mut route) {
                    Ok(routed) => {
                        if let Some(p) = positions.as_mut() {
                            p.record(r.partition, r.offset, line, routed.map(|(time, _)| time));
                        }
                        marks.push(r.partition, r.offset, routed);
                    }
                    Err(Rejected { reason, late }) => {
                        if let Some(p) = positions.as_mut() {
                            p.record(r.partition, r.offset, line, None);
                        }
                        stats.dead_letters.fetch_add(1, Ordering::Relaxed);
                        if late {
                            stats.late.fetch_add(1, Ordering::Relaxed);
                        }
                        // A batched record's lines are numbered in its dead letters.
                        let numbered = RecordLines::new(r.payload).is_batch();
                        let rejected = RecordRef { payload: bytes, ..r };
                        job.reject(topic, (&rejected, numbered.then_some(line)), &reason, file_dead.as_deref());
                        marks.push(r.partition, r.offset, None);
                    }
                }
            };
            for_each_line(r.payload, skip, handle);
        });
        let n = self.after_poll(polled);
        if n > 0 {
            self.lines_per_record = (lines_read as f64 / n as f64).max(1.0);
        }
        n
    }

    /// What every poll does after reading: a failed poll stops the job with its error, the
    /// records' positions go to the partitions' clocks and offsets, and a quiet topic is noted
    /// (the worker may park). The number of records read.
    fn after_poll<E: std::fmt::Display>(&mut self, polled: Result<usize, E>) -> usize {
        let n = polled.unwrap_or_else(|e| {
            self.job.set_fatal(e.to_string());
            0
        });
        let KafkaTupleSource { clock, offsets, .. } = &mut self.source;
        self.marks.drain_into(clock, offsets, Instant::now());
        if n > 0 {
            self.job.touch(n);
        }
        self.quiet = n == 0;
        n
    }

    /// [`poll`](Self::poll) for a topic of device shipments (`--partials-topic`): each record is
    /// one shipment, handed whole to `admit(partition, payload, late_below)`, which sends its records into
    /// the tuple input and returns `Ok(Some((time, window, clock)))` (the window's start, the
    /// window, and the event time the partition's clock moves to: the window the device moved
    /// on to, or `time`), `Ok(None)` for a record that carries no values (hello, goodbye), or
    /// the reason it was refused and whether it came late (dead-lettered like a bad tuple). A
    /// checkpoint's position is judged by `time` (a resumed job reads the record again when its
    /// window is after the boundary), the offset's commit by `window`.
    pub fn poll_shipments(
        &mut self,
        max: u64,
        stats: &Stats,
        mut admit: impl FnMut(i32, &[u8], i64) -> Result<Option<(i64, u64, i64)>, (String, bool)>,
    ) -> usize {
        let late_below = self.source.watermark().map_or(self.floor_ms, |w| w.max(self.floor_ms));
        let KafkaInput { job, topic, source, file_dead, marks, positions, .. } = self;
        let records = usize::try_from(max).map_or(POLL_BATCH, |m| m.clamp(1, POLL_BATCH));
        let polled = source.poll_with(records, Duration::ZERO, |r| {
            let at = match admit(r.partition, r.payload, late_below) {
                Ok(Some(routed)) => Some(routed),
                Ok(None) => None,
                Err((reason, late)) => {
                    stats.dead_letters.fetch_add(1, Ordering::Relaxed);
                    if late {
                        stats.late.fetch_add(1, Ordering::Relaxed);
                    }
                    job.reject(topic, (&r, None), &reason, file_dead.as_deref());
                    None
                }
            };
            if let Some(p) = positions.as_mut() {
                p.record(r.partition, r.offset, 0, at.map(|(time, _, _)| time));
            }
            marks.push(r.partition, r.offset, at.map(|(_, window, clock)| (clock, window)));
        });
        self.after_poll(polled)
    }

    /// Whether no device ships to `partition` now (a partials topic: [`crate::edge::intake`]
    /// says when its first device is heard and when its last says goodbye).
    pub fn set_vacant(&mut self, partition: i32, vacant: bool) {
        self.source.clock.set_vacant(partition, vacant);
    }

    /// Keep every partition's position at checkpoint boundary `b` (a job with `--checkpoints`).
    pub fn want(&mut self, b: u64) {
        if let Some(p) = self.positions.as_mut() {
            p.want(b);
        }
    }

    /// Every partition's position at boundary `b` (empty without `--checkpoints`): the first
    /// record at or after `b` it routed, else the next offset to read.
    pub fn positions(&mut self, b: u64) -> Vec<saams::checkpoint::SourcePosition> {
        self.positions.as_mut().map(|p| p.positions(b)).unwrap_or_default()
    }

    /// The oldest window this worker may still send to (its input epoch): the window of its
    /// watermark; while all of its partitions are idle, the newest epoch any active worker reached
    /// (of this process, or of another one through [`KafkaInput::follow`]), so silent partitions do
    /// not hold windows open.
    ///
    /// Also returns the epoch this worker reached from its own partitions (`None` while they are
    /// all idle), which the job gossips to every worker of every process ([`KafkaInput::follow`]).
    pub fn low(&mut self, window_of: impl Fn(i64) -> u64) -> (u64, Option<u64>) {
        let (low, own) = if self.source.is_idle() {
            (self.job.epoch_hint.load(Ordering::Relaxed), None)
        } else {
            let low = self.source.watermark().map_or(0, window_of);
            self.job.epoch_hint.fetch_max(low, Ordering::Relaxed);
            (low, Some(low))
        };
        self.floor_ms = self.floor_ms.max(i64::try_from(low).unwrap_or(i64::MAX));
        (low, own)
    }

    /// Raises the epoch that this process' idle workers follow to `low`, an epoch an active worker
    /// of any process reached. Without it a process whose partitions are all idle holds its input
    /// at the last epoch it saw, and the other processes' windows can never close.
    pub fn follow(&self, low: u64) {
        self.job.epoch_hint.fetch_max(low, Ordering::Relaxed);
    }

    /// At most once a second, without waiting: commits the offsets of the records that windows
    /// closed by the dataflow's frontier (`None`: everything done) consumed, once every answer
    /// of those windows and every dead letter of those records is safe (at-least-once): the
    /// producers of a job answering or dead-lettering to Kafka have acknowledged them, and
    /// sinks writing files have flushed them to the operating system.
    ///
    /// Each call first commits the windows prepared by an earlier call if the producers have
    /// acknowledged their records by now, then prepares the windows closed since: their answers
    /// were handed to the estimation producer before this call (the frontier passed them), and
    /// the dead letters of the records they consumed before it (a record is dead-lettered when it
    /// is polled), so the producers' current marks
    /// ([`KafkaEstimationSink::mark`](crate::kafka::KafkaEstimationSink::mark),
    /// [`KafkaDeadLetterSink::mark`](crate::kafka::KafkaDeadLetterSink::mark)) cover them.
    /// Nothing blocks while the brokers are away (a flush here held every worker writing an
    /// answer for the whole outage); commits just wait for the records to get through.
    pub fn maybe_commit(&mut self, frontier: Option<u64>) {
        if self.last_commit.elapsed() < COMMIT_INTERVAL {
            return;
        }
        self.last_commit = Instant::now();
        if let Some((through, awaited)) = self.prepared {
            match self.job.acknowledged(awaited) {
                Ok(true) => {
                    self.prepared = None;
                    self.commit_now(through);
                }
                Ok(false) => return,
                Err(e) => {
                    // Answers or dead letters were lost: these offsets are not committed, and a
                    // restart reads their records again. Later windows are prepared afresh.
                    self.prepared = None;
                    return self.job.problem(format!("not committing: {e}"));
                }
            }
        }
        let through = match frontier {
            None => u64::MAX,
            Some(0) => return,
            Some(f) => f - 1,
        };
        if self.committed_through.is_some_and(|c| c >= through) || self.source.pending_windows() == 0 {
            return;
        }
        match self.job.marks() {
            // Nothing produced to Kafka: nothing to wait for.
            Awaited { answers: None, dead: None } => self.commit_now(through),
            awaited => self.prepared = Some((through, awaited)),
        }
    }

    /// Waits for the producers to deliver everything they were handed, then commits.
    fn commit(&mut self, through: u64) {
        if let Err(e) = self.job.flush_producers() {
            return self.job.problem(format!("not committing: {e}"));
        }
        self.commit_now(through);
    }

    /// Commits the offsets of windows through `through` (`u64::MAX`: all handled), whose answers
    /// and dead letters are delivered, after making those that go to files durable.
    fn commit_now(&mut self, through: u64) {
        for sink in [&self.file_answers, &self.file_dead].into_iter().flatten() {
            if let Err(e) = sink.try_sync() {
                return self.job.problem(format!("not committing: {e}"));
            }
        }
        let result = if through == u64::MAX { self.source.commit_all() } else { self.source.commit_through(through) };
        match result {
            Ok(_) => self.committed_through = Some(through),
            Err(e) => self.job.problem(e.to_string()),
        }
    }

    /// After the dataflow finished (every estimation handed to the sink): deliver, commit all
    /// offsets handled, and keep the consumer's survived errors for the report.
    pub fn finish(mut self) {
        self.commit(u64::MAX);
        let errors = self.source.errors();
        if errors.poll_errors > 0 || errors.commit_failures > 0 {
            self.job.problem(format!(
                "partitions {:?}: {} poll error(s) (last {:?}), {} refused commit(s) (last {:?})",
                self.source.partitions(),
                errors.poll_errors,
                errors.last_poll_error,
                errors.commit_failures,
                errors.last_commit_error
            ));
        }
    }
}

impl KafkaJob {
    /// This worker's share of the data topic (`None` without `--data-topic`). A failure is
    /// reported at exit by [`finish`](Self::finish) and stops the job.
    ///
    /// `file_dead` takes the rejected records when the job has no dead-letter topic; `answers`
    /// is the process' answer sink: when it writes a file (no `--output-topic`), the input
    /// flushes it, and `file_dead`, before committing offsets.
    ///
    /// `checkpoints`: the job writes checkpoints (`Some`), resuming from `Some(resume)`: every
    /// partition then starts at a known offset — the checkpoint's position of
    /// `kafka:<topic>:<partition>`, with its watermark from the newest event time read before
    /// it, else where `--from` says — and the input keeps the partitions' positions at
    /// checkpoint boundaries ([`KafkaInput::want`], [`KafkaInput::positions`]).
    pub fn worker_input(
        self: &Arc<Self>,
        (me, peers): (usize, usize),
        (file_dead, answers): (Option<Arc<LineSink>>, &Arc<LineSink>),
        checkpoints: Option<Option<&Resume>>,
    ) -> Option<KafkaInput> {
        let topic = self.data_topic.as_ref()?;
        let mut resume_lines = Vec::new();
        let opened = match checkpoints {
            None => KafkaTupleSource::new(&self.opts, topic, me, peers, self.lateness_ms, self.idle_timeout)
                .map(|source| (source, None)),
            Some(resume) => {
                let at = |p: i32| {
                    let at = resume?.position(&format!("kafka:{topic}:{p}"))?;
                    Some((i64::try_from(at.offset).unwrap_or(i64::MAX), at.max_time))
                };
                KafkaTupleSource::new_at(&self.opts, topic, (me, peers), (self.lateness_ms, self.idle_timeout), &at)
                    .map(|source| {
                        let mut positions = PartitionPositions::new(topic, source.partitions(), source.starts());
                        for &p in source.partitions() {
                            if let Some((_, Some(newest))) = at(p) {
                                positions.start_from(p, newest);
                            }
                            // Stopped inside a batched record: its first lines were read.
                            if let Some(at) = resume.and_then(|r| r.position(&format!("kafka:{topic}:{p}")))
                                && at.line > 0
                            {
                                let offset = i64::try_from(at.offset).unwrap_or(i64::MAX);
                                resume_lines.push((p, offset, usize::try_from(at.line).unwrap_or(usize::MAX)));
                            }
                        }
                        (source, Some(positions))
                    })
            }
        };
        let (mut source, positions) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                self.set_fatal(format!("worker {me}: {e}"));
                return None;
            }
        };
        if let Some(timeout) = self.vacant_timeout {
            // A device shipped to a partition a checkpoint's position is past the start of.
            let shipped = |p: i32| {
                let at = checkpoints.flatten().and_then(|r| r.position(&format!("kafka:{topic}:{p}")));
                at.is_some_and(|at| at.offset > 0)
            };
            source.vacant_until_heard(timeout, shipped);
        }
        let ctx = match LineContext::new(saams_datasets::Format::JsonLines, topic, None) {
            Ok(ctx) => ctx,
            Err(e) => {
                self.set_fatal(format!("kafka: {e}"));
                return None;
            }
        };
        // with a dead-letter topic, rejected records go there, not to the file
        let file_dead = if self.dead.is_some() { None } else { file_dead };
        // answers to a topic are waited for through the producer, not flushed (which would block)
        let file_answers = self.out.is_none().then(|| answers.clone());
        let sinks = (file_dead, file_answers);
        Some(KafkaInput::new(self.clone(), ctx, topic.clone(), source, sinks, (positions, resume_lines)))
    }
}

/// Why a record was not routed: the dead-letter reason, and whether the record was late.
struct Rejected {
    reason: String,
    late: bool,
}

/// Parses `text`, line `line` of record `r` (the whole payload of a one-tuple record; `Err`
/// when those bytes are not UTF-8), as a JSON tuple, gives it its event time (the tuple's, else
/// the record timestamp) and hands it to `route(sequence number, tuple)`, which returns its
/// window: `Ok(Some((time, window)))` for a routed tuple, `Ok(None)` for a blank line (nothing
/// to do), `Err` for a line that is not UTF-8, not a tuple, without event time, or older than
/// `late_below`.
///
/// Why it routes the tuple itself rather than return it: the tuple then goes from the parser's
/// result straight to `route`. Returned through `Result<Option<(i64, Tuple)>, _>` and matched
/// again by the caller, its ~90 bytes were copied three more times a line, each copy stalling on
/// the one before (a quarter of the Kafka source's own time per batched line: perf annotate,
/// docs/figures.md "Kafka record formats and consumer settings").
#[inline]
fn admit(
    (ctx, t): (&LineContext, &mut Tuple),
    (r, text, line): (&RecordRef<'_>, Result<&str, Utf8Error>, u64),
    late_below: i64,
    route: &mut impl FnMut(u64, &Tuple) -> u64,
) -> Result<Option<(i64, u64)>, Rejected> {
    let refuse = |reason: String| Rejected { reason, late: false };
    if line >= MAX_LINES_PER_RECORD as u64 {
        return Err(refuse(format!("line {line} of a record: a record carries at most {MAX_LINES_PER_RECORD} lines")));
    }
    let text = text.map_err(|e| refuse(format!("record is not UTF-8: {e}")))?;
    match ctx.parse_line_into(r.offset.max(0) as u64, text, t) {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(e) => return Err(refuse(e.message)),
    }
    let Some(time) = t.time_ms.or(r.timestamp_ms) else {
        return Err(refuse("no event time: neither the tuple nor the record has one".into()));
    };
    if time < late_below {
        let reason = format!("late: {} ms behind the watermark of its partitions", late_below - time);
        return Err(Rejected { reason, late: true });
    }
    t.time_ms = Some(time);
    Ok(Some((time, route(sequence_number(r.partition, r.offset, line), t))))
}

/// The lines of the record at `offset` of `partition` to skip: those a resumed checkpoint counted
/// before it stopped inside that record (0 for any other record). A record is found once.
fn resume_skip(resume: &mut Vec<(i32, i64, usize)>, partition: i32, offset: i64) -> usize {
    if resume.is_empty() {
        return 0;
    }
    match resume.iter().position(|&(p, o, _)| p == partition && o == offset) {
        Some(i) => resume.swap_remove(i).2,
        None => 0,
    }
}

/// The sequence number of the tuple on line `line` of the record at `offset` of `partition`: bit 63
/// set, then the partition ([`PARTITION_BITS`]), the offset ([`OFFSET_BITS`]) and the line
/// ([`LINE_BITS`]), so tuples of one partition keep their order (a record's lines in theirs) and
/// tuples of different partitions never share a number. A topic of one tuple per record orders
/// its tuples as before lines were counted (the partition, then the offset).
fn sequence_number(partition: i32, offset: i64, line: u64) -> u64 {
    let partition = partition.max(0) as u64 & ((1 << PARTITION_BITS) - 1);
    let offset = offset.max(0) as u64 & ((1 << OFFSET_BITS) - 1);
    1 << 63 | partition << (OFFSET_BITS + LINE_BITS) | offset << LINE_BITS | (line & ((1 << LINE_BITS) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(payload: &[u8], timestamp_ms: Option<i64>) -> RecordRef<'_> {
        RecordRef { partition: 1, offset: 7, timestamp_ms, key: None, payload }
    }

    /// [`admit`] of line `line` of record `r` (its text `text`): the tuple routed, with its
    /// event time; checks the sequence number and the window `admit` says it was routed with.
    fn admit_line(
        ctx: &LineContext,
        (r, text, line): (&RecordRef<'_>, Result<&str, Utf8Error>, u64),
        late_below: i64,
    ) -> Result<Option<(i64, Tuple)>, Rejected> {
        let mut routed = None;
        let mut tuple =
            Tuple { stream_id: "old".into(), dataset_key: "old".into(), time_ms: Some(1), fields: Vec::new() };
        let admitted = admit((ctx, &mut tuple), (r, text, line), late_below, &mut |seq, t| {
            assert_eq!(seq, sequence_number(r.partition, r.offset, line));
            assert!(routed.is_none(), "one tuple a line");
            routed = Some(t.clone());
            42
        })?;
        match (admitted, routed) {
            (Some((time, 42)), Some(t)) => Ok(Some((time, t))),
            (None, None) => Ok(None),
            other => panic!("admitted {:?} but routed {:?}", other.0, other.1),
        }
    }

    /// [`admit`] of a one-tuple record.
    fn admit_record(ctx: &LineContext, r: &RecordRef<'_>, late_below: i64) -> Result<Option<(i64, Tuple)>, Rejected> {
        admit_line(ctx, (r, std::str::from_utf8(r.payload), 0), late_below)
    }

    fn refusal(result: Result<Option<(i64, Tuple)>, Rejected>) -> (String, bool) {
        match result {
            Err(Rejected { reason, late }) => (reason, late),
            Ok(routed) => panic!("admitted: {routed:?}"),
        }
    }

    #[test]
    fn admit_routes_on_time_tuples_and_says_why_it_refuses_the_others() {
        let ctx = LineContext::new(saams_datasets::Format::JsonLines, "ticks", None).unwrap();
        let untimed = br#"{"streamID":"EURTRY","dataSetKey":"Forex","price":1.5}"#;
        let timed = br#"{"streamID":"EURTRY","dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":1.5}"#;
        // the tuple's own time wins over the record timestamp, which stands in when it has none
        let own = 1_546_387_201_000;
        let (time, t) = admit_record(&ctx, &record(timed, Some(3)), 0).ok().flatten().unwrap();
        assert_eq!((time, t.time_ms), (own, Some(own)));
        let (time, t) = admit_record(&ctx, &record(untimed, Some(3)), 0).ok().flatten().unwrap();
        assert_eq!((time, t.time_ms, t.stream_id.as_str()), (3, Some(3), "EURTRY"));
        assert!(matches!(admit_record(&ctx, &record(b"  ", Some(3)), 0), Ok(None)), "blank: nothing to do");

        let (reason, late) = refusal(admit_record(&ctx, &record(b"\xff{", Some(3)), 0));
        assert!(reason.contains("not UTF-8") && !late, "{reason}");
        let (reason, late) = refusal(admit_record(&ctx, &record(b"{\"streamID\":", Some(3)), 0));
        assert!(!reason.is_empty() && !late, "{reason}");
        let (reason, late) = refusal(admit_record(&ctx, &record(untimed, None), 0));
        assert!(reason.contains("no event time") && !late, "{reason}");
        let (reason, late) = refusal(admit_record(&ctx, &record(untimed, Some(3)), 10));
        assert!(reason.contains("7 ms behind") && late, "{reason}");
        assert!(
            admit_record(&ctx, &record(untimed, Some(10)), 10).is_ok_and(|r| r.is_some()),
            "at the watermark: on time"
        );
    }

    #[test]
    fn sequence_numbers_keep_offset_and_line_order_and_never_collide_across_partitions() {
        assert_eq!(sequence_number(0, 0, 0), 1 << 63);
        assert_eq!(sequence_number(3, 5, 2), 1 << 63 | 3 << 52 | 5 << 14 | 2);
        assert!(sequence_number(2, 9, 0) < sequence_number(2, 9, 1));
        assert!(sequence_number(2, 9, MAX_LINES_PER_RECORD as u64 - 1) < sequence_number(2, 10, 0));
        assert!(sequence_number(2, 1 << 30, 0) < sequence_number(3, 0, 0), "the partition ranks first");
        assert_ne!(sequence_number(2, 9, 0), sequence_number(3, 9, 0));
        assert_eq!(sequence_number(-1, -1, 0), sequence_number(0, 0, 0), "negative ids clamp to 0");
    }

    #[test]
    fn a_record_splits_into_its_lines_without_an_empty_last_one() {
        let lines = |p: &'static [u8]| RecordLines::new(p).collect::<Vec<_>>();
        assert_eq!(lines(b"{}"), [&b"{}"[..]]);
        assert_eq!(lines(b""), [&b""[..]], "a null or empty record is one blank line");
        assert_eq!(lines(b"a\nb\n"), [&b"a"[..], b"b"]);
        assert_eq!(lines(b"a\n\nb"), [&b"a"[..], b"", b"b"]);
        assert!(!RecordLines::new(b"a\n").is_batch() && RecordLines::new(b"a\nb").is_batch());
    }

    #[test]
    fn a_batched_record_admits_each_line_on_its_own() {
        let ctx = LineContext::new(saams_datasets::Format::JsonLines, "ticks", None).unwrap();
        let payload = b"{\"streamID\":\"A\",\"dataSetKey\":\"F\",\"price\":1}\n{\"streamID\":\n{\"streamID\":\"B\",\"dataSetKey\":\"F\",\"price\":2}";
        let r = record(payload, Some(5));
        let got: Vec<_> = RecordLines::new(payload)
            .enumerate()
            .map(|(i, text)| {
                admit_line(&ctx, (&r, std::str::from_utf8(text), i as u64), 0)
                    .map(|t| t.map(|(_, t)| t.stream_id.to_string()))
            })
            .collect();
        assert!(matches!(&got[0], Ok(Some(s)) if s == "A"));
        assert!(got[1].is_err(), "the malformed line alone is refused");
        assert!(matches!(&got[2], Ok(Some(s)) if s == "B"));
        let (reason, _) = refusal(admit_line(&ctx, (&r, Ok("{}"), MAX_LINES_PER_RECORD as u64), 0));
        assert!(reason.contains("at most"), "{reason}");
    }

    #[test]
    fn a_resumed_record_skips_the_lines_counted_before_the_checkpoint_once() {
        let mut resume = vec![(1, 7, 3), (2, 9, 1)];
        assert_eq!(resume_skip(&mut resume, 1, 6), 0);
        assert_eq!(resume_skip(&mut resume, 1, 7), 3);
        assert_eq!(resume_skip(&mut resume, 1, 7), 0, "found once");
        assert_eq!(resume_skip(&mut resume, 2, 9), 1);
        assert!(resume.is_empty());
    }
}
