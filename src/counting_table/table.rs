//! The open-addressing table itself: lookup, insertion, pruning and iteration. Adding another
//! table's records is in [`super::merge`].

use std::collections::HashMap;

use super::order::{for_each_batch, sort_by_id};
use super::record::{Record, Slot};
use crate::Value;

/// The slot an id's probe starts from, before masking: a 64-bit finalizer, so that ids differing
/// only in their high bits (numbers of one magnitude differ in their low mantissa bits, or not
/// at all there) still spread over the slots.
#[inline]
pub(super) fn mix(id: u64) -> u64 {
    let mut z = id ^ (id >> 31);
    z = z.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^ (z >> 29)
}

/// Open-addressing table of records plus the texts of string items.
#[derive(Clone, Debug)]
pub(crate) struct Table<R: Record = Slot> {
    pub(super) slots: Vec<R>,
    pub(super) len: usize,
    pub(super) texts: HashMap<u64, Box<str>>,
}

/// The fewest slots a table has (`place_scattered`'s four-slot test needs them not to wrap).
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

    /// The bits of a mixed id that pick its home slot (the capacity is a power of two).
    #[inline]
    pub(super) fn mask(&self) -> usize {
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

    /// Put a record whose id is absent into the first free slot of its probe (`len` is the
    /// caller's to count).
    #[inline]
    pub(super) fn place(&mut self, record: R) {
        let mask = self.mask();
        let mut i = (mix(record.id()) as usize) & mask;
        while self.slots[i].count() != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = record;
    }

    /// Move every record into `capacity` fresh slots (at least the minimum).
    pub(super) fn rebuild(&mut self, capacity: usize) {
        let old = std::mem::replace(&mut self.slots, vec![R::default(); capacity.max(MIN_CAPACITY)]);
        for_each_batch(&old, |batch| {
            for s in batch {
                self.place(*s);
            }
        });
    }

    /// Whether string texts are kept (some tracked item is a string).
    pub fn has_texts(&self) -> bool {
        !self.texts.is_empty()
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
