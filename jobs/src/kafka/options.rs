//! The connection settings every Kafka source, sink and admin call of a job shares:
//! [`KafkaOptions`] (brokers, group, start position, kcat-style `-X` settings) and the librdkafka
//! configuration built from them.
//!
//! Why its own file: the consumers and the producers each add their own defaults to one base
//! configuration; building it in one place keeps the rule "the user's `-X` settings win" in one place.

use std::fmt;
use std::str::FromStr;

use rdkafka::config::ClientConfig;
use rdkafka::topic_partition_list::Offset;

use super::error::AdapterError;

/// Where a consumer starts reading a partition (`--from earliest|latest|committed`).
///
/// ```
/// use saams_jobs::kafka::StartFrom;
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
    /// The librdkafka start offset of this position.
    pub(crate) fn offset(self) -> Offset {
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
/// use saams_jobs::kafka::{KafkaOptions, StartFrom, parse_setting};
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

    /// The librdkafka configuration: `bootstrap.servers` plus the `-X` settings (what metadata and
    /// admin clients use).
    pub fn client_config(&self) -> ClientConfig {
        self.client_config_with(&[])
    }

    /// The configuration of a consumer or producer: `bootstrap.servers`, then the client's own
    /// `defaults`, then the `-X` settings, which therefore override any default.
    ///
    /// ```
    /// use saams_jobs::kafka::KafkaOptions;
    /// let mut opts = KafkaOptions::new("127.0.0.1:9092", "saams");
    /// opts.extra.push(("linger.ms".into(), "50".into()));
    /// let config = opts.client_config_with(&[("linger.ms", "5"), ("acks", "all")]);
    /// assert_eq!(config.get("linger.ms"), Some("50"), "-X wins");
    /// assert_eq!(config.get("acks"), Some("all"));
    /// ```
    pub fn client_config_with(&self, defaults: &[(&str, &str)]) -> ClientConfig {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &self.brokers);
        for (key, value) in defaults {
            config.set(*key, *value);
        }
        for (key, value) in &self.extra {
            config.set(key, value);
        }
        config
    }

    /// Checks the options without contacting a broker: brokers and group are non-empty and
    /// librdkafka accepts every `-X` key and value.
    ///
    /// ```
    /// use saams_jobs::kafka::KafkaOptions;
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
/// use saams_jobs::kafka::parse_setting;
/// assert_eq!(parse_setting("sasl.password=a=b").unwrap(), ("sasl.password".to_string(), "a=b".to_string()));
/// assert!(parse_setting("linger.ms").is_err());
/// assert!(parse_setting("=5").is_err());
/// ```
///
/// It fits clap directly, as does [`StartFrom`]:
/// ```
/// use clap::Parser;
/// use saams_jobs::kafka::{StartFrom, parse_setting};
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
