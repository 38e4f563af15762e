use saams::ams::{Ams, row_failure_budget};
use saams::{Datum, Kind, PairQuery, Query, Synopsis, SynopsisError, Value};

use crate::{common, sketch_of};

#[test]
fn every_row_adds_plus_or_minus_one_per_item() {
    let keys = common::zipf_stream(10_001, 1000, 1.1, 2);
    let a = sketch_of(&keys, 4, 100, 1);
    assert_eq!(a.total(), 10_001);
    for row in a.counters().chunks(a.buckets()) {
        let abs: i64 = row.iter().map(|c| c.abs()).sum();
        let sum: i64 = row.iter().sum();
        assert!(abs <= 10_001);
        assert_eq!((sum - 10_001).rem_euclid(2), 0);
    }
}

#[test]
fn one_value_is_exact() {
    let mut a = Ams::new(5, 64, 3).unwrap();
    for _ in 0..7 {
        a.update(Datum::Str("IBM"));
    }
    assert_eq!(a.f2(), 49.0);
    let f2 = a.estimate(&Query::F2).unwrap();
    assert_eq!((f2.as_f64(), f2.lower, f2.upper), (Some(49.0), 7.0f64.max(49.0 / (1.0 + a.f2_epsilon())), 49.0));
    let c = a.estimate(&Query::Count(Value::Str("IBM".into()))).unwrap();
    assert_eq!(c.as_f64(), Some(7.0));
    assert!(c.lower <= 7.0 && c.upper == 7.0);
    assert_eq!(a.estimate(&Query::Total).unwrap().as_f64(), Some(7.0));
}

#[test]
fn failure_budget_is_a_binomial_tail() {
    // One row: the row itself must not fail. Ten rows: P[Bin(10, p) ≥ 5] = 0.05 at p ≈ 0.2224.
    assert!((row_failure_budget(1, 0.05) - 0.05).abs() < 1e-9);
    let p = row_failure_budget(10, 0.05);
    assert!((p - 0.2224).abs() < 0.001, "{p}");
    let tail: f64 = (5..=10)
        .map(|j| {
            let c = (0..j).fold(1.0, |acc, i| acc * (10 - i) as f64 / (i + 1) as f64);
            c * p.powi(j) * (1.0 - p).powi(10 - j)
        })
        .sum();
    assert!((tail - 0.05).abs() < 1e-6, "{tail}");
    // The reference shape: ε ≈ 3 %.
    let a = Ams::new(10, 10_000, 1).unwrap();
    assert!((a.f2_epsilon() - (2.0 / (10_000.0 * p)).sqrt()).abs() < 1e-12);
}

#[test]
fn update_batch_equals_single_updates() {
    let keys = common::zipf_stream(5000, 5000, 1.1, 4);
    let items: Vec<Datum> = keys.iter().map(|k| Datum::Num(*k as f64)).collect();
    let mut b = Ams::new(3, 100, 8).unwrap();
    b.update_batch(&items);
    assert_eq!(b, sketch_of(&keys, 3, 100, 8));
}

#[test]
fn unsupported_queries_and_pairs() {
    let a = sketch_of(&[1, 2, 3], 3, 100, 1);
    for q in [Query::Distinct, Query::Quantile(0.5), Query::Contains(Value::Num(1.0))] {
        assert!(matches!(a.estimate(&q), Err(SynopsisError::UnsupportedQuery { kind: Kind::Ams, .. })));
    }
    assert!(matches!(a.estimate_pair(&a, &PairQuery::Correlation), Err(SynopsisError::UnsupportedQuery { .. })));
    for other in [sketch_of(&[1], 3, 100, 2), sketch_of(&[1], 4, 100, 1), sketch_of(&[1], 3, 101, 1)] {
        assert!(matches!(a.estimate_pair(&other, &PairQuery::InnerProduct), Err(SynopsisError::Incompatible { .. })));
    }
    let cm = saams::count_min::CountMin::with_accuracy(0.1, 0.9, 1).unwrap();
    assert!(matches!(a.estimate_pair(&cm, &PairQuery::InnerProduct), Err(SynopsisError::Incompatible { .. })));
}

#[test]
fn reference_parameters_and_bad_ones() {
    let a = saams::registry::construct(7, serde_json::json!([10, 10000]).as_array().unwrap()).unwrap();
    assert_eq!(a.kind(), Kind::Ams);
    assert!(a.size_bytes() >= 10 * 10_000 * 8);
    let b = saams::registry::construct(7, serde_json::json!([10, 10000, 5]).as_array().unwrap()).unwrap();
    assert_ne!(a.encode(), b.encode());
    for raw in [
        serde_json::json!([10]),
        serde_json::json!([0, 10000]),
        serde_json::json!([65, 10000]),
        serde_json::json!([10, 1]),
        serde_json::json!([10, 2.5]),
        serde_json::json!([10, 1e9]),
        serde_json::json!([10, 100, 1, 1]),
    ] {
        let r = saams::registry::construct(7, raw.as_array().unwrap());
        assert!(matches!(r, Err(SynopsisError::BadParameter { kind: Kind::Ams, .. })), "{raw}");
    }
}
