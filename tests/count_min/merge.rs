use proptest::prelude::*;
use saams::count_min::CountMin;
use saams::hyper_log_log::HyperLogLog;
use saams::{Kind, Synopsis, SynopsisError};

use crate::{common, sketch_of};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Merging partials in any grouping and order gives the union's sketch, bit for bit.
    #[test]
    fn merge_is_bit_identical_to_the_union(seed in 0u64..1000, a in 0usize..3000, b in 0usize..3000) {
        let keys = common::zipf_stream(6000, 2000, 1.1, seed);
        let (i, j) = (a.min(b), a.max(b));
        let whole = sketch_of(&keys, 0.01, 0.95, 77);
        let p1 = sketch_of(&keys[..i], 0.01, 0.95, 77);
        let p2 = sketch_of(&keys[i..j], 0.01, 0.95, 77);
        let p3 = sketch_of(&keys[j..], 0.01, 0.95, 77);
        // ((p1 + p2) + p3)
        let mut left = p1.clone();
        left.merge(&p2).unwrap();
        left.merge(&p3).unwrap();
        // (p3 + (p2 + p1))
        let mut inner = p2.clone();
        inner.merge(&p1).unwrap();
        let mut right = p3.clone();
        right.merge(&inner).unwrap();
        prop_assert_eq!(&left, &whole);
        prop_assert_eq!(&right, &whole);
        prop_assert_eq!(left.encode(), whole.encode());
    }
}

#[test]
fn merging_an_empty_sketch_changes_nothing() {
    let keys = common::zipf_stream(1000, 100, 1.1, 1);
    let mut cm = sketch_of(&keys, 0.01, 0.95, 3);
    let before = cm.clone();
    cm.merge(&CountMin::with_accuracy(0.01, 0.95, 3).unwrap()).unwrap();
    assert_eq!(cm, before);
}

#[test]
fn incompatible_merges_are_refused_and_leave_the_sketch_unchanged() {
    let mut cm = sketch_of(&[1, 2, 3], 0.01, 0.95, 3);
    let before = cm.clone();
    let others: Vec<Box<dyn Synopsis>> = vec![
        Box::new(CountMin::with_accuracy(0.01, 0.95, 4).unwrap()),
        Box::new(CountMin::with_accuracy(0.02, 0.95, 3).unwrap()),
        Box::new(CountMin::with_accuracy(0.01, 0.99, 3).unwrap()),
        Box::new(HyperLogLog::with_rsd(0.05).unwrap()),
    ];
    for other in &others {
        let r = cm.merge(other.as_ref());
        assert!(matches!(r, Err(SynopsisError::Incompatible { kind: Kind::CountMin, .. })), "{r:?}");
    }
    assert_eq!(cm, before);
}
