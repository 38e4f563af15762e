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
//!
//! Where a merge's time goes (2026-12-06): it is the probe, not the memory. On the 10 M-key halves
//! (29,242 records added into 65,536 slots, ending at 46,620) `absorb` took 365–381 µs; in a
//! stand-alone copy of the table, scanning both 1 MB slot arrays took 30–40 µs and reading each
//! record's home slot 18–30 µs, but probing to the end of each run 270–300 µs (its exit is a branch
//! on a random run length), and a branch-free probe of the eight slots from the home 190 µs before
//! the add's store and about 350 µs with it (the next record's probe reads the slots just written).
//! In this crate that probe, with the add written field by field and the other side read in sixteen
//! interleaved stripes (so consecutive records lie far apart), was slower in alternating runs:
//! 389–415 µs against 365–381 µs on the halves, 478–516 µs against 406–424 µs on the 4/5 + 1/5
//! merge, 690–711 µs against 634–642 µs on the 1 M-key reference halves. Finding a batch's probe
//! ends first and adding after (re-probing where an earlier record of the batch took the slot) was
//! slower again stand-alone (about 400 µs: in slot order that happens often, and mispredicts). An
//! AVX-512 probe (the eight slots from the home compared against `[id, 0, …]` in two instructions,
//! records fed in interleaved stripes) took 160 µs against 375 µs stand-alone, but in this crate,
//! in alternating runs, 399–412 µs against 382 µs on the 10 M halves, 328–341 µs against 304–313 µs
//! on the 1 M-key issue halves, 355–378 µs against 419–431 µs on the 4/5 + 1/5 merge and 648–652 µs
//! against 668–680 µs on the 1 M-key reference halves: the 64-byte loads wait on the stores of the
//! records added just before (perf puts the time on the id store and the second compare), so it was
//! left out. Nothing measured so far costs much under 4 ns a record here (the sorted merge above,
//! per record of the union; the AVX-512 probe stand-alone, 5.5 ns), so tens of µs for the 30 k
//! records of a 10 M-key half is not in reach by these means.

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
