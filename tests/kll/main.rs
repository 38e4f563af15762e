//! KLL (kind 11) tests: update, merge, accuracy against exact ranks, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;
