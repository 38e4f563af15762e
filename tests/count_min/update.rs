use saams::count_min::CountMin;
use saams::{Datum, Kind, Query, Synopsis, SynopsisError, Value};

use crate::{common, sketch_of};

#[test]
fn geometry_follows_the_formulas() {
    let cm = CountMin::with_accuracy(0.002, 0.99, 12345).unwrap();
    assert_eq!(cm.width(), 1360); // ⌈e / 0.002⌉
    assert_eq!(cm.depth(), 5); // ⌈ln 100⌉
    assert!(cm.effective_epsilon() <= 0.002);
    assert!(cm.effective_confidence() >= 0.99);
    let cm = CountMin::with_accuracy(0.1, 0.5, 1).unwrap();
    assert_eq!((cm.width(), cm.depth()), (28, 1));
}

#[test]
fn every_row_sums_to_the_stream_length() {
    let keys = common::zipf_stream(20_000, 1000, 1.1, 3);
    let cm = sketch_of(&keys, 0.01, 0.99, 9);
    assert_eq!(cm.total(), 20_000);
    for row in cm.counts().chunks(cm.width()) {
        assert_eq!(row.iter().sum::<u64>(), 20_000);
    }
}

#[test]
fn a_single_value_is_counted_exactly() {
    let mut cm = CountMin::with_accuracy(0.01, 0.99, 1).unwrap();
    for _ in 0..17 {
        cm.update(Datum::Str("EURTRY"));
    }
    let e = cm.estimate(&Query::Count(Value::Str("EURTRY".into()))).unwrap();
    assert_eq!(e.as_f64(), Some(17.0));
    assert_eq!((e.lower, e.upper), (17.0 - cm.effective_epsilon() * 17.0, 17.0));
    let absent = cm.estimate(&Query::Count(Value::Str("USDTRY".into()))).unwrap();
    assert_eq!(absent.as_f64(), Some(0.0));
    assert_eq!(absent.lower, 0.0);
}

#[test]
fn equal_numbers_count_together() {
    let mut cm = CountMin::with_accuracy(0.01, 0.9, 1).unwrap();
    cm.update(Datum::Num(0.0));
    cm.update(Datum::Num(-0.0));
    assert_eq!(cm.count(Datum::Num(0.0)), 2);
}

#[test]
fn update_batch_equals_single_updates() {
    let keys = common::zipf_stream(5000, 500, 1.1, 4);
    let one = sketch_of(&keys, 0.01, 0.99, 2);
    let items: Vec<Datum> = keys.iter().map(|k| Datum::Num(*k as f64)).collect();
    let mut batch = CountMin::with_accuracy(0.01, 0.99, 2).unwrap();
    batch.update_batch(&items);
    assert_eq!(one, batch);
}

#[test]
fn total_is_exact_and_other_queries_are_refused() {
    let cm = sketch_of(&[1, 2, 3], 0.01, 0.9, 1);
    let t = cm.estimate(&Query::Total).unwrap();
    assert_eq!((t.as_f64(), t.lower, t.upper, t.confidence), (Some(3.0), 3.0, 3.0, 1.0));
    for q in [Query::Distinct, Query::F2, Query::Quantile(0.5), Query::Contains(Value::Num(1.0))] {
        assert!(matches!(cm.estimate(&q), Err(SynopsisError::UnsupportedQuery { kind: Kind::CountMin, .. })));
    }
}

