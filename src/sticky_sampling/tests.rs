//! Sticky Sampling against a plain reference model of its update, halving and merge: an ordered
//! map from item to count, the coin tosses drawn in id order, and the table's capacity followed
//! as a number by the rules the table grows by. The model is the algorithm as the table-based
//! sketch implements it today (same items, counts, capacity, coin tosses and texts), written
//! without any of the table's speed-ups, so that it stays the oracle when the table changes.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::StickySampling;
use crate::counting_table::identity;
use crate::hash::SplitMix64;
use crate::{Datum, Synopsis, Value};

/// Slots of a table sized to hold `items` without growing (`Table::with_capacity`).
fn slots_for(items: usize) -> usize {
    (items * 4 / 3 + 1).next_power_of_two().max(16)
}

/// The capacity a table of `capacity` slots ends at holding `len` items, doubled whenever an
/// item would take it past 3/4 full.
fn grown(mut capacity: usize, len: usize) -> usize {
    while len * 4 > capacity * 3 {
        capacity *= 2;
    }
    capacity
}

#[derive(Clone, Debug)]
struct Model {
    t: u64,
    n: u64,
    rate: u64,
    next_change: u64,
    parts: u64,
    rng: SplitMix64,
    items: BTreeMap<u64, u64>,
    texts: BTreeMap<u64, String>,
    capacity: usize,
}

impl Model {
    fn new(t: u64, seed: u64) -> Self {
        Model {
            t,
            n: 0,
            rate: 1,
            next_change: 2 * t,
            parts: 1,
            rng: SplitMix64::new(seed),
            items: BTreeMap::new(),
            texts: BTreeMap::new(),
            capacity: slots_for(0),
        }
    }

    fn update(&mut self, item: &Value) {
        let (id, text) = identity(item.as_datum());
        self.n += 1;
        if let Some(c) = self.items.get_mut(&id) {
            *c += 1;
        } else if self.rate == 1 || self.rng.next_u64() & (self.rate - 1) == 0 {
            self.capacity = grown(self.capacity, self.items.len() + 1);
            self.items.insert(id, 1);
            if let Some(t) = text {
                self.texts.insert(id, t.to_string());
            }
        }
        if self.n == self.next_change {
            if self.rate < 1 << 62 {
                self.rate *= 2;
            }
            self.next_change = self.next_change.saturating_mul(2);
            self.halve(1);
        }
    }

    /// Each count diminished by a run of fair coin tosses, `halvings` times over, items visited
    /// in id order; the survivors and the number of items before the last halving.
    fn thin(items: &BTreeMap<u64, u64>, halvings: u32, rng: &mut SplitMix64) -> (BTreeMap<u64, u64>, usize) {
        let (mut kept, mut before) = (items.clone(), items.len());
        for _ in 0..halvings {
            before = kept.len();
            kept = kept
                .into_iter()
                .filter_map(|(id, c)| {
                    let tails = u64::from(rng.next_u64().trailing_zeros());
                    (c > tails).then_some((id, c - tails))
                })
                .collect();
        }
        (kept, before)
    }

    fn halve(&mut self, halvings: u32) {
        let (kept, before) = Self::thin(&self.items, halvings, &mut self.rng);
        self.capacity = grown(slots_for(before / 2), kept.len());
        self.texts.retain(|id, _| kept.contains_key(id));
        self.items = kept;
    }

    fn merge(&mut self, other: &Model) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = other.clone();
            return;
        }
        let rate = self.rate.max(other.rate);
        let halvings = |r: u64| rate.trailing_zeros() - r.trailing_zeros();
        if self.rate < rate {
            self.halve(halvings(self.rate));
        }
        let theirs = if other.rate < rate {
            Self::thin(&other.items, halvings(other.rate), &mut self.rng).0
        } else {
            other.items.clone()
        };
        let start = self.capacity;
        for (id, c) in theirs {
            *self.items.entry(id).or_insert(0) += c;
            if let Some(t) = other.texts.get(&id) {
                self.texts.entry(id).or_insert_with(|| t.clone());
            }
        }
        self.capacity = grown(start, self.items.len());
        self.n += other.n;
        self.rate = rate;
        let mut r = 1u64;
        while self.n >= 2 * self.t * r && r < 1 << 62 {
            r *= 2;
        }
        self.next_change = 2 * self.t * r;
        self.parts += other.parts;
    }
}

fn same(real: &StickySampling, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(real.n, model.n);
    prop_assert_eq!(real.rate, model.rate);
    prop_assert_eq!(real.parts, model.parts);
    prop_assert_eq!(real.rng.state(), model.rng.state());
    let items: Vec<(u64, u64)> = real.table.sorted().iter().map(|e| (e.id, e.count)).collect();
    prop_assert_eq!(items, model.items.iter().map(|(&id, &c)| (id, c)).collect::<Vec<_>>());
    prop_assert_eq!(real.table.capacity(), model.capacity);
    prop_assert_eq!(real.table.texts_len(), model.texts.len());
    for (id, t) in &model.texts {
        prop_assert_eq!(real.table.text(*id), Some(t.as_str()));
    }
    // The next rate change follows from the state: one more update changes both alike.
    let (mut real, mut model) = (real.clone(), model.clone());
    for _ in 0..(model.next_change - model.n).min(3) {
        real.update(Datum::Num(0.5));
        model.update(&Value::Num(0.5));
    }
    prop_assert_eq!(real.rate, model.rate);
    prop_assert_eq!(real.table.len(), model.items.len());
    Ok(())
}

/// A skewed stream over a thousand items, every seventh a string.
fn stream(len: usize) -> impl Strategy<Value = Vec<Value>> {
    proptest::collection::vec(
        (0u64..60_000).prop_map(|x| {
            let k = x * x / 3_600_000;
            if k % 7 == 0 { Value::Str(format!("item {k}")) } else { Value::Num(k as f64 / 4.0) }
        }),
        0..len,
    )
}

fn build(epsilon: f64, seed: u64, items: &[Value]) -> (StickySampling, Model) {
    let mut real = StickySampling::with_accuracy(0.1, epsilon, 0.1, seed).expect("valid parameters");
    let mut model = Model::new(real.sample_parameter(), seed);
    for v in items {
        real.update(v.as_datum());
        model.update(v);
    }
    (real, model)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Update, halving and merge (either order, equal or different sampling rates, thinning
    /// either side, three parts) end where the reference model does.
    #[test]
    fn update_and_merge_match_the_reference_model(
        epsilon in prop_oneof![Just(0.02), Just(0.05)],
        seed in any::<u64>(),
        a in stream(3000),
        b in stream(1500),
        c in stream(600),
    ) {
        let (ra, ma) = build(epsilon, seed, &a);
        let (rb, mb) = build(epsilon, seed, &b);
        let (rc, mc) = build(epsilon, seed, &c);
        same(&ra, &ma)?;
        same(&rb, &mb)?;
        for (first, second) in [((&ra, &ma), (&rb, &mb)), ((&rb, &mb), (&ra, &ma))] {
            let (mut real, mut model) = (first.0.clone(), first.1.clone());
            real.merge(second.0).expect("same parameters");
            model.merge(second.1);
            same(&real, &model)?;
            real.merge(&rc).expect("same parameters");
            model.merge(&mc);
            same(&real, &model)?;
        }
    }
}
