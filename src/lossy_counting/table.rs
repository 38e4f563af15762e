//! The item table shared by Lossy Counting and Sticky Sampling: an open-addressing hash table
//! (linear probing, power-of-two capacity) from an item's identity to a small counter record.
//!
//! An item's identity is a `u64`: a number's canonical bits (so numbers are compared exactly), or
//! a string's 64-bit XXH3 hash under a fixed seed. The text of every string item present is kept
//! beside the table so frequent strings can be reported; numbers need no side storage, so the
//! numeric hot path never allocates.

use std::collections::HashMap;

use crate::hash::{canonical_bits, hash_bytes};
use crate::{Datum, Value};

/// The most items a decoded synopsis of this crate's frequency and quantile kinds may claim to
/// have summarized (2⁶²): far beyond any real stream, and low enough that sums of counts, ranks and
/// merged lengths cannot overflow.
pub(crate) const MAX_ITEMS: u64 = 1 << 62;

/// Seed of the string identity hash: fixed, so identities agree across workers and processes.
const STRING_SEED: u64 = 0x5341_414d_535f_4954;

/// The identity of a datum, and the text to remember when it is a string.
#[inline]
pub(crate) fn identity(item: Datum<'_>) -> (u64, Option<&str>) {
    match item {
        Datum::Num(x) => (canonical_bits(x), None),
        Datum::Str(s) => (hash_bytes(s.as_bytes(), STRING_SEED), Some(s)),
    }
}

/// The identity of an owned value (for queries).
pub(crate) fn value_identity(v: &Value) -> u64 {
    identity(v.as_datum()).0
}

/// A record of the table: an item's identity and count (`count == 0` marks an empty slot), and
/// whatever else its kind keeps per item. Lossy Counting keeps a bucket delta ([`Slot`], 24
/// bytes); Sticky Sampling keeps nothing more (`Entry`, 16 bytes: with tens of thousands of
/// tracked items, a third word would be a third of its memory and of every scan).
pub(crate) trait Record: Copy + Default {
    /// Whether the record's delta is part of its encoding ([`write_slots`]).
    const WITH_DELTA: bool;
    /// A record from its encoded parts (`delta` is 0 where the kind keeps none).
    fn from_parts(id: u64, count: u64, delta: u64) -> Self;
    /// The item's identity.
    fn id(&self) -> u64;
    /// The item's count (0: empty slot).
    fn count(&self) -> u64;
    /// The count, to change.
    fn count_mut(&mut self) -> &mut u64;
    /// The bucket delta (0 where the kind keeps none).
    fn delta(&self) -> u64;
}

/// Lossy Counting's record: count and the bucket delta (the undercount bound when it entered).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Slot {
    pub id: u64,
    pub count: u64,
    pub delta: u64,
}

impl Record for Slot {
    const WITH_DELTA: bool = true;
    fn from_parts(id: u64, count: u64, delta: u64) -> Self {
        Slot { id, count, delta }
    }
    #[inline]
    fn id(&self) -> u64 {
        self.id
    }
    #[inline]
    fn count(&self) -> u64 {
        self.count
    }
    #[inline]
    fn count_mut(&mut self) -> &mut u64 {
        &mut self.count
    }
    #[inline]
    fn delta(&self) -> u64 {
        self.delta
    }
}

#[inline]
fn mix(id: u64) -> u64 {
    let mut z = id ^ (id >> 31);
    z = z.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^ (z >> 29)
}

/// Call `f` with the non-empty records of `slots`, in slot order, a few hundred at a time.
/// Which slots are empty is random, so a branch per slot mispredicts about as often as a table
/// is empty; gathering the records first (every slot copied, the write position advancing only
/// past records) has no such branch.
#[inline]
fn for_each_batch<R: Record>(slots: &[R], mut f: impl FnMut(&[R])) {
    const BATCH: usize = 256;
    let mut buf = [R::default(); BATCH];
    for chunk in slots.chunks(BATCH) {
        let mut w = 0;
        for s in chunk {
            buf[w] = *s;
            w += usize::from(s.count() != 0);
        }
        f(&buf[..w]);
    }
}

