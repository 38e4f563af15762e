//! Unit tests of the counting table: the radix sorts, the hash order every change keeps,
//! growth while merging, sizing once from distinct records, both merges (a table, or a list of
//! records) with either record, runs past the last home slot, and tables saved before the
//! table kept hash order.

use super::order::{sort_by_hash, sort_by_id};
use super::record::{Entry, Record, Slot};
use super::table::{TAIL, Table, mix};
use crate::hash::{SplitMix64, canonical_bits};
use crate::{Datum, Query, Synopsis};

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
        let mut by_hash = records.clone();
        sort_by_id(&mut records);
        assert_eq!(records, expected);
        expected.sort_unstable_by_key(|r| mix(r.id));
        sort_by_hash(&mut by_hash);
        assert_eq!(by_hash, expected);
    }
}

/// Check the layout the table keeps: records in strictly increasing hash order, each at its
/// home or just past the previous record, `len` of them, and the last slot, past the homes and
/// the tail, empty.
fn assert_in_hash_order<R: Record + std::fmt::Debug>(t: &Table<R>) {
    let shift = t.homes.leading_zeros() + 1;
    assert!(t.homes.is_power_of_two() && t.slots.len() >= t.homes + TAIL);
    assert_eq!(t.slots.last().map(|s| s.count()), Some(0), "the last slot is empty");
    let (mut next, mut last_hash, mut records) = (0usize, None, 0usize);
    for (pos, s) in t.slots.iter().enumerate().filter(|(_, s)| s.count() != 0) {
        let hash = mix(s.id());
        assert!(last_hash < Some(hash), "slot {pos}: {s:?} out of hash order");
        assert_eq!(pos, ((hash >> shift) as usize).max(next), "slot {pos}: {s:?} not where its run puts it");
        (next, last_hash, records) = (pos + 1, Some(hash), records + 1);
    }
    assert_eq!(records, t.len());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Inserting, pruning, growing, and both merges (large sides and small ones) keep the
    /// records in hash order, with every count where a map of counts has it.
    #[test]
    fn every_change_keeps_the_records_in_hash_order(
        seed in proptest::prelude::any::<u64>(),
        sizes in proptest::collection::vec(0usize..3000, 1..5),
        crowd in proptest::prelude::any::<bool>(),
    ) {
        let mut rng = SplitMix64::new(seed);
        // Crowded: ids whose hashes are in the top 1/64th, so runs are long and reach the tail.
        let mut pick = move || loop {
            let id = rng.next_u64() % 50_000;
            if !crowd || mix(id) >> 58 == 63 {
                return id;
            }
        };
        let mut table = Table::<Slot>::default();
        let mut model = std::collections::BTreeMap::new();
        for (k, &n) in sizes.iter().enumerate() {
            let mut side = Table::<Slot>::default();
            for _ in 0..n {
                let id = pick();
                side.add(Slot { id, count: 1, delta: 0 }, None);
            }
            assert_in_hash_order(&side);
            for r in side.iter() {
                *model.entry(r.id).or_insert(0) += r.count;
            }
            if k % 2 == 0 {
                table.absorb(&side);
            } else {
                table.absorb_records(&side.sorted(), |_| None, false);
            }
            assert_in_hash_order(&table);
            let items: Vec<(u64, u64)> = table.sorted().iter().map(|r| (r.id, r.count)).collect();
            proptest::prop_assert_eq!(items, model.iter().map(|(&id, &c)| (id, c)).collect::<Vec<_>>());
            table.prune(1);
            model.retain(|_, c| *c > 1);
            assert_in_hash_order(&table);
            proptest::prop_assert_eq!(table.len(), model.len());
        }
    }
}

