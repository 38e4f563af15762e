//! Sinks: where estimations and dead letters go.

pub mod kafka;