/// Sort records by id, as `sort_unstable_by_key(|r| r.id())` does (ids are distinct, so the
/// order is the same): a least-significant-digit radix sort over only the bits where ids differ
/// (numbers' low mantissa bits are mostly zero, their sign and exponent bits alike), in digits
/// of at most 11 bits. It makes the sorts of encoding and of Sticky Sampling's coin tosses
/// several times faster than a comparison sort on tens of thousands of records.
fn sort_by_id<R: Record>(records: &mut Vec<R>) {
    const MAX_DIGIT_BITS: u32 = 11;
    if records.len() < 512 {
        records.sort_unstable_by_key(|r| r.id());
        return;
    }
    let first = records[0].id();
    let varying = records.iter().fold(0, |acc, r| acc | (r.id() ^ first));
    let low = varying.trailing_zeros();
    let span = 64 - varying.leading_zeros() - low;
    let passes = span.div_ceil(MAX_DIGIT_BITS) as usize;
    if passes == 0 {
        return;
    }
    let bits = span.div_ceil(passes as u32);
    let (buckets, mask) = (1usize << bits, (1u64 << bits) - 1);
    let digit = |id: u64, pass: usize| ((id >> (low + bits * pass as u32)) & mask) as usize;
    let mut counts = vec![0usize; passes * buckets];
    for r in records.iter() {
        for pass in 0..passes {
            counts[pass * buckets + digit(r.id(), pass)] += 1;
        }
    }
    let mut scratch = vec![R::default(); records.len()];
    for (pass, count) in counts.chunks_exact_mut(buckets).enumerate() {
        if count.contains(&records.len()) {
            continue;
        }
        // Each bucket's count becomes the position of its next record.
        let mut sum = 0;
        for c in count.iter_mut() {
            (*c, sum) = (sum, sum + *c);
        }
        for r in records.iter() {
            let b = digit(r.id(), pass);
            scratch[count[b]] = *r;
            count[b] += 1;
        }
        std::mem::swap(records, &mut scratch);
    }
}

/// Open-addressing table of records plus the texts of string items.
#[derive(Clone, Debug)]
pub(crate) struct Table<R: Record = Slot> {
    slots: Vec<R>,
    len: usize,
    texts: HashMap<u64, Box<str>>,
}

const MIN_CAPACITY: usize = 16;

impl<R: Record> Default for Table<R> {
    fn default() -> Self {
        Table::with_capacity(0)
    }
}

impl<R: Record> Table<R> {
    /// An empty table.
    pub fn new() -> Self {
        Table::with_capacity(0)
    }

