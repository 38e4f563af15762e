//! The consumer behind the Kafka sources: partitions assigned by hand, records consumed in
//! batches from a queue of their own (the only `unsafe` of the adapters: librdkafka's batch API,
//! which rdkafka 0.39 does not wrap), commit replies and client errors from the consumer queue.

use std::ffi::{CString, c_int, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use rdkafka::bindings as rdsys;
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::message::Message;
use rdkafka::statistics::Statistics;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaErrorCode;

use super::records::{ConsumerErrors, RecordRef};
use crate::kafka::error::{AdapterError, METADATA_TIMEOUT, kafka_err};
use crate::kafka::metadata::topic_partitions;
use crate::kafka::options::{KafkaOptions, StartFrom};

/// Counts asynchronous commit failures (reported through the consumer's poll) so they are not lost.
#[derive(Default)]
struct CommitCounter {
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// The consumer context: records commit callback failures, and whether the client's statistics
/// find the brokers leading the watched partitions up ([`Reachability`]).
#[derive(Default, Clone)]
pub(super) struct SourceContext {
    commits: Arc<CommitCounter>,
    reach: Arc<Reachability>,
}

/// What the client's statistics (every `statistics.interval.ms`) say of the partitions a consumer
/// reads: how many reports found the broker leading each of them up.
///
/// Why: an outage must not count as idleness (see [`PartitionWatermarks::hold_active`]), and the
/// consumer's errors alone do not say how long one lasts (they come as librdkafka's reconnects
/// fail, not at a steady pace). Partitions held active only when an error arrived went idle in the
/// middle of a 9 s outage (a loaded CI machine), and after it the first partition whose records
/// came back made ~25,000 on-time tuples of the others late. So an outage lasts from an error
/// until reports find every leader up again.
///
/// [`PartitionWatermarks::hold_active`]: super::PartitionWatermarks::hold_active
#[derive(Default)]
struct Reachability {
    /// The topic and partitions to look at (set once, when assigned).
    watched: OnceLock<(String, Vec<i32>)>,
    /// Reports that found every watched partition's leader up.
    reachable_reports: AtomicU64,
    /// One more than the watched partitions' lag in the last report: records between each
    /// one's high watermark and the next record handed to the job, summed (0: not known yet).
    lag_plus_one: AtomicU64,
}

impl Reachability {
    fn reports(&self) -> u64 {
        self.reachable_reports.load(Ordering::Relaxed)
    }
}

/// Whether every one of `partitions` has a known leader (`leader`) whose connection is up
/// (`up`, by broker id).
fn leaders_up(partitions: &[i32], leader: impl Fn(i32) -> Option<i32>, up: impl Fn(i32) -> bool) -> bool {
    partitions.iter().all(|&p| leader(p).is_some_and(|id| id >= 0 && up(id)))
}

/// A partition's lag from the client's statistics: its high watermark `hi` less the next
/// record the job takes (`app`, one past the last handed over; before any, `next`, where
/// fetching starts). `None` while either is unknown (negative).
fn partition_lag(hi: i64, app: i64, next: i64) -> Option<i64> {
    let at = if app >= 0 { app } else { next };
    (hi >= 0 && at >= 0).then(|| (hi - at).max(0))
}

/// [`PartitionReader::in_outage`] over its state: `outage` holds the reachable reports counted at
/// the last error; `reports` is the count now.
fn still_out(outage: &mut Option<u64>, reports: u64, reports_on: bool) -> bool {
    let Some(at) = *outage else { return false };
    // Two reports: the first may have been taken before the error and served after it (errors
    // of the partitions come on their own queue); the second was taken an interval later.
    if !reports_on || reports >= at + 2 {
        *outage = None;
    }
    true
}

impl ClientContext for SourceContext {
    fn stats(&self, stats: Statistics) {
        let Some((topic, partitions)) = self.reach.watched.get() else { return };
        let topic = stats.topics.get(topic);
        let leader = |p: i32| topic.and_then(|t| t.partitions.get(&p)).map(|tp| tp.leader);
        let up = |id: i32| stats.brokers.values().any(|b| b.nodeid == id && b.state == "UP");
        if leaders_up(partitions, leader, up) {
            self.reach.reachable_reports.fetch_add(1, Ordering::Relaxed);
        }
        let lags: Option<Vec<i64>> = partitions
            .iter()
            .map(|p| {
                topic
                    .and_then(|t| t.partitions.get(p))
                    .and_then(|tp| partition_lag(tp.hi_offset, tp.app_offset, tp.next_offset))
            })
            .collect();
        let lag = lags.map_or(0, |l| l.iter().map(|&x| x as u64).sum::<u64>().saturating_add(1));
        self.reach.lag_plus_one.store(lag, Ordering::Relaxed);
    }
}

impl ConsumerContext for SourceContext {
    fn commit_callback(&self, result: KafkaResult<()>, _offsets: &TopicPartitionList) {
        if let Err(e) = result {
            self.commits.failed.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut last) = self.commits.last_error.lock() {
                *last = Some(e.to_string());
            }
        }
    }
}

/// The records of a consumer's assigned partitions on a queue of their own, consumed in batches.
///
/// Why: rdkafka's [`BaseConsumer::poll`] returns one record per call, and each call reads the
/// clock, takes the queue lock, wraps the record in an event and allocates an `Arc` for it; at
/// a million records a second that per-record overhead was a large share of a consuming
/// worker's time. librdkafka's `rd_kafka_consume_batch_queue` hands out up to a batch of records
/// per call instead. It cannot be used on the consumer queue itself: rdkafka forwards the main
/// queue there (commit replies, errors, rebalances as events), and a batch consume meeting an
/// offset-commit reply turns it into a bogus "message". So each assigned partition's fetch queue
/// is forwarded to this queue, which then carries nothing but records, end-of-partition markers
/// and errors of those partitions, while commit replies and client errors stay on the consumer
/// queue, served by a zero-timeout [`BaseConsumer::poll`] (which also hands over any record
/// fetched before the forwarding took effect).
///
/// The forwarding is made with `rd_kafka_queue_forward` (an application forward), which
/// librdkafka's later fetch start keeps instead of re-forwarding to the consumer queue.
struct FetchQueue {
    /// Our queue (`rd_kafka_queue_new`, owned).
    queue: NonNull<rdsys::rd_kafka_queue_t>,
    /// Handles of the partitions' fetch queues, forwarded to `queue`.
    partitions: Vec<NonNull<rdsys::rd_kafka_queue_t>>,
    /// Room for one batch of message pointers.
    batch: Vec<*mut rdsys::rd_kafka_message_t>,
    /// The thread woken when an entry lands on the empty queue ([`FetchQueue::wake`]): boxed,
    /// as librdkafka keeps a pointer to it until the wake-up is turned off in `Drop`.
    waker: Option<Box<Thread>>,
}

/// librdkafka's queue event callback: wakes the parked thread whose address `opaque` holds.
/// Called from librdkafka's threads, under the queue's lock, when an entry lands on the empty
/// queue; it does nothing else (no librdkafka call, no work, nothing that could unwind).
unsafe extern "C" fn unpark(_rk: *mut rdsys::rd_kafka_t, opaque: *mut c_void) {
    // SAFETY: `opaque` is the `Thread` boxed in `FetchQueue::waker`, which is freed only after
    // the callback is turned off (under the same lock).
    let thread = unsafe { &*(opaque as *const Thread) };
    thread.unpark();
}

// SAFETY: librdkafka queues are thread-safe (every operation takes the queue's lock); the
// pointers are only used through librdkafka calls, and `batch` holds no message between calls.
unsafe impl Send for FetchQueue {}

impl FetchQueue {
    /// Forwards the fetch queues of `partitions` of `topic` to a new queue of `consumer`'s client.
    fn new<C: ConsumerContext>(
        consumer: &BaseConsumer<C>,
        topic: &str,
        partitions: &[i32],
    ) -> Result<Self, AdapterError> {
        let rk = consumer.client().native_ptr();
        let name =
            CString::new(topic).map_err(|_| AdapterError::Setting(format!("topic {topic:?} contains a NUL byte")))?;
        // SAFETY: `rk` is the live client of `consumer`, which outlives the queue (PartitionReader
        // drops the queue before its consumer); the returned queue is owned and destroyed in Drop.
        let queue = NonNull::new(unsafe { rdsys::rd_kafka_queue_new(rk) })
            .ok_or_else(|| AdapterError::Setting("librdkafka could not create a queue".into()))?;
        let mut fetch =
            FetchQueue { queue, partitions: Vec::with_capacity(partitions.len()), batch: Vec::new(), waker: None };
        for &p in partitions {
            // SAFETY: as above; `name` is a valid C string for the duration of the call. The
            // partition is created on a miss, so this works before the assignment took effect.
            let handle = NonNull::new(unsafe { rdsys::rd_kafka_queue_get_partition(rk, name.as_ptr(), p) })
                .ok_or_else(|| AdapterError::Setting(format!("no fetch queue for partition {p} of {topic:?}")))?;
            // SAFETY: both queues are live handles of the same client.
            unsafe { rdsys::rd_kafka_queue_forward(handle.as_ptr(), fetch.queue.as_ptr()) };
            fetch.partitions.push(handle);
        }
        Ok(fetch)
    }

    /// From now on, `thread` is unparked whenever an entry (a record, an end-of-partition
    /// marker, an error) lands on the empty queue.
    ///
    /// Why: a worker that finds nothing parks (timely's `step_or_park`) until its dataflow has
    /// work or a record came, instead of waking every few milliseconds to look; the waking and
    /// looking of quiet workers was most of what a Kafka run cost beyond its records
    /// (docs/figures.md, "Kafka record formats and consumer settings").
    fn wake(&mut self, thread: Thread) {
        let waker = Box::new(thread);
        let opaque = std::ptr::from_ref::<Thread>(waker.as_ref()).cast_mut().cast::<c_void>();
        // SAFETY: our live queue; `opaque` points into the box kept in `self.waker`, which is
        // freed only after the callback is replaced (here, under the queue's lock, so a previous
        // waker is no longer in use once this returns) or turned off (Drop).
        unsafe { rdsys::rd_kafka_queue_cb_event_enable(self.queue.as_ptr(), Some(unpark), opaque) };
        self.waker = Some(waker);
    }

    /// Takes up to `max` entries (records, end-of-partition markers, partition errors), waiting at
    /// most `wait` for the first, and hands each to `f`. Every message is destroyed before return,
    /// also when `f` panics.
    fn consume(&mut self, max: usize, wait: Duration, mut f: impl FnMut(&rdsys::rd_kafka_message_t)) -> usize {
        if max == 0 {
            return 0;
        }
        if self.batch.len() < max {
            // Grown once: writing `max` pointers before each call was a tenth of a quiet poll.
            self.batch.resize(max, std::ptr::null_mut());
        }
        let timeout_ms = c_int::try_from(wait.as_millis()).unwrap_or(c_int::MAX);
        // SAFETY: `batch` has room for `max` pointers; librdkafka fills the first `n`.
        let n = unsafe {
            rdsys::rd_kafka_consume_batch_queue(self.queue.as_ptr(), timeout_ms, self.batch.as_mut_ptr(), max)
        };
        let n = usize::try_from(n).unwrap_or(0).min(max);
        struct Destroy<'a>(&'a [*mut rdsys::rd_kafka_message_t]);
        impl Drop for Destroy<'_> {
            fn drop(&mut self) {
                for &m in self.0 {
                    // SAFETY: each pointer came from this batch consume and is destroyed once.
                    unsafe { rdsys::rd_kafka_message_destroy(m) };
                }
            }
        }
        let taken = Destroy(&self.batch[..n]);
        for &m in taken.0 {
            // SAFETY: a message returned by librdkafka, alive until destroyed by `taken`.
            if let Some(message) = unsafe { m.as_ref() } {
                f(message);
            }
        }
        n
    }
}

