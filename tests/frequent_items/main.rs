//! FrequentItems (kind 13) tests: update, merge, accuracy against exact counts, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;