#[test]
fn constructors_refuse_bad_parameters() {
    for (e, c) in [(0.0, 0.9), (1.0, 0.9), (-0.1, 0.9), (0.01, 0.0), (0.01, 1.0), (f64::NAN, 0.9), (1e-9, 0.99)] {
        assert!(matches!(CountMin::with_accuracy(e, c, 1), Err(SynopsisError::BadParameter { .. })), "{e} {c}");
    }
    let bad = [
        serde_json::json!([0.002, 0.99]),
        serde_json::json!([0.002, 0.99, 1, 2]),
        serde_json::json!(["x", 0.99, 1]),
        serde_json::json!([0.002, 1.5, 1]),
        serde_json::json!([0.002, 0.99, -1]),
        serde_json::json!([0.002, 0.99, 1.5]),
    ];
    for raw in bad {
        let r = saams::registry::construct(1, raw.as_array().unwrap());
        assert!(matches!(r, Err(SynopsisError::BadParameter { kind: Kind::CountMin, .. })), "{raw}");
    }
    let ok = saams::registry::construct(1, serde_json::json!([0.002, "0.99", 12345]).as_array().unwrap()).unwrap();
    assert_eq!(ok.kind(), Kind::CountMin);
}

#[test]
fn size_counts_the_counters() {
    // 32-bit counters while the total fits in 32 bits (see `counts_past_32_bits_stay_exact`).
    let cm = CountMin::with_accuracy(0.002, 0.99, 1).unwrap();
    assert!(cm.size_bytes() >= 1360 * 5 * 4);
    assert!(cm.size_bytes() < 1360 * 5 * 4 + 512);
}

/// A sketch at `total` whose every item is 1.0 (depth 1: one row of 28 counters), through the
/// codec, as a job restoring a long-running window's sketch gets it.
fn one_value_sketch(total: u64) -> CountMin {
    let mut probe = CountMin::with_accuracy(0.1, 0.5, 5).unwrap();
    probe.update(Datum::Num(1.0));
    let column = probe.counts().iter().position(|&c| c == 1).unwrap();
    let mut payload = saams::codec::Writer::new();
    payload.varint(total);
    for i in 0..probe.width() {
        payload.varint(if i == column { total } else { 0 });
    }
    let bytes = saams::codec::encode_envelope(Kind::CountMin, 5, &[0.1, 0.5], &payload.into_inner());
    let s = saams::registry::decode(&bytes).unwrap();
    s.as_any().downcast_ref::<CountMin>().unwrap().clone()
}

/// Counters are kept in 32 bits while the total fits: a sketch just below 2^32 counts on past
/// it exactly (updates one by one and in a batch, and merges, widen the counters first), and
/// its memory follows (4 bytes a counter below, 8 above).
#[test]
fn counts_past_32_bits_stay_exact() {
    let below = u64::from(u32::MAX) - 1;
    let cm = one_value_sketch(below);
    assert_eq!(cm.count(Datum::Num(1.0)), below);
    let narrow_bytes = cm.size_bytes();

    let mut one_by_one = cm.clone();
    for _ in 0..3 {
        one_by_one.update(Datum::Num(1.0));
    }
    assert_eq!(one_by_one.total(), below + 3);
    assert_eq!(one_by_one.count(Datum::Num(1.0)), below + 3);
    assert_eq!(one_by_one.size_bytes(), narrow_bytes + 28 * 4);

    let mut batch = cm.clone();
    batch.update_batch(&[Datum::Num(1.0); 3]);
    assert_eq!(batch, one_by_one);

    let mut merged = cm.clone();
    merged.merge(&cm).unwrap();
    assert_eq!((merged.total(), merged.count(Datum::Num(1.0))), (2 * below, 2 * below));
    // A narrow sketch merged into a wide one, and the codec of a wide one.
    let mut wide = one_by_one.clone();
    wide.merge(&cm).unwrap();
    assert_eq!(wide.count(Datum::Num(1.0)), 2 * below + 3);
    assert_eq!(one_value_sketch(2 * below + 3), wide);
    assert_eq!(saams::registry::decode(&wide.encode()).unwrap().encode(), wide.encode());
    // Exactly 2^32 - 1 still fits in 32 bits.
    let mut at_limit = cm.clone();
    at_limit.update(Datum::Num(1.0));
    assert_eq!((at_limit.count(Datum::Num(1.0)), at_limit.size_bytes()), (u64::from(u32::MAX), narrow_bytes));
}
