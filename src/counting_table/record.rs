//! The records a counting table holds, one per tracked item.

/// A record of the table: an item's identity and count (`count == 0` marks an empty slot), and
/// whatever else its kind keeps per item. Lossy Counting keeps a bucket delta ([`Slot`], 24
/// bytes); Sticky Sampling keeps nothing more ([`Entry`], 16 bytes: with tens of thousands of
/// tracked items, a third word would be a third of its memory and of every scan).
pub(crate) trait Record: Copy + Default {
    /// Whether the record's delta is part of its encoding ([`super::write_slots`]).
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
    /// The records as Sticky Sampling's, if they are: a wide probe compares their two words
    /// several slots at a time ([`super::probe`]).
    fn as_entries(records: &[Self]) -> Option<&[Entry]> {
        let _ = records;
        None
    }
}

/// [`Record`]'s `id`, `count` and `count_mut`, for a record with `id` and `count` fields (each
/// kind's record has them; what else it keeps differs).
macro_rules! id_and_count_fields {
    () => {
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
    };
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
    id_and_count_fields!();
    #[inline]
    fn delta(&self) -> u64 {
        self.delta
    }
}

/// Sticky Sampling's record: an item and its count (`count == 0` marks an empty slot), without
/// the bucket delta Sticky Sampling never uses. Laid out as its two words in order, so that a
/// wide load compares several slots at once ([`super::probe`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Entry {
    pub id: u64,
    pub count: u64,
}

impl Record for Entry {
    const WITH_DELTA: bool = false;
    fn from_parts(id: u64, count: u64, _delta: u64) -> Self {
        Entry { id, count }
    }
    id_and_count_fields!();
    #[inline]
    fn delta(&self) -> u64 {
        0
    }
    fn as_entries(records: &[Self]) -> Option<&[Entry]> {
        Some(records)
    }
}