    /// An empty table that holds `items` records without growing.
    pub fn with_capacity(items: usize) -> Self {
        let slots = (items.saturating_mul(4) / 3 + 1).next_power_of_two().max(MIN_CAPACITY);
        Table { slots: vec![R::default(); slots], len: 0, texts: HashMap::new() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Slots allocated (a power of two).
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// Add `by` to the count of `id` if present; return whether it was.
    #[inline]
    pub fn bump(&mut self, id: u64, by: u64) -> bool {
        let mask = self.mask();
        let mut i = (mix(id) as usize) & mask;
        loop {
            let s = &mut self.slots[i];
            if s.count() == 0 {
                return false;
            }
            if s.id() == id {
                *s.count_mut() += by;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// The record of `id`, if present.
    pub fn get(&self, id: u64) -> Option<R> {
        let mask = self.mask();
        let mut i = (mix(id) as usize) & mask;
        loop {
            let s = self.slots[i];
            if s.count() == 0 {
                return None;
            }
            if s.id() == id {
                return Some(s);
            }
            i = (i + 1) & mask;
        }
    }

    /// The count of `id` (0 when untracked).
    pub fn count(&self, id: u64) -> u64 {
        self.get(id).map_or(0, |s| s.count())
    }

    /// Insert a record for an id known to be absent (`record.count() > 0`).
    #[inline]
    pub fn insert_new(&mut self, record: R, text: Option<&str>) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.rebuild(self.slots.len() * 2);
        }
        self.place(record);
        self.len += 1;
        if let Some(t) = text {
            self.texts.insert(record.id(), t.into());
        }
    }

    /// Add `record`'s count to the item's, tracking it first if absent.
    #[cfg(test)]
    pub fn add(&mut self, record: R, text: Option<&str>) {
        if !self.bump(record.id(), record.count()) {
            self.insert_new(record, text);
        }
    }

    /// [`Table::place`] for records arriving in no particular slot order: the first four slots
    /// from the record's home are tested together, without a branch each, so that a record whose
    /// home is taken does not cost a misprediction (records placed in slot order from another
    /// table mostly find their home free, and there the plain probe is faster).
    #[inline]
    fn place_scattered(&mut self, record: R) {
        let mask = self.mask();
        let home = (mix(record.id()) as usize) & mask;
        let mut empty = 0u32;
        for j in 0..4 {
            empty |= u32::from(self.slots[(home + j) & mask].count() == 0) << j;
        }
        // The first free slot of the four; past them, probe on one by one (the capacity is at
        // least 16, so the four never wrap onto each other).
        let mut i = (home + (empty | 1 << 4).trailing_zeros() as usize) & mask;
        while self.slots[i].count() != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = record;
    }

    #[inline]
    fn place(&mut self, record: R) {
        let mask = self.mask();
        let mut i = (mix(record.id()) as usize) & mask;
        while self.slots[i].count() != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = record;
    }

    fn rebuild(&mut self, capacity: usize) {
        let old = std::mem::replace(&mut self.slots, vec![R::default(); capacity.max(MIN_CAPACITY)]);
        for_each_batch(&old, |batch| {
            for s in batch {
                self.place(*s);
            }
        });
    }

    /// Add `record`'s count to its item's, or track it in the empty slot that ends its probe
    /// (one probe either way, and no branch on whether it was found: about half the records of
    /// a merge are new, at random). The caller has made room; returns whether the item was new,
    /// for the caller to record its text.
    #[inline]
    fn add_counted(&mut self, record: R) -> bool {
        let mask = self.mask();
        let mut i = (mix(record.id()) as usize) & mask;
        loop {
            let s = self.slots[i];
            if (s.count() == 0) | (s.id() == record.id()) {
                break;
            }
            i = (i + 1) & mask;
        }
        let s = self.slots[i];
        let was_empty = s.count() == 0;
        let mut merged = [s, record][usize::from(was_empty)];
        *merged.count_mut() = s.count() + record.count();
        self.slots[i] = merged;
        self.len += usize::from(was_empty);
        was_empty
    }

    /// Add a batch of records, doubling the table first whenever a new item would take it past
    /// 3/4 full, as [`Table::insert_new`] does. A batch that fits even if every record is new
    /// goes without that test per record (it costs more than the adding, as it can reallocate
    /// the slots under the loop). Calls `new` with each record that was new.
    #[inline]
    fn add_batch(&mut self, batch: &[R], mut new: impl FnMut(&mut Self, &R)) {
        if (self.len + batch.len()) * 4 <= self.slots.len() * 3 {
            for e in batch {
                if self.add_counted(*e) {
                    new(self, e);
                }
            }
            return;
        }
        for e in batch {
            if (self.len + 1) * 4 > self.slots.len() * 3 && self.get(e.id()).is_none() {
                self.rebuild(self.slots.len() * 2);
            }
            if self.add_counted(*e) {
                new(self, e);
            }
        }
    }

    /// Add every item of `other` (counts summed); the table ends at the capacity adding the
    /// items one by one would give it, and grows at most once on the way.
    ///
    /// When the union can fit in the table as it is (surely, or by the share of new items among
    /// the first sixteenth of the other side's slots), the other side's records are added in
    /// place, doubling the table if they turn out not to fit after all: sizing for both sides
    /// at once and shrinking back when they overlapped cost two rebuilds of a megabyte-sized
    /// table on a typical merge. When it must grow, it is rebuilt once, for both sides, before
    /// adding (adding into a table filling up to 3/4 means probing through ever longer runs),
    /// starting from the larger side when that is the other one.
    pub fn absorb(&mut self, other: &Table<R>) {
        let start_capacity = self.slots.len();
        let most = self.len.saturating_add(other.len);
        let likely_fits = most * 4 <= start_capacity * 3 || {
            let (mut sampled, mut shared) = (0usize, 0usize);
            for_each_batch(&other.slots[..other.slots.len() / 16], |batch| {
                sampled += batch.len();
                for e in batch {
                    shared += usize::from(self.get(e.id()).is_some());
                }
            });
            let new_share = if sampled == 0 { 1.0 } else { (sampled - shared) as f64 / sampled as f64 };
            (self.len as f64 + other.len as f64 * new_share) * 4.0 <= start_capacity as f64 * 3.0
        };
        if likely_fits {
            self.add_all(other);
        } else {
            let fit = (most.saturating_mul(4) / 3 + 1).next_power_of_two().max(start_capacity);
            if other.len > self.len && other.texts.is_empty() {
                // Our texts stay in `self.texts`; the other side has none to bring.
                let mine = if other.slots.len() == fit {
                    std::mem::replace(&mut self.slots, other.slots.clone())
                } else {
                    let mine = std::mem::replace(&mut self.slots, vec![R::default(); fit]);
                    for_each_batch(&other.slots, |batch| batch.iter().for_each(|e| self.place(*e)));
                    mine
                };
                let len = std::mem::replace(&mut self.len, other.len);
                self.add_all(&Table { slots: mine, len, texts: HashMap::new() });
            } else {
                self.rebuild(fit);
                self.add_all(other);
            }
        }
        self.settle_capacity(start_capacity);
    }

    /// [`Table::absorb`] for records that are not in a table (distinct ids, any order; `text`
    /// gives a string item's text, and `with_texts` says whether it gives any: without, new
    /// items are added with no branch on whether they were new): Sticky Sampling's side thinned
    /// before a merge, which would otherwise be placed into a table of its own only to be read
    /// back out of it. Ends at the same items, counts and capacity as `absorb` of that table.
    pub fn absorb_records<'a>(&mut self, records: &[R], text: impl Fn(u64) -> Option<&'a str>, with_texts: bool) {
        let start_capacity = self.slots.len();
        let most = self.len.saturating_add(records.len());
        // Every sixteenth record (records in id order are not a sample of the items: numbers'
        // ids follow their values) estimates the share of new items, as in `absorb`.
        let likely_fits = most * 4 <= start_capacity * 3 || {
            let sampled = records.len().div_ceil(16);
            let shared = records.iter().step_by(16).filter(|e| self.get(e.id()).is_some()).count();
            let new_share = if sampled == 0 { 1.0 } else { (sampled - shared) as f64 / sampled as f64 };
            (self.len as f64 + records.len() as f64 * new_share) * 4.0 <= start_capacity as f64 * 3.0
        };
        if !likely_fits {
            self.rebuild((most.saturating_mul(4) / 3 + 1).next_power_of_two().max(start_capacity));
        }
        for batch in records.chunks(256) {
            if with_texts {
                self.add_batch(batch, |table, e| {
                    if let Some(t) = text(e.id()) {
                        table.texts.insert(e.id(), t.into());
                    }
                });
            } else {
                self.add_batch(batch, |_, _| ());
            }
        }
        self.settle_capacity(start_capacity);
    }

    /// Rebuild at the capacity adding one by one from `start_capacity` ends at: doubled until
    /// the items fit at 3/4 load.
    fn settle_capacity(&mut self, start_capacity: usize) {
        let mut capacity = start_capacity;
        while self.len * 4 > capacity * 3 {
            capacity *= 2;
        }
        if capacity != self.slots.len() {
            self.rebuild(capacity);
        }
    }

    /// Whether string texts are kept (some tracked item is a string).
    pub fn has_texts(&self) -> bool {
        !self.texts.is_empty()
    }

    /// Add every record of `other`, growing as needed.
    fn add_all(&mut self, other: &Table<R>) {
        if other.texts.is_empty() {
            // Numbers only: nothing depends on whether a record was new, so nothing branches
            // on it (it is, at random, about every other record).
            for_each_batch(&other.slots, |batch| self.add_batch(batch, |_, _| ()));
        } else {
            for_each_batch(&other.slots, |batch| {
                self.add_batch(batch, |table, e| {
                    if let Some(t) = other.text(e.id()) {
                        table.texts.insert(e.id(), t.into());
                    }
                })
            });
        }
    }

    /// Apply `f` to every record; drop those for which it returns false. The table keeps its
    /// capacity (it refills between prunes) unless it has become very sparse.
    pub fn retain(&mut self, mut f: impl FnMut(&mut R) -> bool) {
        let mut kept = Vec::with_capacity(self.len);
        for s in self.slots.iter_mut().filter(|s| s.count() != 0) {
            if f(s) {
                kept.push(*s);
            } else if !self.texts.is_empty() {
                self.texts.remove(&s.id());
            }
        }
        self.refill(kept);
    }

    /// Place `kept` (the surviving records) into the slots, shrunk if they became very sparse.
    fn refill(&mut self, kept: Vec<R>) {
        self.len = kept.len();
        let fit = (kept.len() * 2).next_power_of_two().max(MIN_CAPACITY);
        if fit * 4 <= self.slots.len() {
            self.slots = vec![R::default(); fit];
        } else {
            self.slots.fill(R::default());
        }
        for s in kept {
            self.place(s);
        }
    }

    /// Apply `f` to every record.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut R)) {
        for s in self.slots.iter_mut().filter(|s| s.count() != 0) {
            f(s);
        }
    }

    /// The records with `count ≥ min` (`min ≥ 1`), in slot order. One compare per slot, whose
    /// branch is taken only for the few records returned: unlike filtering out the empty slots
    /// first (at random, about every other slot), it does not mispredict.
    pub fn at_least(&self, min: u64) -> Vec<R> {
        let min = min.max(1);
        let mut out = Vec::new();
        for s in &self.slots {
            if s.count() >= min {
                out.push(*s);
            }
        }
        out
    }

    /// The records in slot order (fast; the order carries no meaning).
    pub fn iter(&self) -> impl Iterator<Item = R> + '_ {
        self.slots.iter().copied().filter(|s| s.count() != 0)
    }

