//! The data topic's source ([`KafkaTupleSource`]): one worker's share of the partitions
//! ([`assigned_partitions`]), read without blocking, with per-partition watermarks and offset
//! commits that follow window flushes.
//!
//! Why its own file: it is where the consumer, the watermarks and the offset tracker meet; each of
//! those has its own file and tests.

use std::time::{Duration, Instant};

use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};

use super::consumer::PartitionReader;
use super::offsets::OffsetTracker;
use super::records::{ConsumerErrors, KafkaRecord, RecordRef};
use super::watermarks::PartitionWatermarks;
use crate::kafka::error::{AdapterError, METADATA_TIMEOUT, kafka_err};
use crate::kafka::options::KafkaOptions;

/// The partitions worker `worker_index` of `peers` reads: `p % peers == worker_index`. Worker
/// indices are global (all workers of all processes), so the topic is spread over the cluster.
///
/// ```
/// use saams_jobs::kafka::assigned_partitions;
/// let all = [0, 1, 2, 3, 4];
/// assert_eq!(assigned_partitions(&all, 0, 2).unwrap(), vec![0, 2, 4]);
/// assert_eq!(assigned_partitions(&all, 1, 2).unwrap(), vec![1, 3]);
/// assert_eq!(assigned_partitions(&all, 6, 8).unwrap(), Vec::<i32>::new());
/// assert!(assigned_partitions(&all, 2, 2).is_err());
/// ```
///
/// # Errors
/// [`AdapterError::Setting`] when `peers` is 0 or `worker_index >= peers`.
pub fn assigned_partitions(partitions: &[i32], worker_index: usize, peers: usize) -> Result<Vec<i32>, AdapterError> {
    if peers == 0 || worker_index >= peers {
        return Err(AdapterError::Setting(format!("worker index {worker_index} out of range for {peers} worker(s)")));
    }
    Ok(partitions.iter().copied().filter(|&p| p >= 0 && (p as usize) % peers == worker_index).collect())
}

/// One worker's share of the data topic: partitions `p % peers == worker_index`, read without
/// blocking, with per-partition watermarks and commits that follow window flushes.
///
/// Typical use from a timely worker's step:
/// 1. `poll_with(max, Duration::ZERO, |r| …)`: parse `r.payload`; event time = the tuple's or
///    `r.timestamp_ms`; check [`is_late`](Self::is_late), then
///    [`observe_event_time`](Self::observe_event_time); route the tuple to its window and call
///    [`mark_processed`](Self::mark_processed) (or [`mark_done`](Self::mark_done) for dead letters);
/// 2. downgrade the input capability to [`watermark`](Self::watermark);
/// 3. when the sink has flushed window `w`, call [`commit_through(w)`](Self::commit_through);
///    at exit, [`commit_all`](Self::commit_all).
///
/// A worker whose partitions are all idle ([`is_idle`](Self::is_idle), always the case for a worker
/// without partitions) has no watermark of its own to offer; it should stop holding the dataflow's
/// frontier back (e.g. follow the frontier the other workers reach), as Flink's idleness does.
/// Records that arrive later below the watermark are late.
///
/// Offsets are committed as a "simple consumer" (manual assignment, generation -1): do not share the
/// group id with a subscribing consumer group, whose active members would make the broker refuse
/// these commits.
pub struct KafkaTupleSource {
    reader: PartitionReader,
    /// The watermarks of its partitions (the job's input records a poll's runs in them at once).
    pub(crate) clock: PartitionWatermarks,
    /// What may be committed.
    pub(crate) offsets: OffsetTracker,
}

impl KafkaTupleSource {
    /// Connects to the brokers, reads the topic's partition list (within [`METADATA_TIMEOUT`]) and
    /// assigns this worker its partitions from `opts.from`. `lateness_ms` is the allowed
    /// out-of-orderness; `idle_timeout` the time after which a silent partition stops holding the
    /// watermark. A worker with no partition (more workers than partitions) is valid and idle.
    ///
    /// # Errors
    /// [`AdapterError::Setting`] for bad options or worker index, [`AdapterError::Unreachable`] when
    /// no broker answers in time, [`AdapterError::MissingTopic`] when the topic does not exist.
    pub fn new(
        opts: &KafkaOptions,
        topic: &str,
        worker_index: usize,
        peers: usize,
        lateness_ms: i64,
        idle_timeout: Duration,
    ) -> Result<Self, AdapterError> {
        let client_id = format!("saams-{}-w{worker_index}", opts.group_id);
        let reader = PartitionReader::open(opts, topic, &client_id, opts.from, |all| {
            assigned_partitions(all, worker_index, peers)
        })?;
        let clock = PartitionWatermarks::new(&reader.partitions, lateness_ms, idle_timeout, Instant::now());
        Ok(KafkaTupleSource { reader, clock, offsets: OffsetTracker::default() }.with_ends())
    }

