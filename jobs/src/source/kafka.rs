//! Kafka sources: the data topic spread over all workers, the requests topic read by every worker,
//! per-partition event-time watermarks with idleness, and offset commits that follow window flushes.
//!
//! Everything here is usable from inside a timely worker's step: consumers are rdkafka
//! [`BaseConsumer`]s whose records are taken in batches with a zero (or small) timeout, partitions
//! are assigned by hand (`p % peers == worker_index`, no group rebalance), and nothing needs an
//! async runtime. The consumer itself (its batch queue, commit replies, errors) is in `consumer`.
//! This file also holds what sources and sinks share: [`KafkaOptions`] (with kcat-style `-X`
//! settings), [`AdapterError`], broker checks and topic creation ([`ensure_topics`]).
//!
//! Delivery guarantee: at-least-once. Offsets are committed only up to records whose windows the
//! engine has reported flushed ([`KafkaTupleSource::mark_processed`],
//! [`KafkaTupleSource::commit_through`]); after a crash the uncommitted tail is read again.

mod consumer;

use consumer::PartitionReader;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{Client, ClientContext, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::metadata::Metadata;
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaErrorCode;
use saams::api::Tuple;
use saams_datasets::LineContext;

use crate::run::Stats;
use crate::sink::file::LineSink;
use crate::sink::kafka::{DeadLetterLines, EstimationLines, KafkaDeadLetterSink, KafkaEstimationSink, RecordOrigin};

/// How long start-up checks (metadata fetches, topic creation) wait for the brokers before giving
/// up with [`AdapterError::Unreachable`]: a wrong `--brokers` must fail in seconds, not hang.
pub const METADATA_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a consumer starts reading a partition (`--from earliest|latest|committed`).
///
/// ```
/// use saams_jobs::source::kafka::StartFrom;
/// assert_eq!("earliest".parse::<StartFrom>().unwrap(), StartFrom::Earliest);
/// assert_eq!("Committed".parse::<StartFrom>().unwrap(), StartFrom::Committed);
/// assert!("yesterday".parse::<StartFrom>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFrom {
    /// The oldest record still in the partition (replays everything retained).
    Earliest,
    /// Only records produced after the consumer was assigned the partition.
    Latest,
    /// The group's committed offset; partitions without one start at the earliest record, so a
    /// first run reads everything and a restart resumes where the last flushed window ended.
    Committed,
}

impl StartFrom {
    fn offset(self) -> Offset {
        match self {
            StartFrom::Earliest => Offset::Beginning,
            StartFrom::Latest => Offset::End,
            StartFrom::Committed => Offset::Stored,
        }
    }
}

impl FromStr for StartFrom {
    type Err = AdapterError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "earliest" => Ok(StartFrom::Earliest),
            "latest" => Ok(StartFrom::Latest),
            "committed" => Ok(StartFrom::Committed),
            _ => Err(AdapterError::Setting(format!(
                "unknown start position {s:?}: expected earliest, latest or committed"
            ))),
        }
    }
}

impl fmt::Display for StartFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StartFrom::Earliest => "earliest",
            StartFrom::Latest => "latest",
            StartFrom::Committed => "committed",
        })
    }
}

/// Connection settings shared by every Kafka source and sink of one job.
///
/// `extra` holds `-X key=value` settings handed straight to librdkafka (as kcat does), applied
/// after the adapter's own defaults so a user can override any of them (security, timeouts, …).
///
/// ```
/// use saams_jobs::source::kafka::{KafkaOptions, StartFrom, parse_setting};
/// let mut opts = KafkaOptions::new("127.0.0.1:9092", "saams");
/// opts.from = StartFrom::Earliest;
/// opts.extra.push(parse_setting("session.timeout.ms=2000").unwrap());
/// assert!(opts.validate().is_ok());
/// let config = opts.client_config();
/// assert_eq!(config.get("bootstrap.servers"), Some("127.0.0.1:9092"));
/// assert_eq!(config.get("session.timeout.ms"), Some("2000"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaOptions {
    /// Comma-separated `host:port` bootstrap list (`--brokers`).
    pub brokers: String,
    /// Consumer group whose committed offsets `--from committed` resumes from (`--group-id`).
    pub group_id: String,
    /// Where the data consumers start (`--from`).
    pub from: StartFrom,
    /// Raw librdkafka settings (`-X key=value`), applied last.
    pub extra: Vec<(String, String)>,
}

impl KafkaOptions {
    /// Options with the given brokers and group, starting from committed offsets, no extra
    /// settings: the safe default for a service that must not lose or re-read much on restart.
    pub fn new(brokers: impl Into<String>, group_id: impl Into<String>) -> Self {
        KafkaOptions {
            brokers: brokers.into(),
            group_id: group_id.into(),
            from: StartFrom::Committed,
            extra: Vec::new(),
        }
    }

    /// The librdkafka configuration: `bootstrap.servers` plus the `-X` settings. Consumers and
    /// producers add their own defaults before the `-X` ones are re-applied on top.
    pub fn client_config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &self.brokers);
        self.apply_extra(&mut config);
        config
    }

    fn apply_extra(&self, config: &mut ClientConfig) {
        for (key, value) in &self.extra {
            config.set(key, value);
        }
    }

    /// Checks the options without contacting a broker: brokers and group are non-empty and
    /// librdkafka accepts every `-X` key and value.
    ///
    /// ```
    /// use saams_jobs::source::kafka::KafkaOptions;
    /// let mut opts = KafkaOptions::new("127.0.0.1:9092", "saams");
    /// opts.extra.push(("no.such.property".into(), "1".into()));
    /// let err = opts.validate().unwrap_err().to_string();
    /// assert!(err.contains("no.such.property"), "{err}");
    /// ```
    ///
    /// # Errors
    /// [`AdapterError::Setting`] naming the offending option.
    pub fn validate(&self) -> Result<(), AdapterError> {
        if self.brokers.trim().is_empty() {
            return Err(AdapterError::Setting("--brokers is empty: give host:port[,host:port…]".into()));
        }
        if self.group_id.trim().is_empty() {
            return Err(AdapterError::Setting("--group-id is empty".into()));
        }
        self.client_config()
            .create_native_config()
            .map(|_| ())
            .map_err(|e| AdapterError::Setting(format!("librdkafka refused a -X setting: {e}")))
    }
}

