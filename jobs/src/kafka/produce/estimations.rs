//! The answers' producer ([`KafkaEstimationSink`]): estimations keyed by `streamID,dataSetKey`
//! ([`estimation_key`]), each with its id ([`answer_id`]) in the [`ANSWER_HEADER`] header, and the
//! restart's deduplication: the answers already in the topic past a checkpoint's offsets are not
//! produced again (see [`crate::kafka::produce`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::Producer;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaErrorCode;

use super::producer::{CountingContext, CountingProducer, DeliveryReport, Ids};
use crate::kafka::error::{AdapterError, kafka_err};
use crate::kafka::lock::lock;
use crate::kafka::metadata::topic_partitions;
use crate::kafka::options::KafkaOptions;

/// Header carrying an answer's id ([`answer_id`], 16 hex digits).
pub const ANSWER_HEADER: &str = "saams.answer";

/// How long a restart may take to read the answer topic's tail ([`KafkaEstimationSink::skip_delivered`]).
const TAIL_TIMEOUT: Duration = Duration::from_secs(60);

/// The id of an answer line: its 64-bit FNV-1a hash. Answers are deterministic (the same input
/// and requests give the same lines), so a restarted job recognises the answers it already
/// produced by their ids. FNV-1a is fixed by its definition (no seed, no version drift).
///
/// ```
/// use saams_jobs::kafka::answer_id;
/// assert_eq!(answer_id(""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(answer_id("a"), 0xaf63_dc4c_8601_ec8c);
/// assert_ne!(answer_id(r#"{"uid":1}"#), answer_id(r#"{"uid":2}"#));
/// ```
pub fn answer_id(line: &str) -> u64 {
    line.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The record key of an estimation: `streamID,dataSetKey`. Commas and backslashes inside either part
/// are escaped with a backslash, so distinct (stream, dataset) pairs never share a key (and never
/// overwrite each other in a compacted topic); ordinary ids come out unchanged.
///
/// ```
/// use saams_jobs::kafka::estimation_key;
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
