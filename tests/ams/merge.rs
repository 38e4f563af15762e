use proptest::prelude::*;
use saams::ams::Ams;
use saams::{Kind, Synopsis, SynopsisError};

use crate::{common, sketch_of};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Adding partials' counters gives the union's sketch, in any grouping and order.
    #[test]
    fn merge_is_bit_identical_to_the_union(seed in 0u64..1000, a in 0usize..4000, b in 0usize..4000) {
        let keys = common::zipf_stream(8000, 10_000, 1.1, seed);
        let (i, j) = (a.min(b), a.max(b));
        let whole = sketch_of(&keys, 5, 256, 3);
        let p1 = sketch_of(&keys[..i], 5, 256, 3);
        let p2 = sketch_of(&keys[i..j], 5, 256, 3);
        let p3 = sketch_of(&keys[j..], 5, 256, 3);
        let mut left = p1.clone();
        left.merge(&p2).unwrap();
        left.merge(&p3).unwrap();
        let mut right = p3.clone();
        right.merge(&p1).unwrap();
        right.merge(&p2).unwrap();
        prop_assert_eq!(&left, &whole);
        prop_assert_eq!(&right, &whole);
        prop_assert_eq!(left.encode(), whole.encode());
    }
}

#[test]
fn merged_f2_is_f2_of_the_union_not_the_sum_of_partials() {
    // The same value on two workers: F2 of the union is (a + b)², not a² + b².
    let mut a = Ams::new(5, 128, 1).unwrap();
    let mut b = a.clone();
    for _ in 0..30 {
        a.update(saams::Datum::Num(1.0));
    }
    for _ in 0..10 {
        b.update(saams::Datum::Num(1.0));
    }
    a.merge(&b).unwrap();
    assert_eq!(a.f2(), 1600.0);
}

#[test]
fn incompatible_merges_are_refused() {
    let mut a = sketch_of(&[1, 2, 3], 5, 256, 3);
    let before = a.clone();
    let others: Vec<Box<dyn Synopsis>> = vec![
        Box::new(Ams::new(5, 256, 4).unwrap()),
        Box::new(Ams::new(6, 256, 3).unwrap()),
        Box::new(Ams::new(5, 255, 3).unwrap()),
        Box::new(saams::hyper_log_log::HyperLogLog::with_rsd(0.05).unwrap()),
    ];
    for other in &others {
        let r = a.merge(other.as_ref());
        assert!(matches!(r, Err(SynopsisError::Incompatible { kind: Kind::Ams, .. })), "{r:?}");
    }
    assert_eq!(a, before);
}
