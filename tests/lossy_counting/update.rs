use saams::{Datum, EstimateValue, Query, Synopsis, SynopsisError, Value};

use super::*;

#[test]
fn exact_while_the_stream_is_shorter_than_a_bucket() {
    let mut lc = LossyCounting::with_epsilon(0.01).unwrap();
    for x in [1.0, 2.0, 2.0, 3.0, 3.0, 3.0] {
        lc.update(Datum::Num(x));
    }
    lc.update(Datum::Str("a"));
    lc.update(Datum::Num(-0.0));
    lc.update(Datum::Num(0.0));
    for (v, c) in
        [(Value::Num(3.0), 3.0), (Value::Num(2.0), 2.0), (Value::Str("a".into()), 1.0), (Value::Num(0.0), 2.0)]
    {
        let e = lc.estimate(&Query::Count(v)).unwrap();
        assert_eq!((e.as_f64().unwrap(), e.lower, e.upper), (c, c, c));
    }
    assert_eq!(lc.estimate(&Query::Count(Value::Num(9.0))).unwrap().upper, 0.0);
    assert_eq!(lc.estimate(&Query::Total).unwrap().as_f64(), Some(9.0));
    let e = lc.estimate(&Query::FrequentItems { support: 0.3 }).unwrap();
    assert_eq!(e.value, EstimateValue::Items(vec![(Value::Num(3.0), 3.0)]));
    let e = lc.estimate(&Query::FrequentItems { support: 0.1 }).unwrap();
    let EstimateValue::Items(items) = e.value else { panic!() };
    assert_eq!(items.len(), 5);
    assert!(items.contains(&(Value::Str("a".into()), 1.0)));
}

#[test]
fn buckets_prune_rare_items_and_bound_the_error() {
    // Width 10: one heavy item and a stream of distinct ones.
    let mut lc = LossyCounting::with_epsilon(0.1).unwrap();
    for i in 0..1000u32 {
        lc.update(Datum::Num(if i % 2 == 0 { -1.0 } else { f64::from(i) }));
    }
    assert_eq!(lc.max_error(), 100);
    assert!(lc.tracked() <= 11, "tracked {}", lc.tracked());
    let e = lc.estimate(&Query::Count(Value::Num(-1.0))).unwrap();
    assert_eq!((e.lower, e.upper), (500.0, 500.0));
    let e = lc.estimate(&Query::Count(Value::Num(3.0))).unwrap();
    assert!(e.lower <= 1.0 && e.upper >= 1.0 && e.upper <= 100.0);
}

#[test]
fn bad_queries_and_parameters_are_errors() {
    let lc = LossyCounting::with_epsilon(0.01).unwrap();
    assert!(matches!(lc.estimate(&Query::FrequentItems { support: 0.005 }), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(lc.estimate(&Query::FrequentItems { support: 1.5 }), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(lc.estimate(&Query::FrequentItems { support: f64::NAN }), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(lc.estimate(&Query::Quantile(0.5)), Err(SynopsisError::UnsupportedQuery { .. })));
    assert!(matches!(lc.estimate(&Query::Distinct), Err(SynopsisError::UnsupportedQuery { .. })));
    for bad in [0.0, 1.0, -0.1, f64::NAN, f64::INFINITY] {
        assert!(matches!(LossyCounting::with_epsilon(bad), Err(SynopsisError::BadParameter { .. })));
    }
}

#[test]
fn size_grows_with_tracked_items_only() {
    let mut lc = LossyCounting::with_epsilon(0.001).unwrap();
    let empty = lc.size_bytes();
    feed(&mut lc, &zipf_values(100_000, 1_000_000, 11));
    assert!(lc.size_bytes() > empty);
    assert!(lc.size_bytes() >= lc.tracked() * 24);
}
