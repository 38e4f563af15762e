//! The saams binaries' shared code: CLI, sources, sinks.
#![deny(missing_docs)]

pub mod sink;
pub mod source;