/// Parses one `-X key=value` librdkafka setting (kcat syntax). The value may contain `=`.
///
/// ```
/// use saams_jobs::source::kafka::parse_setting;
/// assert_eq!(parse_setting("sasl.password=a=b").unwrap(), ("sasl.password".to_string(), "a=b".to_string()));
/// assert!(parse_setting("linger.ms").is_err());
/// assert!(parse_setting("=5").is_err());
/// ```
///
/// It fits clap directly, as does [`StartFrom`]:
/// ```
/// use clap::Parser;
/// use saams_jobs::source::kafka::{StartFrom, parse_setting};
/// #[derive(Parser)]
/// struct Cli {
///     #[arg(long, default_value = "committed")]
///     from: StartFrom,
///     #[arg(short = 'X', value_parser = parse_setting)]
///     extra: Vec<(String, String)>,
/// }
/// let cli = Cli::try_parse_from(["saams", "--from", "latest", "-X", "linger.ms=5", "-X", "acks=all"]).unwrap();
/// assert_eq!(cli.from, StartFrom::Latest);
/// assert_eq!(cli.extra[1], ("acks".to_string(), "all".to_string()));
/// let err = Cli::try_parse_from(["saams", "-X", "linger.ms"]).err().unwrap().to_string();
/// assert!(err.contains("expected key=value"), "{err}");
/// ```
///
/// # Errors
/// [`AdapterError::Setting`] when there is no `=`, the key is empty or contains whitespace.
pub fn parse_setting(s: &str) -> Result<(String, String), AdapterError> {
    let Some((key, value)) = s.split_once('=') else {
        return Err(AdapterError::Setting(format!("-X {s:?}: expected key=value")));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(AdapterError::Setting(format!("-X {s:?}: the key before '=' is empty")));
    }
    if key.chars().any(char::is_whitespace) {
        return Err(AdapterError::Setting(format!("-X {s:?}: the key contains whitespace")));
    }
    Ok((key.to_string(), value.to_string()))
}

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
    /// use saams_jobs::source::kafka::TopicSpec;
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
    let mut created = vec![false; specs.len()];
    if !missing.is_empty() {
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
        for result in results {
            match result {
                Ok(name) => {
                    for (i, s) in specs.iter().enumerate() {
                        if s.name == name {
                            created[i] = true;
                        }
                    }
                }
                Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => {
                    return Err(AdapterError::Kafka {
                        context: format!("creating topic {name:?}"),
                        source: KafkaError::AdminOp(code),
                    });
                }
            }
        }
    }
    let deadline = Instant::now() + METADATA_TIMEOUT;
    for spec in specs {
        loop {
            match topic_partitions(consumer.client(), &opts.brokers, &spec.name) {
                Ok(_) => break,
                // a new topic may be unknown or leaderless for a moment
                Err(AdapterError::MissingTopic { .. } | AdapterError::Kafka { .. }) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(created)
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

/// The partitions worker `worker_index` of `peers` reads: `p % peers == worker_index`. Worker
/// indices are global (all workers of all processes), so the topic is spread over the cluster.
///
/// ```
/// use saams_jobs::source::kafka::assigned_partitions;
/// let all = [0, 1, 2, 3, 4];
/// assert_eq!(assigned_partitions(&all, 0, 2).unwrap(), vec![0, 2, 4]);
/// assert_eq!(assigned_partitions(&all, 1, 2).unwrap(), vec![1, 3]);
/// assert_eq!(assigned_partitions(&all, 6, 8).unwrap(), Vec::<i32>::new());
/// assert!(assigned_partitions(&all, 2, 2).is_err());
/// ```
///
/// # Errors
/// [`AdapterError::Setting`] when `peers` is 0 or `worker_index >= peers`.
pub fn assigned_partitions(partitions: &[i32], worker_index: usize, peers: usize) -> Result<Vec<i32>, AdapterError> {
    if peers == 0 || worker_index >= peers {
        return Err(AdapterError::Setting(format!("worker index {worker_index} out of range for {peers} worker(s)")));
    }
    Ok(partitions.iter().copied().filter(|&p| p >= 0 && (p as usize) % peers == worker_index).collect())
}

/// Per-partition event-time watermarks with idleness, as Flink's
/// `forBoundedOutOfOrderness(lateness).withIdleness(idle_timeout)`.
///
/// The watermark is the minimum over the *active* partitions of (that partition's max event time −
/// lateness), so records of a slow partition interleaved with a fast one are never late just because
/// the other partition is ahead. A partition that produced no event time for `idle_timeout` (or
/// none since start) is left out of the minimum until it produces again, so an idle partition does
/// not hold windows open forever. The watermark never goes back: when an idle partition returns
/// behind it, its records below the watermark are late (as in Flink).
///
/// Pure bookkeeping with explicit clocks, so it is deterministic to test.
///
/// ```
/// use std::time::{Duration, Instant};
/// use saams_jobs::source::kafka::PartitionWatermarks;
/// let t0 = Instant::now();
/// let mut w = PartitionWatermarks::new(&[0, 1], 100, Duration::from_secs(10), t0);
/// w.observe(0, 5_000, t0);
/// assert_eq!(w.watermark(t0), None, "partition 1 has not spoken and is not idle yet");
/// w.observe(1, 1_000, t0);
/// assert_eq!(w.watermark(t0), Some(900), "min over partitions, minus lateness");
/// // partition 1 goes quiet: after the idle timeout only partition 0 counts
/// let later = t0 + Duration::from_secs(11);
/// w.observe(0, 6_000, later);
/// assert_eq!(w.watermark(later), Some(5_900));
/// ```
#[derive(Debug, Clone)]
pub struct PartitionWatermarks {
    lateness_ms: i64,
    idle_timeout: Duration,
    parts: Vec<PartitionClock>,
    emitted: Option<i64>,
}

#[derive(Debug, Clone)]
struct PartitionClock {
    partition: i32,
    max_event_ms: Option<i64>,
    last_active: Instant,
}

impl PartitionWatermarks {
    /// Tracks `partitions` (all considered active at `now`, with no event time yet).
    pub fn new(partitions: &[i32], lateness_ms: i64, idle_timeout: Duration, now: Instant) -> Self {
        let mut parts: Vec<PartitionClock> = partitions
            .iter()
            .map(|&partition| PartitionClock { partition, max_event_ms: None, last_active: now })
            .collect();
        parts.sort_by_key(|p| p.partition);
        parts.dedup_by_key(|p| p.partition);
        PartitionWatermarks { lateness_ms: lateness_ms.max(0), idle_timeout, parts, emitted: None }
    }

    /// Records event time `t` (ms) seen on `partition` at `now`; the partition becomes active.
    /// Returns false (and changes nothing) for a partition that is not tracked.
    pub fn observe(&mut self, partition: i32, t: i64, now: Instant) -> bool {
        match self.parts.binary_search_by_key(&partition, |p| p.partition) {
            Ok(i) => {
                let part = &mut self.parts[i];
                part.max_event_ms = Some(part.max_event_ms.map_or(t, |m| m.max(t)));
                part.last_active = now;
                true
            }
            Err(_) => false,
        }
    }

    fn is_active(&self, part: &PartitionClock, now: Instant) -> bool {
        now.saturating_duration_since(part.last_active) < self.idle_timeout
    }

    /// The watermark at `now` (ms): min over active partitions of max event time − lateness, never
    /// lower than a watermark returned before. `None` until every active partition has an event
    /// time (or went idle) and none was ever returned.
    pub fn watermark(&mut self, now: Instant) -> Option<i64> {
        let mut min: Option<i64> = None;
        let mut any_active = false;
        for part in &self.parts {
            if !self.is_active(part, now) {
                continue;
            }
            any_active = true;
            match part.max_event_ms {
                Some(t) => min = Some(min.map_or(t, |m: i64| m.min(t))),
                None => return self.emitted,
            }
        }
        if any_active && let Some(m) = min {
            let candidate = m.saturating_sub(self.lateness_ms);
            self.emitted = Some(self.emitted.map_or(candidate, |e| e.max(candidate)));
        }
        self.emitted
    }

    /// The watermark of one partition alone (its max event time − lateness), if it has one.
    pub fn partition_watermark(&self, partition: i32) -> Option<i64> {
        let i = self.parts.binary_search_by_key(&partition, |p| p.partition).ok()?;
        self.parts[i].max_event_ms.map(|t| t.saturating_sub(self.lateness_ms))
    }

    /// Marks every tracked partition active at `now`, keeping its event time: the consumer met an
    /// error (a broker down or reconnecting), and silence caused by an outage is not idleness.
    /// Otherwise all partitions would go idle during the outage, and after it the first partition
    /// whose records come back would drive the watermark past the others' on-time records.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use saams_jobs::source::kafka::PartitionWatermarks;
    /// let t0 = Instant::now();
    /// let mut w = PartitionWatermarks::new(&[0, 1], 0, Duration::from_secs(1), t0);
    /// w.observe(0, 1_000, t0);
    /// w.observe(1, 1_000, t0);
    /// // the broker goes away for 5 s; the consumer keeps reporting errors
    /// let back = t0 + Duration::from_secs(5);
    /// w.hold_active(back);
    /// // partition 0 returns first, far ahead: partition 1 still holds the watermark
    /// w.observe(0, 60_000, back);
    /// assert_eq!(w.watermark(back), Some(1_000));
    /// ```
    pub fn hold_active(&mut self, now: Instant) {
        for part in &mut self.parts {
            part.last_active = part.last_active.max(now);
        }
    }

    /// True when no tracked partition is active at `now` (also when none is tracked): this worker
    /// should then not hold the dataflow's frontier back.
    pub fn is_idle(&self, now: Instant) -> bool {
        !self.parts.iter().any(|p| self.is_active(p, now))
    }
}

/// Which offsets may be committed, given which event-time windows have been flushed to the sink.
///
/// For each partition it keeps, per unflushed window, the smallest offset that went into it, and the
/// highest offset handled. The committable position of a partition (the next offset to read after a
/// restart) is the smallest offset still in an unflushed window, or one past the highest handled
/// offset when every window it fed is flushed. Committing only that far is at-least-once: records
/// of a window are read again after a crash unless the window's estimations reached the sink.
///
/// ```
/// use saams_jobs::source::kafka::OffsetTracker;
/// let mut t = OffsetTracker::default();
/// t.mark_processed(0, 10, 1); // offset 10 of partition 0 went into window 1
/// t.mark_processed(0, 11, 2);
/// t.mark_processed(0, 12, 1); // out of order in event time
/// assert_eq!(t.release_through(1), vec![(0, 11)], "offset 11 (window 2) is not flushed yet");
/// assert_eq!(t.release_through(2), vec![(0, 13)]);
/// assert_eq!(t.release_through(3), vec![], "nothing new to commit");
/// ```
#[derive(Debug, Clone, Default)]
pub struct OffsetTracker {
    parts: BTreeMap<i32, PartitionOffsets>,
}

#[derive(Debug, Clone, Default)]
struct PartitionOffsets {
    /// window → smallest offset of this partition in it, for windows not yet flushed
    pending: BTreeMap<u64, i64>,
    /// one past the highest handled offset
    next: Option<i64>,
    /// the last position returned by `release_through`, or the first offset handled: positions at or
    /// below it are no progress
    released: Option<i64>,
}

impl OffsetTracker {
    /// Records that `offset` of `partition` went into event-time window `window` (any `u64` the engine
    /// uses for windows, e.g. the window start); it is committable once that window is flushed.
    pub fn mark_processed(&mut self, partition: i32, offset: i64, window: u64) {
        let part = self.parts.entry(partition).or_default();
        part.released.get_or_insert(offset);
        part.pending.entry(window).and_modify(|m| *m = (*m).min(offset)).or_insert(offset);
        part.next = Some(part.next.map_or(offset + 1, |n| n.max(offset + 1)));
    }

    /// Records that `offset` of `partition` needs no window flush (e.g. it was a malformed record
    /// already handed to the dead-letter sink, or a late record).
    pub fn mark_done(&mut self, partition: i32, offset: i64) {
        let part = self.parts.entry(partition).or_default();
        part.released.get_or_insert(offset);
        part.next = Some(part.next.map_or(offset + 1, |n| n.max(offset + 1)));
    }

    /// Forgets every window `<= window` (they are flushed) and returns the partitions whose
    /// committable position moved, with that position, sorted by partition.
    pub fn release_through(&mut self, window: u64) -> Vec<(i32, i64)> {
        let mut moved = Vec::new();
        for (&partition, part) in &mut self.parts {
            part.pending = match window.checked_add(1) {
                Some(first_kept) => part.pending.split_off(&first_kept),
                None => BTreeMap::new(),
            };
            let Some(next) = part.next else { continue };
            let position = part.pending.values().copied().fold(next, i64::min);
            if part.released.is_none_or(|r| position > r) {
                part.released = Some(position);
                moved.push((partition, position));
            }
        }
        moved
    }

    /// Number of (partition, window) pairs still waiting for a flush.
    pub fn pending(&self) -> usize {
        self.parts.values().map(|p| p.pending.len()).sum()
    }
}

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
    /// use saams_jobs::source::kafka::KafkaRecord;
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

/// One worker's share of the data topic: partitions `p % peers == worker_index`, read without
/// blocking, with per-partition watermarks and commits that follow window flushes.
///
/// Typical use from a timely worker's step:
/// 1. `poll_with(max, Duration::ZERO, |r| …)`: parse `r.payload`; event time = the tuple's or
///    `r.timestamp_ms`; check [`is_late`](Self::is_late), then
///    [`observe_event_time`](Self::observe_event_time); route the tuple to its window and call
///    [`mark_processed`](Self::mark_processed) (or [`mark_done`](Self::mark_done) for dead letters);
/// 2. downgrade the input capability to [`watermark`](Self::watermark);
/// 3. when the sink has flushed window `w`, call [`commit_through(w)`](Self::commit_through);
///    at exit, [`commit_all`](Self::commit_all).
///
/// A worker whose partitions are all idle ([`is_idle`](Self::is_idle), always the case for a worker
/// without partitions) has no watermark of its own to offer; it should stop holding the dataflow's
/// frontier back (e.g. follow the frontier the other workers reach), as Flink's idleness does.
/// Records that arrive later below the watermark are late.
///
/// Offsets are committed as a "simple consumer" (manual assignment, generation -1): do not share the
/// group id with a subscribing consumer group, whose active members would make the broker refuse
/// these commits.
pub struct KafkaTupleSource {
    reader: PartitionReader,
    clock: PartitionWatermarks,
    offsets: OffsetTracker,
}

impl KafkaTupleSource {
    /// Connects to the brokers, reads the topic's partition list (within [`METADATA_TIMEOUT`]) and
    /// assigns this worker its partitions from `opts.from`. `lateness_ms` is the allowed
    /// out-of-orderness; `idle_timeout` the time after which a silent partition stops holding the
    /// watermark. A worker with no partition (more workers than partitions) is valid and idle.
    ///
    /// # Errors
    /// [`AdapterError::Setting`] for bad options or worker index, [`AdapterError::Unreachable`] when
    /// no broker answers in time, [`AdapterError::MissingTopic`] when the topic does not exist.
    pub fn new(
        opts: &KafkaOptions,
        topic: &str,
        worker_index: usize,
        peers: usize,
        lateness_ms: i64,
        idle_timeout: Duration,
    ) -> Result<Self, AdapterError> {
        let client_id = format!("saams-{}-w{worker_index}", opts.group_id);
        let reader = PartitionReader::open(opts, topic, &client_id, opts.from, |all| {
            assigned_partitions(all, worker_index, peers)
        })?;
        let clock = PartitionWatermarks::new(&reader.partitions, lateness_ms, idle_timeout, Instant::now());
        Ok(KafkaTupleSource { reader, clock, offsets: OffsetTracker::default() })
    }

    /// The topic read.
    pub fn topic(&self) -> &str {
        &self.reader.topic
    }

    /// The partitions this worker reads (sorted).
    pub fn partitions(&self) -> &[i32] {
        &self.reader.partitions
    }

    /// Hands up to `max` available records to `f` without copying them; waits at most `wait` for
    /// the first one (use `Duration::ZERO` inside a dataflow step). Returns how many were handed.
    /// While the consumer reports errors (broker down, reconnecting) its partitions count as active,
    /// not idle (see [`PartitionWatermarks::hold_active`]).
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] only when the consumer failed fatally; transient errors are counted
    /// in [`errors`](Self::errors).
    pub fn poll_with<F: FnMut(RecordRef<'_>)>(
        &mut self,
        max: usize,
        wait: Duration,
        f: F,
    ) -> Result<usize, AdapterError> {
        let errors = self.reader.errors;
        let n = self.reader.poll_with(max, wait, f)?;
        if self.reader.errors != errors {
            self.clock.hold_active(Instant::now());
        }
        Ok(n)
    }

    /// As [`poll_with`](Self::poll_with), returning owned records.
    ///
    /// # Errors
    /// As [`poll_with`](Self::poll_with).
    pub fn poll_batch(&mut self, max: usize, wait: Duration) -> Result<Vec<KafkaRecord>, AdapterError> {
        let mut out = Vec::new();
        self.poll_with(max, wait, |r| out.push(r.to_owned_record()))?;
        Ok(out)
    }

    /// Records event time `t_ms` of a record of `partition` (the tuple's time, or the record
    /// timestamp when the tuple has none); the partition counts as active again.
    pub fn observe_event_time(&mut self, partition: i32, t_ms: i64) {
        self.observe_event_time_at(partition, t_ms, Instant::now());
    }

    /// As [`observe_event_time`](Self::observe_event_time), at `now` (a batch of records reads the
    /// clock once: a clock read per record was a tenth of the consuming workers' time).
    pub fn observe_event_time_at(&mut self, partition: i32, t_ms: i64, now: Instant) {
        self.clock.observe(partition, t_ms, now);
    }

    /// The worker's watermark (ms): min over its active partitions of (max event time − lateness);
    /// idle partitions are left out. Monotone. `None` before every active partition has spoken.
    pub fn watermark(&mut self) -> Option<i64> {
        self.clock.watermark(Instant::now())
    }

    /// True when event time `t_ms` is below the current watermark (the tuple is late: count it and
    /// send it to the dead letters). Check before [`observe_event_time`](Self::observe_event_time).
    pub fn is_late(&mut self, t_ms: i64) -> bool {
        self.watermark().is_some_and(|w| t_ms < w)
    }

    /// True when all of this worker's partitions are idle (or it has none).
    pub fn is_idle(&self) -> bool {
        self.clock.is_idle(Instant::now())
    }

    /// True when every assigned partition has been read to its end (as of the last poll); with
    /// `--exit-when-idle` the job can then close its windows and stop.
    pub fn at_end(&self) -> bool {
        self.reader.at_end()
    }

    /// Records that `offset` of `partition` went into event-time window `window`.
    pub fn mark_processed(&mut self, partition: i32, offset: i64, window: u64) {
        self.offsets.mark_processed(partition, offset, window);
    }

    /// Records that `offset` of `partition` needs no window flush (dead letter, late record).
    pub fn mark_done(&mut self, partition: i32, offset: i64) {
        self.offsets.mark_done(partition, offset);
    }

    /// Window `window` and all earlier ones were flushed to the sink: commits (asynchronously,
    /// results come back through later polls) every partition position that moved, and returns them.
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when the commit cannot be issued.
    pub fn commit_through(&mut self, window: u64) -> Result<Vec<(i32, i64)>, AdapterError> {
        self.commit(window, CommitMode::Async)
    }

    /// At exit, after the sink flushed everything: releases all windows and commits synchronously.
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when the broker refuses the commit.
    pub fn commit_all(&mut self) -> Result<Vec<(i32, i64)>, AdapterError> {
        self.commit(u64::MAX, CommitMode::Sync)
    }

    fn commit(&mut self, window: u64, mode: CommitMode) -> Result<Vec<(i32, i64)>, AdapterError> {
        let moved = self.offsets.release_through(window);
        if moved.is_empty() {
            return Ok(moved);
        }
        let mut tpl = TopicPartitionList::with_capacity(moved.len());
        for &(p, o) in &moved {
            tpl.add_partition_offset(&self.reader.topic, p, Offset::Offset(o))
                .map_err(kafka_err("building the commit list"))?;
        }
        self.reader
            .consumer
            .commit(&tpl, mode)
            .map_err(kafka_err(format!("committing offsets {moved:?} of {:?}", self.reader.topic)))?;
        Ok(moved)
    }

    /// The offsets committed for this worker's partitions in the group (asks the broker).
    ///
    /// # Errors
    /// [`AdapterError::Kafka`] when the broker does not answer within [`METADATA_TIMEOUT`].
    pub fn committed(&self) -> Result<Vec<(i32, Option<i64>)>, AdapterError> {
        let mut tpl = TopicPartitionList::with_capacity(self.reader.partitions.len());
        for &p in &self.reader.partitions {
            tpl.add_partition(&self.reader.topic, p);
        }
        let got = self
            .reader
            .consumer
            .committed_offsets(tpl, METADATA_TIMEOUT)
            .map_err(kafka_err("reading committed offsets"))?;
        Ok(got.elements().iter().map(|e| (e.partition(), e.offset().to_raw().filter(|&o| o >= 0))).collect())
    }

    /// Number of (partition, window) pairs whose records wait for a window flush before commit.
    pub fn pending_windows(&self) -> usize {
        self.offsets.pending()
    }

    /// Errors met and survived so far (poll errors, refused commits).
    pub fn errors(&self) -> ConsumerErrors {
        self.reader.errors()
    }
}

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
    /// As [`KafkaTupleSource::new`].
    pub fn new(opts: &KafkaOptions, topic: &str, worker_index: usize) -> Result<Self, AdapterError> {
        let client_id = format!("saams-{}-requests-w{worker_index}", opts.group_id);
        let reader = PartitionReader::open(opts, topic, &client_id, StartFrom::Earliest, |all| Ok(all.to_vec()))?;
        Ok(KafkaBroadcastSource { reader })
    }

    /// The partitions read (all of the topic's, sorted).
    pub fn partitions(&self) -> &[i32] {
        &self.reader.partitions
    }

    /// As [`KafkaTupleSource::poll_with`].
    ///
    /// # Errors
    /// As [`KafkaTupleSource::poll_with`].
    pub fn poll_with<F: FnMut(RecordRef<'_>)>(
        &mut self,
        max: usize,
        wait: Duration,
        f: F,
    ) -> Result<usize, AdapterError> {
        self.reader.poll_with(max, wait, f)
    }

    /// As [`KafkaTupleSource::poll_batch`].
    ///
    /// # Errors
    /// As [`KafkaTupleSource::poll_with`].
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

// ---- The `saams` job's Kafka side: flags, start-up, per-worker input, commits, the exit report ----

/// The Kafka flags of `saams` (flattened into its command line, so its own flags stay untouched).
/// Kafka and files mix freely: e.g. requests from `--requests FILE`, tuples from `--data-topic`.
///
/// ```
/// use clap::Parser;
/// use saams_jobs::source::kafka::{KafkaArgs, StartFrom};
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     kafka: KafkaArgs,
/// }
/// let cli = Cli::try_parse_from([
///     "saams", "--brokers", "k1:9092,k2:9092", "--data-topic", "ticks", "--from", "earliest",
///     "--exit-when-idle", "3s", "-X", "security.protocol=SSL", "-X", "linger.ms=5",
/// ])
/// .unwrap();
/// assert_eq!(cli.kafka.brokers.as_deref(), Some("k1:9092,k2:9092"));
/// assert_eq!(cli.kafka.from, StartFrom::Earliest);
/// assert_eq!((cli.kafka.partitions, cli.kafka.group_id.as_str()), (4, "saams"));
/// assert_eq!(cli.kafka.extra.len(), 2);
/// ```
#[derive(Clone, Debug, clap::Args)]
pub struct KafkaArgs {
    /// Kafka bootstrap brokers `host:port[,host:port…]`; needed by every --*-topic flag.
    #[arg(long)]
    pub brokers: Option<String>,
    /// Topic of tuples (one JSON tuple per record); its partitions are spread over all workers
    /// of all processes (partition p → worker p mod workers).
    #[arg(long = "data-topic")]
    pub data_topic: Option<String>,
    /// Topic of requests (one JSON request or array per record), read to its end at start
    /// (after --requests, when both are given).
    #[arg(long = "request-topic")]
    pub request_topic: Option<String>,
    /// Topic receiving the estimations (JSON, keyed `streamID,dataSetKey`) instead of --out.
    #[arg(long = "output-topic")]
    pub output_topic: Option<String>,
    /// Topic receiving rejected input (raw bytes; reason in header `saams.reason`) instead of
    /// --dead-letter.
    #[arg(long = "dead-letter-topic")]
    pub dead_letter_topic: Option<String>,
    /// Consumer group whose committed offsets `--from committed` resumes from.
    #[arg(long = "group-id", default_value = "saams")]
    pub group_id: String,
    /// Where to start reading the data topic: earliest, latest or committed (committed falls back
    /// to earliest for partitions without a committed offset). The request topic is always read
    /// from its start: requests are a log of commands.
    #[arg(long, default_value = "committed")]
    pub from: StartFrom,
    /// Stop, closing all windows, once no new record arrived for this long (e.g. 3s); without it
    /// the job runs until SIGINT/SIGTERM, which also close the windows and flush before exit.
    #[arg(long = "exit-when-idle")]
    pub exit_when_idle: Option<String>,
    /// A partition without records for this long stops holding windows open.
    #[arg(long = "idle-timeout", default_value = "5s")]
    pub idle_timeout: String,
    /// Partition count of the topics saams creates because they are missing (a missing request
    /// topic gets one partition, as requests are an ordered script).
    #[arg(long, default_value_t = 4)]
    pub partitions: i32,
    /// A librdkafka setting `key=value` (repeatable), as kcat's -X: security, tuning.
    #[arg(short = 'X', value_parser = parse_setting)]
    pub extra: Vec<(String, String)>,
}

/// How long flushes of the estimation and dead-letter producers wait for acknowledgements.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a worker commits the offsets of flushed windows.
const COMMIT_INTERVAL: Duration = Duration::from_secs(1);
/// How many records one poll hands to the dataflow before the worker steps it.
const POLL_BATCH: usize = 8192;
/// Offsets are kept below this in a tuple's sequence number (the partition goes above).
const OFFSET_BITS: u32 = 40;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The Kafka side of one `saams` process, shared by its workers: options, the producers of the
/// estimation and dead-letter topics, the stop flag (SIGINT/SIGTERM, `--exit-when-idle`), and the
/// counters of the exit report.
pub struct KafkaJob {
    opts: KafkaOptions,
    data_topic: Option<String>,
    request_topic: Option<String>,
    lateness_ms: i64,
    idle_timeout: Duration,
    exit_when_idle: Option<Duration>,
    out: Option<Arc<Mutex<KafkaEstimationSink>>>,
    dead: Option<Arc<Mutex<KafkaDeadLetterSink>>>,
    stop: Arc<AtomicBool>,
    start: Instant,
    first_record_ns: AtomicU64,
    last_record_ns: AtomicU64,
    consumed: AtomicU64,
    epoch_hint: AtomicU64,
    problems: Mutex<Vec<String>>,
    fatal: Mutex<Option<String>>,
}

impl KafkaJob {
    /// Checks the flags, contacts the brokers (a clear error within seconds when none answers),
    /// creates missing topics with `--partitions`, opens the producers and installs the
    /// SIGINT/SIGTERM handler (a second signal ends the process at once). `None` without
    /// `--brokers`.
    ///
    /// # Errors
    /// For a topic flag without `--brokers`, bad durations or `-X` settings, unreachable brokers,
    /// and topics that cannot be created.
    pub fn start(args: &KafkaArgs, lateness_ms: i64) -> Result<Option<Arc<KafkaJob>>, String> {
        let topics = [&args.data_topic, &args.request_topic, &args.output_topic, &args.dead_letter_topic];
        let Some(brokers) = &args.brokers else {
            if topics.iter().any(|t| t.is_some()) || args.exit_when_idle.is_some() {
                return Err("--data-topic, --request-topic, --output-topic, --dead-letter-topic and \
                            --exit-when-idle need --brokers HOST:PORT"
                    .into());
            }
            return Ok(None);
        };
        let idle_timeout = Duration::from_millis(crate::cli::parse_duration_ms(&args.idle_timeout)? as u64);
        let exit_when_idle = match &args.exit_when_idle {
            Some(d) => Some(Duration::from_millis(crate::cli::parse_duration_ms(d)? as u64)),
            None => None,
        };
        let opts = KafkaOptions {
            brokers: brokers.clone(),
            group_id: args.group_id.clone(),
            from: args.from,
            extra: args.extra.clone(),
        };
        check_brokers(&opts).map_err(|e| e.to_string())?;
        // The request topic gets one partition: requests are a script whose order matters.
        let specs: Vec<TopicSpec> = topics
            .iter()
            .filter_map(|t| t.as_ref())
            .map(|t| TopicSpec::new(t, if Some(t) == args.request_topic.as_ref() { 1 } else { args.partitions }))
            .collect();
        ensure_topics(&opts, &specs).map_err(|e| e.to_string())?;
        let out = match &args.output_topic {
            Some(t) => Some(Arc::new(Mutex::new(KafkaEstimationSink::new(&opts, t).map_err(|e| e.to_string())?))),
            None => None,
        };
        let dead = match &args.dead_letter_topic {
            Some(t) => Some(Arc::new(Mutex::new(KafkaDeadLetterSink::new(&opts, t).map_err(|e| e.to_string())?))),
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register_conditional_shutdown(signal, 130, stop.clone())
                .and_then(|_| signal_hook::flag::register(signal, stop.clone()))
                .map_err(|e| format!("cannot install the signal handler: {e}"))?;
        }
        Ok(Some(Arc::new(KafkaJob {
            opts,
            data_topic: args.data_topic.clone(),
            request_topic: args.request_topic.clone(),
            lateness_ms,
            idle_timeout,
            exit_when_idle,
            out,
            dead,
            stop,
            start: Instant::now(),
            first_record_ns: AtomicU64::new(u64::MAX),
            last_record_ns: AtomicU64::new(0),
            consumed: AtomicU64::new(0),
            epoch_hint: AtomicU64::new(0),
            problems: Mutex::new(Vec::new()),
            fatal: Mutex::new(None),
        })))
    }

    /// The line sink writer for estimations when `--output-topic` is given.
    pub fn estimation_writer(&self) -> Option<Box<dyn std::io::Write + Send>> {
        self.out
            .as_ref()
            .map(|s| Box::new(EstimationLines::new(s.clone(), FLUSH_TIMEOUT)) as Box<dyn std::io::Write + Send>)
    }

    /// The line sink writer for dead letters when `--dead-letter-topic` is given.
    pub fn dead_letter_writer(&self) -> Option<Box<dyn std::io::Write + Send>> {
        self.dead
            .as_ref()
            .map(|s| Box::new(DeadLetterLines::new(s.clone(), FLUSH_TIMEOUT)) as Box<dyn std::io::Write + Send>)
    }

    /// Reads the request topic to its end (when `--request-topic` is given) and returns its valid
    /// records as request lines plus the number of malformed records, which go to the dead
    /// letters (the topic's, else `file_dead`).
    ///
    /// # Errors
    /// When the topic cannot be read to its end within 30 s.
    pub fn request_text(&self, file_dead: Option<&LineSink>) -> Result<Option<(String, u64)>, String> {
        let Some(topic) = &self.request_topic else { return Ok(None) };
        let mut source = KafkaBroadcastSource::new(&self.opts, topic, 0).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let (mut text, mut bad) = (String::new(), 0u64);
        loop {
            let n = source
                .poll_with(1024, Duration::from_millis(50), |r| {
                    match serde_json::from_slice::<serde_json::Value>(r.payload) {
                        Ok(v) => {
                            text.push_str(&v.to_string());
                            text.push('\n');
                        }
                        Err(e) => {
                            bad += 1;
                            self.reject(topic, &r, &format!("malformed request JSON: {e}"), file_dead);
                        }
                    }
                })
                .map_err(|e| e.to_string())?;
            if n == 0 && source.at_end() {
                return Ok(Some((text, bad)));
            }
            if Instant::now() > deadline {
                return Err(format!("kafka: request topic {topic:?} not read to its end within 30 s"));
            }
        }
    }

    fn reject(&self, topic: &str, r: &RecordRef<'_>, reason: &str, file_dead: Option<&LineSink>) {
        if let Some(dead) = &self.dead {
            let origin = RecordOrigin { topic, partition: r.partition, offset: r.offset };
            if let Err(e) = lock(dead).send(r.payload, r.key, reason, Some(origin)) {
                self.problem(e.to_string());
            }
        } else if let Some(d) = file_dead {
            let j = serde_json::json!({
                "source": format!("kafka:{topic}/{}/{}", r.partition, r.offset),
                "error": reason,
                "input": String::from_utf8_lossy(r.payload),
            });
            d.write_all(std::iter::once(&j.to_string()));
        }
    }

    fn problem(&self, msg: String) {
        let mut p = lock(&self.problems);
        if p.len() < 20 {
            p.push(msg);
        }
    }

    fn set_fatal(&self, msg: String) {
        lock(&self.fatal).get_or_insert(msg);
        self.stop.store(true, Ordering::Relaxed);
    }

    fn touch(&self, n: usize) {
        let now = self.start.elapsed().as_nanos() as u64;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        self.first_record_ns.fetch_min(now, Ordering::Relaxed);
        self.last_record_ns.fetch_max(now, Ordering::Relaxed);
    }

    /// False once the job should close its windows and stop reading Kafka: a signal, a fatal
    /// consumer error, or `--exit-when-idle` elapsed since the last record (or the start).
    pub fn running(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return false;
        }
        match self.exit_when_idle {
            Some(idle) => {
                let last = Duration::from_nanos(self.last_record_ns.load(Ordering::Relaxed));
                self.start.elapsed().saturating_sub(last) < idle
            }
            None => true,
        }
    }

    /// This worker's share of the data topic (`None` without `--data-topic`). A failure is
    /// reported at exit by [`finish`](Self::finish) and stops the job.
    pub fn worker_input(
        self: &Arc<Self>,
        me: usize,
        peers: usize,
        file_dead: Option<Arc<LineSink>>,
    ) -> Option<KafkaInput> {
        let topic = self.data_topic.as_ref()?;
        match KafkaTupleSource::new(&self.opts, topic, me, peers, self.lateness_ms, self.idle_timeout) {
            Ok(source) => Some(KafkaInput {
                job: self.clone(),
                ctx: match LineContext::new(saams_datasets::Format::JsonLines, topic, None) {
                    Ok(c) => c,
                    Err(e) => {
                        self.set_fatal(format!("kafka: {e}"));
                        return None;
                    }
                },
                topic: topic.clone(),
                source,
                file_dead: if self.dead.is_some() { None } else { file_dead },
                marks: Marks::default(),
                committed_through: None,
                last_commit: Instant::now(),
                quiet: false,
                floor_ms: 0,
            }),
            Err(e) => {
                self.set_fatal(format!("worker {me}: {e}"));
                None
            }
        }
    }

    /// The exit report lines (consumed records and their rate, producer deliveries, errors met).
    ///
    /// # Errors
    /// When a worker failed fatally or records could not be delivered.
    pub fn finish(&self) -> Result<Vec<String>, String> {
        let mut lines = Vec::new();
        let consumed = self.consumed.load(Ordering::Relaxed);
        if self.data_topic.is_some() {
            let first = self.first_record_ns.load(Ordering::Relaxed);
            let last = self.last_record_ns.load(Ordering::Relaxed);
            let secs = if consumed > 0 { last.saturating_sub(first) as f64 / 1e9 } else { 0.0 };
            let rate = if secs > 0.0 { consumed as f64 / secs } else { 0.0 };
            lines.push(format!("kafka consumed={consumed} first_to_last_s={secs:.3} records_per_s={rate:.0}"));
        }
        let mut failed = 0;
        for (name, report) in [
            ("estimations", self.out.as_ref().map(|s| lock(s).report())),
            ("dead_letters", self.dead.as_ref().map(|s| lock(s).report())),
        ] {
            if let Some(r) = report {
                failed += r.failed;
                lines.push(format!(
                    "kafka {name} sent={} delivered={} failed={}{}",
                    r.sent,
                    r.delivered,
                    r.failed,
                    r.first_error.map(|e| format!(" first_error={e:?}")).unwrap_or_default()
                ));
            }
        }
        for p in lock(&self.problems).iter() {
            lines.push(format!("kafka problem: {p}"));
        }
        if let Some(f) = lock(&self.fatal).clone() {
            return Err(format!("{f}\n{}", lines.join("\n")));
        }
        if failed > 0 {
            return Err(format!("kafka: {failed} record(s) could not be delivered\n{}", lines.join("\n")));
        }
        Ok(lines)
    }
}

/// The records handled during one poll, as runs of consecutive records of one partition that went
/// to the same window (or to none: dead letters, late records, blank lines).
///
/// Why: a poll hands thousands of records, mostly long runs of one partition and one window;
/// recording each in the watermarks (a partition lookup) and the offset tracker (two map
/// look-ups) cost more than the records' routing. A run is recorded with its smallest and
/// largest offset and its newest event time, which leaves both exactly as record-by-record
/// recording would (both keep minima and maxima only).
#[derive(Debug, Default)]
struct Marks {
    runs: Vec<Run>,
}

/// One run of [`Marks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    partition: i32,
    /// The window the run's records went into; `None`: they need no window flush.
    window: Option<u64>,
    first: i64,
    last: i64,
    /// Newest event time of the run's routed records.
    newest: i64,
}

