//! The saams binaries' shared code: CLI, sources, sinks, and the `saams` job itself.
#![deny(missing_docs)]

mod atomic_file;
pub mod checkpoint;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod control;
pub mod dataflow;
pub mod duration;
pub mod edge;
pub mod edge_device;
pub mod edge_follow;
pub mod edge_ship;
pub mod handoff;
pub mod job;
pub mod kafka;
pub mod metrics;
pub mod sink;
pub mod source;
pub mod spawn_policy;
pub mod stats;
pub mod writer_lock;
