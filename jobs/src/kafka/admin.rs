//! Topic creation at start-up ([`ensure_topics`]): the brokers are not expected to auto-create
//! topics, so the job and the replay tool create the ones they need, then wait until the metadata
//! shows them.
//!
//! Why its own file: it is the only user of rdkafka's admin client and of a future executor
//! ([`block_on`]), both kept away from the per-record code.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;

use super::error::{AdapterError, METADATA_TIMEOUT, kafka_err};
use super::metadata::{fetch_metadata, topic_partitions};
use super::options::KafkaOptions;

/// A topic [`ensure_topics`] creates when missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    /// Topic name.
    pub name: String,
    /// Partition count for a new topic (an existing topic keeps its own).
    pub partitions: i32,
    /// Replication factor for a new topic; `-1` asks for the broker's default.
    pub replication: i32,
    /// `cleanup.policy=compact`: keep only the latest record per key (estimations keyed by
    /// `streamID,dataSetKey` then keep the latest answer per stream).
    pub compacted: bool,
}

impl TopicSpec {
    /// A non-compacted topic with replication factor 1 (single-broker development setups).
    ///
    /// ```
    /// use saams_jobs::kafka::TopicSpec;
    /// let mut out = TopicSpec::new("estimations", 4);
    /// out.compacted = true;
    /// assert_eq!((out.partitions, out.replication, out.compacted), (4, 1, true));
    /// ```
    pub fn new(name: impl Into<String>, partitions: i32) -> Self {
        TopicSpec { name: name.into(), partitions, replication: 1, compacted: false }
    }
}

/// Creates every topic of `specs` that does not exist yet (the broker is not expected to
/// auto-create topics) and waits until the metadata shows all of them. Returns, per spec, whether
/// this call created it.
///
/// # Errors
/// [`AdapterError::Setting`] for a partition count < 1 or bad options,
/// [`AdapterError::Unreachable`] when no broker answers, [`AdapterError::Kafka`] when the broker
/// refuses a creation (the topic name and the broker's reason are in the message).
pub fn ensure_topics(opts: &KafkaOptions, specs: &[TopicSpec]) -> Result<Vec<bool>, AdapterError> {
    opts.validate()?;
    if let Some(bad) = specs.iter().find(|s| s.partitions < 1) {
        return Err(AdapterError::Setting(format!(
            "topic {:?}: partition count must be at least 1, got {}",
            bad.name, bad.partitions
        )));
    }
    let consumer: BaseConsumer = opts.client_config().create().map_err(kafka_err("creating a metadata client"))?;
    let metadata = fetch_metadata(consumer.client(), &opts.brokers, None)?;
    let exists = |name: &str| metadata.topics().iter().any(|t| t.name() == name && t.error().is_none());
    let mut missing: Vec<&TopicSpec> = specs.iter().filter(|s| !exists(&s.name)).collect();
    missing.sort_by(|a, b| a.name.cmp(&b.name));
    missing.dedup_by(|a, b| a.name == b.name);
    let created_names = if missing.is_empty() { Vec::new() } else { create_topics(opts, &missing)? };
    let created = specs.iter().map(|s| created_names.contains(&s.name)).collect();
    wait_until_listed(&consumer, opts, specs)?;
    Ok(created)
}

/// Deletes `names` (a missing topic is not an error): experiments load a topic with millions of
/// records, and a broker that keeps them in memory would hold every run's copy until restarted.
///
/// # Errors
/// [`AdapterError::Kafka`] when no admin client can be made, or the broker refuses a deletion.
pub fn delete_topics(opts: &KafkaOptions, names: &[&str]) -> Result<(), AdapterError> {
    let admin: AdminClient<DefaultClientContext> =
        opts.client_config().create().map_err(kafka_err("creating an admin client"))?;
    let admin_opts =
        AdminOptions::new().request_timeout(Some(METADATA_TIMEOUT)).operation_timeout(Some(METADATA_TIMEOUT));
    let results = block_on(admin.delete_topics(names, &admin_opts)).map_err(kafka_err("deleting topics"))?;
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::UnknownTopicOrPartition)) => {}
            Err((name, code)) => {
                return Err(AdapterError::Kafka {
                    context: format!("deleting topic {name:?}"),
                    source: KafkaError::AdminOp(code),
                });
            }
        }
    }
    Ok(())
}

/// Asks the brokers to create `missing` (distinct names) and returns the names they created; a
/// topic that appeared meanwhile is not an error.
fn create_topics(opts: &KafkaOptions, missing: &[&TopicSpec]) -> Result<Vec<String>, AdapterError> {
    let admin: AdminClient<DefaultClientContext> =
        opts.client_config().create().map_err(kafka_err("creating an admin client"))?;
    let new_topics: Vec<NewTopic<'_>> = missing
        .iter()
        .map(|s| {
            let topic = NewTopic::new(&s.name, s.partitions, TopicReplication::Fixed(s.replication));
            if s.compacted { topic.set("cleanup.policy", "compact") } else { topic }
        })
        .collect();
    let admin_opts =
        AdminOptions::new().request_timeout(Some(METADATA_TIMEOUT)).operation_timeout(Some(METADATA_TIMEOUT));
    let results =
        block_on(admin.create_topics(new_topics.iter(), &admin_opts)).map_err(kafka_err("creating topics"))?;
    let mut created = Vec::new();
    for result in results {
        match result {
            Ok(name) => created.push(name),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => {
                return Err(AdapterError::Kafka {
                    context: format!("creating topic {name:?}"),
                    source: KafkaError::AdminOp(code),
                });
            }
        }
    }
    Ok(created)
}

/// Waits (up to [`METADATA_TIMEOUT`]) until the metadata lists every topic of `specs` with its
/// partitions: a new topic may be unknown or leaderless for a moment.
fn wait_until_listed(consumer: &BaseConsumer, opts: &KafkaOptions, specs: &[TopicSpec]) -> Result<(), AdapterError> {
    let deadline = Instant::now() + METADATA_TIMEOUT;
    for spec in specs {
        loop {
            match topic_partitions(consumer.client(), &opts.brokers, &spec.name) {
                Ok(_) => break,
                Err(AdapterError::MissingTopic { .. } | AdapterError::Kafka { .. }) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Runs a future to completion on the current thread. Only used at start-up (topic creation), never
/// inside operators; rdkafka's admin client drives its own thread, so no async runtime is needed.
fn block_on<F: Future>(future: F) -> F::Output {
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(value) => return value,
            Poll::Pending => std::thread::park(),
        }
    }
}
