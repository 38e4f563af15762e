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

/// A slot's record: `count == 0` marks an empty slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Slot {
    pub id: u64,
    pub count: u64,
    pub delta: u64,
}

#[inline]
fn mix(id: u64) -> u64 {
    let mut z = id ^ (id >> 31);
    z = z.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^ (z >> 29)
}

/// Open-addressing table of [`Slot`]s plus the texts of string items.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    slots: Vec<Slot>,
    len: usize,
    texts: HashMap<u64, Box<str>>,
}

const MIN_CAPACITY: usize = 16;

impl Table {
    pub fn new() -> Self {
        Table { slots: vec![Slot::default(); MIN_CAPACITY], len: 0, texts: HashMap::new() }
    }

    pub fn len(&self) -> usize {
        self.len
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
            if s.count == 0 {
                return false;
            }
            if s.id == id {
                s.count += by;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// The record of `id`, if present.
    pub fn get(&self, id: u64) -> Option<Slot> {
        let mask = self.mask();
        let mut i = (mix(id) as usize) & mask;
        loop {
            let s = self.slots[i];
            if s.count == 0 {
                return None;
            }
            if s.id == id {
                return Some(s);
            }
            i = (i + 1) & mask;
        }
    }

    /// Insert a record for an id known to be absent (`slot.count > 0`).
    #[inline]
    pub fn insert_new(&mut self, slot: Slot, text: Option<&str>) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.rebuild(self.slots.len() * 2);
        }
        self.place(slot);
        self.len += 1;
        if let Some(t) = text {
            self.texts.insert(slot.id, t.into());
        }
    }

    #[inline]
    fn place(&mut self, slot: Slot) {
        let mask = self.mask();
        let mut i = (mix(slot.id) as usize) & mask;
        while self.slots[i].count != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = slot;
    }

    fn rebuild(&mut self, capacity: usize) {
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); capacity.max(MIN_CAPACITY)]);
        for s in old.into_iter().filter(|s| s.count != 0) {
            self.place(s);
        }
    }

    /// Apply `f` to every record; drop those for which it returns false. The table keeps its
    /// capacity (it refills between prunes) unless it has become very sparse.
    pub fn retain(&mut self, mut f: impl FnMut(&mut Slot) -> bool) {
        let mut kept = Vec::with_capacity(self.len);
        for s in self.slots.iter_mut().filter(|s| s.count != 0) {
            if f(s) {
                kept.push(*s);
            } else if !self.texts.is_empty() {
                self.texts.remove(&s.id);
            }
        }
        self.len = kept.len();
        let fit = (kept.len() * 2).next_power_of_two().max(MIN_CAPACITY);
        if fit * 4 <= self.slots.len() {
            self.slots = vec![Slot::default(); fit];
        } else {
            self.slots.fill(Slot::default());
        }
        for s in kept {
            self.place(s);
        }
    }

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
        self.len = w;
        let fit = (w * 2).next_power_of_two().max(MIN_CAPACITY);
        if fit * 4 <= self.slots.len() {
            self.slots = vec![Slot::default(); fit];
        } else {
            self.slots.fill(Slot::default());
        }
        for s in kept {
            self.place(s);
        }
    }

    /// The records, in a canonical order (by id), for encoding and reporting.
    pub fn sorted(&self) -> Vec<Slot> {
        let mut v: Vec<Slot> = self.slots.iter().copied().filter(|s| s.count != 0).collect();
        v.sort_unstable_by_key(|s| s.id);
        v
    }

    /// The text of a string item.
    pub fn text(&self, id: u64) -> Option<&str> {
        self.texts.get(&id).map(|t| &**t)
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
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.texts.capacity() * (std::mem::size_of::<(u64, Box<str>)>() + 1)
            + self.texts.values().map(|t| t.len()).sum::<usize>()
    }
}

impl Table {
    /// Apply `f` to every record.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(&mut Slot)) {
        for s in self.slots.iter_mut().filter(|s| s.count != 0) {
            f(s);
        }
    }
}

/// Write the records in canonical order: `count` varint, then per record `id` u64, `count`
/// varint, (`delta` varint if `with_delta`), tag u8 (0 number, 1 string + varint-length text).
pub(crate) fn write_slots(w: &mut crate::codec::Writer, table: &Table, with_delta: bool) {
    let slots = table.sorted();
    w.varint(slots.len() as u64);
    for s in &slots {
        w.u64(s.id);
        w.varint(s.count);
        if with_delta {
            w.varint(s.delta);
        }
        match table.text(s.id) {
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
pub(crate) fn read_slots(r: &mut crate::codec::Reader<'_>, with_delta: bool) -> Result<Table, crate::SynopsisError> {
    let err = |m: &str| crate::SynopsisError::Codec(m.to_string());
    let n = r.count(if with_delta { 11 } else { 10 })?;
    let mut table = Table::new();
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
        let delta = if with_delta { r.varint()? } else { 0 };
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
        table.insert_new(Slot { id, count, delta }, text);
    }
    Ok(table)
}