    /// As [`KafkaTupleSource::new`], for a job with checkpoints: every partition starts at a
    /// known offset, the one `at` gives it (a checkpoint's position, with the newest event time
    /// read before it, from which its watermark starts again), else the one `opts.from` stands
    /// for, asked of the brokers ([`starts`](Self::starts)).
    ///
    /// # Errors
    /// As [`KafkaTupleSource::new`], and when the brokers cannot say where a partition starts.
    pub fn new_at(
        opts: &KafkaOptions,
        topic: &str,
        (worker_index, peers): (usize, usize),
        (lateness_ms, idle_timeout): (i64, Duration),
        at: &dyn Fn(i32) -> Option<(i64, Option<i64>)>,
    ) -> Result<Self, AdapterError> {
        let client_id = format!("saams-{}-w{worker_index}", opts.group_id);
        let offset = |p: i32| at(p).map(|(o, _)| o);
        let reader = PartitionReader::open_at(opts, topic, &client_id, (opts.from, Some(&offset)), |all| {
            assigned_partitions(all, worker_index, peers)
        })?;
        let mut clock = PartitionWatermarks::new(&reader.partitions, lateness_ms, idle_timeout, Instant::now());
        for &p in &reader.partitions {
            if let Some((_, Some(max_time))) = at(p) {
                clock.start_from(p, max_time);
            }
        }
        Ok(KafkaTupleSource { reader, clock, offsets: OffsetTracker::default() }.with_ends())
    }

    /// A partials topic: every partition starts *vacant* (no device known to ship to it;
    /// [`PartitionWatermarks::set_vacant`]), silent for at most `timeout` before it is idle,
    /// except those `assigned` says a device shipped to (a resumed job's partitions read
    /// before its checkpoint): they wait the idle timeout, as a silent device's.
    pub fn vacant_until_heard(&mut self, timeout: Duration, assigned: impl Fn(i32) -> bool) {
        self.clock.set_vacant_timeout(timeout);
        for &p in &self.reader.partitions {
            self.clock.set_vacant(p, !assigned(p));
        }
    }

    /// Tells the partitions' clocks which partitions are below their ends (see
    /// [`PartitionWatermarks::set_below_end`]): only a partition read to its high watermark
    /// may go idle.
    fn with_ends(mut self) -> Self {
        self.tell_ends();
        self
    }

    fn tell_ends(&mut self) {
        for (p, below) in self.reader.below_end() {
            self.clock.set_below_end(p, below);
        }
    }

    /// Where each partition started ([`partitions`](Self::partitions) order), when opened with
    /// [`new_at`](Self::new_at); empty otherwise.
    pub fn starts(&self) -> &[i64] {
        &self.reader.starts
    }

    /// The topic read.
    pub fn topic(&self) -> &str {
        &self.reader.topic
    }

    /// The partitions this worker reads (sorted).
    pub fn partitions(&self) -> &[i32] {
        &self.reader.partitions
    }

