use saams::frequent_items::FrequentItems;
use saams::{Datum, Estimate, EstimateValue, Kind, Query, Synopsis, SynopsisError, Value};

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

/// Numbers first, then strings (the sketch changes form at the first string, after purges):
/// every count stays within its bounds, both kinds are listed, the bytes round-trip, and a
/// numbers-only sketch merges with a mixed one either way round.
#[test]
fn numbers_then_strings_keep_their_bounds_and_bytes() {
    let keys = crate::common::zipf_stream(60_000, 5_000, 1.1, 4);
    let labels: Vec<String> = (0..50).map(|i| format!("s{i}")).collect();
    let mut nums = std::collections::HashMap::<u64, f64>::new();
    let mut strs = std::collections::HashMap::<String, f64>::new();
    let mut s = FrequentItems::new(9).unwrap();
    for (i, k) in keys.iter().enumerate() {
        s.update(Datum::Num(*k as f64));
        *nums.entry(*k).or_default() += 1.0;
        if i >= 40_000 && i % 3 == 0 {
            let label = &labels[(k % 50) as usize];
            s.update(Datum::Str(label));
            *strs.entry(label.clone()).or_default() += 1.0;
        }
    }
    let exact: Vec<(Value, f64)> = nums
        .iter()
        .map(|(k, c)| (Value::Num(*k as f64), *c))
        .chain(strs.iter().map(|(t, c)| (Value::Str(t.clone()), *c)))
        .collect();
    assert!(s.maximum_error() > 0, "the stream must purge for this test to mean anything");
    for (v, c) in &exact {
        let e = s.estimate(&Query::Count(v.clone())).unwrap();
        assert!(e.lower <= *c && *c <= e.upper, "{v:?}: {c} outside [{}, {}]", e.lower, e.upper);
    }
    let Ok(Estimate { value: EstimateValue::Items(items), .. }) = s.estimate(&Query::FrequentItems { support: 0.01 })
    else {
        panic!("frequent items");
    };
    let total = s.total() as f64;
    for (v, c) in &exact {
        if *c >= 0.01 * total {
            assert!(items.iter().any(|(w, _)| w == v), "{v:?} ({c}) missing");
        }
    }
    assert!(items.iter().any(|(v, _)| matches!(v, Value::Str(_))));
    let bytes = s.encode();
    assert_eq!(saams::registry::decode(&bytes).unwrap().encode(), bytes);

    let mut numeric = FrequentItems::new(9).unwrap();
    keys[..5_000].iter().for_each(|k| numeric.update(Datum::Num(*k as f64)));
    let mut a = numeric.clone();
    a.merge(&s).unwrap();
    let mut b = s.clone();
    b.merge(&numeric).unwrap();
    assert_eq!(a.total(), s.total() + numeric.total());
    assert_eq!(b.total(), a.total());
    // The numbers-only side has no strings: a string's count in the union is its count in `s`.
    for (t, c) in &strs {
        for m in [&a, &b] {
            let e = m.estimate(&Query::Count(Value::Str(t.clone()))).unwrap();
            assert!(e.lower <= *c && *c <= e.upper, "{t}: {c} outside [{}, {}]", e.lower, e.upper);
        }
    }
    let numbers_only = numeric.encode();
    assert_eq!(saams::registry::decode(&numbers_only).unwrap().encode(), numbers_only);
}

/// The numbers-only fast form changes nothing in the bytes: a fresh sketch of the committed
/// golden stream (as `codec::bless` builds it: numbers, then one string) encodes to the
/// committed file.
#[test]
fn fresh_golden_stream_encodes_to_the_committed_bytes() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut s = FrequentItems::new(5).unwrap();
    for x in crate::common::zipf_stream(1000, 1_000_000, 1.1, 7) {
        s.update(Datum::Num(x as f64));
    }
    let numbers_only = s.encode();
    s.update(Datum::Str("text item"));
    assert_eq!(s.encode(), std::fs::read(dir.join("frequent_items_v1_zipf1000.bin")).unwrap());
    assert_eq!(
        FrequentItems::new(10).unwrap().encode(),
        std::fs::read(dir.join("frequent_items_v1_empty.bin")).unwrap()
    );
    assert_eq!(saams::registry::decode(&numbers_only).unwrap().encode(), numbers_only);
}

/// A sketch whose stream weight was decoded close to `u64::MAX` (the library panics on an
/// overflow): a batch that fits is counted in full, a batch that would overflow saturates at the
/// limit, with numbers and after a string has turned the sketch mixed.
#[test]
fn updates_saturate_at_the_stream_weight_limit() {
    use saams::codec::{decode_envelope, encode_envelope};
    let near_the_limit = |first: Datum<'_>, weight: u64| {
        let mut s = FrequentItems::new(6).unwrap();
        s.update(first);
        let bytes = s.encode();
        let (h, payload) = decode_envelope(&bytes).unwrap();
        let mut payload = payload.to_vec();
        // The DataSketches preamble's third long is the stream weight.
        payload[16..24].copy_from_slice(&weight.to_le_bytes());
        let d = saams::registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &payload)).unwrap();
        d.as_any().downcast_ref::<FrequentItems>().unwrap().clone()
    };
    let batch = [Datum::Num(1.0), Datum::Num(2.0), Datum::Str("a"), Datum::Num(1.0), Datum::Num(3.0)];
    for first in [Datum::Num(1.0), Datum::Str("b")] {
        let mut fits = near_the_limit(first, u64::MAX - 5);
        fits.update_batch(&batch);
        assert_eq!(fits.total(), u64::MAX);
        assert_eq!(fits.estimate(&Query::Count(Value::Str("a".into()))).unwrap().as_f64(), Some(1.0));
        let mut overflows = near_the_limit(first, u64::MAX - 3);
        overflows.update_batch(&batch);
        assert_eq!(overflows.total(), u64::MAX);
        // The first three items were counted, the last two dropped at the limit.
        assert_eq!(overflows.estimate(&Query::Count(Value::Str("a".into()))).unwrap().as_f64(), Some(1.0));
        assert_eq!(overflows.estimate(&Query::Count(Value::Num(3.0))).unwrap().as_f64(), Some(0.0));
        overflows.update(Datum::Num(3.0));
        assert_eq!(overflows.total(), u64::MAX);
    }
}
