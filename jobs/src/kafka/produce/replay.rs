//! The dataset replay path: tuple lines produced into the data topic, keyed by stream id
//! ([`TupleProducer`] one at a time, [`replay_lines`] a whole file at a paced rate).

use std::time::{Duration, Instant};

use super::producer::{CountingProducer, DeliveryReport, Ids};
use crate::kafka::error::AdapterError;
use crate::kafka::format::MAX_LINES_PER_RECORD;
use crate::kafka::options::KafkaOptions;

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
    /// use saams_jobs::kafka::ReplayReport;
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

/// Produces tuple lines (the `replay` binary's Kafka output), keyed by stream id so every stream
/// stays in order within one partition: one record per tuple, or, [`batched`](Self::batched),
/// many tuples per record. Call [`flush`](Self::flush) at the end.
pub struct TupleProducer {
    inner: CountingProducer,
    /// The batched format's records being filled, one per partition.
    batches: Option<Batches>,
}

/// Records of the batched format being filled: per partition, newline-separated lines.
struct Batches {
    /// Lines per record.
    lines: usize,
    /// Per partition (index = partition id): the record so far and its lines.
    open: Vec<(Vec<u8>, usize)>,
}

/// The partition librdkafka's default partitioner (`consistent_random`) gives a keyed record:
/// the key's CRC-32 modulo the partition count. A batch goes where each of its tuples would
/// have gone as a record of its own, so the two formats put every stream in the same partition,
/// in the same order.
fn partition_of(key: &[u8], partitions: usize) -> usize {
    crc32fast::hash(key) as usize % partitions.max(1)
}

impl TupleProducer {
    /// Connects (failing within seconds when no broker answers) and checks the topic exists.
    ///
    /// # Errors
    /// As [`KafkaEstimationSink::new`](crate::kafka::KafkaEstimationSink::new).
    pub fn new(opts: &KafkaOptions, topic: &str) -> Result<Self, AdapterError> {
        Ok(TupleProducer { inner: CountingProducer::open(opts, topic, &REPLAY_DEFAULTS)?, batches: None })
    }

    /// As [`new`](Self::new), writing the batched format: records of `lines` newline-separated
    /// tuples (the last of each partition may hold fewer), each partition's filled in the order
    /// its tuples are sent. One record per tuple costs the brokers and the job's consumer a
    /// message each; a batch costs them one for all its tuples, as log shippers batch.
    ///
    /// # Errors
    /// [`AdapterError::Setting`] unless `1 ≤ lines ≤` [`MAX_LINES_PER_RECORD`]; else as
    /// [`new`](Self::new).
    pub fn batched(opts: &KafkaOptions, topic: &str, lines: usize) -> Result<Self, AdapterError> {
        if !(1..=MAX_LINES_PER_RECORD).contains(&lines) {
            return Err(AdapterError::Setting(format!(
                "--batch {lines}: a record carries 1 to {MAX_LINES_PER_RECORD} tuples"
            )));
        }
        let inner = CountingProducer::open(opts, topic, &REPLAY_DEFAULTS)?;
        let partitions = inner.partitions.iter().copied().max().map_or(0, |p| p as usize + 1);
        let open = vec![(Vec::new(), 0); partitions];
        Ok(TupleProducer { inner, batches: Some(Batches { lines, open }) })
    }

    /// Enqueues one line keyed by `stream_id` (waiting while librdkafka's queue is full); in the
    /// batched format, adds it to its partition's record and sends that once it is full.
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when librdkafka refuses the record.
    pub fn send(&mut self, stream_id: &str, line: &str) -> Result<(), AdapterError> {
        let Some(batches) = self.batches.as_mut() else {
            return self.inner.send(Some(stream_id.as_bytes()), line.as_bytes(), None);
        };
        let partition = partition_of(stream_id.as_bytes(), self.inner.partitions.len());
        let (record, n) = &mut batches.open[partition];
        if *n > 0 {
            record.push(b'\n');
        }
        record.extend_from_slice(line.as_bytes());
        *n += 1;
        if *n == batches.lines {
            self.inner.send_to(partition as i32, record)?;
            record.clear();
            *n = 0;
        }
        Ok(())
    }

    /// Sends the batched format's partly filled records, waits up to `timeout` for every
    /// acknowledgement, then reports (records, not tuples).
    ///
    /// # Errors
    /// [`AdapterError::Delivery`] when records failed, [`AdapterError::Kafka`] on a timeout.
    pub fn flush(&mut self, timeout: Duration) -> Result<DeliveryReport, AdapterError> {
        if let Some(batches) = self.batches.as_mut() {
            for (partition, (record, n)) in batches.open.iter_mut().enumerate() {
                if *n > 0 {
                    self.inner.send_to(partition as i32, record)?;
                    record.clear();
                    *n = 0;
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::partition_of;

    #[test]
    fn batches_go_where_librdkafka_puts_their_keys() {
        // librdkafka's consistent_random: CRC-32 (IEEE) of the key modulo the partition count.
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926, "the IEEE check value");
        assert_eq!(partition_of(b"123456789", 4), 0xCBF4_3926 % 4);
        assert_eq!(partition_of(b"", 4), 0, "an empty key");
        assert_eq!(partition_of(b"x", 0), partition_of(b"x", 1), "no partitions: no panic");
    }
}
