//! Sticky Sampling's item table: Lossy Counting's open-addressing table (linear probing,
//! power-of-two capacity, the same identities: a number's canonical bits, a string's fixed-seed
//! hash) with 16-byte records — an item and its count, without the bucket delta Sticky Sampling
//! never uses. The byte layout is version 1's: the shared record list without deltas.

use crate::SynopsisError;
use crate::codec::{Reader, Writer};
use crate::lossy_counting::table::{Record, read_slots, write_slots};

/// One tracked item: `count == 0` marks an empty slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    pub id: u64,
    pub count: u64,
}

impl Record for Entry {
    const WITH_DELTA: bool = false;
    fn from_parts(id: u64, count: u64, _delta: u64) -> Self {
        Entry { id, count }
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
        0
    }
}

/// The table of tracked items.
pub(crate) type Table = crate::lossy_counting::table::Table<Entry>;

/// Write the items in canonical order: their number as a varint, then per item `id` u64,
/// `count` varint, tag u8 (0 number, 1 string + varint-length text).
pub(crate) fn write(w: &mut Writer, table: &Table) {
    write_slots(w, table);
}

/// Read items written by [`write`], checking that ids are strictly increasing, counts are
/// positive, numbers are canonical and every string's text hashes to its id.
///
/// # Errors
/// [`SynopsisError::Codec`] for truncated or inconsistent bytes.
pub(crate) fn read(r: &mut Reader<'_>) -> Result<Table, SynopsisError> {
    read_slots(r, Table::with_capacity)
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
    fn absorb_and_absorb_records_sum_counts_keep_texts_and_end_at_the_grown_size() {
        // Without texts on the other side, absorb takes its gathering, single-probe paths: the
        // larger side first when the table grows (its slots copied when they are the final
        // size, as in (10, 3000, 10), or re-placed, as in (1000, 1500, _)).
        let cases = [
            (1000u64, 1000u64, 0u64),
            (1000, 1000, 900),
            (3000, 10, 5),
            (10, 3000, 10),
            (1000, 1500, 0),
            (1000, 1500, 999),
            (20_000, 19_000, 6000),
            (19_000, 20_000, 6000),
        ];
        for ((mine, theirs, overlap), texts) in cases.into_iter().flat_map(|c| [(c, true), (c, false)]) {
            let (mut a, mut b, mut grown) = (Table::default(), Table::default(), Table::default());
            for id in 0..mine {
                a.add(Entry { id, count: 1 }, None);
                grown.add(Entry { id, count: 1 }, None);
            }
            for id in mine - overlap..mine - overlap + theirs {
                let text = (texts && id % 7 == 0).then_some("seven");
                b.add(Entry { id, count: 2 }, text);
                grown.add(Entry { id, count: 2 }, text);
            }
            // The same records given as a list (in id order, as a thinned side comes) end alike.
            let mut from_records = a.clone();
            from_records.absorb_records(&b.sorted(), |id| b.text(id), b.has_texts());
            a.absorb(&b);
            assert_eq!(from_records.sorted(), grown.sorted());
            assert_eq!(from_records.capacity(), grown.capacity(), "records: {mine} {theirs} {overlap}");
            for id in mine..mine - overlap + theirs {
                assert_eq!(from_records.text(id), b.text(id));
            }
            assert_eq!(a.sorted(), grown.sorted());
            assert_eq!(a.len(), grown.len());
            assert_eq!(a.capacity(), grown.capacity(), "{mine} {theirs} {overlap}");
            for e in grown.iter() {
                assert_eq!(a.count(e.id), e.count, "a lookup finds every item where the probe ends");
            }
            // An id first seen in `b` brings its text along (ids in both have the same text in
            // real use: the id is the item's identity).
            for id in mine..mine - overlap + theirs {
                assert_eq!(a.text(id), b.text(id));
            }
            assert!(a.texts_len() >= b.texts_len().saturating_sub((overlap as usize).div_ceil(7)));
        }
    }
}