impl Drop for FetchQueue {
    fn drop(&mut self) {
        if self.waker.is_some() {
            // SAFETY: our live queue. Turned off before the waker is freed: the forwarded
            // partitions keep the queue alive, and may enqueue, after our handle is gone.
            unsafe { rdsys::rd_kafka_queue_cb_event_enable(self.queue.as_ptr(), None, std::ptr::null_mut()) };
        }
        for handle in self.partitions.drain(..) {
            // SAFETY: a handle from rd_kafka_queue_get_partition, destroyed once; the forward
            // stays on the partition's queue until librdkafka stops the fetcher at close.
            unsafe { rdsys::rd_kafka_queue_destroy(handle.as_ptr()) };
        }
        // SAFETY: our own queue, destroyed once, before the client (see PartitionReader).
        unsafe { rdsys::rd_kafka_queue_destroy(self.queue.as_ptr()) };
    }
}

/// A record's fields as [`RecordRef`], borrowed from a librdkafka message.
///
/// # Safety
/// `m` must be a live message without error; the slices borrow its memory.
unsafe fn record_of(m: &rdsys::rd_kafka_message_t) -> RecordRef<'_> {
    /// # Safety
    /// `len` bytes at `ptr` (when not null) must stay valid for `'a`.
    unsafe fn bytes<'a>(ptr: *mut std::ffi::c_void, len: usize) -> &'a [u8] {
        if ptr.is_null() || len == 0 {
            &[]
        } else {
            // SAFETY: librdkafka keeps `len` bytes at `ptr` for the message's lifetime.
            unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }
        }
    }
    let mut kind = rdsys::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    // SAFETY: a live message; `kind` is a valid out pointer.
    let ts = unsafe { rdsys::rd_kafka_message_timestamp(m, &mut kind) };
    let available = kind != rdsys::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts != -1;
    RecordRef {
        partition: m.partition,
        offset: m.offset,
        timestamp_ms: available.then_some(ts),
        // SAFETY: key and payload live as long as the message `m` borrows.
        key: (!m.key.is_null()).then(|| unsafe { bytes(m.key, m.key_len) }),
        payload: unsafe { bytes(m.payload, m.len) },
    }
}

