//! The dead letters' producer ([`KafkaDeadLetterSink`]): rejected input byte for byte, with the
//! reason and the input record's origin in headers (format in [`crate::kafka::produce`]).

use std::time::Duration;

use rdkafka::message::{Header, OwnedHeaders};

use super::producer::{CountingContext, CountingProducer, DeliveryReport};
use crate::kafka::error::AdapterError;
use crate::kafka::options::KafkaOptions;

/// Header naming why a dead letter was rejected.
pub const REASON_HEADER: &str = "saams.reason";
/// Header with `topic/partition/offset` of the rejected input record (`topic/partition/offset/line`
/// for a line of a batched record).
pub const ORIGIN_HEADER: &str = "saams.origin";

/// Where a dead letter came from, when it was read from Kafka.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordOrigin<'a> {
    /// Input topic.
    pub topic: &'a str,
    /// Input partition.
    pub partition: i32,
    /// Input offset.
    pub offset: i64,
    /// The line within a batched record (`None` for a record of one tuple).
    pub line: Option<u64>,
}

/// Writes rejected input (malformed or late tuples, bad requests) with the reason; see the module
/// documentation for the record format. Flush before dropping, as for
/// [`KafkaEstimationSink`](crate::kafka::KafkaEstimationSink).
pub struct KafkaDeadLetterSink {
    inner: CountingProducer,
}

impl KafkaDeadLetterSink {
    /// Connects (failing within seconds when no broker answers) and checks the topic exists.
    ///
    /// # Errors
    /// As [`KafkaEstimationSink::new`](crate::kafka::KafkaEstimationSink::new).
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
            let mut origin = format!("{}/{}/{}", o.topic, o.partition, o.offset);
            if let Some(line) = o.line {
                origin = format!("{origin}/{line}");
            }
            headers = headers.insert(Header { key: ORIGIN_HEADER, value: Some(&origin) });
        }
        self.inner.send(key, raw, Some(headers))
    }

    /// As [`KafkaEstimationSink::flush`](crate::kafka::KafkaEstimationSink::flush).
    ///
    /// # Errors
    /// As [`KafkaEstimationSink::flush`](crate::kafka::KafkaEstimationSink::flush).
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
    /// As
    /// [`KafkaEstimationSink::delivered_before`](crate::kafka::KafkaEstimationSink::delivered_before).
    pub fn delivered_before(&mut self, mark: u64) -> Result<bool, AdapterError> {
        self.inner.delivered_before(mark)
    }
}
