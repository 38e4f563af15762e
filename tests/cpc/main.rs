//! CPC (kind 12) tests: update, merge, accuracy against exact distinct counts, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;
