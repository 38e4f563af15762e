//! What the Kafka sources and sinks share: connection options ([`KafkaOptions`], with kcat-style
//! `-X` settings), the adapters' error type ([`AdapterError`]), metadata fetches with a deadline
//! ([`check_brokers`], and the partition list every client reads first) and topic creation
//! ([`ensure_topics`]).
//!
//! Why a module of its own: the sources (`source::kafka`) and the sinks (`sink::kafka`) both build
//! clients from the same options and report the same errors; with this code here, both import it
//! and neither imports the other's client code. It depends on nothing else of the crate.

mod admin;
mod error;
mod metadata;
mod options;

use std::sync::{Mutex, MutexGuard};

pub use admin::{TopicSpec, delete_topics, ensure_topics};
pub(crate) use error::kafka_err;
pub use error::{AdapterError, METADATA_TIMEOUT};
pub use metadata::check_brokers;
pub(crate) use metadata::topic_partitions;
pub use options::{KafkaOptions, StartFrom, parse_setting};

/// Locks `m`, also when another thread panicked while holding it: the producers and the job's
/// counters stay usable, so the exit report still says what was delivered and what went wrong.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}
