//! Kafka sources: the data topic spread over all workers, the requests topic read by every worker,
//! per-partition event-time watermarks with idleness, and offset commits that follow window
//! flushes. The `saams` job's Kafka side (its flags, start-up, per-worker input and exit report)
//! is in [`crate::kafka::job`]; these sources build no sink.
//!
//! Everything here is usable from inside a timely worker's step: consumers are rdkafka
//! `BaseConsumer`s whose records are taken in batches with a zero (or small) timeout, partitions
//! are assigned by hand (`p % peers == worker_index`, no group rebalance), and nothing needs an
//! async runtime.
//!
//! Delivery guarantee without `--checkpoints`: at-least-once. Offsets are committed only up to
//! records whose windows the engine has reported flushed ([`KafkaTupleSource::mark_processed`],
//! [`KafkaTupleSource::commit_through`]); after a crash the uncommitted tail is read again.
//!
//! With `--checkpoints`: every partition keeps its position at each checkpoint boundary
//! ([`PartitionPositions`], source `kafka:<topic>:<partition>` in the checkpoint); a restarted
//! job assigns each partition at its checkpointed offset (not the group's committed one),
//! restarts its watermark from the newest event time read before it, and skips the values
//! before the boundary, like a file input. Partitions the checkpoint does not name start as
//! without it. The group's committed offsets are still committed, for monitoring; a restart
//! from a checkpoint does not read them. Answers written to Kafka are deduplicated on restart
//! ([`crate::kafka::produce`]).
//!
//! One concern per file:
//! - `consumer`: the rdkafka consumer (hand-assigned partitions, batch queue, commit replies);
//! - `records`: the records and survived errors the sources hand out;
//! - `watermarks`, `offsets`, `positions`: the pure bookkeeping of event time, committable offsets
//!   and the partitions' positions at checkpoint boundaries;
//! - `tuple_source`, `broadcast_source`: the data topic's and the requests topic's sources.
//!
//! What sources and sinks share (options, errors, broker checks, topic creation) is in
//! [`crate::kafka`].

pub(crate) mod broadcast_source;
mod consumer;
pub(crate) mod offsets;
pub(crate) mod positions;
pub(crate) mod records;
pub(crate) mod tuple_source;
pub(crate) mod watermarks;

pub use broadcast_source::KafkaBroadcastSource;
pub use offsets::OffsetTracker;
pub use positions::PartitionPositions;
pub use records::{ConsumerErrors, KafkaRecord, RecordRef};
pub use tuple_source::{KafkaTupleSource, assigned_partitions};
pub use watermarks::PartitionWatermarks;