#[test]
fn runs_past_the_last_home_slot_go_on_into_the_tail() {
    // Forty ids whose home is the last of 1024 slots: their run goes 39 slots past the homes
    // (the tail grows), and every lookup, merge and prune still finds them there.
    let capacity = 1024usize;
    let last_home: Vec<u64> = (1u64..).filter(|&id| (mix(id) >> 54) as usize == capacity - 1).take(40).collect();
    let mut a = Table::<Entry>::with_capacity(700);
    assert_eq!(a.capacity(), capacity);
    for &id in &last_home[..25] {
        a.insert_new(Entry { id, count: 1 }, None);
    }
    assert!(a.slots.len() > capacity + 24, "the run goes on past the tail it started with");
    assert_in_hash_order(&a);
    let mut b = Table::<Entry>::with_capacity(700);
    for &id in &last_home[20..] {
        b.insert_new(Entry { id, count: 2 }, None);
    }
    a.absorb(&b);
    assert_in_hash_order(&a);
    assert_eq!(a.len(), 40);
    for (k, &id) in last_home.iter().enumerate() {
        assert_eq!(a.count(id), [1, 3, 2][usize::from(k >= 20) + usize::from(k >= 25)], "{k}");
    }
    a.retain(|e| e.count != 3);
    assert_in_hash_order(&a);
    assert_eq!(a.len(), 35);
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
    // Sides of about equal size take the merge in hash order (growing once, as in
    // (1000, 1500, _), or rebuilt after it, as in (20_000, 19_000, _)); much smaller sides,
    // as in (3000, 10, _), are added record by record.
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

/// A table of `capacity` home slots holding `ids` (each with count `id % 7 + 1`), placed one
/// by one.
fn entries(capacity: usize, ids: &[u64]) -> Table<Entry> {
    let mut t = Table::<Entry>::with_capacity(capacity * 3 / 4 - 1);
    assert_eq!(t.capacity(), capacity);
    for &id in ids {
        if t.get(id).is_none() {
            t.insert_new(Entry { id, count: id % 7 + 1 }, None);
        }
    }
    t
}

#[test]
fn a_merge_adds_new_items_of_one_home_in_hash_order() {
    // Every item of `b` has the same home in a table of 1024 slots, where `a` already holds
    // a few of them: the merge places them as one run, in hash order.
    let capacity = 1024usize;
    let same_home: Vec<u64> = (1u64..).filter(|&id| (mix(id) >> 54) as usize == 700).take(40).collect();
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
        assert_in_hash_order(&a);
        assert_eq!(a.len(), 40);
        assert_eq!(a.sorted(), one_by_one.sorted());
        for &id in &same_home {
            let expected = (id % 7 + 1) * if same_home[..5].contains(&id) { 2 } else { 1 };
            assert_eq!(a.count(id), expected, "{id}: a lookup finds it where it was added");
        }
        assert_eq!(a.text(same_home[30]), with_text.then_some("thirty"));
    }
}

/// Bytes of a Sticky Sampling and a Lossy Counting synopsis saved by the build before the table
/// kept hash order (the same stream as below, encoded on 2026-12-07 at 359f214): they decode
/// to the synopses this build makes of that stream, and encode back to the same bytes.
#[test]
fn tables_saved_before_hash_order_still_load() {
    const STICKY: &str = "53414d53010006000900000000000000039a9999999999b93f7b14ae47e17a943f9a9999999999b93fe000000090010000000000000001090000000000000013000000000000e03f1500000000000000f83f1600000000000000004015000000000000000c40160000000000000012401500000000000000164016000000000000001840150000000000000020401500000000000000254016000000000000002a4016000000000000002b4016000000000000002c40160000000000008030401600000000000000314016000000000000003240150019ac5660e246c054150103733235ab0bdaf84dfe66b216010373333082581cfe9bb623b816010373313091239b2009b55af40b010273301e86be07";
    const LOSSY: &str = "53414d53010005000000000000000000019a9999999999a93fdb000000900100000000000012000000000000e03f0a0b00000000000000f83f0c0a0000000000000000400a0b000000000000000c4010060000000000000012400c090000000000000016400e080000000000000018400e070000000000000020400c090000000000000025400e08000000000000002a401006000000000000002b400f07000000000000002c400a0c0000000000008030400e080000000000000031400c0a0000000000000032400e070019ac5660e246c0540c090103733235ab0bdaf84dfe66b20c0a010373333082581cfe9bb623b8100601037331308227e163";
    let unhex =
        |h: &str| (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect::<Vec<u8>>();
    let mut sticky = crate::sticky_sampling::StickySampling::with_accuracy(0.1, 0.02, 0.1, 9).unwrap();
    let mut lossy = crate::lossy_counting::LossyCounting::with_epsilon(0.05).unwrap();
    for i in 0..400u32 {
        let k = (i * i) % 37;
        let text = format!("s{k}");
        let item = if k % 5 == 0 { Datum::Str(&text) } else { Datum::Num(f64::from(k) * 0.5) };
        sticky.update(item);
        lossy.update(item);
    }
    let q = Query::FrequentItems { support: 0.05 };
    for (saved, fresh) in [(unhex(STICKY), &sticky as &dyn Synopsis), (unhex(LOSSY), &lossy as &dyn Synopsis)] {
        let loaded = crate::registry::decode(&saved).expect("saved bytes decode");
        assert_eq!(loaded.encode(), saved);
        assert_eq!(fresh.encode(), saved);
        assert_eq!(loaded.estimate(&q).unwrap(), fresh.estimate(&q).unwrap());
    }
}