    /// The records, in a canonical order (by id), for encoding and reporting.
    pub fn sorted(&self) -> Vec<R> {
        let mut v: Vec<R> = Vec::with_capacity(self.len);
        for_each_batch(&self.slots, |batch| v.extend_from_slice(batch));
        sort_by_id(&mut v);
        v
    }

    /// A table of `records` (distinct ids, texts from `text`) with the capacity inserting them
    /// one by one into `Table::with_capacity(start)` would end at, sized once instead of
    /// doubling on the way.
    pub fn from_distinct<'a>(start: usize, records: &[R], text: impl Fn(u64) -> Option<&'a str>) -> Self {
        let mut table = Table::with_capacity(start);
        let mut capacity = table.slots.len();
        // insert_new doubles when the record it adds would take the load past 3/4.
        while records.len() * 4 > capacity * 3 {
            capacity *= 2;
        }
        if capacity > table.slots.len() {
            table.slots = vec![R::default(); capacity];
        }
        for r in records {
            table.place_scattered(*r);
            if let Some(t) = text(r.id()) {
                table.texts.insert(r.id(), t.into());
            }
        }
        table.len = records.len();
        table
    }

    /// The text of a string item (numbers-only tables skip the map's hashing).
    #[inline]
    pub fn text(&self, id: u64) -> Option<&str> {
        if self.texts.is_empty() {
            return None;
        }
        self.texts.get(&id).map(|t| &**t)
    }

    /// Texts kept (string items tracked).
    #[cfg(test)]
    pub fn texts_len(&self) -> usize {
        self.texts.len()
    }

    /// The item an id stands for.
    pub fn value(&self, id: u64) -> Value {
        match self.text(id) {
            Some(t) => Value::Str(t.to_string()),
            None => Value::Num(f64::from_bits(id)),
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<R>()
            + self.texts.capacity() * (std::mem::size_of::<(u64, Box<str>)>() + 1)
            + self.texts.values().map(|t| t.len()).sum::<usize>()
    }
}

