use std::collections::HashSet;

use proptest::prelude::*;
use saams::cpc::Cpc;
use saams::{Datum, Query, Synopsis, SynopsisError};

use crate::common;

fn build(keys: &[u64], lg_k: u64) -> Cpc {
    let mut s = Cpc::new(lg_k).unwrap();
    for k in keys {
        s.update(Datum::Num(*k as f64));
    }
    s
}

#[test]
fn merged_partials_estimate_the_union() {
    let keys = common::zipf_stream(300_000, 1_000_000, 1.1, 3);
    let truth = keys.iter().collect::<HashSet<_>>().len() as f64;
    let mut merged = Cpc::new(11).unwrap();
    for part in keys.chunks(40_000) {
        merged.merge(&build(part, 11)).unwrap();
    }
    let e = merged.estimate(&Query::Distinct).unwrap();
    assert!(e.lower <= truth && truth <= e.upper, "{e:?} vs {truth}");
    // Merging is idempotent for distinct counting: the union with itself is the same set.
    let again = merged.clone();
    merged.merge(&again).unwrap();
    assert_eq!(merged.estimate(&Query::Distinct).unwrap(), e);
}

#[test]
fn incompatible_merges_are_errors() {
    let mut a = Cpc::new(11).unwrap();
    assert!(matches!(a.merge(&Cpc::new(12).unwrap()), Err(SynopsisError::Incompatible { .. })));
    assert!(matches!(a.merge(&Cpc::with_seed(11, 5).unwrap()), Err(SynopsisError::Incompatible { .. })));
    assert!(matches!(a.merge(&saams::kll::Kll::new(200).unwrap()), Err(SynopsisError::Incompatible { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// Union sketches do not depend on the merge order (the union's bit matrix is a set union).
    #[test]
    fn merge_is_order_independent(a in proptest::collection::vec(0u64..5000, 0..3000),
                                  b in proptest::collection::vec(0u64..5000, 0..3000),
                                  c in proptest::collection::vec(0u64..5000, 0..3000)) {
        let (sa, sb, sc) = (build(&a, 8), build(&b, 8), build(&c, 8));
        let mut left = sa.clone();
        left.merge(&sb).unwrap();
        left.merge(&sc).unwrap();
        let mut bc = sb.clone();
        bc.merge(&sc).unwrap();
        let mut right = sc.clone();
        right.merge(&sa).unwrap();
        right.merge(&sb).unwrap();
        let mut assoc = sa.clone();
        assoc.merge(&bc).unwrap();
        let l = left.estimate(&Query::Distinct).unwrap();
        prop_assert_eq!(&l, &right.estimate(&Query::Distinct).unwrap());
        prop_assert_eq!(&l, &assoc.estimate(&Query::Distinct).unwrap());
    }
}
