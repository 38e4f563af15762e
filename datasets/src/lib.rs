//! Stock and AIS parsers, seeded generators, scaled streams and exact oracles.
//!
//! - [`generator`]: the seeded synthetic stock/AIS generator, the engine's embedded default input.
#![deny(missing_docs)]

pub mod generator;

pub use generator::{AisReport, AisStream, GeneratorKind, GeneratorSpec, SpecError, StockStream, StockTick};
