//! Adding another table's records (a merge of two synopses' tables), ending at the capacity
//! adding the records one by one would give the table.
//!
//! Both sides are in hash order (a table's slots read in order, or records sorted by hash), so
//! the union is their merge as two sorted lists: one pass that takes the smaller hash (or both,
//! when the ids are equal, their counts added) and places it at its home or just past the
//! previous record, selecting with conditional moves rather than branches (which side's hash
//! is smaller is, at random, a coin toss a record).

use std::hint::select_unpredictable;

use super::order::{BATCH, sort_by_hash};
use super::record::Record;
use super::table::{TAIL, Table, grown, mix, shift};

/// A side this many times smaller than the table is added record by record (a lookup, and an
/// insertion that shifts the rest of its run) rather than by rewriting the whole table.
const SMALL_SIDE: usize = 16;

impl<R: Record> Table<R> {
    /// Add every item of `other` (counts summed); the table ends at the capacity adding the
    /// items one by one would give it.
    pub fn absorb(&mut self, other: &Table<R>) {
        if other.len.saturating_mul(SMALL_SIDE) < self.len {
            for r in other.iter() {
                self.add(r, other.text(r.id()));
            }
            return;
        }
        self.merge_in_hash_order(&other.slots, other.len);
        for (id, t) in &other.texts {
            self.texts.entry(*id).or_insert_with(|| t.clone());
        }
    }

    /// [`Table::absorb`] for records that are not in a table (distinct ids, any order; `text`
    /// gives a string item's text, and `with_texts` says whether it gives any): Sticky
    /// Sampling's side thinned before a merge, sorted by hash here rather than placed into a
    /// table of its own. Ends at the same items, counts and capacity as `absorb` of that table.
    pub fn absorb_records<'a>(&mut self, records: &[R], text: impl Fn(u64) -> Option<&'a str>, with_texts: bool) {
        if records.len().saturating_mul(SMALL_SIDE) < self.len {
            for r in records {
                self.add(*r, if with_texts { text(r.id()) } else { None });
            }
            return;
        }
        let mut sorted = records.to_vec();
        sort_by_hash(&mut sorted);
        self.merge_in_hash_order(&sorted, sorted.len());
        if with_texts {
            for r in records {
                if let Some(t) = text(r.id()) {
                    self.texts.entry(r.id()).or_insert_with(|| t.into());
                }
            }
        }
    }

    /// Merge `theirs` (slots or records in hash order, empty ones skipped; `theirs_len` records
    /// with distinct ids) into
    /// the table, in place: the union is written into the table's own slots, at the capacity
    /// that fits the larger side, each of its records read out (a block at a time) before the
    /// union's writes reach it; if the union turns out not to fit there, the table is rebuilt
    /// once at the capacity that does. Reading the table's records out into a list of their
    /// own first, or writing the union into fresh slots, cost more than the merge itself: a
    /// fresh allocation of that size is new pages, each zeroed by the system on first touch
    /// (130 µs for the 470 KB of a 10 M-key half's records, 2026-12-07).
    fn merge_in_hash_order(&mut self, theirs: &[R], theirs_len: usize) {
        let start = self.homes;
        let homes = grown(start, self.len.max(theirs_len));
        if homes + TAIL > self.slots.len() {
            self.slots.resize(homes + TAIL, R::default());
        }
        let mut mine = InPlace::new(&mut self.slots, homes);
        let mut others = Gathered::new(theirs);
        loop {
            // Neither side runs out within `k` steps (each takes at most one record of each).
            let k = mine.available().min(others.available());
            if k == 0 {
                break;
            }
            mine.merge_segment(&others.buffer[others.head..others.head + k]);
            others.head += mine.taken_from_b;
        }
        while let Some(ra) = mine.head() {
            mine.place(ra, mix(ra.id()));
            mine.head += 1;
        }
        while let Some(rb) = others.head() {
            mine.place(rb, mix(rb.id()));
            others.head += 1;
        }
        self.len = mine.placed;
        self.homes = homes;
        let fit = grown(start, self.len);
        if fit != homes {
            self.rebuild(fit);
        }
    }
}

/// The records of a slot array in order, gathered a block at a time into a buffer (skipping
/// the empty slots without a branch each, as [`super::order::for_each_batch`] does).
struct Gathered<'a, R: Record> {
    slots: &'a [R],
    read: usize,
    buffer: [R; BATCH],
    /// The next record is `buffer[head]`, while `head < len`.
    head: usize,
    len: usize,
}

impl<'a, R: Record> Gathered<'a, R> {
    fn new(slots: &'a [R]) -> Self {
        Gathered { slots, read: 0, buffer: [R::default(); BATCH], head: 0, len: 0 }
    }

    /// The records left in the buffer, refilled first if it is empty (0: none left at all).
    #[inline]
    fn available(&mut self) -> usize {
        while self.head == self.len && self.read < self.slots.len() {
            let block = &self.slots[self.read..(self.read + BATCH).min(self.slots.len())];
            self.len = gather(block, &mut self.buffer);
            self.head = 0;
            self.read += block.len();
        }
        self.len - self.head
    }

    /// The next record, if any is left.
    #[inline]
    fn head(&mut self) -> Option<R> {
        (self.available() > 0).then(|| self.buffer[self.head])
    }
}

