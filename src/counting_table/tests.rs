//! Unit tests of the counting table: the radix sort, growth while merging, sizing once from
//! distinct records, both merges (a table, or a list of records) with either record, the wide
//! probe against the scalar one, and a merge's records probed again when a new item took the
//! slot their probe ended on.

use super::order::{BATCH, sort_by_id};
use super::probe::{ProbeEnd, probe_ends, probe_ends_scalar};
use super::record::{Entry, Slot};
use super::table::{Table, mix};
use crate::hash::{SplitMix64, canonical_bits};

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

#[test]
fn bump_add_count_and_growth() {
    let mut t = Table::<Entry>::default();
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
        let (mut a, mut b, mut grown) =
            (Table::<Entry>::default(), Table::<Entry>::default(), Table::<Entry>::default());
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

/// A table of `capacity` slots holding `ids` (each with count `id % 7 + 1`), placed one by one.
fn entries(capacity: usize, ids: &[u64]) -> Table<Entry> {
    let mut t = Table::<Entry>::with_capacity(0);
    t.slots = vec![Entry::default(); capacity];
    for &id in ids {
        if t.get(id).is_none() {
            t.insert_new(Entry { id, count: id % 7 + 1 }, None);
        }
    }
    t
}

proptest::proptest! {
    /// The wide probe (where the CPU has it) ends where the one-slot-at-a-time probe does:
    /// on tables up to 3/4 full, whose runs wrap past the end and run past eight slots, for
    /// ids present and absent, 0 among them (an empty slot's id word is 0).
    #[test]
    fn the_wide_probe_ends_where_the_scalar_probe_does(
        log_capacity in 4u32..10,
        seed in proptest::prelude::any::<u64>(),
        fill in 0.0f64..0.75,
        crowd in proptest::prelude::any::<bool>(),
    ) {
        let capacity = 1usize << log_capacity;
        let mut rng = SplitMix64::new(seed);
        // Crowded: ids whose homes fall in the last sixteenth of the slots, so runs are long and
        // wrap; otherwise ids at random.
        let pick = |rng: &mut SplitMix64| loop {
            let id = rng.next_u64() % (capacity as u64 * 8);
            if !crowd || (mix(id) as usize & (capacity - 1)) >= capacity - capacity / 16 {
                return id;
            }
        };
        let present: Vec<u64> = (0..(capacity as f64 * fill) as usize).map(|_| pick(&mut rng)).collect();
        let table = entries(capacity, &present);
        let mut batch: Vec<Entry> = present.iter().chain(&[0]).map(|&id| Entry { id, count: 1 }).collect();
        batch.extend((0..64).map(|_| Entry { id: pick(&mut rng), count: 1 }));
        for chunk in batch.chunks(BATCH) {
            let (mut wide, mut scalar) = ([ProbeEnd::default(); BATCH], [ProbeEnd::default(); BATCH]);
            probe_ends(&table.slots, chunk, &mut wide[..chunk.len()]);
            probe_ends_scalar(&table.slots, chunk, &mut scalar[..chunk.len()]);
            proptest::prop_assert_eq!(&wide[..chunk.len()], &scalar[..chunk.len()]);
            for (e, end) in chunk.iter().zip(&wide) {
                proptest::prop_assert_eq!(end.found, table.get(e.id).is_some());
            }
        }
    }
}

#[test]
fn a_merge_adds_new_items_whose_probes_end_on_one_slot() {
    // Every item of `b` has the same home in a table of 1024 slots, where `a` already holds
    // a few of them: the probes of a round all end on the first empty slot past the run, which
    // the first new item takes; each of the others is probed again in a later round.
    let capacity = 1024usize;
    let same_home: Vec<u64> = (1u64..).filter(|&id| mix(id) as usize & (capacity - 1) == 700).take(40).collect();
    for with_text in [false, true] {
        let mut a = entries(capacity, &same_home[..5]);
        let mut b = entries(capacity, &same_home);
        if with_text {
            b.texts.insert(same_home[30], "thirty".into());
        }
        let mut one_by_one = a.clone();
        for e in b.iter() {
            one_by_one.add(e, b.text(e.id));
        }
        a.absorb(&b);
        assert_eq!(a.len(), 40);
        assert_eq!(a.sorted(), one_by_one.sorted());
        for &id in &same_home {
            let expected = (id % 7 + 1) * if same_home[..5].contains(&id) { 2 } else { 1 };
            assert_eq!(a.count(id), expected, "{id}: a lookup finds it where it was added");
        }
        assert_eq!(a.text(same_home[30]), with_text.then_some("thirty"));
    }
}
