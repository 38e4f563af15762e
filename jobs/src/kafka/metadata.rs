//! Metadata fetches with a deadline: whether a broker answers ([`check_brokers`]) and which
//! partitions a topic has ([`topic_partitions`]).
//!
//! Why its own file: consumers, producers and topic creation all start with a metadata fetch, and all
//! must turn a wrong `--brokers` or a missing topic into a clear error within seconds, not a hang.

use rdkafka::client::{Client, ClientContext};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::metadata::Metadata;
use rdkafka::types::RDKafkaErrorCode;

use super::error::{AdapterError, METADATA_TIMEOUT, kafka_err};
use super::options::KafkaOptions;

/// Fetches metadata (all topics, or one) and turns a timeout or transport failure into
/// [`AdapterError::Unreachable`].
pub(crate) fn fetch_metadata<C: ClientContext>(
    client: &Client<C>,
    brokers: &str,
    topic: Option<&str>,
) -> Result<Metadata, AdapterError> {
    let metadata = client
        .fetch_metadata(topic, METADATA_TIMEOUT)
        .map_err(|e| AdapterError::Unreachable { brokers: brokers.to_string(), detail: e.to_string() })?;
    if metadata.brokers().is_empty() {
        return Err(AdapterError::Unreachable {
            brokers: brokers.to_string(),
            detail: "metadata lists no broker".into(),
        });
    }
    Ok(metadata)
}

/// The partition ids of `topic`, sorted, from a metadata fetch.
pub(crate) fn topic_partitions<C: ClientContext>(
    client: &Client<C>,
    brokers: &str,
    topic: &str,
) -> Result<Vec<i32>, AdapterError> {
    let metadata = fetch_metadata(client, brokers, Some(topic))?;
    let Some(meta) = metadata.topics().iter().find(|t| t.name() == topic) else {
        return Err(AdapterError::MissingTopic { topic: topic.to_string() });
    };
    if let Some(err) = meta.error() {
        let code = RDKafkaErrorCode::from(err);
        if code == RDKafkaErrorCode::UnknownTopicOrPartition || code == RDKafkaErrorCode::UnknownTopic {
            return Err(AdapterError::MissingTopic { topic: topic.to_string() });
        }
        return Err(AdapterError::Kafka {
            context: format!("metadata of topic {topic:?}"),
            source: KafkaError::MetadataFetch(code),
        });
    }
    let mut partitions: Vec<i32> = meta.partitions().iter().map(|p| p.id()).collect();
    if partitions.is_empty() {
        return Err(AdapterError::MissingTopic { topic: topic.to_string() });
    }
    partitions.sort_unstable();
    Ok(partitions)
}

/// Checks that a broker answers within [`METADATA_TIMEOUT`] and returns how many brokers the
/// cluster lists. Call it at start so a wrong `--brokers` fails fast with a clear message.
///
/// # Errors
/// [`AdapterError::Setting`] for bad options, [`AdapterError::Unreachable`] when no broker answers.
pub fn check_brokers(opts: &KafkaOptions) -> Result<usize, AdapterError> {
    opts.validate()?;
    let consumer: BaseConsumer = opts.client_config().create().map_err(kafka_err("creating a metadata client"))?;
    Ok(fetch_metadata(consumer.client(), &opts.brokers, None)?.brokers().len())
}