/// A consumer assigned a fixed list of partitions by hand, polled without blocking: records come
/// in batches from its [`FetchQueue`], commit replies and client errors from the consumer queue.
pub(super) struct PartitionReader {
    // Field order matters: the fetch queue is destroyed before the consumer's client.
    fetch: FetchQueue,
    pub(super) consumer: BaseConsumer<SourceContext>,
    context: SourceContext,
    pub(super) topic: String,
    pub(super) partitions: Vec<i32>,
    at_eof: Vec<bool>,
    /// Where each partition started (by slot), when opened with exact positions; else empty.
    pub(super) starts: Vec<i64>,
    pub(super) errors: u64,
    last_error: Option<String>,
    /// In an outage since the last error: the reachable reports counted then ([`Reachability`]).
    outage: Option<u64>,
    /// Whether the client sends statistics (`statistics.interval.ms` > 0; `-X` may turn them
    /// off): without, an outage lasts only while errors arrive.
    reports_on: bool,
    /// Whether librdkafka reports a partition's end (`enable.partition.eof`, which `-X` may turn
    /// off): without, no partition is known to be below its end ([`Self::below_end`]).
    ends_on: bool,
}

/// Where a partition starts (`None`: where `--from` says), for [`PartitionReader::open_at`].
pub(super) type StartAt<'a> = &'a dyn Fn(i32) -> Option<i64>;

