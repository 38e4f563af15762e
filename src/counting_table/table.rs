//! The open-addressing table itself: lookup, insertion, pruning and iteration. Adding another
//! table's records is in [`super::merge`].

use std::collections::HashMap;

use super::order::{for_each_batch, sort_by_hash, sort_by_id};
use super::record::{Record, Slot};
use crate::Value;

/// An id's hash: a 64-bit finalizer (a bijection, so distinct ids have distinct hashes), so
/// that ids differing only in their low bits (numbers of one magnitude differ in their low
/// mantissa bits, or not at all there) still spread over the slots. Its top bits pick the home
/// slot, and the table keeps its records in the order of the whole hash.
#[inline]
pub(super) fn mix(id: u64) -> u64 {
    let mut z = id ^ (id >> 31);
    z = z.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^ (z >> 29)
}

/// Open-addressing table of records plus the texts of string items, kept in hash order:
/// reading its slots from first to last gives the records by increasing [`mix`] of their ids
/// (home slots are the hashes' top bits, so that order is also by home). A run that reaches the
/// last home slot goes on into slots past it, never round to the first (the slots past the
/// homes grow as needed, and the last slot is always empty, where any probe ends at the latest).
#[derive(Clone, Debug)]
pub(crate) struct Table<R: Record = Slot> {
    /// `homes` home slots, then at least [`TAIL`] more, the last one empty.
    pub(super) slots: Vec<R>,
    /// Home slots (a power of two): the capacity the load of 3/4 is reckoned against.
    pub(super) homes: usize,
    pub(super) len: usize,
    pub(super) texts: HashMap<u64, Box<str>>,
}

/// The fewest home slots a table has.
const MIN_CAPACITY: usize = 16;

/// Slots past the homes in a fresh table: where runs that reach the last home slot go on.
pub(super) const TAIL: usize = 8;

/// The capacity a table of `homes` home slots ends at holding `len` records: doubled until
/// they fit at a load of 3/4 (as inserting them one by one doubles it).
pub(super) fn grown(mut homes: usize, len: usize) -> usize {
    while len.saturating_mul(4) > homes.saturating_mul(3) {
        homes *= 2;
    }
    homes
}

/// The slots of a table built from records given in hash order, each at its home or, if an
/// earlier one took that, in the slot after the earlier one's: exactly where inserting them
/// one by one in any order would leave them, built with sequential stores only.
pub(super) struct Placement<R: Record> {
    slots: Vec<R>,
    shift: u32,
    next: usize,
}

impl<R: Record> Placement<R> {
    /// Placing into `slots` (cleared to `homes + TAIL` empty slots, keeping its allocation).
    pub(super) fn new(mut slots: Vec<R>, homes: usize) -> Self {
        slots.clear();
        slots.resize(homes + TAIL, R::default());
        Placement { slots, shift: shift(homes), next: 0 }
    }

    /// Place the next record (its hash at least the previous one's).
    #[inline]
    pub(super) fn push(&mut self, record: R) {
        self.push_hashed(record, mix(record.id()));
    }

    /// [`Placement::push`] with the record's hash already computed.
    #[inline]
    pub(super) fn push_hashed(&mut self, record: R, hash: u64) {
        let home = (hash >> self.shift) as usize;
        // Whether the previous record took the home is at random: a conditional move.
        let pos = std::hint::select_unpredictable(home > self.next, home, self.next);
        if pos + 1 >= self.slots.len() {
            // A run past the tail (rare): the last slot must stay empty.
            self.slots.resize(pos + 2, R::default());
        }
        self.slots[pos] = record;
        self.next = pos + 1;
    }

    pub(super) fn into_slots(self) -> Vec<R> {
        self.slots
    }
}

