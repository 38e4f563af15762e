//! The requests topic's source ([`KafkaBroadcastSource`]): every worker reads every partition from
//! the start, without commits.
//!
//! Why its own file: it shares the consumer with the tuple source but none of its watermarks or
//! offset bookkeeping.

use std::time::Duration;

use super::consumer::PartitionReader;
use super::records::{ConsumerErrors, KafkaRecord, RecordRef};
use crate::kafka::error::AdapterError;
use crate::kafka::options::{KafkaOptions, StartFrom};

/// The requests topic as every worker reads it: all partitions, each worker its own consumer, no
/// commits (requests are few; every worker must see all of them to keep the same registry).
/// Always starts from the beginning of the topic, whatever `opts.from` says of the data topic:
/// requests are a log of commands, and a job that skipped the constructs before its start would
/// hold no synopses (as a Kafka Streams application restores its state from the changelog start).
pub struct KafkaBroadcastSource {
    reader: PartitionReader,
}

impl KafkaBroadcastSource {
    /// Connects and assigns all partitions of `topic`; `worker_index` only names the client.
    ///
    /// # Errors
    /// As [`KafkaTupleSource::new`](super::KafkaTupleSource::new).
    pub fn new(opts: &KafkaOptions, topic: &str, worker_index: usize) -> Result<Self, AdapterError> {
        let client_id = format!("saams-{}-requests-w{worker_index}", opts.group_id);
        let reader = PartitionReader::open(opts, topic, &client_id, StartFrom::Earliest, |all| Ok(all.to_vec()))?;
        Ok(KafkaBroadcastSource { reader })
    }

    /// As [`KafkaBroadcastSource::new`], each partition from the offset `at` gives it (from its
    /// first record if none): a job with checkpoints follows its request topic from where its
    /// request log says it was read ([`crate::control::request_log::RequestLog::topic_read`]).
    ///
    /// # Errors
    /// As [`KafkaBroadcastSource::new`].
    pub fn open_at(
        opts: &KafkaOptions,
        topic: &str,
        at: &std::collections::BTreeMap<i32, i64>,
        worker_index: usize,
    ) -> Result<Self, AdapterError> {
        let client_id = format!("saams-{}-requests-w{worker_index}", opts.group_id);
        let start = |p: i32| at.get(&p).copied();
        let exact = (StartFrom::Earliest, Some(&start as &dyn Fn(i32) -> Option<i64>));
        let reader = PartitionReader::open_at(opts, topic, &client_id, exact, |all| Ok(all.to_vec()))?;
        Ok(KafkaBroadcastSource { reader })
    }

    /// The partitions read (all of the topic's, sorted).
    pub fn partitions(&self) -> &[i32] {
        &self.reader.partitions
    }

    /// As [`KafkaTupleSource::poll_with`](super::KafkaTupleSource::poll_with).
    ///
    /// # Errors
    /// As [`KafkaTupleSource::poll_with`](super::KafkaTupleSource::poll_with).
    pub fn poll_with<F: FnMut(RecordRef<'_>)>(
        &mut self,
        max: usize,
        wait: Duration,
        f: F,
    ) -> Result<usize, AdapterError> {
        self.reader.poll_with(max, wait, f)
    }

    /// As [`KafkaTupleSource::poll_batch`](super::KafkaTupleSource::poll_batch).
    ///
    /// # Errors
    /// As [`KafkaTupleSource::poll_with`](super::KafkaTupleSource::poll_with).
    pub fn poll_batch(&mut self, max: usize, wait: Duration) -> Result<Vec<KafkaRecord>, AdapterError> {
        let mut out = Vec::new();
        self.reader.poll_with(max, wait, |r| out.push(r.to_owned_record()))?;
        Ok(out)
    }

    /// True when every partition has been read to its end (as of the last poll).
    pub fn at_end(&self) -> bool {
        self.reader.at_end()
    }

    /// Errors met and survived so far.
    pub fn errors(&self) -> ConsumerErrors {
        self.reader.errors()
    }
}
