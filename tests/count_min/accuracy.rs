//! The guarantee against exact counts: never under, within ε′N on at least a (1 − δ)
//! fraction of queries, and the reported interval holds.

use std::collections::HashMap;
use std::hash::Hash;

use saams::count_min::CountMin;
use saams::{Datum, Query, Synopsis, Value};

use crate::common;

/// Check the sketch against exact counts of every distinct value plus absent ones; return the
/// fraction of queries whose error is within ε′N.
fn check<K: Eq + Hash>(
    cm: &CountMin,
    exact: &HashMap<K, u64>,
    to_value: impl Fn(&K) -> Value,
    absent: &[Value],
) -> f64 {
    let slack = cm.effective_epsilon() * cm.total() as f64;
    let mut within = 0usize;
    let mut queries = 0usize;
    let mut ask = |v: Value, truth: u64| {
        let e = cm.estimate(&Query::Count(v)).unwrap();
        let est = e.as_f64().unwrap();
        assert!(est >= truth as f64, "underestimate: {est} < {truth}");
        assert!(e.lower <= est && est <= e.upper);
        assert_eq!(e.upper, est);
        assert!((e.lower - (est - slack).max(0.0)).abs() < 1e-9);
        queries += 1;
        if est - truth as f64 <= slack {
            within += 1;
        }
    };
    for (k, n) in exact {
        ask(to_value(k), *n);
    }
    for v in absent {
        ask(v.clone(), 0);
    }
    within as f64 / queries as f64
}

fn exact_counts<K: Eq + Hash + Clone>(items: &[K]) -> HashMap<K, u64> {
    let mut m = HashMap::new();
    for k in items {
        *m.entry(k.clone()).or_insert(0) += 1;
    }
    m
}

#[test]
fn zipf_stream_within_epsilon_n_with_confidence() {
    let keys = common::zipf_stream(300_000, 1_000_000, 1.1, 11);
    let mut cm = CountMin::with_accuracy(0.002, 0.99, 12345).unwrap();
    for k in &keys {
        cm.update(Datum::Num(*k as f64));
    }
    let exact = exact_counts(&keys);
    let absent: Vec<Value> = (2_000_000..2_001_000).map(|k| Value::Num(k as f64)).collect();
    let fraction = check(&cm, &exact, |k| Value::Num(*k as f64), &absent);
    assert!(fraction >= 0.99, "only {fraction} of queries within eps N");
}

#[test]
fn tight_sketch_on_zipf_keeps_its_confidence() {
    // A small sketch where collisions are frequent: the (1 − δ) fraction is really tested.
    let keys = common::zipf_stream(100_000, 100_000, 1.1, 5);
    let mut cm = CountMin::with_accuracy(0.02, 0.9, 99).unwrap();
    for k in &keys {
        cm.update(Datum::Num(*k as f64));
    }
    let exact = exact_counts(&keys);
    let fraction = check(&cm, &exact, |k| Value::Num(*k as f64), &[]);
    assert!(fraction >= cm.effective_confidence(), "{fraction}");
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn ais_mmsi_counts() {
    let mmsi = common::ais_mmsi();
    assert!(mmsi.len() > 10_000);
    let mut cm = CountMin::with_accuracy(0.002, 0.99, 12345).unwrap();
    for m in &mmsi {
        cm.update(Datum::Str(m));
    }
    let exact = exact_counts(&mmsi);
    let absent: Vec<Value> = (0..500).map(|i| Value::Str(format!("9{i:08}"))).collect();
    assert!(check(&cm, &exact, |k| Value::Str(k.clone()), &absent) >= 0.99);
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn spy_prices_and_volumes_counts() {
    for column in [common::spy_prices(), common::spy_volumes()] {
        assert!(column.len() > 10_000);
        let mut cm = CountMin::with_accuracy(0.002, 0.99, 12345).unwrap();
        for x in &column {
            cm.update(Datum::Num(*x));
        }
        let bits: Vec<u64> = column.iter().map(|x| x.to_bits()).collect();
        let exact = exact_counts(&bits);
        assert!(check(&cm, &exact, |b| Value::Num(f64::from_bits(*b)), &[]) >= 0.99);
    }
}