/// Most events served from the consumer queue per poll (commit replies, errors); the rest wait for
/// the next poll, so a burst of them cannot starve the records.
const CONSUMER_EVENTS_PER_POLL: usize = 64;

impl PartitionReader {
    /// Connects, checks the topic, picks the partitions with `choose`, assigns them from `from`.
    pub(super) fn open(
        opts: &KafkaOptions,
        topic: &str,
        client_id: &str,
        from: StartFrom,
        choose: impl FnOnce(&[i32]) -> Result<Vec<i32>, AdapterError>,
    ) -> Result<Self, AdapterError> {
        Self::open_at(opts, topic, client_id, (from, None), choose)
    }

    /// As [`PartitionReader::open`]; with `exact` (a job with checkpoints), every partition starts
    /// at a known offset: the one `exact` gives it (a checkpoint's position), else the offset
    /// `from` stands for, asked of the brokers (so a checkpoint can name where a partition that
    /// has not been read yet starts). Returns the reader and the start offsets.
    pub(super) fn open_at(
        opts: &KafkaOptions,
        topic: &str,
        client_id: &str,
        (from, exact): (StartFrom, Option<StartAt<'_>>),
        choose: impl FnOnce(&[i32]) -> Result<Vec<i32>, AdapterError>,
    ) -> Result<Self, AdapterError> {
        opts.validate()?;
        let config = opts.client_config_with(&[
            ("group.id", &opts.group_id),
            ("client.id", client_id),
            ("enable.auto.commit", "false"),
            ("enable.auto.offset.store", "false"),
            ("enable.partition.eof", "true"),
            ("auto.offset.reset", "earliest"),
            // Throughput: prefetch deeply and do not back off for a second once the local queue
            // is full (librdkafka's defaults stall a fast consumer); -X overrides both. Measured
            // (docs/figures.md, "Kafka record formats and consumer settings"): no fetch size or
            // wait moved the job's CPU-seconds per tuple beyond the spread between rounds. A
            // bounded prefetch (`-X queued.min.messages=10000 -X
            // queued.max.messages.kbytes=4096`) takes less than half the memory (a deep queue
            // holds most of a replayed topic, an allocation per record) at no measurable CPU
            // cost, but a replay's partitions then run dry, and go idle, whenever a loaded
            // broker stalls for the idle timeout; so deep stays the default.
            ("queued.min.messages", "1000000"),
            ("fetch.queue.backoff.ms", "10"),
            // After a broker restart, reconnect within a second of its return: librdkafka's default
            // backoff grows to 10 s, longer than a partition's idle timeout.
            ("reconnect.backoff.max.ms", "1000"),
            // Statistics tell when an outage is over ([`Reachability`]).
            ("statistics.interval.ms", "500"),
        ]);
        let reports_on =
            config.get("statistics.interval.ms").and_then(|v| v.parse::<u64>().ok()).is_some_and(|ms| ms > 0);
        let ends_on = config.get("enable.partition.eof") == Some("true");
        let context = SourceContext::default();
        let consumer: BaseConsumer<SourceContext> =
            config.create_with_context(context.clone()).map_err(kafka_err("creating a consumer"))?;
        let all = topic_partitions(consumer.client(), &opts.brokers, topic)?;
        let mut partitions = choose(&all)?;
        partitions.sort_unstable();
        partitions.dedup();
        let mut tpl = TopicPartitionList::with_capacity(partitions.len());
        let mut starts = Vec::new();
        for &p in &partitions {
            let offset = match exact {
                None => from.offset(),
                Some(at) => {
                    let start = match at(p) {
                        Some(o) => o,
                        None => resolve_start(&consumer, topic, p, from)?,
                    };
                    starts.push(start);
                    Offset::Offset(start)
                }
            };
            tpl.add_partition_offset(topic, p, offset).map_err(kafka_err("building the assignment"))?;
        }
        consumer.assign(&tpl).map_err(kafka_err(format!("assigning partitions {partitions:?} of {topic:?}")))?;
        let fetch = FetchQueue::new(&consumer, topic, &partitions)?;
        // A new context per reader: nothing was set before.
        let _ = context.reach.watched.set((topic.to_string(), partitions.clone()));
        let at_eof = vec![false; partitions.len()];
        Ok(PartitionReader {
            fetch,
            consumer,
            context,
            topic: topic.to_string(),
            partitions,
            at_eof,
            starts,
            errors: 0,
            last_error: None,
            outage: None,
            reports_on,
            ends_on,
        })
    }

    fn slot(&self, partition: i32) -> Option<usize> {
        self.partitions.binary_search(&partition).ok()
    }

    pub(super) fn poll_with<F: FnMut(RecordRef<'_>)>(
        &mut self,
        max: usize,
        wait: Duration,
        mut f: F,
    ) -> Result<usize, AdapterError> {
        if let Some((code, reason)) = self.consumer.client().fatal_error() {
            return Err(AdapterError::Kafka {
                context: format!("consumer of {:?} failed fatally: {reason}", self.topic),
                source: KafkaError::MessageConsumptionFatal(code),
            });
        }
        let mut seen = 0;
        // The consumer queue: commit replies (to the context's callback), client errors, and
        // records fetched before the partitions were forwarded to the fetch queue.
        for _ in 0..CONSUMER_EVENTS_PER_POLL {
            if seen >= max {
                break;
            }
            let Some(result) = self.consumer.poll(Duration::ZERO) else { break };
            match result {
                Ok(message) => {
                    let partition = message.partition();
                    if let Some(i) = self.slot(partition) {
                        self.at_eof[i] = false;
                    }
                    f(RecordRef {
                        partition,
                        offset: message.offset(),
                        timestamp_ms: message.timestamp().to_millis(),
                        key: message.key(),
                        payload: message.payload().unwrap_or(&[]),
                    });
                    seen += 1;
                }
                Err(KafkaError::PartitionEOF(partition)) => {
                    if let Some(i) = self.slot(partition) {
                        self.at_eof[i] = true;
                    }
                }
                Err(e) => self.count_error(e.to_string()),
            }
        }
        let wait = if seen > 0 { Duration::ZERO } else { wait };
        let PartitionReader { fetch, partitions, at_eof, errors, last_error, outage, context, .. } = self;
        let reach = &context.reach;
        fetch.consume(max - seen, wait, |m| {
            let slot = partitions.binary_search(&m.partition).ok();
            if m.err == rdsys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                if let Some(i) = slot {
                    at_eof[i] = false;
                }
                // SAFETY: a live message without error, borrowed only for the call of `f`.
                f(unsafe { record_of(m) });
                seen += 1;
            } else if m.err == rdsys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR__PARTITION_EOF {
                if let Some(i) = slot {
                    at_eof[i] = true;
                }
            } else {
                // Transient (broker restarts, network): librdkafka retries by itself. Counted and
                // kept for reporting, not fatal.
                *errors += 1;
                *outage = Some(reach.reports());
                *last_error = Some(format!(
                    "partition {}: {}",
                    m.partition,
                    KafkaError::MessageConsumption(RDKafkaErrorCode::from(m.err))
                ));
            }
        });
        Ok(seen)
    }

