//! The item table of the counting kinds (Lossy Counting, Sticky Sampling): an open-addressing
//! hash table (linear probing, power-of-two capacity) from an item's identity to a small counter
//! record, kept here so that neither kind reaches into the other's folder.
//!
//! An item's identity is a `u64`: a number's canonical bits (so numbers are compared exactly), or
//! a string's 64-bit XXH3 hash under a fixed seed ([`identity()`]). The text of every string item
//! present is kept beside the table so frequent strings can be reported; numbers need no side
//! storage, so the numeric hot path never allocates.
//!
//! - [`record`]: what a slot holds — Lossy Counting's [`Slot`] (count and bucket delta), Sticky
//!   Sampling's [`Entry`] (count only);
//! - [`table`]: lookup, insertion, pruning, iteration; [`merge`]: adding another table;
//! - [`order`]: branch-free walks over the slots and the radix sort by id;
//! - [`codec`]: the records' byte layout, shared by both kinds' payloads.

mod codec;
mod identity;
mod merge;
mod order;
mod record;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use codec::{read_slots, write_slots};
pub(crate) use identity::{identity, value_identity};
pub(crate) use record::{Entry, Slot};
pub(crate) use table::Table;
