//! Sticky Sampling (kind 6): update, merge, accuracy against exact counts, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use std::collections::HashMap;

use saams::sticky_sampling::StickySampling;
use saams::{EstimateValue, Query, Synopsis, Value};

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

pub fn exact(items: &[Value]) -> HashMap<Key, u64> {
    let mut m = HashMap::new();
    for v in items {
        *m.entry(Key::of(v)).or_insert(0) += 1;
    }
    m
}

pub fn zipf_values(n: usize, domain: u64, seed: u64) -> Vec<Value> {
    common::zipf_stream(n, domain, 1.1, seed).into_iter().map(|k| Value::Num(k as f64)).collect()
}

pub fn build(p: (f64, f64, f64), seed: u64, items: &[Value]) -> StickySampling {
    let mut ss = StickySampling::with_accuracy(p.0, p.1, p.2, seed).unwrap();
    for v in items {
        ss.update(v.as_datum());
    }
    ss
}

/// Check no false negatives at the synopsis' support, no item reported under `(s − ε)N`, counts
/// never above the truth and at most `εN` below it; return the largest undercount of an item with
/// true count ≥ εN.
pub fn check_guarantee(
    ss: &StickySampling,
    truth: &HashMap<Key, u64>,
    n: u64,
    (s, eps, delta): (f64, f64, f64),
) -> u64 {
    assert_eq!(ss.total(), n);
    let bound = (eps * n as f64).floor() as u64;
    let mut worst = 0;
    for (k, &c) in truth {
        let e = ss.estimate(&Query::Count(k.value())).unwrap();
        let v = e.as_f64().unwrap() as u64;
        assert!(v <= c, "{k:?}: estimate {v} above the true count {c}");
        assert!(c - v <= bound, "{k:?}: undercount {} over εN = {bound}", c - v);
        assert!(e.lower <= c as f64 && c as f64 <= e.upper);
        worst = worst.max(c - v);
        let f = ss.estimate(&Query::IsFrequent(k.value())).unwrap();
        if c as f64 >= s * n as f64 {
            assert_eq!(f.value, EstimateValue::Bool(true), "{k:?} with count {c} not frequent");
        }
        if f.value == EstimateValue::Bool(true) {
            assert!(c as f64 >= (s - eps) * n as f64);
        }
    }
    let e = ss.estimate(&Query::FrequentItems { support: s }).unwrap();
    assert!(e.confidence >= 1.0 - delta - 1e-12 || ss.total() == 0 || e.confidence < 1.0);
    let EstimateValue::Items(items) = e.value else { panic!("not a list") };
    let reported: HashMap<Key, f64> = items.iter().map(|(v, c)| (Key::of(v), *c)).collect();
    for (k, &c) in truth {
        if c as f64 >= s * n as f64 {
            assert!(reported.contains_key(k), "false negative {k:?} (count {c})");
        }
    }
    for k in reported.keys() {
        assert!(truth[k] as f64 >= (s - eps) * n as f64, "{k:?} reported with count {}", truth[k]);
    }
    worst
}

#[test]
fn registry_builds_and_decodes_kind_6() {
    let s = saams::registry::construct(6, serde_json::json!([0.001, 1e-4, 0.001]).as_array().unwrap()).unwrap();
    assert_eq!(s.kind(), saams::Kind::StickySampling);
    let seeded =
        saams::registry::construct(6, serde_json::json!([0.001, 1e-4, 0.001, 99]).as_array().unwrap()).unwrap();
    assert_ne!(seeded.encode(), s.encode());
    for bad in [
        serde_json::json!([0.001, 1e-4]),
        serde_json::json!([0.001, 0.01, 0.001]),
        serde_json::json!([0.001, 1e-4, 1.0]),
        serde_json::json!([0.001, 1e-4, 0.001, -1]),
        serde_json::json!([0.001, 1e-4, 0.001, 1, 2]),
    ] {
        assert!(saams::registry::construct(6, bad.as_array().unwrap()).is_err(), "{bad}");
    }
    let ss = build((0.01, 0.001, 0.01), 3, &zipf_values(50_000, 10_000, 1));
    assert_eq!(saams::registry::decode(&ss.encode()).unwrap().encode(), ss.encode());
}