impl Marks {
    /// A record of `partition` at `offset`; `routed`: its (event time, window) when it was routed.
    fn push(&mut self, partition: i32, offset: i64, routed: Option<(i64, u64)>) {
        let window = routed.map(|(_, w)| w);
        let time = routed.map_or(i64::MIN, |(t, _)| t);
        if let Some(run) = self.runs.last_mut()
            && run.partition == partition
            && run.window == window
        {
            run.first = run.first.min(offset);
            run.last = run.last.max(offset);
            run.newest = run.newest.max(time);
            return;
        }
        self.runs.push(Run { partition, window, first: offset, last: offset, newest: time });
    }

    /// Records every run in `clock` (at `now`) and `offsets`, and forgets them.
    fn drain_into(&mut self, clock: &mut PartitionWatermarks, offsets: &mut OffsetTracker, now: Instant) {
        for run in self.runs.drain(..) {
            match run.window {
                Some(window) => {
                    clock.observe(run.partition, run.newest, now);
                    offsets.mark_processed(run.partition, run.first, window);
                    offsets.mark_processed(run.partition, run.last, window);
                }
                None => {
                    offsets.mark_done(run.partition, run.first);
                    offsets.mark_done(run.partition, run.last);
                }
            }
        }
    }
}

/// One worker's input from the data topic, driven from the worker's loop without blocking the
/// dataflow: [`poll`](Self::poll) a batch, downgrade the input to [`low`](Self::low), step, then
/// [`maybe_commit`](Self::maybe_commit) what the probe shows flushed; [`finish`](Self::finish) at
/// the end.
pub struct KafkaInput {
    job: Arc<KafkaJob>,
    ctx: LineContext,
    topic: String,
    source: KafkaTupleSource,
    file_dead: Option<Arc<LineSink>>,
    marks: Marks,
    committed_through: Option<u64>,
    last_commit: Instant,
    quiet: bool,
    floor_ms: i64,
}

