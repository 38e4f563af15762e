//! Sticky Sampling's own item table: open addressing (linear probing, power-of-two capacity)
//! from an item's identity to its count, 16 bytes a slot.
//!
//! Lossy Counting's shared table keeps a third word per slot (the bucket delta) that Sticky
//! Sampling never uses; with tens of thousands of tracked items (`2t` in expectation) that word
//! was a third of the synopsis' memory and of every scan. Identities are the shared ones
//! ([`identity`]: a number's canonical bits, a string's fixed-seed hash), so both kinds agree
//! on what an item is, and the byte layout is the one [`write`] / [`read`] keep unchanged.

use std::collections::HashMap;

use crate::codec::{Reader, Writer};
use crate::hash::canonical_bits;
use crate::lossy_counting::table::identity;
use crate::{Datum, SynopsisError, Value};

/// One tracked item: `count == 0` marks an empty slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    pub id: u64,
    pub count: u64,
}

#[inline]
fn mix(id: u64) -> u64 {
    let mut z = id ^ (id >> 31);
    z = z.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^ (z >> 29)
}

const MIN_CAPACITY: usize = 16;

/// Open-addressing table of [`Entry`]s plus the texts of string items.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    slots: Vec<Entry>,
    len: usize,
    texts: HashMap<u64, Box<str>>,
}

impl Default for Table {
    fn default() -> Self {
        Table::with_capacity(0)
    }
}

impl Table {
    /// An empty table that holds `items` entries without growing.
    pub fn with_capacity(items: usize) -> Self {
        let slots = (items.saturating_mul(4) / 3 + 1).next_power_of_two().max(MIN_CAPACITY);
        Table { slots: vec![Entry::default(); slots], len: 0, texts: HashMap::new() }
    }

    /// Number of tracked items.
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

    /// The count of `id` (0 when untracked).
    pub fn count(&self, id: u64) -> u64 {
        let mask = self.mask();
        let mut i = (mix(id) as usize) & mask;
        loop {
            let s = self.slots[i];
            if s.count == 0 || s.id == id {
                return s.count;
            }
            i = (i + 1) & mask;
        }
    }

    /// Track an id known to be absent, with `entry.count > 0`.
    #[inline]
    pub fn insert_new(&mut self, entry: Entry, text: Option<&str>) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.rebuild(self.slots.len() * 2);
        }
        self.place(entry);
        self.len += 1;
        if let Some(t) = text {
            self.texts.insert(entry.id, t.into());
        }
    }

    /// Add `entry.count` to the item's count, tracking it first if absent.
    #[inline]
    pub fn add(&mut self, entry: Entry, text: Option<&str>) {
        if !self.bump(entry.id, entry.count) {
            self.insert_new(entry, text);
        }
    }

    #[inline]
    fn place(&mut self, entry: Entry) {
        let mask = self.mask();
        let mut i = (mix(entry.id) as usize) & mask;
        while self.slots[i].count != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = entry;
    }

    fn rebuild(&mut self, capacity: usize) {
        let old = std::mem::replace(&mut self.slots, vec![Entry::default(); capacity.max(MIN_CAPACITY)]);
        for s in old.into_iter().filter(|s| s.count != 0) {
            self.place(s);
        }
    }

    /// Add every item of `other` (counts summed), sizing the table once for the union instead
    /// of doubling it step by step while inserting; shrinks back afterwards if the items
    /// overlapped so much that the table is under 3/8 full (the load it has after a doubling).
    pub fn absorb(&mut self, other: &Table) {
        let most = self.len.saturating_add(other.len);
        let fit = (most.saturating_mul(4) / 3 + 1).next_power_of_two().max(MIN_CAPACITY);
        if fit > self.slots.len() {
            self.rebuild(fit);
        }
        for e in other.iter() {
            self.add(e, other.text(e.id));
        }
        let tight = (self.len.saturating_mul(4) / 3 + 1).next_power_of_two().max(MIN_CAPACITY);
        if tight < self.slots.len() && self.len * 8 < self.slots.len() * 3 {
            self.rebuild(tight);
        }
    }

    /// The tracked items in slot order (fast; the order carries no meaning).
    pub fn iter(&self) -> impl Iterator<Item = Entry> + '_ {
        self.slots.iter().copied().filter(|s| s.count != 0)
    }

    /// The tracked items in a canonical order (by id), for encoding and for visiting items in
    /// an order that depends only on the state.
    pub fn sorted(&self) -> Vec<Entry> {
        let mut v: Vec<Entry> = self.iter().collect();
        v.sort_unstable_by_key(|s| s.id);
        v
    }

    /// The text of a string item (numbers-only tables skip the map's hashing).
    #[inline]
    pub fn text(&self, id: u64) -> Option<&str> {
        if self.texts.is_empty() {
            return None;
        }
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
        self.slots.capacity() * std::mem::size_of::<Entry>()
            + self.texts.capacity() * (std::mem::size_of::<(u64, Box<str>)>() + 1)
            + self.texts.values().map(|t| t.len()).sum::<usize>()
    }
}

