//! The producer every Kafka sink is built on ([`CountingProducer`]): one topic, an rdkafka
//! [`ThreadedProducer`] whose delivery callback counts successes and failures, back-pressure on a
//! full local queue, and the delivery report ([`DeliveryReport`]) the sinks hand out.
//!
//! Why its own file: the estimation, dead-letter and replay producers differ only in their
//! records and settings; the delivery bookkeeping they share is here.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::error::KafkaError;
use rdkafka::message::{DeliveryResult, Message, OwnedHeaders};
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use serde::Deserialize;

use super::acks::Completed;
use crate::kafka::error::{AdapterError, kafka_err};
use crate::kafka::lock::lock;
use crate::kafka::metadata::topic_partitions;
use crate::kafka::options::KafkaOptions;

/// How long a send keeps retrying while librdkafka's local queue is full before giving up.
const QUEUE_FULL_PATIENCE: Duration = Duration::from_secs(60);

/// The ids an estimation or a tuple line is keyed by.
#[derive(Deserialize)]
pub(super) struct Ids<'a> {
    #[serde(rename = "streamID", borrow, default)]
    pub(super) stream_id: Option<Cow<'a, str>>,
    #[serde(rename = "dataSetKey", borrow, default)]
    pub(super) dataset_key: Option<Cow<'a, str>>,
}

/// Counters filled by the producer's delivery callback (on librdkafka's polling thread).
#[derive(Default)]
pub(super) struct DeliveryCounters {
    delivered: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

/// The delivery callback's context: counts every report, and for the estimation topic keeps the
/// partitions' delivered ends and which records are done.
#[derive(Clone, Default)]
pub(super) struct CountingContext {
    pub(super) counters: Arc<DeliveryCounters>,
    /// Per partition, one past the newest offset delivered (kept for the estimation topic only).
    pub(super) ends: Option<Arc<Mutex<HashMap<i32, i64>>>>,
    /// Which records (by send sequence number, the delivery opaque) are done (kept for the
    /// estimation topic only).
    pub(super) completed: Option<Arc<Mutex<Completed>>>,
}

impl CountingContext {
    /// A context that keeps which records are done, for `delivered_before`.
    pub(super) fn acknowledging() -> Self {
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
    /// use saams_jobs::kafka::DeliveryReport;
    /// let r = DeliveryReport { sent: 10, delivered: 7, failed: 1, first_error: Some("timed out".into()) };
    /// assert_eq!(r.in_flight(), 2);
    /// ```
    pub fn in_flight(&self) -> u64 {
        self.sent.saturating_sub(self.delivered + self.failed)
    }
}

/// A producer for one topic with delivery counting.
pub(super) struct CountingProducer {
    pub(super) producer: ThreadedProducer<CountingContext>,
    counters: Arc<DeliveryCounters>,
    pub(super) topic: String,
    /// The topic's partitions when the producer was opened.
    pub(super) partitions: Vec<i32>,
    pub(super) sent: u64,
    failures_reported: u64,
    /// Which records (by send sequence number) are done, when the context keeps them.
    completed: Option<Arc<Mutex<Completed>>>,
}

impl CountingProducer {
    pub(super) fn open(opts: &KafkaOptions, topic: &str, defaults: &[(&str, &str)]) -> Result<Self, AdapterError> {
        Self::open_with(opts, topic, defaults, CountingContext::default())
    }

    pub(super) fn open_with(
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

    pub(super) fn send(
        &mut self,
        key: Option<&[u8]>,
        payload: &[u8],
        headers: Option<OwnedHeaders>,
    ) -> Result<(), AdapterError> {
        // `usize` holds the sequence number on the 64-bit targets librdkafka is built for here.
        let mut record: BaseRecord<'_, [u8], [u8], usize> =
            BaseRecord::with_opaque_to(&self.topic, self.sent as usize).payload(payload);
        if let Some(key) = key {
            record = record.key(key);
        }
        if let Some(headers) = headers {
            record = record.headers(headers);
        }
        enqueue(&self.producer, &self.topic, &mut self.sent, record)
    }

    /// Sends an unkeyed record to `partition` (a batch of tuples the caller has partitioned).
    pub(super) fn send_to(&mut self, partition: i32, payload: &[u8]) -> Result<(), AdapterError> {
        let record = BaseRecord::with_opaque_to(&self.topic, self.sent as usize).payload(payload).partition(partition);
        enqueue(&self.producer, &self.topic, &mut self.sent, record)
    }

    pub(super) fn report(&self) -> DeliveryReport {
        DeliveryReport {
            sent: self.sent,
            delivered: self.counters.delivered.load(Ordering::Relaxed),
            failed: self.counters.failed.load(Ordering::Relaxed),
            first_error: self.counters.first_error.lock().ok().and_then(|g| g.clone()),
        }
    }

    pub(super) fn flush(&mut self, timeout: Duration) -> Result<DeliveryReport, AdapterError> {
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
    pub(super) fn delivered_before(&mut self, mark: u64) -> Result<bool, AdapterError> {
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

/// Hands `record` to librdkafka, waiting while its queue is full; counts it in `sent`.
fn enqueue(
    producer: &ThreadedProducer<CountingContext>,
    topic: &str,
    sent: &mut u64,
    mut record: BaseRecord<'_, [u8], [u8], usize>,
) -> Result<(), AdapterError> {
    let mut waited_since: Option<Instant> = None;
    loop {
        match producer.send(record) {
            Ok(()) => {
                *sent += 1;
                return Ok(());
            }
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                // Back-pressure: the background thread drains the queue; wait a little.
                let since = *waited_since.get_or_insert_with(Instant::now);
                if since.elapsed() > QUEUE_FULL_PATIENCE {
                    return Err(AdapterError::Kafka {
                        context: format!(
                            "producing to {:?}: local queue full for {} s (brokers not accepting?)",
                            topic,
                            QUEUE_FULL_PATIENCE.as_secs()
                        ),
                        source: KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull),
                    });
                }
                record = back;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((e, _)) => return Err(kafka_err(format!("producing to {:?}", topic))(e)),
        }
    }
}