impl KafkaInput {
    /// True while this worker should keep reading (see [`KafkaJob::running`]); a worker without
    /// partitions stops at once so it never holds windows open.
    pub fn running(&self) -> bool {
        !self.source.partitions().is_empty() && self.job.running()
    }

    /// Polls up to one batch (waiting 2 ms only when the previous poll found nothing), parses each
    /// record as a JSON tuple (event time: the tuple's, else the record timestamp) and hands valid,
    /// on-time tuples to `route(seq, tuple)`, which returns the tuple's window. Malformed and late
    /// records go to the dead letters and are counted in `stats`. Returns the records handled.
    pub fn poll(&mut self, stats: &Stats, mut route: impl FnMut(u64, Tuple) -> u64) -> usize {
        let wait = if self.quiet { Duration::from_millis(2) } else { Duration::ZERO };
        // below the watermark, or below the epoch this worker's input already passed: late
        let watermark = Some(self.source.watermark().map_or(self.floor_ms, |w| w.max(self.floor_ms)));
        let KafkaInput { job, ctx, topic, source, file_dead, marks, .. } = self;
        let reject = |r: &RecordRef<'_>, reason: &str, late: bool| {
            stats.dead_letters.fetch_add(1, Ordering::Relaxed);
            if late {
                stats.late.fetch_add(1, Ordering::Relaxed);
            }
            job.reject(topic, r, reason, file_dead.as_deref());
        };
        let polled = source.poll_with(POLL_BATCH, wait, |r| {
            let text = match std::str::from_utf8(r.payload) {
                Ok(t) => t,
                Err(e) => {
                    reject(&r, &format!("record is not UTF-8: {e}"), false);
                    return marks.push(r.partition, r.offset, None);
                }
            };
            let mut t = match ctx.parse_line(r.offset.max(0) as u64, text) {
                Ok(Some(t)) => t,
                Ok(None) => return marks.push(r.partition, r.offset, None),
                Err(e) => {
                    reject(&r, &e.message, false);
                    return marks.push(r.partition, r.offset, None);
                }
            };
            let Some(time) = t.time_ms.or(r.timestamp_ms) else {
                reject(&r, "no event time: neither the tuple nor the record has one", false);
                return marks.push(r.partition, r.offset, None);
            };
            t.time_ms = Some(time);
            if let Some(w) = watermark
                && time < w
            {
                let msg = format!("late: {} ms behind the watermark of its partitions", w - time);
                reject(&r, &msg, true);
                return marks.push(r.partition, r.offset, None);
            }
            let seq = ((1u64 << 20 | r.partition.max(0) as u64) << OFFSET_BITS)
                | (r.offset.max(0) as u64 & ((1 << OFFSET_BITS) - 1));
            let window = route(seq, t);
            marks.push(r.partition, r.offset, Some((time, window)));
        });
        let n = match polled {
            Ok(n) => n,
            Err(e) => {
                job.set_fatal(e.to_string());
                0
            }
        };
        let KafkaTupleSource { clock, offsets, .. } = &mut self.source;
        self.marks.drain_into(clock, offsets, Instant::now());
        if n > 0 {
            self.job.touch(n);
        }
        self.quiet = n == 0;
        n
    }

    /// The oldest window this worker may still send to (its input epoch): the window of its
    /// watermark; while all of its partitions are idle, the newest epoch any active worker reached
    /// (of this process, or of another one through [`KafkaInput::follow`]), so silent partitions do
    /// not hold windows open.
    ///
    /// Also returns the epoch this worker reached from its own partitions (`None` while they are
    /// all idle), which the job gossips to every worker of every process ([`KafkaInput::follow`]).
    pub fn low(&mut self, window_of: impl Fn(i64) -> u64) -> (u64, Option<u64>) {
        let (low, own) = if self.source.is_idle() {
            (self.job.epoch_hint.load(Ordering::Relaxed), None)
        } else {
            let low = self.source.watermark().map_or(0, window_of);
            self.job.epoch_hint.fetch_max(low, Ordering::Relaxed);
            (low, Some(low))
        };
        self.floor_ms = self.floor_ms.max(i64::try_from(low).unwrap_or(i64::MAX));
        (low, own)
    }

    /// Raises the epoch that this process' idle workers follow to `low`, an epoch an active worker
    /// of any process reached. Without it a process whose partitions are all idle holds its input
    /// at the last epoch it saw, and the other processes' windows can never close.
    pub fn follow(&self, low: u64) {
        self.job.epoch_hint.fetch_max(low, Ordering::Relaxed);
    }

    /// At most once a second: when the dataflow's frontier (`None`: everything done) shows
    /// windows closed since the last commit, waits for the estimation producer to deliver what it
    /// was handed, then commits the offsets of the records those windows consumed (at-least-once).
    pub fn maybe_commit(&mut self, frontier: Option<u64>) {
        if self.last_commit.elapsed() < COMMIT_INTERVAL {
            return;
        }
        self.last_commit = Instant::now();
        let through = match frontier {
            None => u64::MAX,
            Some(0) => return,
            Some(f) => f - 1,
        };
        if self.committed_through.is_some_and(|c| c >= through) || self.source.pending_windows() == 0 {
            return;
        }
        self.commit(through);
    }

    fn commit(&mut self, through: u64) {
        if let Some(out) = &self.job.out
            && let Err(e) = lock(out).flush(FLUSH_TIMEOUT)
        {
            return self.job.problem(format!("not committing: {e}"));
        }
        let result = if through == u64::MAX { self.source.commit_all() } else { self.source.commit_through(through) };
        match result {
            Ok(_) => self.committed_through = Some(through),
            Err(e) => self.job.problem(e.to_string()),
        }
    }

    /// After the dataflow finished (every estimation handed to the sink): deliver, commit all
    /// offsets handled, and keep the consumer's survived errors for the report.
    pub fn finish(mut self) {
        self.commit(u64::MAX);
        let errors = self.source.errors();
        if errors.poll_errors > 0 || errors.commit_failures > 0 {
            self.job.problem(format!(
                "partitions {:?}: {} poll error(s) (last {:?}), {} refused commit(s) (last {:?})",
                self.source.partitions(),
                errors.poll_errors,
                errors.last_poll_error,
                errors.commit_failures,
                errors.last_commit_error
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_partitions_never_make_on_time_tuples_late() {
        let t0 = Instant::now();
        let mut w = PartitionWatermarks::new(&[0, 1], 0, Duration::from_secs(60), t0);
        // partition 0 is an hour ahead of partition 1; records interleave
        for i in 0..100i64 {
            w.observe(0, 3_600_000 + i * 1000, t0);
            let wm = w.watermark(t0);
            let t1 = i * 1000;
            assert!(wm.is_none_or(|wm| t1 >= wm), "tuple {t1} of partition 1 late at watermark {wm:?}");
            w.observe(1, t1, t0);
        }
        assert_eq!(w.watermark(t0), Some(99_000));
    }

    #[test]
    fn idle_partition_excluded_then_rejoins_without_regressing() {
        let t0 = Instant::now();
        let idle = Duration::from_millis(500);
        let mut w = PartitionWatermarks::new(&[0, 1, 2], 10, idle, t0);
        w.observe(0, 1_000, t0);
        w.observe(1, 2_000, t0);
        assert_eq!(w.watermark(t0), None, "partition 2 never spoke and is not idle yet");
        let t1 = t0 + Duration::from_millis(400);
        w.observe(0, 1_500, t1);
        w.observe(1, 2_500, t1);
        assert_eq!(w.watermark(t1), None, "still within the idle timeout");
        let t2 = t0 + Duration::from_millis(600);
        assert_eq!(w.watermark(t2), Some(1_490), "partition 2 idle: excluded");
        assert!(!w.is_idle(t2));
        // partition 2 comes back behind the watermark: the watermark does not go back
        w.observe(2, 100, t2);
        assert_eq!(w.watermark(t2), Some(1_490));
        w.observe(2, 5_000, t2);
        assert_eq!(w.watermark(t2), Some(1_490));
        // everything idle: the watermark stays, the worker reports idle
        let t3 = t2 + Duration::from_secs(1);
        assert!(w.is_idle(t3));
        assert_eq!(w.watermark(t3), Some(1_490));
        assert_eq!(w.partition_watermark(2), Some(4_990));
        assert!(!w.observe(7, 1, t3), "untracked partition");
    }

    #[test]
    fn an_outage_is_not_idleness() {
        let t0 = Instant::now();
        let idle = Duration::from_secs(2);
        let run = |hold: bool| {
            let mut w = PartitionWatermarks::new(&[0, 1], 0, idle, t0);
            w.observe(0, 1_000, t0);
            w.observe(1, 1_000, t0);
            // the broker is down for 5 s; the consumer reports errors until it is back
            let mut now = t0;
            while now < t0 + Duration::from_secs(5) {
                now += Duration::from_millis(500);
                if hold {
                    w.hold_active(now);
                }
            }
            // partition 0's records come back first, an hour ahead of partition 1's next ones
            w.observe(0, 3_600_000, now);
            let after = now + Duration::from_millis(1500);
            (w.watermark(after), w.is_idle(after))
        };
        assert_eq!(run(false), (Some(3_600_000), false), "without holding, partition 1 counted as idle");
        assert_eq!(run(true), (Some(1_000), false), "partition 1 still holds the watermark");
        // a partition silent for the idle timeout after the outage is idle again
        let mut w = PartitionWatermarks::new(&[0, 1], 0, idle, t0);
        w.observe(0, 1_000, t0);
        w.observe(1, 1_000, t0);
        w.hold_active(t0 + Duration::from_secs(5));
        w.observe(0, 9_000, t0 + Duration::from_secs(6));
        assert_eq!(w.watermark(t0 + Duration::from_secs(7) + Duration::from_millis(1)), Some(9_000));
    }

    #[test]
    fn no_partitions_is_idle_without_watermark() {
        let t0 = Instant::now();
        let mut w = PartitionWatermarks::new(&[], 0, Duration::from_secs(1), t0);
        assert!(w.is_idle(t0));
        assert_eq!(w.watermark(t0), None);
    }

    #[test]
    fn offsets_follow_flushed_windows_per_partition() {
        let mut t = OffsetTracker::default();
        t.mark_processed(0, 0, 10);
        t.mark_processed(1, 0, 20);
        t.mark_processed(0, 1, 20);
        t.mark_done(1, 1); // a dead letter
        t.mark_processed(1, 2, 10);
        assert_eq!(t.pending(), 4);
        // window 10 flushed: partition 0 up to offset 1 (in window 20), partition 1 held at 0
        assert_eq!(t.release_through(10), vec![(0, 1)]);
        assert_eq!(t.release_through(20), vec![(0, 2), (1, 3)]);
        assert_eq!(t.pending(), 0);
        t.mark_done(0, 2);
        assert_eq!(t.release_through(u64::MAX), vec![(0, 3)]);
    }

    #[test]
    fn runs_record_what_record_by_record_marking_would() {
        // a deterministic mix: two partitions interleaved in bursts, windows changing, dead letters
        let mut records = Vec::new();
        let mut next = [0i64; 2];
        let mut x = 12345u64;
        for _ in 0..5_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let p = ((x >> 33) % 2) as i32;
            let burst = 1 + (x >> 40) % 20;
            for _ in 0..burst {
                let o = next[p as usize];
                next[p as usize] += 1;
                let time = o * 7 + p as i64 * 1_000;
                let routed = if (x >> 20).is_multiple_of(9) { None } else { Some((time, (time / 500) as u64)) };
                records.push((p, o, routed));
            }
        }
        let t0 = Instant::now();
        for chunk in [1usize, 7, 100, 8192] {
            let (mut one_clock, mut one_offsets) =
                (PartitionWatermarks::new(&[0, 1], 5, Duration::from_secs(60), t0), OffsetTracker::default());
            let (mut run_clock, mut run_offsets) = (one_clock.clone(), OffsetTracker::default());
            let mut marks = Marks::default();
            for batch in records.chunks(chunk) {
                for &(p, o, routed) in batch {
                    match routed {
                        Some((time, window)) => {
                            one_clock.observe(p, time, t0);
                            one_offsets.mark_processed(p, o, window);
                        }
                        None => one_offsets.mark_done(p, o),
                    }
                    marks.push(p, o, routed);
                }
                marks.drain_into(&mut run_clock, &mut run_offsets, t0);
                assert_eq!(run_clock.watermark(t0), one_clock.watermark(t0), "chunks of {chunk}");
                assert_eq!(run_offsets.pending(), one_offsets.pending(), "chunks of {chunk}");
            }
            for through in [10, 100, 1_000, u64::MAX] {
                assert_eq!(run_offsets.release_through(through), one_offsets.release_through(through), "{chunk}");
            }
            assert!(marks.runs.is_empty(), "drained");
        }
        assert!(records.len() > 20_000);
    }
}
