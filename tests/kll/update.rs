use saams::kll::Kll;
use saams::{Datum, Kind, Query, Synopsis, SynopsisError};

#[test]
fn counts_numbers_and_ignores_text_and_nan() {
    let mut s = Kll::new(200).unwrap();
    s.update(Datum::Num(1.0));
    s.update(Datum::Str("x"));
    s.update(Datum::Num(f64::NAN));
    s.update(Datum::Num(3.0));
    assert_eq!(s.n(), 2);
    assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(2.0));
    assert_eq!(s.estimate(&Query::Quantile(0.0)).unwrap().as_f64(), Some(1.0));
    assert_eq!(s.estimate(&Query::Quantile(1.0)).unwrap().as_f64(), Some(3.0));
}

#[test]
fn small_streams_are_exact() {
    let mut s = Kll::new(200).unwrap();
    for i in 1..=100 {
        s.update(Datum::Num(f64::from(i)));
    }
    assert_eq!(s.estimate(&Query::Rank(50.0)).unwrap().as_f64(), Some(0.5));
    assert_eq!(s.estimate(&Query::Quantile(0.25)).unwrap().as_f64(), Some(25.0));
}

#[test]
fn bad_and_unsupported_queries_are_errors() {
    let mut s = Kll::new(200).unwrap();
    assert!(matches!(s.estimate(&Query::Quantile(0.5)), Err(SynopsisError::NotYet { .. })));
    s.update(Datum::Num(1.0));
    assert!(matches!(s.estimate(&Query::Quantile(1.5)), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(s.estimate(&Query::Quantile(f64::NAN)), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(s.estimate(&Query::Rank(f64::NAN)), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(s.estimate(&Query::Distinct), Err(SynopsisError::UnsupportedQuery { .. })));
}

#[test]
fn params_from_the_registry() {
    let s = saams::registry::construct(11, &[]).unwrap();
    assert_eq!(s.kind(), Kind::Kll);
    assert!(saams::registry::construct(11, &[serde_json::json!(4)]).is_err());
    assert!(saams::registry::construct(11, &[serde_json::json!(70000)]).is_err());
    assert!(saams::registry::construct(11, &[serde_json::json!(200), serde_json::json!(1)]).is_err());
    assert!(Kll::with_rank_error(0.0).is_err());
    let s = Kll::with_rank_error(0.005).unwrap();
    assert!(s.normalized_rank_error() <= 0.005);
}