/// Write the items in canonical order: their number as a varint, then per item `id` u64,
/// `count` varint, tag u8 (0 number, 1 string + varint-length text). The same bytes as Lossy
/// Counting's `write_slots` without deltas, which is what version 1 of this kind stores.
pub(crate) fn write(w: &mut Writer, table: &Table) {
    let entries = table.sorted();
    w.varint(entries.len() as u64);
    for e in &entries {
        w.u64(e.id);
        w.varint(e.count);
        match table.text(e.id) {
            Some(t) => {
                w.u8(1);
                w.len_bytes(t.as_bytes());
            }
            None => w.u8(0),
        }
    }
}

/// Read items written by [`write`], checking that ids are strictly increasing, counts are
/// positive, numbers are canonical and every string's text hashes to its id.
///
/// # Errors
/// [`SynopsisError::Codec`] for truncated or inconsistent bytes.
pub(crate) fn read(r: &mut Reader<'_>) -> Result<Table, SynopsisError> {
    let err = |m: &str| SynopsisError::Codec(m.to_string());
    let n = r.count(10)?;
    let mut table = Table::with_capacity(n);
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
                if identity(Datum::Str(s)).0 != id {
                    return Err(err("a string item does not match its id"));
                }
                Some(s)
            }
            _ => return Err(err("unknown item tag")),
        };
        table.insert_new(Entry { id, count }, text);
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_add_count_and_growth() {
        let mut t = Table::default();
        for id in 1..=1000u64 {
            t.add(Entry { id, count: id }, None);
        }
        for id in (1..=1000u64).step_by(3) {
            assert!(t.bump(id, 1));
        }
        assert!(!t.bump(5000, 1));
        assert_eq!(t.len(), 1000);
        assert_eq!(t.count(4), 5);
        assert_eq!(t.count(5), 5);
        assert_eq!(t.count(5000), 0);
        let sorted = t.sorted();
        assert!(sorted.windows(2).all(|w| w[0].id < w[1].id));
        assert_eq!(sorted.iter().map(|e| e.count).sum::<u64>(), 500_500 + 334);
        assert_eq!(t.iter().count(), 1000);
    }

    #[test]
    fn absorb_sums_counts_keeps_texts_and_ends_at_the_grown_size() {
        for (mine, theirs, overlap) in [(1000u64, 1000u64, 0u64), (1000, 1000, 900), (3000, 10, 5), (10, 3000, 10)] {
            let (mut a, mut b, mut grown) = (Table::default(), Table::default(), Table::default());
            for id in 0..mine {
                a.add(Entry { id, count: 1 }, None);
                grown.add(Entry { id, count: 1 }, None);
            }
            for id in mine - overlap..mine - overlap + theirs {
                let text = (id % 7 == 0).then_some("seven");
                b.add(Entry { id, count: 2 }, text);
                grown.add(Entry { id, count: 2 }, text);
            }
            a.absorb(&b);
            assert_eq!(a.sorted(), grown.sorted());
            assert_eq!(a.slots.len(), grown.slots.len(), "{mine} {theirs} {overlap}");
            // An id first seen in `b` brings its text along (ids in both have the same text in
            // real use: the id is the item's identity).
            for id in mine..mine - overlap + theirs {
                assert_eq!(a.text(id), b.text(id));
            }
            assert!(a.texts.len() >= b.texts.len() - (overlap as usize).div_ceil(7));
        }
    }
}
