use saams::{Datum, Query, Synopsis, SynopsisError};

use super::*;

#[test]
fn exact_while_the_rate_is_one() {
    let mut ss = StickySampling::with_accuracy(0.1, 0.01, 0.1, 1).unwrap();
    let t = ss.sample_parameter();
    assert_eq!(t, (100.0 * (1.0f64 / 0.01).ln()).ceil() as u64);
    for i in 0..(2 * t - 1) {
        ss.update(Datum::Num((i % 7) as f64));
    }
    ss.update(Datum::Str("x"));
    assert_eq!(ss.sampling_divisor(), 2);
    // Still exact before the first rate change...
    let mut ss2 = StickySampling::with_accuracy(0.1, 0.01, 0.1, 1).unwrap();
    for i in 0..(2 * t - 1) {
        ss2.update(Datum::Num((i % 7) as f64));
    }
    assert_eq!(ss2.sampling_divisor(), 1);
    let e = ss2.estimate(&Query::Count(Value::Num(0.0))).unwrap();
    let want = (2 * t - 1).div_ceil(7) as f64;
    assert_eq!((e.as_f64().unwrap(), e.confidence), (want, 1.0));
    // ...and after it, counts only shrink.
    let e = ss.estimate(&Query::Count(Value::Num(0.0))).unwrap();
    assert!(e.as_f64().unwrap() <= want && e.confidence < 1.0);
}

#[test]
fn same_seed_same_state_other_seed_other_state() {
    let items = zipf_values(100_000, 100_000, 2);
    let a = build((0.01, 0.001, 0.01), 5, &items);
    let b = build((0.01, 0.001, 0.01), 5, &items);
    let c = build((0.01, 0.001, 0.01), 6, &items);
    assert_eq!(a.encode(), b.encode());
    assert_ne!(a.tracked(), 0);
    assert_ne!(&a.encode()[8..16], &c.encode()[8..16]);
}

#[test]
fn bad_queries_and_parameters_are_errors() {
    let ss = StickySampling::with_accuracy(0.01, 0.001, 0.01, 0).unwrap();
    assert!(matches!(ss.estimate(&Query::FrequentItems { support: 0.0005 }), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(ss.estimate(&Query::FrequentItems { support: 2.0 }), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(ss.estimate(&Query::Rank(1.0)), Err(SynopsisError::UnsupportedQuery { .. })));
    for (s, e, d) in [(0.01, 0.01, 0.1), (0.0, 0.001, 0.1), (0.01, 0.001, 0.0), (0.01, -0.001, 0.1), (1.0, 0.1, 0.1)] {
        assert!(matches!(StickySampling::with_accuracy(s, e, d, 0), Err(SynopsisError::BadParameter { .. })));
    }
}

#[test]
fn memory_stays_within_the_expected_bound() {
    // Manku–Motwani: at most 2t entries in expectation, whatever the stream length.
    let p = (0.01, 0.001, 0.01);
    let items = zipf_values(1_000_000, 1_000_000, 8);
    let mut ss = StickySampling::with_accuracy(p.0, p.1, p.2, 1).unwrap();
    let two_t = 2 * ss.sample_parameter() as usize;
    let mut peak = 0;
    for v in &items {
        ss.update(v.as_datum());
        peak = peak.max(ss.tracked());
    }
    assert!(peak <= two_t, "peak {peak} entries over 2t = {two_t}");
    assert!(ss.sampling_divisor() >= 32);
    // 16 bytes a tracked item (id, count) at a load of at most 3/4.
    assert!(ss.size_bytes() >= ss.tracked() * 16 * 4 / 3);
}

#[test]
fn confidence_shrinks_with_merged_parts_and_stays_in_range() {
    let p = (0.01, 0.001, 0.01);
    let items = zipf_values(400_000, 100_000, 9);
    let mut parts: Vec<StickySampling> = items.chunks(400_000 / 16).map(|c| build(p, 1, c)).collect();
    let mut acc = parts.remove(0);
    let mut last = 1.0;
    for q in &parts {
        acc.merge(q).unwrap();
        let f = acc.item_failure_probability();
        assert!((0.0..=1.0).contains(&f));
        let c = acc.estimate(&Query::FrequentItems { support: p.0 }).unwrap().confidence;
        assert!((0.0..=1.0).contains(&c));
        last = c;
    }
    assert!(last >= 1.0 - 16.0 * p.2, "confidence {last} after 16 parts");
}
