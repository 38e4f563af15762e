//! Sinks: where estimations and dead letters go.

pub mod acks;
pub mod file;
pub mod kafka;
