use saams::cpc::Cpc;
use saams::{Datum, Kind, Query, Synopsis, SynopsisError};

#[test]
fn duplicates_and_equal_numbers_count_once() {
    let mut s = Cpc::new(11).unwrap();
    for _ in 0..10 {
        s.update(Datum::Num(0.0));
        s.update(Datum::Num(-0.0));
        s.update(Datum::Str("IBM"));
    }
    let e = s.estimate(&Query::Distinct).unwrap();
    assert_eq!(e.as_f64().unwrap().round(), 2.0);
    assert!(e.lower <= 2.0 && 2.0 <= e.upper);
}

#[test]
fn empty_is_zero_and_unsupported_queries_are_errors() {
    let s = Cpc::new(11).unwrap();
    assert_eq!(s.estimate(&Query::Distinct).unwrap().as_f64(), Some(0.0));
    assert!(matches!(s.estimate(&Query::Total), Err(SynopsisError::UnsupportedQuery { .. })));
}

#[test]
fn params_from_the_registry() {
    let s = saams::registry::construct(12, &[serde_json::json!(11)]).unwrap();
    assert_eq!(s.kind(), Kind::Cpc);
    assert!(saams::registry::construct(12, &[]).is_err());
    assert!(saams::registry::construct(12, &[serde_json::json!(27)]).is_err());
    assert!(saams::registry::construct(12, &[serde_json::json!(3)]).is_err());
    assert!(saams::registry::construct(12, &[serde_json::json!(11), serde_json::json!(-1)]).is_err());
    let s = saams::registry::construct(12, &[serde_json::json!(11), serde_json::json!(77)]).unwrap();
    assert_eq!(saams::codec::decode_envelope(&s.encode()).unwrap().0.seed, 77);
    assert_eq!(Cpc::with_rsd(0.02).unwrap().lg_k(), 11);
    assert!(Cpc::with_rsd(1e-6).is_err());
}