    fn count_error(&mut self, error: String) {
        // Transient (broker restarts, network): librdkafka retries by itself. Counted and kept for
        // reporting, not fatal.
        self.errors += 1;
        self.outage = Some(self.context.reach.reports());
        self.last_error = Some(error);
    }

    /// Whether the consumer is in an outage: it met an error, and no two statistics reports since
    /// found every partition's leader up ([`Reachability`]). True once more on the call that
    /// finds the outage over, so the caller holds the partitions active as of its end. Without
    /// statistics, true once per poll that met errors.
    pub(super) fn in_outage(&mut self) -> bool {
        still_out(&mut self.outage, self.context.reach.reports(), self.reports_on)
    }

    /// Records between the partitions' high watermarks and the next this reader hands over,
    /// summed, as of the client's last statistics (every 500 ms); `None` before the first, or
    /// without statistics.
    pub(super) fn lag(&self) -> Option<u64> {
        self.context.reach.lag_plus_one.load(Ordering::Relaxed).checked_sub(1)
    }

    /// Unparks `thread` whenever records (or anything else of the partitions) land on the
    /// empty fetch queue ([`FetchQueue::wake`]).
    pub(super) fn wake_on_records(&mut self, thread: Thread) {
        self.fetch.wake(thread);
    }

    /// Each partition, and whether its position is below its end: it has not reported its end
    /// (librdkafka's end-of-partition event, at the high watermark of a fetch) since it was
    /// assigned or since its last record. So a partition whose broker stalls in the middle of
    /// its records stays below its end, however long no fetch comes back. Never below when
    /// `-X enable.partition.eof=false` took the end reports away.
    pub(super) fn below_end(&self) -> impl Iterator<Item = (i32, bool)> + '_ {
        self.partitions.iter().zip(&self.at_eof).map(|(&p, &eof)| (p, self.ends_on && !eof))
    }

    pub(super) fn at_end(&self) -> bool {
        self.at_eof.iter().all(|&e| e)
    }

    pub(super) fn errors(&self) -> ConsumerErrors {
        let commit_failures = self.context.commits.failed.load(Ordering::Relaxed);
        let last_commit_error = self.context.commits.last_error.lock().ok().and_then(|g| g.clone());
        ConsumerErrors {
            poll_errors: self.errors,
            last_poll_error: self.last_error.clone(),
            commit_failures,
            last_commit_error,
        }
    }
}

