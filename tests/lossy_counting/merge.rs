use proptest::prelude::*;
use saams::{Kind, Synopsis, SynopsisError};

use super::*;

fn split_build(eps: f64, items: &[Value], parts: usize) -> Vec<LossyCounting> {
    let chunk = items.len().div_ceil(parts);
    items.chunks(chunk).map(|c| build(eps, c)).collect()
}

#[test]
fn merged_partials_keep_the_single_stream_bound() {
    let eps = 0.001;
    let items = zipf_values(200_000, 100_000, 21);
    let truth = exact(&items);
    for parts in [2, 4, 8] {
        // Linear merge.
        let mut ps = split_build(eps, &items, parts);
        let mut acc = ps.remove(0);
        for p in &ps {
            acc.merge(p).unwrap();
        }
        check_guarantee(&acc, &truth, items.len() as u64, eps);
        // Tree merge, interleaved partition (each partial sees every parts-th item).
        let mut ps: Vec<LossyCounting> = (0..parts)
            .map(|r| {
                let sub: Vec<Value> = items.iter().skip(r).step_by(parts).cloned().collect();
                build(eps, &sub)
            })
            .collect();
        while ps.len() > 1 {
            let b = ps.pop().unwrap();
            let mut a = ps.pop().unwrap();
            a.merge(&b).unwrap();
            ps.insert(0, a);
        }
        check_guarantee(&ps[0], &truth, items.len() as u64, eps);
    }
}

#[test]
fn incompatible_merges_are_errors() {
    let mut a = LossyCounting::with_epsilon(0.01).unwrap();
    let b = LossyCounting::with_epsilon(0.02).unwrap();
    assert!(matches!(a.merge(&b), Err(SynopsisError::Incompatible { kind: Kind::LossyCounting, .. })));
    let other_kind = saams::registry::construct(6, serde_json::json!([0.01, 0.001, 0.01]).as_array().unwrap());
    if let Ok(o) = other_kind {
        assert!(matches!(a.merge(o.as_ref()), Err(SynopsisError::Incompatible { .. })));
    }
}

#[test]
fn merging_an_empty_summary_changes_nothing() {
    let mut a = build(0.01, &zipf_values(10_000, 1000, 5));
    let before = a.encode();
    a.merge(&LossyCounting::with_epsilon(0.01).unwrap()).unwrap();
    assert_eq!(a.encode(), before);
}

proptest! {
    #![proptest_config(crate::proptest_config(48))]

    #[test]
    fn merge_is_commutative_and_any_tree_keeps_the_bound(
        xs in proptest::collection::vec(0u8..40, 0..600),
        cut1 in 0usize..600, cut2 in 0usize..600,
    ) {
        let eps = 0.05;
        let items: Vec<Value> = xs.iter().map(|x| Value::Num(f64::from(*x))).collect();
        let (c1, c2) = (cut1.min(cut2).min(items.len()), cut1.max(cut2).min(items.len()));
        let (a, b, c) = (build(eps, &items[..c1]), build(eps, &items[c1..c2]), build(eps, &items[c2..]));
        let mut ab = a.clone();
        ab.merge(&b).unwrap();
        let mut ba = b.clone();
        ba.merge(&a).unwrap();
        prop_assert_eq!(ab.encode(), ba.encode());
        let mut left = ab.clone();
        left.merge(&c).unwrap();
        let mut bc = b.clone();
        bc.merge(&c).unwrap();
        let mut right = a.clone();
        right.merge(&bc).unwrap();
        let truth = exact(&items);
        check_guarantee(&left, &truth, items.len() as u64, eps);
        check_guarantee(&right, &truth, items.len() as u64, eps);
        prop_assert!(saams::registry::decode(&left.encode()).is_ok());
        prop_assert!(saams::registry::decode(&right.encode()).is_ok());
    }
}
