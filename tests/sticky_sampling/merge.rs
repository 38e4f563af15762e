use proptest::prelude::*;
use saams::{Kind, SynopsisError};

use super::*;

#[test]
fn merged_partials_keep_the_guarantee_with_reported_confidence() {
    let p = (0.01, 0.001, 0.01);
    let items = zipf_values(600_000, 100_000, 3);
    let truth = exact(&items);
    for parts in [2usize, 4, 8] {
        let chunk = items.len().div_ceil(parts);
        let ps: Vec<StickySampling> = items.chunks(chunk).map(|c| build(p, 7, c)).collect();
        let mut acc = ps[0].clone();
        for q in &ps[1..] {
            acc.merge(q).unwrap();
        }
        check_guarantee(&acc, &truth, items.len() as u64, p);
        let conf = acc.estimate(&Query::FrequentItems { support: p.0 }).unwrap().confidence;
        assert!(conf >= 1.0 - parts as f64 * p.2 && conf <= 1.0, "{parts} parts: confidence {conf}");
    }
}

#[test]
fn incompatible_merges_are_errors() {
    let mut a = StickySampling::with_accuracy(0.01, 0.001, 0.01, 1).unwrap();
    for b in [
        StickySampling::with_accuracy(0.01, 0.001, 0.01, 2).unwrap(),
        StickySampling::with_accuracy(0.02, 0.001, 0.01, 1).unwrap(),
        StickySampling::with_accuracy(0.01, 0.002, 0.01, 1).unwrap(),
        StickySampling::with_accuracy(0.01, 0.001, 0.02, 1).unwrap(),
    ] {
        assert!(matches!(a.merge(&b), Err(SynopsisError::Incompatible { kind: Kind::StickySampling, .. })));
    }
    let gk = saams::gk_quantiles::GkQuantiles::with_epsilon(0.01).unwrap();
    assert!(matches!(a.merge(&gk), Err(SynopsisError::Incompatible { .. })));
}

#[test]
fn merging_empty_is_identity_both_ways() {
    let p = (0.01, 0.001, 0.01);
    let a = build(p, 1, &zipf_values(30_000, 1000, 4));
    let empty = StickySampling::with_accuracy(p.0, p.1, p.2, 1).unwrap();
    let mut x = a.clone();
    x.merge(&empty).unwrap();
    assert_eq!(x.encode(), a.encode());
    let mut y = empty.clone();
    y.merge(&a).unwrap();
    assert_eq!(y.encode(), a.encode());
}

proptest! {
    #![proptest_config(crate::proptest_config(32))]

    #[test]
    fn merges_never_overcount_and_keep_the_total(
        xs in proptest::collection::vec(0u8..30, 0..3000),
        cut1 in 0usize..3000, cut2 in 0usize..3000, seed in 0u64..1000,
    ) {
        let p = (0.1, 0.02, 0.1);
        let items: Vec<Value> = xs.iter().map(|x| Value::Num(f64::from(*x))).collect();
        let (c1, c2) = (cut1.min(cut2).min(items.len()), cut1.max(cut2).min(items.len()));
        let (a, b, c) = (build(p, seed, &items[..c1]), build(p, seed, &items[c1..c2]), build(p, seed, &items[c2..]));
        let truth = exact(&items);
        for order in [[&a, &b, &c], [&c, &a, &b], [&b, &c, &a]] {
            let mut acc = order[0].clone();
            acc.merge(order[1]).unwrap();
            acc.merge(order[2]).unwrap();
            prop_assert_eq!(acc.total(), items.len() as u64);
            prop_assert!(saams::registry::decode(&acc.encode()).is_ok());
            for (k, &cnt) in &truth {
                let e = acc.estimate(&Query::Count(k.value())).unwrap();
                prop_assert!(e.as_f64().unwrap() <= cnt as f64);
            }
        }
    }
}
