use saams::frequent_items::FrequentItems;
use saams::{Datum, EstimateValue, Kind, Query, Synopsis, SynopsisError, Value};

#[test]
fn exact_below_capacity_numbers_and_strings_apart() {
    let mut s = FrequentItems::new(6).unwrap();
    for _ in 0..5 {
        s.update(Datum::Num(1.0));
        s.update(Datum::Str("1"));
        s.update(Datum::Num(-0.0));
    }
    s.update(Datum::Num(0.0));
    assert_eq!(s.estimate(&Query::Count(Value::Num(1.0))).unwrap().as_f64(), Some(5.0));
    assert_eq!(s.estimate(&Query::Count(Value::Str("1".into()))).unwrap().as_f64(), Some(5.0));
    assert_eq!(s.estimate(&Query::Count(Value::Num(0.0))).unwrap().as_f64(), Some(6.0));
    assert_eq!(s.estimate(&Query::Count(Value::Num(2.0))).unwrap().as_f64(), Some(0.0));
    assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(16.0));
    let e = s.estimate(&Query::FrequentItems { support: 0.3 }).unwrap();
    let EstimateValue::Items(items) = e.value else { panic!() };
    // Largest first; the two tied items may come in either order.
    assert_eq!(items[0], (Value::Num(0.0), 6.0));
    assert_eq!(items.len(), 3);
    assert!(items.contains(&(Value::Num(1.0), 5.0)) && items.contains(&(Value::Str("1".into()), 5.0)));
}

#[test]
fn bad_and_unsupported_queries_are_errors() {
    let s = FrequentItems::new(6).unwrap();
    for support in [0.0, -1.0, 1.5, f64::NAN] {
        assert!(matches!(s.estimate(&Query::FrequentItems { support }), Err(SynopsisError::BadQuery { .. })));
    }
    assert!(matches!(s.estimate(&Query::Distinct), Err(SynopsisError::UnsupportedQuery { .. })));
}

#[test]
fn support_below_the_error_is_refused() {
    let mut s = FrequentItems::new(3).unwrap();
    for i in 0..10_000 {
        s.update(Datum::Num(f64::from(i)));
    }
    assert!(s.maximum_error() > 0);
    assert!(matches!(s.estimate(&Query::FrequentItems { support: 1e-4 }), Err(SynopsisError::BadQuery { .. })));
}

#[test]
fn params_from_the_registry() {
    let s = saams::registry::construct(13, &[serde_json::json!(10)]).unwrap();
    assert_eq!(s.kind(), Kind::FrequentItems);
    assert!(saams::registry::construct(13, &[]).is_err());
    assert!(saams::registry::construct(13, &[serde_json::json!(2)]).is_err());
    assert!(saams::registry::construct(13, &[serde_json::json!(27)]).is_err());
    assert!(saams::registry::construct(13, &[serde_json::json!(10.5)]).is_err());
    assert_eq!(FrequentItems::with_epsilon(3.5 / 1024.0).unwrap().lg_max_map_size(), 10);
}