/// The offset `from` stands for on partition `p` of `topic`, asked of the brokers: its first
/// retained record (earliest), its end (latest), or the group's committed offset (committed;
/// the first retained record without one, as librdkafka's `auto.offset.reset=earliest`).
fn resolve_start<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    topic: &str,
    p: i32,
    from: StartFrom,
) -> Result<i64, AdapterError> {
    let (low, high) = consumer
        .fetch_watermarks(topic, p, METADATA_TIMEOUT)
        .map_err(kafka_err(format!("offsets of partition {p} of {topic:?}")))?;
    Ok(match from {
        StartFrom::Earliest => low,
        StartFrom::Latest => high,
        StartFrom::Committed => {
            let mut tpl = TopicPartitionList::with_capacity(1);
            tpl.add_partition(topic, p);
            let got = consumer
                .committed_offsets(tpl, METADATA_TIMEOUT)
                .map_err(kafka_err(format!("committed offset of partition {p} of {topic:?}")))?;
            got.elements().first().and_then(|e| e.offset().to_raw()).filter(|&o| o >= 0).map_or(low, |o| o.max(low))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_lags_by_its_high_watermark_less_the_next_record_taken() {
        assert_eq!(partition_lag(1_000, 400, 900), Some(600));
        // Nothing handed over yet: from where fetching starts.
        assert_eq!(partition_lag(1_000, -1001, 250), Some(750));
        assert_eq!(partition_lag(-1001, 400, 400), None);
        assert_eq!(partition_lag(10, 12, 12), Some(0));
    }

    #[test]
    fn partitions_are_reachable_when_every_leader_is_known_and_up() {
        let leaders = |p: i32| match p {
            0 | 2 => Some(1),
            1 => Some(2),
            3 => Some(-1),
            _ => None,
        };
        let up = |id: i32| id == 1;
        assert!(leaders_up(&[0, 2], leaders, up));
        assert!(!leaders_up(&[0, 1], leaders, up), "broker 2 is down");
        assert!(!leaders_up(&[0, 3], leaders, up), "no leader known");
        assert!(!leaders_up(&[4], leaders, up), "not in the statistics");
        assert!(leaders_up(&[0, 1], leaders, |_| true));
    }

    #[test]
    fn an_outage_lasts_until_two_reports_after_its_last_error_find_the_leaders_up() {
        let mut outage = None;
        assert!(!still_out(&mut outage, 5, true), "no error, no outage");
        outage = Some(5); // an error when 5 reachable reports had come
        assert!(still_out(&mut outage, 5, true));
        assert!(still_out(&mut outage, 5, true), "no report since: still out, however long");
        assert!(still_out(&mut outage, 6, true), "one report may predate the error");
        assert!(still_out(&mut outage, 7, true), "the report that ends it holds once more");
        assert!(!still_out(&mut outage, 7, true));
        // Without statistics: held on the poll that met the error only.
        outage = Some(0);
        assert!(still_out(&mut outage, 0, false));
        assert!(!still_out(&mut outage, 0, false));
    }
}