impl Table<Slot> {
    /// Drop every record with `count + delta ≤ err` (Lossy Counting's bucket-boundary prune).
    /// Numbers-only tables take a branch-free pass: which slots survive is data-dependent and
    /// would otherwise cost a mispredicted branch per slot.
    pub fn prune(&mut self, err: u64) {
        if !self.texts.is_empty() {
            self.retain(|s| s.count + s.delta > err);
            return;
        }
        let mut kept = vec![Slot::default(); self.slots.len()];
        let mut w = 0;
        for s in &self.slots {
            kept[w] = *s;
            w += usize::from(s.count + s.delta > err);
        }
        kept.truncate(w);
        self.refill(kept);
    }
}

/// Write the records in canonical order: `count` varint, then per record `id` u64, `count`
/// varint, (`delta` varint if [`Record::WITH_DELTA`]), tag u8 (0 number, 1 string +
/// varint-length text). Sticky Sampling's records (no delta) write what version 1 of that kind
/// stores.
pub(crate) fn write_slots<R: Record>(w: &mut crate::codec::Writer, table: &Table<R>) {
    let slots = table.sorted();
    w.varint(slots.len() as u64);
    for s in &slots {
        w.u64(s.id());
        w.varint(s.count());
        if R::WITH_DELTA {
            w.varint(s.delta());
        }
        match table.text(s.id()) {
            Some(t) => {
                w.u8(1);
                w.len_bytes(t.as_bytes());
            }
            None => w.u8(0),
        }
    }
}

