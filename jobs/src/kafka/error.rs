//! What can go wrong in the Kafka adapters ([`AdapterError`]), and how long start-up checks wait
//! before they call the brokers unreachable ([`METADATA_TIMEOUT`], which the message quotes).
//!
//! Why its own file: the options, the metadata helpers, the admin calls, the sources and the sinks
//! all return this one error type; it depends on nothing else of the crate.

use std::fmt;
use std::time::Duration;

use rdkafka::error::KafkaError;

/// How long start-up checks (metadata fetches, topic creation) wait for the brokers before giving
/// up with [`AdapterError::Unreachable`]: a wrong `--brokers` must fail in seconds, not hang.
pub const METADATA_TIMEOUT: Duration = Duration::from_secs(5);

/// Everything that can go wrong in the Kafka adapters, with enough context to act on.
#[derive(Debug)]
pub enum AdapterError {
    /// A bad option or `-X` setting, or a bad argument to an adapter function.
    Setting(String),
    /// No broker answered a metadata request within [`METADATA_TIMEOUT`] (wrong address, broker
    /// down, or a security setting the brokers refuse).
    Unreachable {
        /// The bootstrap list that was tried.
        brokers: String,
        /// librdkafka's reason.
        detail: String,
    },
    /// The topic does not exist (the broker does not auto-create topics: create it first).
    MissingTopic {
        /// The topic name.
        topic: String,
    },
    /// A Kafka operation failed.
    Kafka {
        /// What the adapter was doing.
        context: String,
        /// librdkafka's error.
        source: KafkaError,
    },
    /// Records could not be delivered (counted by the producer's delivery callback).
    Delivery {
        /// The topic written to.
        topic: String,
        /// Records that failed since the previous report.
        failed: u64,
        /// The first failure's reason.
        first_error: String,
    },
}

impl fmt::Display for AdapterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdapterError::Setting(msg) => write!(f, "kafka: {msg}"),
            AdapterError::Unreachable { brokers, detail } => {
                write!(
                    f,
                    "kafka: could not fetch metadata from the brokers at {brokers} within {} s ({detail})",
                    METADATA_TIMEOUT.as_secs()
                )
            }
            AdapterError::MissingTopic { topic } => {
                write!(f, "kafka: topic {topic:?} does not exist (create it, e.g. with a partition count flag)")
            }
            AdapterError::Kafka { context, source } => write!(f, "kafka: {context}: {source}"),
            AdapterError::Delivery { topic, failed, first_error } => {
                write!(f, "kafka: {failed} record(s) could not be delivered to {topic:?}; first error: {first_error}")
            }
        }
    }
}

impl std::error::Error for AdapterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AdapterError::Kafka { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub(crate) fn kafka_err(context: impl Into<String>) -> impl FnOnce(KafkaError) -> AdapterError {
    let context = context.into();
    move |source| AdapterError::Kafka { context, source }
}