    /// Hands up to `max` available records to `f` without copying them; waits at most `wait` for
    /// the first one (use `Duration::ZERO` inside a dataflow step). Returns how many were handed.
    /// From an error of the consumer (broker down, reconnecting) until the client's statistics find
    /// the partitions' leaders up again, its partitions count as active, not idle (see
    /// [`PartitionWatermarks::hold_active`]); and a partition not yet read to its end (its high
    /// watermark) never goes idle, however long its broker takes to answer.
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] only when the consumer failed fatally; transient errors are counted
    /// in [`errors`](Self::errors).
    pub fn poll_with<F: FnMut(RecordRef<'_>)>(
        &mut self,
        max: usize,
        wait: Duration,
        f: F,
    ) -> Result<usize, AdapterError> {
        self.clock.looked_at(Instant::now());
        let n = self.reader.poll_with(max, wait, f)?;
        self.tell_ends();
        if self.reader.in_outage() {
            self.clock.hold_active(Instant::now());
        }
        Ok(n)
    }

    /// From now on, `thread` (the one that polls) is unparked whenever records arrive while
    /// none were waiting, so it may park (`std::thread::park_timeout`, timely's
    /// `step_or_park`) rather than poll with a wait or spin.
    pub fn wake_on_records(&mut self, thread: std::thread::Thread) {
        self.reader.wake_on_records(thread);
    }

    /// As [`poll_with`](Self::poll_with), returning owned records.
    ///
    /// # Errors
    /// As [`poll_with`](Self::poll_with).
    pub fn poll_batch(&mut self, max: usize, wait: Duration) -> Result<Vec<KafkaRecord>, AdapterError> {
        let mut out = Vec::new();
        self.poll_with(max, wait, |r| out.push(r.to_owned_record()))?;
        Ok(out)
    }

    /// Records event time `t_ms` of a record of `partition` (the tuple's time, or the record
    /// timestamp when the tuple has none); the partition counts as active again.
    pub fn observe_event_time(&mut self, partition: i32, t_ms: i64) {
        self.observe_event_time_at(partition, t_ms, Instant::now());
    }

    /// As [`observe_event_time`](Self::observe_event_time), at `now` (a batch of records reads the
    /// clock once: a clock read per record was a tenth of the consuming workers' time).
    pub fn observe_event_time_at(&mut self, partition: i32, t_ms: i64, now: Instant) {
        self.clock.observe(partition, t_ms, now);
    }

    /// The worker's watermark (ms): min over its active partitions of (max event time − lateness);
    /// idle partitions are left out. Monotone. `None` before every active partition has spoken.
    pub fn watermark(&mut self) -> Option<i64> {
        let now = Instant::now();
        self.clock.looked_at(now);
        self.clock.watermark(now)
    }

    /// True when event time `t_ms` is below the current watermark (the tuple is late: count it and
    /// send it to the dead letters). Check before [`observe_event_time`](Self::observe_event_time).
    pub fn is_late(&mut self, t_ms: i64) -> bool {
        self.watermark().is_some_and(|w| t_ms < w)
    }

    /// True when all of this worker's partitions are idle (or it has none).
    pub fn is_idle(&self) -> bool {
        self.clock.is_idle(Instant::now())
    }

    /// Records between this source's partitions' high watermarks and the next it hands over,
    /// summed, as of the client's last statistics (`None` before the first: the autoscaler's
    /// Kafka lag).
    pub fn lag(&self) -> Option<u64> {
        self.reader.lag()
    }

    /// True when every assigned partition has been read to its end (as of the last poll); with
    /// `--exit-when-idle` the job can then close its windows and stop.
    pub fn at_end(&self) -> bool {
        self.reader.at_end()
    }

    /// Records that `offset` of `partition` went into event-time window `window`.
    pub fn mark_processed(&mut self, partition: i32, offset: i64, window: u64) {
        self.offsets.mark_processed(partition, offset, window);
    }

    /// Records that `offset` of `partition` needs no window flush (dead letter, late record).
    pub fn mark_done(&mut self, partition: i32, offset: i64) {
        self.offsets.mark_done(partition, offset);
    }

    /// Window `window` and all earlier ones were flushed to the sink: commits (asynchronously,
    /// results come back through later polls) every partition position that moved, and returns them.
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when the commit cannot be issued.
    pub fn commit_through(&mut self, window: u64) -> Result<Vec<(i32, i64)>, AdapterError> {
        self.commit(window, CommitMode::Async)
    }

    /// At exit, after the sink flushed everything: releases all windows and commits synchronously.
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when the broker refuses the commit.
    pub fn commit_all(&mut self) -> Result<Vec<(i32, i64)>, AdapterError> {
        self.commit(u64::MAX, CommitMode::Sync)
    }

    fn commit(&mut self, window: u64, mode: CommitMode) -> Result<Vec<(i32, i64)>, AdapterError> {
        let moved = self.offsets.release_through(window);
        if moved.is_empty() {
            return Ok(moved);
        }
        let mut tpl = TopicPartitionList::with_capacity(moved.len());
        for &(p, o) in &moved {
            tpl.add_partition_offset(&self.reader.topic, p, Offset::Offset(o))
                .map_err(kafka_err("building the commit list"))?;
        }
        self.reader
            .consumer
            .commit(&tpl, mode)
            .map_err(kafka_err(format!("committing offsets {moved:?} of {:?}", self.reader.topic)))?;
        Ok(moved)
    }

    /// The offsets committed for this worker's partitions in the group (asks the broker).
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when the broker does not answer within [`METADATA_TIMEOUT`].
    pub fn committed(&self) -> Result<Vec<(i32, Option<i64>)>, AdapterError> {
        let mut tpl = TopicPartitionList::with_capacity(self.reader.partitions.len());
        for &p in &self.reader.partitions {
            tpl.add_partition(&self.reader.topic, p);
        }
        let got = self
            .reader
            .consumer
            .committed_offsets(tpl, METADATA_TIMEOUT)
            .map_err(kafka_err("reading committed offsets"))?;
        Ok(got.elements().iter().map(|e| (e.partition(), e.offset().to_raw().filter(|&o| o >= 0))).collect())
    }

    /// Number of (partition, window) pairs whose records wait for a window flush before commit.
    pub fn pending_windows(&self) -> usize {
        self.offsets.pending()
    }

    /// Errors met and survived so far (poll errors, refused commits).
    pub fn errors(&self) -> ConsumerErrors {
        self.reader.errors()
    }
}
