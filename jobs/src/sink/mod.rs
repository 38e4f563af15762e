//! Sinks: where estimations and dead letters go.

pub mod file;
pub mod kafka;
