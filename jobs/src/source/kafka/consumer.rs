//! The consumer behind the Kafka sources: partitions assigned by hand, records consumed in
//! batches from a queue of their own (the only `unsafe` of the adapters: librdkafka's batch API,
//! which rdkafka 0.39 does not wrap), commit replies and client errors from the consumer queue.

use std::ffi::{CString, c_int};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::bindings as rdsys;
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::message::Message;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaErrorCode;

use super::records::{ConsumerErrors, RecordRef};
use crate::kafka_client::{AdapterError, KafkaOptions, METADATA_TIMEOUT, StartFrom, kafka_err, topic_partitions};

/// Counts asynchronous commit failures (reported through the consumer's poll) so they are not lost.
#[derive(Default)]
struct CommitCounter {
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// The consumer context: records commit callback failures.
#[derive(Default, Clone)]
pub(super) struct SourceContext {
    commits: Arc<CommitCounter>,
}

impl ClientContext for SourceContext {}

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
        let mut fetch = FetchQueue { queue, partitions: Vec::with_capacity(partitions.len()), batch: Vec::new() };
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

    /// Takes up to `max` entries (records, end-of-partition markers, partition errors), waiting at
    /// most `wait` for the first, and hands each to `f`. Every message is destroyed before return,
    /// also when `f` panics.
    fn consume(&mut self, max: usize, wait: Duration, mut f: impl FnMut(&rdsys::rd_kafka_message_t)) -> usize {
        if max == 0 {
            return 0;
        }
        self.batch.clear();
        self.batch.resize(max, std::ptr::null_mut());
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
            // is full (librdkafka's defaults stall a fast consumer); -X overrides both.
            ("queued.min.messages", "1000000"),
            ("fetch.queue.backoff.ms", "10"),
            // After a broker restart, reconnect within a second of its return: librdkafka's default
            // backoff grows to 10 s, longer than a partition's idle timeout.
            ("reconnect.backoff.max.ms", "1000"),
        ]);
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
        let PartitionReader { fetch, partitions, at_eof, errors, last_error, .. } = self;
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
        self.last_error = Some(error);
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
