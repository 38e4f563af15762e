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
//!
//! # Why the records are not kept in hash order
//!
//! A table whose records sit in hash order (home slot from the hash's top bits, each run sorted
//! by hash, as in ordered or Robin Hood hashing) merges like two sorted lists, in one linear
//! pass without lookups. It was built (2026-12-03) and measured on the 10 M-key Zipf partials
//! of the `issue15_10m` bench group, in alternating runs of the two builds on the shared
//! machine under load (minimum of 400 merges each): the two halves merged in 256–281 µs against
//! 331–383 µs, but the 4/5 + 1/5 merge took 388–445 µs against 235–253 µs. The branch-free
//! merge of the two sorted lists alone took about 4 ns per record of the union (185 µs of the
//! halves' 46,620); every record of the larger side is rewritten even when the other side
//! brings a few thousand; the coin tosses still need the thinned side sorted by id, and its
//! survivors then need sorting by hash. Inserting into such a table also moves the rest of a
//! run on every update that tracks a new item (not measured). Neither homes from the hash's top
//! bits alone (a merge then reads the other side's slots in this table's order), nor a
//! four-slot probe without a branch per slot, nor sorting 8-byte packed keys instead of the
//! records by id moved either figure. The reference model in `sticky_sampling`'s tests is the
//! oracle for the next attempt.

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