/// The shift that takes a hash to its home among `homes` slots (a power of two, at least 16):
/// its top `log2(homes)` bits.
#[inline]
pub(super) fn shift(homes: usize) -> u32 {
    homes.leading_zeros() + 1
}

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
        let homes = (items.saturating_mul(4) / 3 + 1).next_power_of_two().max(MIN_CAPACITY);
        Table { slots: vec![R::default(); homes + TAIL], homes, len: 0, texts: HashMap::new() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Home slots (a power of two).
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.homes
    }

    /// The home slot of a hash.
    #[inline]
    pub(super) fn home(&self, hash: u64) -> usize {
        (hash >> shift(self.homes)) as usize
    }

    /// Add `by` to the count of `id` if present; return whether it was.
    #[inline]
    pub fn bump(&mut self, id: u64, by: u64) -> bool {
        let mut i = self.home(mix(id));
        loop {
            let s = &mut self.slots[i];
            if s.count() == 0 {
                return false;
            }
            if s.id() == id {
                *s.count_mut() += by;
                return true;
            }
            i += 1;
        }
    }

    /// The record of `id`, if present.
    pub fn get(&self, id: u64) -> Option<R> {
        let mut i = self.home(mix(id));
        loop {
            let s = self.slots[i];
            if s.count() == 0 {
                return None;
            }
            if s.id() == id {
                return Some(s);
            }
            i += 1;
        }
    }

    /// The count of `id` (0 when untracked).
    pub fn count(&self, id: u64) -> u64 {
        self.get(id).map_or(0, |s| s.count())
    }

    /// Insert a record for an id known to be absent (`record.count() > 0`).
    #[inline]
    pub fn insert_new(&mut self, record: R, text: Option<&str>) {
        if (self.len + 1) * 4 > self.homes * 3 {
            self.rebuild(self.homes * 2);
        }
        self.place(record);
        self.len += 1;
        if let Some(t) = text {
            self.texts.insert(record.id(), t.into());
        }
    }

    /// Add `record`'s count to the item's, tracking it first if absent.
    pub fn add(&mut self, record: R, text: Option<&str>) {
        if !self.bump(record.id(), record.count()) {
            self.insert_new(record, text);
        }
    }

    /// Put a record whose id is absent where hash order puts it: past the records of its run
    /// with smaller hashes, the rest of the run shifted up one slot (`len` is the caller's to
    /// count).
    #[inline]
    pub(super) fn place(&mut self, record: R) {
        let hash = mix(record.id());
        let mut at = self.home(hash);
        while self.slots[at].count() != 0 && mix(self.slots[at].id()) < hash {
            at += 1;
        }
        let mut end = at;
        while self.slots[end].count() != 0 {
            end += 1;
        }
        self.slots.copy_within(at..end, at + 1);
        self.slots[at] = record;
        if end + 1 == self.slots.len() {
            self.slots.push(R::default());
        }
    }

    /// Move every record into `capacity` home slots (at least the minimum), in one pass: the
    /// records read in slot order are in hash order, as [`Placement`] takes them.
    pub(super) fn rebuild(&mut self, capacity: usize) {
        let homes = capacity.max(MIN_CAPACITY);
        let old = std::mem::take(&mut self.slots);
        let mut placement = Placement::new(Vec::with_capacity(homes + TAIL), homes);
        for_each_batch(&old, |batch| batch.iter().for_each(|r| placement.push(*r)));
        self.slots = placement.into_slots();
        self.homes = homes;
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

    /// Place `kept` (the surviving records, in hash order) into the slots, shrunk if they
    /// became very sparse.
    fn refill(&mut self, kept: Vec<R>) {
        self.len = kept.len();
        let fit = (kept.len() * 2).next_power_of_two().max(MIN_CAPACITY);
        if fit * 4 <= self.homes {
            self.homes = fit;
        }
        let mut placement = Placement::new(std::mem::take(&mut self.slots), self.homes);
        kept.into_iter().for_each(|r| placement.push(r));
        self.slots = placement.into_slots();
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

    /// The records in slot order, which is hash order (fast; the order carries no meaning
    /// outside the table).
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

    /// A table of `records` (distinct ids, in any order; texts from `text`) with the capacity
    /// inserting them one by one into `Table::with_capacity(start)` would end at, sized once
    /// instead of doubling on the way, and placed in one pass once sorted by hash.
    pub fn from_distinct<'a>(start: usize, records: &[R], text: impl Fn(u64) -> Option<&'a str>) -> Self {
        let mut table = Table::with_capacity(start);
        let homes = grown(table.homes, records.len());
        let mut sorted = records.to_vec();
        sort_by_hash(&mut sorted);
        let mut placement = Placement::new(std::mem::take(&mut table.slots), homes);
        for r in &sorted {
            placement.push(*r);
            if let Some(t) = text(r.id()) {
                table.texts.insert(r.id(), t.into());
            }
        }
        table.slots = placement.into_slots();
        table.homes = homes;
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
