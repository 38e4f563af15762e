use std::collections::HashMap;

use proptest::prelude::*;
use saams::frequent_items::FrequentItems;
use saams::{Datum, Query, Synopsis, SynopsisError, Value};

use crate::common;

fn build(keys: &[u64], lg: u64) -> FrequentItems {
    let mut s = FrequentItems::new(lg).unwrap();
    for k in keys {
        s.update(Datum::Num(*k as f64));
    }
    s
}

#[test]
fn merged_partials_bound_every_count() {
    let keys = common::zipf_stream(200_000, 1_000_000, 1.1, 5);
    let mut exact: HashMap<u64, u64> = HashMap::new();
    for k in &keys {
        *exact.entry(*k).or_default() += 1;
    }
    let mut merged = FrequentItems::new(9).unwrap();
    for part in keys.chunks(30_000) {
        merged.merge(&build(part, 9)).unwrap();
    }
    assert_eq!(merged.total(), keys.len() as u64);
    for (k, c) in &exact {
        let e = merged.estimate(&Query::Count(Value::Num(*k as f64))).unwrap();
        assert!(e.lower <= *c as f64 && *c as f64 <= e.upper);
    }
}

#[test]
fn incompatible_merges_are_errors() {
    let mut a = FrequentItems::new(9).unwrap();
    assert!(matches!(a.merge(&FrequentItems::new(10).unwrap()), Err(SynopsisError::Incompatible { .. })));
    assert!(matches!(a.merge(&saams::cpc::Cpc::new(11).unwrap()), Err(SynopsisError::Incompatible { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// Below capacity the sketch is exact, so any merge order gives identical answers; above it
    /// every merge order keeps every true count inside its bounds.
    #[test]
    fn merges_keep_counts_bounded_in_any_order(a in proptest::collection::vec(0u64..300, 0..3000),
                                               b in proptest::collection::vec(0u64..300, 0..3000)) {
        let mut exact: HashMap<u64, u64> = HashMap::new();
        for k in a.iter().chain(b.iter()) {
            *exact.entry(*k).or_default() += 1;
        }
        for lg in [4, 10] {
            let mut ab = build(&a, lg);
            ab.merge(&build(&b, lg)).unwrap();
            let mut ba = build(&b, lg);
            ba.merge(&build(&a, lg)).unwrap();
            for s in [&ab, &ba] {
                prop_assert_eq!(s.total(), (a.len() + b.len()) as u64);
                for (k, c) in &exact {
                    let e = s.estimate(&Query::Count(Value::Num(*k as f64))).unwrap();
                    prop_assert!(e.lower <= *c as f64 && *c as f64 <= e.upper);
                    if lg == 10 {
                        prop_assert_eq!(e.as_f64(), Some(*c as f64));
                    }
                }
            }
        }
    }
}
