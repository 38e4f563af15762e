//! The Kafka flags of the `saams` command line ([`KafkaArgs`]).
//!
//! Why its own file: the command line (`cli`) flattens these flags in; keeping them apart from the
//! job that acts on them lets `cli` depend on the flags alone.

use crate::kafka::options::{StartFrom, parse_setting};

/// The Kafka flags of `saams` (flattened into its command line, so its own flags stay untouched).
/// Kafka and files mix freely: e.g. requests from `--requests FILE`, tuples from `--data-topic`.
///
/// ```
/// use clap::Parser;
/// use saams_jobs::kafka::{KafkaArgs, StartFrom};
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
    /// Topic of device shipments (`saams-edge --partials-topic`): each device's partials or raw
    /// values per window, merged like this job's own partials (instead of --data-topic).
    #[arg(long = "partials-topic", conflicts_with = "data_topic")]
    pub partials_topic: Option<String>,
    /// With --partials-topic: a device without records for this long is gone, and its
    /// partition stops holding windows open (as --idle-timeout, which it replaces for
    /// partitions with a device; one no device ships to, or whose devices said goodbye, waits
    /// the shorter of the two).
    #[arg(long = "device-timeout")]
    pub device_timeout: Option<String>,
    /// Topic of requests (one JSON request or array per record), read to its end at start
    /// (after --requests, when both are given), then followed while the job runs: records
    /// produced later take effect at the next fence, like requests over HTTP.
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
    /// A partition read to its end (its high watermark) and without records for this long stops
    /// holding windows open; one with records left to read never does.
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
