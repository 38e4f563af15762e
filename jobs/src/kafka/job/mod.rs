//! The `saams` job's Kafka side: its flags ([`KafkaArgs`]), what the process shares
//! ([`KafkaJob`]: start-up, producers, request topic, stop rule, exit report) and one worker's
//! input from the data topic ([`KafkaInput`]).
//!
//! This is the wiring between the consumers ([`crate::kafka::consume`]), the producers
//! ([`crate::kafka::produce`]) and the job's file sinks: the sinks are built here, and the
//! sources are handed what they write to, never build it.
//!
//! One concern per file:
//! - `args`: the flags;
//! - `process`: the process-wide Kafka side, shared by all workers;
//! - `input`: one worker's input (and how the process opens it, [`KafkaJob::worker_input`]);
//! - `marks`: that input's per-poll batching of the bookkeeping;
//! - `requests`: the request topic, read at start and followed while the job runs.

pub(crate) mod args;
pub(crate) mod input;
mod marks;
pub(crate) mod process;
pub(crate) mod requests;

pub use args::KafkaArgs;
pub use input::KafkaInput;
pub use process::KafkaJob;
pub use requests::{FollowFrom, ReadAtStart};
