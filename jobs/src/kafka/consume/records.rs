//! What the Kafka sources hand out: consumed records, borrowed ([`RecordRef`]) or owned
//! ([`KafkaRecord`]), and the errors a consumer survived ([`ConsumerErrors`]).
//!
//! Why its own file: the consumer produces these and both sources (tuples, requests) pass them on;
//! keeping them apart lets either depend on them without depending on each other.

/// One consumed record, borrowed from the consumer (no allocation); see [`KafkaRecord`] for an
/// owned copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Partition the record came from.
    pub partition: i32,
    /// Its offset in that partition.
    pub offset: i64,
    /// The record's Kafka timestamp (create or log-append time, ms): the event time of a tuple
    /// that carries none.
    pub timestamp_ms: Option<i64>,
    /// The record key, if any.
    pub key: Option<&'a [u8]>,
    /// The record value (empty for a null value).
    pub payload: &'a [u8],
}

impl RecordRef<'_> {
    /// An owned copy.
    pub fn to_owned_record(&self) -> KafkaRecord {
        KafkaRecord {
            partition: self.partition,
            offset: self.offset,
            timestamp_ms: self.timestamp_ms,
            key: self.key.map(<[u8]>::to_vec),
            payload: self.payload.to_vec(),
        }
    }
}

/// One consumed record, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaRecord {
    /// Partition the record came from.
    pub partition: i32,
    /// Its offset in that partition.
    pub offset: i64,
    /// The record's Kafka timestamp (ms).
    pub timestamp_ms: Option<i64>,
    /// The record key, if any.
    pub key: Option<Vec<u8>>,
    /// The record value (empty for a null value).
    pub payload: Vec<u8>,
}

impl KafkaRecord {
    /// The event time to use: the tuple's own time when it has one, else the record timestamp.
    ///
    /// ```
    /// use saams_jobs::kafka::KafkaRecord;
    /// let r = KafkaRecord { partition: 0, offset: 0, timestamp_ms: Some(7), key: None, payload: vec![] };
    /// assert_eq!(r.event_time(Some(3)), Some(3));
    /// assert_eq!(r.event_time(None), Some(7));
    /// ```
    pub fn event_time(&self, tuple_time_ms: Option<i64>) -> Option<i64> {
        tuple_time_ms.or(self.timestamp_ms)
    }
}

/// Errors a consumer met and survived, for the job's report (librdkafka retries transient ones).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerErrors {
    /// Errors returned by polls (broker transport failures, …), not counting end-of-partition.
    pub poll_errors: u64,
    /// The latest of them.
    pub last_poll_error: Option<String>,
    /// Asynchronous offset commits the broker refused.
    pub commit_failures: u64,
    /// The latest refusal.
    pub last_commit_error: Option<String>,
}
