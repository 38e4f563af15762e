//! Stock and AIS parsers, seeded generators, scaled streams and exact oracles.
//!
//! - [`generator`]: the seeded synthetic stock/AIS generator, the engine's embedded default input.
//! - [`Format`], [`LineContext`], [`parse_line`]: the line parser every source uses (a worker parses
//!   only its share of a file's lines); [`read_path`] / [`TupleReader`]: whole files and directories;
//!   [`read_share`]: one worker's byte-range share of them; [`read_path_merged`]: files merged by
//!   event time.
//! - [`stock`], [`ais`]: the row layouts; [`jsonl`]: the reference JSON form, its fast parser and
//!   the converter; [`lines`]: lines of a stream read in blocks, UTF-8 validated once per block.
//! - [`scaled`]: N seeded replicas of a few real streams; [`oracle`]: exact answers for tests.
//! - [`pace`]: pacing to a tuple rate (a job's and `replay`'s `--rate`) or a multiple of real time.
//!
//! Malformed rows are reported as [`ParseError`]s with file and line, counted, and skipped.
#![deny(missing_docs)]

pub mod ais;
mod error;
mod fields;
mod format;
pub mod generator;
pub mod jsonl;
pub mod lines;
pub mod oracle;
pub mod pace;
mod reader;
pub mod scaled;
pub mod stock;
mod tuple_pool;

pub use error::ParseError;
pub use fields::{parse_f64, trim};
pub use format::{Format, LineContext, parse_line};
pub use generator::{AisReport, AisStream, GeneratorKind, GeneratorSpec, SpecError, StockStream, StockTick};
pub use reader::{MergedReader, TupleReader, read_path, read_path_merged, read_share};