/// Copy the records of `block` (at most [`BATCH`] slots) to the front of `buffer`, returning how
/// many: every slot is copied, the write position advancing only past records.
#[inline]
fn gather<R: Record>(block: &[R], buffer: &mut [R; BATCH]) -> usize {
    let mut w = 0;
    for s in block {
        buffer[w] = *s;
        w += usize::from(s.count() != 0);
    }
    w
}

/// A table's slots being rewritten with a union in place: its own records are read out a block
/// ahead of the union's writes (into `queue`, the block's slots cleared), so no write lands on
/// a record not yet read. A record of the union is never placed before where it was (more
/// records, or more home slots, only push a run further on), so the records read ahead are
/// usually the few of a block.
struct InPlace<'a, R: Record> {
    slots: &'a mut Vec<R>,
    /// Slots before `read` have been read into `queue` and cleared.
    read: usize,
    /// The table's records read and not yet merged, from `queue[head]` on.
    queue: Vec<R>,
    head: usize,
    shift: u32,
    /// The first slot the next record may take (just past the previous one).
    next: usize,
    placed: usize,
    /// Records of the other side the last [`InPlace::merge_segment`] took.
    taken_from_b: usize,
}

impl<'a, R: Record> InPlace<'a, R> {
    fn new(slots: &'a mut Vec<R>, homes: usize) -> Self {
        InPlace {
            slots,
            read: 0,
            queue: Vec::with_capacity(2 * BATCH),
            head: 0,
            shift: shift(homes),
            next: 0,
            placed: 0,
            taken_from_b: 0,
        }
    }

    /// Read the next block of slots into the queue and clear them.
    fn read_block(&mut self) {
        let to = (self.read + BATCH).min(self.slots.len());
        let mut buffer = [R::default(); BATCH];
        let n = gather(&self.slots[self.read..to], &mut buffer);
        self.queue.extend_from_slice(&buffer[..n]);
        self.slots[self.read..to].fill(R::default());
        self.read = to;
    }

    /// The table's records read and not yet merged, more read first if there are none (0:
    /// none left at all).
    #[inline]
    fn available(&mut self) -> usize {
        if self.head >= BATCH {
            // Drop the records merged, so the queue stays the size of what is read ahead.
            self.queue.drain(..self.head);
            self.head = 0;
        }
        while self.head == self.queue.len() && self.read < self.slots.len() {
            self.read_block();
        }
        self.queue.len() - self.head
    }

    /// The table's next record, if any is left.
    #[inline]
    fn head(&mut self) -> Option<R> {
        (self.available() > 0).then(|| self.queue[self.head])
    }

    /// Merge the next `theirs.len()` steps (at most that many records of each side are left):
    /// each step takes the smaller hash of the two heads, or both when the ids are equal (their
    /// counts added, the record otherwise the table's own). The slots the steps can write are
    /// read ahead first, so the steps check nothing but the loop's end, and select by
    /// conditional moves (`select_unpredictable`: left to itself, the compiler turns the
    /// selection into a branch, which mispredicts on every other record). Sets
    /// `taken_from_b`.
    #[inline]
    fn merge_segment(&mut self, theirs: &[R]) {
        let k = theirs.len();
        let last = mix(self.queue[self.head + k - 1].id()).max(mix(theirs[k - 1].id()));
        // The segment's records land at their homes or just past the record before: the t-th
        // at most t slots past the later of the last home and the first free slot.
        let bound = ((last >> self.shift) as usize).max(self.next) + k;
        while self.read <= bound && self.read < self.slots.len() {
            self.read_block();
        }
        if bound + 1 >= self.slots.len() {
            self.slots.resize(bound + 2, R::default());
            self.read = self.slots.len();
        }
        let mine = &self.queue[self.head..self.head + k];
        let out = &mut self.slots[..bound];
        let (mut i, mut j, mut next) = (0, 0, self.next);
        for _ in 0..k {
            let (ra, rb) = (mine[i], theirs[j]);
            let (ha, hb) = (mix(ra.id()), mix(rb.id()));
            let (take_a, take_b) = (ha <= hb, hb <= ha);
            let id = select_unpredictable(take_a, ra.id(), rb.id());
            let delta = select_unpredictable(take_a, ra.delta(), rb.delta());
            let count = select_unpredictable(take_a, ra.count(), 0) + select_unpredictable(take_b, rb.count(), 0);
            let home = (select_unpredictable(take_a, ha, hb) >> self.shift) as usize;
            let pos = select_unpredictable(home > next, home, next);
            out[pos] = R::from_parts(id, count, delta);
            next = pos + 1;
            i += usize::from(take_a);
            j += usize::from(take_b);
        }
        self.head += i;
        self.taken_from_b = j;
        self.next = next;
        self.placed += k;
    }

    /// Place the union's next record (`hash` its id's) at its home or just past the previous
    /// one, reading ahead first if the slot is not read yet.
    #[inline]
    fn place(&mut self, record: R, hash: u64) {
        let home = (hash >> self.shift) as usize;
        let pos = select_unpredictable(home > self.next, home, self.next);
        while pos >= self.read && self.read < self.slots.len() {
            self.read_block();
        }
        if pos + 1 >= self.slots.len() {
            // A run past the tail (rare): the last slot must stay empty.
            self.slots.resize(pos + 2, R::default());
            self.read = self.slots.len();
        }
        self.slots[pos] = record;
        self.next = pos + 1;
        self.placed += 1;
    }
}
