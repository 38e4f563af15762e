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
//! - [`table`]: lookup, insertion, pruning, iteration; [`merge`]: adding another table, whose
//!   records' probes [`probe`] finds before any is added;
//! - [`order`]: branch-free walks over the slots and the radix sort by id;
//! - [`codec`]: the records' byte layout, shared by both kinds' payloads.
//!
//! # How a merge probes, and what was tried (2026-12-03 to 12-07)
//!
//! A merge ([`Table::absorb`], [`Table::absorb_records`]) adds the other side's records 256 at a
//! time, in rounds of two passes: every record's probe first, reading the slots only
//! ([`probe`]: Sticky Sampling's records eight slots at a time with AVX2, found or not without a
//! branch), then the adds, each where its probe ended; a new item whose slot an earlier new item
//! of the round took is probed again in the next round. No probe reads a slot an add of its own
//! round writes: probing and adding record by record, the next record's wide load waited on
//! the store just made into a neighbouring slot (the other side is read in slot order).
//! Against probing and adding record by record (2026-12-07, µs, minimum of 400 merges in each of
//! three alternating runs): the 1 M-key issue halves 232–238 against 261–270 (0.88×), the
//! reference parameters' 1 M-key halves 566–574 against 613–649 (0.91×), the 10 M-key halves
//! 326–327 against 351–358 (0.92×), the 10 M-key 4/5 + 1/5 merge 381–418 against 387–395 (the
//! same within the noise). Updates do not merge, and are as before.
//!
//! Where the time goes on the 10 M-key halves (29,242 records into 65,536 slots, 46,620 at the
//! end; the bench's partials, 2026-12-07): gathering the other side's records and the rest of
//! the merge about 48 µs (reading one 1 MB slot array costs about that here, so two of them
//! bound any merge near 100 µs), the probes about 135 µs and the adds about 145 µs, both bound
//! by instructions (some 35 a record for the add, at about three a cycle). Tens of µs is not in
//! reach by probing each record, nor by merging sorted lists in scalar code (below: 4 ns a
//! record of the union branchy, 8–10 ns branch-free). Tried, measured against the build before
//! each (µs on the 10 M-key halves unless said, minimum of 400 merges, alternating runs on the
//! shared machine), and left out:
//!
//! - the hash stored in the slot instead of the id, and the hash-ordered tables merged with
//!   AVX-512 (2026-12-07, issue 36's third design; a stand-alone prototype, commit 07ba9b4,
//!   reverted by the next, never built into the crate): both tables' non-empty slots compacted
//!   into sorted hash and count arrays (`vpcompressq`), merged by a streaming 8 + 8 bitonic
//!   network carrying the counts, equal hashes added and the positions
//!   `i + max(carry, prefix max of home_j − j)` found in registers, stored by scatter into a
//!   cleared slot array. On synthetic tables of the 10 M-key halves' sizes (29,252 and 29,242
//!   records in 65,536 slots, 46,620 in the union), minimum of 400 passes in each of three
//!   rounds alternating with today's merge in the crate (377–382 in those rounds, load 3.4):
//!   compacting 90–92, the network 89–91, clearing 31–32, adding and placing 59, in all
//!   288–291; the three fused in chunks of 1,024 slots (so the working set stays in the
//!   caches) 262–278, 5.6–6.0 ns a record of the union. The 1 M-key issue halves' sizes
//!   (18,529 + 18,490 in 32,768 slots, 30,915 in 65,536 after): 156–162 against 276–281.
//!   So 0.69–0.74× and 0.56–0.59× of today's merge before any of the crate's own work
//!   (texts, thinning, capacity) and before updates, but nowhere near the ~2 ns a record
//!   (93 µs) set as the bar for building it. Memory is not what bounds it (both 1 MB tables
//!   read in 29–31 when in the caches): the samples sit on the compress, the network (21
//!   permutes and compares a step of eight, all on one port by our count; no counters here)
//!   and the two scatters. The keys alone through the network, tagged with their side in
//!   bit 0 and the hashes and counts expanded back (`vpexpandq`), was slower: 103–112 against
//!   92–94. Not measured: updates on such a table (an insertion shifts the rest of its run,
//!   frequent items leave their homes), so whether they stay within 3 % is open; valgrind
//!   3.19 cannot run AVX-512 code, so no instruction counts;
//! - slots kept in hash order, merged in one branch-free pass (2026-12-07, the code in commit
//!   fd19323, reverted by the next commit): ordered linear probing with homes from the hash's top bits,
//!   runs going on past the last home into extra slots, so the slots read in order are sorted
//!   by hash; the union written in place into the table's own slots (read a block ahead of the
//!   writes: a fresh 470 KB list cost 130 µs of page faults alone), each step choosing by
//!   conditional moves (`select_unpredictable`; plain masks were compiled back into a
//!   branch). Medians of four alternating rounds (criterion, 3 s each): 458 against 347
//!   (1.21–1.38× in each round), the 1 M-key issue halves 1.30–1.46×, the reference
//!   parameters' merge 1.12–1.18×, 4/5 + 1/5 1.63–1.91× (the thinned side sorted by hash);
//!   updates 1.52–1.59× for Sticky Sampling and 1.30–1.52× for Lossy Counting (an insertion
//!   hashes each record of its run it passes and shifts the rest; and, not measured apart,
//!   the frequent items, inserted first, no longer stay at their homes). By callgrind, the pass costs some 80
//!   instructions a record of the union (55 for the step: two hashes, the selects, the store
//!   and the index checks; 25 gathering both sides from their slots, seven a slot) where
//!   today's adds cost 35 a record of the other side only. A next try needs the hash stored in
//!   the slot instead of the id (no hashing in the pass; `mix` is a bijection, so the id is
//!   recovered by inverting it), a SIMD merge (AVX-512 is here), and updates that do not
//!   shift runs;
//! - records kept in hash order, merged as two sorted lists (2026-12-03): 256–281 against
//!   331–383, but 4/5 + 1/5 388–445 against 235–253 (every record of the larger side is
//!   rewritten, and the thinned side needs sorting by id and then by hash);
//! - probing and adding record by record with a wide probe (four or eight slots without a
//!   branch each, or AVX-512 over eight with the other side read in sixteen interleaved
//!   stripes): 160 against 375 stand-alone for AVX-512, but slower in the crate, 399–412
//!   against 382, as the loads wait on the stores just made;
//! - one pass of probes, then adds that follow on slot by slot from where a probe ended: two in
//!   five new items (7,046 of 17,368 on the 10 M-key halves) find their slot taken by an earlier
//!   one, and the walk on mispredicts; the rounds took the 1 M-key issue halves from 260–263 to
//!   242–253 in the same alternating runs, and left the 10 M-key halves as they were (345–355);
//! - marking the slots a batch's new items take in a bitmap while probing (each item placed
//!   once): 435 against 352, as each probe waits on the previous record's mark through memory;
//! - batches gathered across 128 stripes of the other side (a batch's records far apart, so
//!   their probes rarely meet): 438 against 353, as the strided reads miss the caches the slot-order walk
//!   streams through;
//! - four slots a probe instead of eight: the probes alone 167 against 183, the merge 373
//!   against 330 (as the table fills, more runs go past four slots, on to the loop);
//! - a maximum load of 1/2 instead of 3/4: Sticky Sampling's tables double (524 KB to 1 MB on
//!   the 1 M keys, 1 MB to 2 MB on 10 M keys); the 1 M-key issue halves 198 against 240,
//!   but 445 against 340, and 4/5 + 1/5 630 against 390, as the larger tables
//!   leave the caches.
//!
//! On an AMD EPYC (Zen 5, 1 MB of L2 a core, AVX-512; 2026-12-08) the same
//! merges take 182 µs (the 1 M-key issue halves), 275 (the 10 M-key halves) and 328 (4/5 +
//! 1/5), criterion means of 3 s. A profile of the first (`perf record` on the bench binary,
//! `--profile-time 4`): the probes 32 %, the adds 28 %, the rebuild into 65,536 slots 17 %,
//! clearing them 7 %, and the page faults and `brk` of that fresh megabyte about 16 %. Tried
//! there and left out (criterion means, in that order, against 182, 275 and 328 measured
//! between them):
//!
//! - records added eight at a time, one a lane of an AVX-512 register (gathers of the lanes'
//!   slots, `vpconflictq` so that one lane takes an empty slot two want, lanes refilled from
//!   the batch with `vpexpandq`): 249, 308, 315 with the rebuild's placing done so too; 183,
//!   313, 304 with only the adds; 189, 300, 346 with only the adds and plain stores in place
//!   of the scatters.
//!   The gathers and scatters cost more than the mispredicted probe exits they remove, except
//!   for the thinned side, which comes in id order, not slot order;
//! - the rebuilt table's slots allocated zeroed (`calloc`, no clearing pass): 186, 277, 320.
//!
//! Ids and counts in separate arrays (so a probe's loads never meet an add's stores) were not
//! built: within a round they no longer meet, and every walk over the slots would change.
//! The reference model in `sticky_sampling`'s tests is the oracle for the next attempt.

mod codec;
mod identity;
mod merge;
mod order;
mod probe;
mod record;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use codec::{read_slots, write_slots};
pub(crate) use identity::{identity, value_identity};
pub(crate) use record::{Entry, Slot};
pub(crate) use table::Table;