/// Read records written by [`write_slots`], checking that ids are strictly increasing, counts are
/// positive, numbers are canonical and every string's text hashes to its id.
///
/// `empty` makes the table to fill from the number of records (each kind sizes it as it always
/// has, so a decoded table has the capacity, and the size, of the one that was encoded).
pub(crate) fn read_slots<R: Record>(
    r: &mut crate::codec::Reader<'_>,
    empty: impl FnOnce(usize) -> Table<R>,
) -> Result<Table<R>, crate::SynopsisError> {
    let err = |m: &str| crate::SynopsisError::Codec(m.to_string());
    let n = r.count(if R::WITH_DELTA { 11 } else { 10 })?;
    let mut table = empty(n);
    let mut last: Option<u64> = None;
    for _ in 0..n {
        let id = r.u64()?;
        if last.is_some_and(|l| id <= l) {
            return Err(err("item ids are not strictly increasing"));
        }
        last = Some(id);
        let count = r.varint()?;
        if count == 0 {
            return Err(err("an item has count 0"));
        }
        let delta = if R::WITH_DELTA { r.varint()? } else { 0 };
        let text = match r.u8()? {
            0 => {
                if canonical_bits(f64::from_bits(id)) != id {
                    return Err(err("a numeric item is not in canonical form"));
                }
                None
            }
            1 => {
                let b = r.len_bytes()?;
                let s = std::str::from_utf8(b).map_err(|_| err("string item is not UTF-8"))?;
                if hash_bytes(s.as_bytes(), STRING_SEED) != id {
                    return Err(err("a string item does not match its id"));
                }
                Some(s)
            }
            _ => return Err(err("unknown item tag")),
        };
        table.insert_new(R::from_parts(id, count, delta), text);
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;

    #[test]
    fn radix_sort_orders_as_the_comparison_sort() {
        let mut rng = SplitMix64::new(11);
        let random: Vec<u64> = (0..5000).map(|_| rng.next_u64()).collect();
        let numbers: Vec<u64> = (0..5000u32).map(|i| canonical_bits(f64::from(i * 7919 % 100_003))).collect();
        let few_bytes: Vec<u64> = (0..2000u64).map(|i| 0xABCD_0000_0000_0000 | (i << 16)).collect();
        let extremes: Vec<u64> = (0..1000u64).map(|i| if i % 2 == 0 { u64::MAX - i } else { i }).collect();
        let small: Vec<u64> = random[..100].to_vec();
        for ids in [random, numbers, few_bytes, extremes, small] {
            let mut ids = ids;
            ids.sort_unstable();
            ids.dedup();
            // Shuffled records, counts tied to ids so a record's parts stay together.
            let mut records: Vec<Slot> = ids.iter().map(|&id| Slot { id, count: id | 1, delta: id >> 3 }).collect();
            for i in (1..records.len()).rev() {
                records.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            let mut expected = records.clone();
            expected.sort_unstable_by_key(|r| r.id);
            sort_by_id(&mut records);
            assert_eq!(records, expected);
        }
    }

    #[test]
    fn absorb_grows_midway_when_the_sampled_slots_misjudge_the_union() {
        // The other side's first sixteenth of slots holds only items this side has, so the
        // union looks like it fits; the rest are new and it does not: the table must double
        // while adding, and end as adding one by one leaves it.
        let mut a: Table<Slot> = Table::default();
        for id in 0..1000u64 {
            a.add(Slot { id, count: 1, delta: 0 }, None);
        }
        let capacity = 4096usize;
        let mut b: Table<Slot> = Table::with_capacity(1700);
        assert_eq!(b.capacity(), capacity);
        for id in 0..1000u64 {
            b.insert_new(Slot { id, count: 2, delta: 0 }, None);
        }
        let fresh = (10_000u64..)
            .filter(|&id| (capacity / 16 + 8..capacity - 64).contains(&((mix(id) as usize) & (capacity - 1))))
            .take(700);
        for id in fresh {
            b.insert_new(Slot { id, count: 3, delta: 0 }, None);
        }
        assert!(b.slots[..capacity / 16].iter().all(|s| s.count == 0 || s.id < 1000));
        let mut one_by_one = a.clone();
        for e in b.iter() {
            one_by_one.add(e, None);
        }
        let start = a.capacity();
        a.absorb(&b);
        assert!(a.capacity() > start);
        assert_eq!(a.capacity(), one_by_one.capacity());
        assert_eq!(a.sorted(), one_by_one.sorted());
        for e in one_by_one.iter() {
            assert_eq!(a.count(e.id), e.count);
        }
    }

    #[test]
    fn from_distinct_is_the_table_inserting_one_by_one_builds() {
        let mut rng = SplitMix64::new(5);
        for (start, n) in [(0usize, 0usize), (0, 11), (0, 13), (100, 10), (100, 400), (5000, 2500), (5000, 30_000)] {
            let records: Vec<Slot> =
                (0..n).map(|i| Slot { id: rng.next_u64() | 1, count: i as u64 + 1, delta: 2 }).collect();
            let text = |id: u64| id.is_multiple_of(3).then_some("three");
            let mut one_by_one = Table::with_capacity(start);
            for r in &records {
                one_by_one.insert_new(*r, text(r.id));
            }
            let built = Table::from_distinct(start, &records, text);
            assert_eq!(built.capacity(), one_by_one.capacity(), "{start} {n}");
            assert_eq!(built.len(), n);
            assert_eq!(built.sorted(), one_by_one.sorted());
            assert_eq!(built.texts, one_by_one.texts);
            for r in &records {
                assert_eq!(built.get(r.id), Some(*r));
            }
        }
    }
}
