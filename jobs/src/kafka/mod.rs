//! Everything Kafka in one place: connection options ([`KafkaOptions`], with kcat-style `-X`
//! settings), the adapters' error type ([`AdapterError`]), metadata fetches with a deadline
//! ([`check_brokers`]), topic creation ([`ensure_topics`]); the consumers ([`consume`]), the
//! producers ([`produce`]) and the `saams` job's Kafka side ([`job`]).
//!
//! Kafka stays at the job's edges: nothing outside this module builds an rdkafka client.
//! Dependencies inside point one way: `options`, `error`, `metadata`, `admin` and `lock` are the
//! leaves every client uses, `format` (the data topic's records: one tuple, or newline-separated
//! lines) the leaf the tuple producer and the data-topic source share; the consumers and the producers use those and never each other; the
//! job's wiring uses both (and the crate's file sinks), and neither uses it.
//!
//! Every public item is re-exported here, so `saams_jobs::kafka::X` names it.

mod admin;
pub mod consume;
mod error;
pub mod format;
pub mod job;
mod lock;
mod metadata;
mod options;
pub mod produce;

pub use admin::{TopicSpec, delete_topics, ensure_topics};
pub use consume::{
    ConsumerErrors, KafkaBroadcastSource, KafkaRecord, KafkaTupleSource, OffsetTracker, PartitionPositions,
    PartitionWatermarks, RecordRef, assigned_partitions,
};
pub use error::{AdapterError, METADATA_TIMEOUT};
pub use format::{MAX_LINES_PER_RECORD, RecordLines, for_each_line, text_lines};
pub use job::{FollowFrom, KafkaArgs, KafkaInput, KafkaJob, ReadAtStart};
pub use metadata::check_brokers;
pub use options::{KafkaOptions, StartFrom, parse_setting};
pub use produce::{
    ANSWER_HEADER, Completed, DeadLetterLines, DeliveryReport, EstimationLines, KafkaDeadLetterSink,
    KafkaEstimationSink, ORIGIN_HEADER, REASON_HEADER, RecordOrigin, ReplayReport, TupleProducer, answer_id,
    estimation_key, replay_lines,
};
