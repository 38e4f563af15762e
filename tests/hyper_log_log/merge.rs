use proptest::prelude::*;
use saams::count_min::CountMin;
use saams::hyper_log_log::HyperLogLog;
use saams::{Kind, Synopsis, SynopsisError};

use crate::{common, sketch_of};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Register-wise maximum of partials equals the union's sketch, in any grouping and order.
    #[test]
    fn merge_is_bit_identical_to_the_union(seed in 0u64..1000, a in 0usize..5000, b in 0usize..5000) {
        let keys = common::zipf_stream(10_000, 100_000, 1.1, seed);
        let (i, j) = (a.min(b), a.max(b));
        let whole = sketch_of(&keys, 0.05, 1);
        let p1 = sketch_of(&keys[..i], 0.05, 1);
        let p2 = sketch_of(&keys[i..j], 0.05, 1);
        let p3 = sketch_of(&keys[j..], 0.05, 1);
        let mut left = p1.clone();
        left.merge(&p2).unwrap();
        left.merge(&p3).unwrap();
        let mut inner = p3.clone();
        inner.merge(&p2).unwrap();
        let mut right = inner;
        right.merge(&p1).unwrap();
        prop_assert_eq!(&left, &whole);
        prop_assert_eq!(&right, &whole);
        // Idempotent: merging a sketch into itself changes nothing.
        let mut twice = whole.clone();
        twice.merge(&whole).unwrap();
        prop_assert_eq!(twice, whole);
    }
}

#[test]
fn incompatible_merges_are_refused() {
    let mut h = sketch_of(&[1, 2, 3], 0.02, 1);
    let before = h.clone();
    let others: Vec<Box<dyn Synopsis>> = vec![
        Box::new(HyperLogLog::with_rsd_seed(0.02, 2).unwrap()),
        Box::new(HyperLogLog::with_rsd_seed(0.01, 1).unwrap()),
        Box::new(CountMin::with_accuracy(0.1, 0.9, 1).unwrap()),
    ];
    for other in &others {
        let r = h.merge(other.as_ref());
        assert!(matches!(r, Err(SynopsisError::Incompatible { kind: Kind::HyperLogLog, .. })), "{r:?}");
    }
    assert_eq!(h, before);
    // Another rsd with the same precision is the same sketch shape: it merges.
    h.merge(&HyperLogLog::with_rsd_seed(0.019, 1).unwrap()).unwrap();
    assert_eq!(h, before);
}
