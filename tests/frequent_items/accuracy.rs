use std::collections::HashMap;

use saams::frequent_items::FrequentItems;
use saams::{Datum, EstimateValue, Query, Synopsis, Value};

use crate::common;

/// Checks every count bound and the no-false-negative list against exact counts; returns the
/// largest observed |estimate − truth| / N.
fn check<K: std::hash::Hash + Eq + Clone>(
    s: &FrequentItems,
    exact: &HashMap<K, u64>,
    value: impl Fn(&K) -> Value,
) -> f64 {
    let n = s.total() as f64;
    let eps = s.epsilon();
    let mut worst = 0.0f64;
    for (k, c) in exact {
        let e = s.estimate(&Query::Count(value(k))).unwrap();
        let c = *c as f64;
        assert!(e.lower <= c && c <= e.upper, "{e:?} vs {c}");
        assert!(e.upper - e.lower <= eps * n);
        worst = worst.max((e.as_f64().unwrap() - c).abs() / n);
    }
    for support in [0.001, 0.005, 0.01, 0.05] {
        let Ok(e) = s.estimate(&Query::FrequentItems { support }) else {
            // Refused only where no sketch of this size could promise no false negatives.
            assert!((support * n).ceil() as u64 <= s.maximum_error());
            continue;
        };
        let EstimateValue::Items(items) = e.value else { panic!() };
        for (k, c) in exact {
            if *c as f64 >= support * n {
                assert!(items.iter().any(|(v, _)| *v == value(k)), "missing frequent item at support {support}");
            }
        }
        assert!(items.windows(2).all(|w| w[0].1 >= w[1].1));
    }
    worst
}

#[test]
fn zipf_counts_within_bounds_and_no_false_negatives() {
    let keys = common::zipf_stream(300_000, 1_000_000, 1.1, 11);
    let mut exact: HashMap<u64, u64> = HashMap::new();
    let mut s = FrequentItems::new(10).unwrap();
    for k in &keys {
        *exact.entry(*k).or_default() += 1;
        s.update(Datum::Num(*k as f64));
    }
    assert!(s.maximum_error() > 0, "the test must exercise purges");
    let worst = check(&s, &exact, |k| Value::Num(*k as f64));
    assert!(worst <= s.epsilon());
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn ais_vessels_and_spy_volumes() {
    let mut exact: HashMap<String, u64> = HashMap::new();
    let mut s = FrequentItems::new(9).unwrap();
    for m in common::ais_mmsi() {
        s.update(Datum::Str(&m));
        *exact.entry(m).or_default() += 1;
    }
    check(&s, &exact, |k| Value::Str(k.clone()));

    let mut exact: HashMap<u64, u64> = HashMap::new();
    let mut s = FrequentItems::new(8).unwrap();
    for v in common::spy_volumes() {
        s.update(Datum::Num(v));
        *exact.entry(v.to_bits()).or_default() += 1;
    }
    check(&s, &exact, |k| Value::Num(f64::from_bits(*k)));
}
