use saams::hyper_log_log::HyperLogLog;
use saams::{Datum, Kind, Query, Synopsis, SynopsisError, Value};

use crate::{common, sketch_of};

#[test]
fn precision_is_the_smallest_meeting_the_rsd() {
    for (rsd, p) in [
        (0.02, 12),
        (0.0163, 12),
        (0.0162, 13),
        (0.1, 7),
        (0.26, 4),
        (0.9, 4),
        (0.00204, 18),
        (0.002, 19),
        (0.00102, 20),
    ] {
        let h = HyperLogLog::with_rsd(rsd).unwrap();
        assert_eq!(h.precision(), p, "rsd {rsd}");
        assert_eq!(h.registers().len(), 1 << p);
        assert!(h.standard_error() <= rsd);
    }
    // The reference requests ask for rsd 0.002 (2^19 registers); below 2^20's 0.00102 is refused.
    assert!(matches!(HyperLogLog::with_rsd(0.001), Err(SynopsisError::BadParameter { .. })));
    for rsd in [0.0, 1.0, -0.5, f64::NAN] {
        assert!(HyperLogLog::with_rsd(rsd).is_err());
    }
}

#[test]
fn empty_and_tiny_sketches() {
    let mut h = HyperLogLog::with_rsd(0.02).unwrap();
    let e = h.estimate(&Query::Distinct).unwrap();
    assert_eq!((e.as_f64(), e.lower, e.upper), (Some(0.0), 0.0, 0.0));
    for _ in 0..10 {
        h.update(Datum::Str("a"));
    }
    assert!((h.distinct() - 1.0).abs() < 0.01);
    let e = h.estimate(&Query::Distinct).unwrap();
    assert_eq!(e.lower, 1.0); // one non-empty register
    assert!(e.upper >= 1.0);
}

#[test]
fn duplicates_do_not_change_the_registers() {
    let keys = common::zipf_stream(20_000, 1000, 1.1, 1);
    let h = sketch_of(&keys, 0.02, 3);
    let mut distinct: Vec<u64> = keys.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(h, sketch_of(&distinct, 0.02, 3));
}

#[test]
fn registers_stay_in_range() {
    let h = sketch_of(&(0..200_000).collect::<Vec<_>>(), 0.26, 3);
    assert!(h.registers().iter().all(|r| *r >= 1 && *r <= h.max_register()));
}

#[test]
fn update_batch_equals_single_updates() {
    let keys = common::zipf_stream(5000, 5000, 1.1, 4);
    let items: Vec<Datum> = keys.iter().map(|k| Datum::Num(*k as f64)).collect();
    let mut b = HyperLogLog::with_rsd_seed(0.02, 8).unwrap();
    b.update_batch(&items);
    assert_eq!(b, sketch_of(&keys, 0.02, 8));
}

#[test]
fn other_queries_are_refused() {
    let h = HyperLogLog::with_rsd(0.05).unwrap();
    for q in [Query::Total, Query::F2, Query::Count(Value::Num(1.0)), Query::Contains(Value::Num(1.0))] {
        assert!(matches!(h.estimate(&q), Err(SynopsisError::UnsupportedQuery { kind: Kind::HyperLogLog, .. })));
    }
}

#[test]
fn reference_parameters() {
    let h = saams::registry::construct(2, serde_json::json!([0.02]).as_array().unwrap()).unwrap();
    assert_eq!(h.kind(), Kind::HyperLogLog);
    // 4 KiB of registers plus the register-value histogram (54 counters) and the struct.
    assert!(h.size_bytes() >= 4096 && h.size_bytes() < 4096 + 384);
    let seeded = saams::registry::construct(2, serde_json::json!(["0.02", 7]).as_array().unwrap()).unwrap();
    assert_ne!(seeded.encode(), h.encode());
    for raw in
        [serde_json::json!([]), serde_json::json!([0.02, 1, 2]), serde_json::json!([2]), serde_json::json!([0.0001])]
    {
        let r = saams::registry::construct(2, raw.as_array().unwrap());
        assert!(matches!(r, Err(SynopsisError::BadParameter { kind: Kind::HyperLogLog, .. })), "{raw}");
    }
}
