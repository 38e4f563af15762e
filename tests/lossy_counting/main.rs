//! Lossy Counting (kind 5): update, merge, accuracy against exact counts, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use std::collections::HashMap;

use saams::lossy_counting::LossyCounting;
use saams::{Datum, EstimateValue, Query, Synopsis, Value};

/// Proptest settings: a fixed seed so every run checks the same cases (deterministic CI), and no
/// failure file shared between test targets.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5AA5_F00D),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

/// Exact counts of a stream, by value.
pub fn exact(items: &[Value]) -> HashMap<Key, u64> {
    let mut m = HashMap::new();
    for v in items {
        *m.entry(Key::of(v)).or_insert(0) += 1;
    }
    m
}

/// A hashable form of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    Num(u64),
    Str(String),
}

impl Key {
    pub fn of(v: &Value) -> Key {
        match v {
            Value::Num(x) => Key::Num(saams::hash::canonical_bits(*x)),
            Value::Str(s) => Key::Str(s.clone()),
        }
    }
    pub fn value(&self) -> Value {
        match self {
            Key::Num(b) => Value::Num(f64::from_bits(*b)),
            Key::Str(s) => Value::Str(s.clone()),
        }
    }
}

pub fn nums(xs: &[f64]) -> Vec<Value> {
    xs.iter().map(|x| Value::Num(*x)).collect()
}

pub fn zipf_values(n: usize, domain: u64, seed: u64) -> Vec<Value> {
    common::zipf_stream(n, domain, 1.1, seed).into_iter().map(|k| Value::Num(k as f64)).collect()
}

pub fn feed(lc: &mut LossyCounting, items: &[Value]) {
    for v in items {
        lc.update(v.as_datum());
    }
}

pub fn build(eps: f64, items: &[Value]) -> LossyCounting {
    let mut lc = LossyCounting::with_epsilon(eps).unwrap();
    feed(&mut lc, items);
    lc
}

/// Check the deterministic guarantee for every item of the stream and for frequent-item queries
/// at several supports; return the largest undercount seen.
pub fn check_guarantee(lc: &LossyCounting, truth: &HashMap<Key, u64>, n: u64, eps: f64) -> u64 {
    assert_eq!(lc.total(), n);
    let bound = (eps * n as f64).floor() as u64;
    let mut worst = 0;
    for (k, &c) in truth {
        let e = lc.estimate(&Query::Count(k.value())).unwrap();
        let (v, lo, hi) = (e.as_f64().unwrap() as u64, e.lower as u64, e.upper as u64);
        assert!(lo <= c && c <= hi, "{k:?}: true {c} not in [{lo}, {hi}]");
        assert!(
            c - v <= bound && hi - lo <= bound,
            "{k:?}: undercount {} / width {} over εN = {bound}",
            c - v,
            hi - lo
        );
        assert_eq!(e.confidence, 1.0);
        worst = worst.max(c - v);
    }
    for support in [eps, eps * 1.5, eps * 5.0, eps * 10.0, 0.05].into_iter().filter(|s| *s >= eps && *s <= 1.0) {
        let e = lc.estimate(&Query::FrequentItems { support }).unwrap();
        let EstimateValue::Items(items) = e.value else { panic!("not a list") };
        let reported: HashMap<Key, f64> = items.iter().map(|(v, c)| (Key::of(v), *c)).collect();
        for (k, &c) in truth {
            // At s = ε the promise is every item above εN (one of exactly εN may be pruned).
            if c as f64 >= support * n as f64 && (support > eps || c as f64 > eps * n as f64) {
                assert!(reported.contains_key(k), "false negative {k:?} (count {c}) at support {support}");
            }
        }
        for (k, est) in &reported {
            let c = truth[k];
            assert!(c as f64 >= (support - eps) * n as f64, "{k:?} reported with count {c} at support {support}");
            assert!(*est <= c as f64);
        }
    }
    worst
}

#[test]
fn registry_builds_and_decodes_kind_5() {
    let s = saams::registry::construct(5, serde_json::json!([0.001]).as_array().unwrap()).unwrap();
    assert_eq!(s.kind(), saams::Kind::LossyCounting);
    assert!(saams::registry::construct(5, serde_json::json!([]).as_array().unwrap()).is_err());
    assert!(saams::registry::construct(5, serde_json::json!([1.5]).as_array().unwrap()).is_err());
    assert!(saams::registry::construct(5, serde_json::json!(["x"]).as_array().unwrap()).is_err());
    assert!(saams::registry::construct(5, serde_json::json!([0.1, 2]).as_array().unwrap()).is_err());
    let mut lc = build(0.01, &zipf_values(5000, 1000, 3));
    lc.update(Datum::Str("IBM"));
    let back = saams::registry::decode(&lc.encode()).unwrap();
    assert_eq!(back.encode(), lc.encode());
}
