//! Sinks: where estimations and dead letters go when they go to files (or stdout); the Kafka
//! sinks are in [`crate::kafka::produce`].

pub mod file;
