use proptest::prelude::*;
use saams::bloom_filter::BloomFilter;
use saams::count_min::CountMin;
use saams::{Kind, Synopsis, SynopsisError};

use crate::{common, filter_of};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Bitwise OR of partials equals the union's filter, in any grouping and order.
    #[test]
    fn merge_is_bit_identical_to_the_union(seed in 0u64..1000, a in 0usize..5000, b in 0usize..5000) {
        let keys = common::zipf_stream(10_000, 100_000, 1.1, seed);
        let (i, j) = (a.min(b), a.max(b));
        let whole = filter_of(&keys, 4000, 0.01, 2);
        let p1 = filter_of(&keys[..i], 4000, 0.01, 2);
        let p2 = filter_of(&keys[i..j], 4000, 0.01, 2);
        let p3 = filter_of(&keys[j..], 4000, 0.01, 2);
        let mut left = p1.clone();
        left.merge(&p2).unwrap();
        left.merge(&p3).unwrap();
        let mut right = p3.clone();
        let mut inner = p1.clone();
        inner.merge(&p2).unwrap();
        right.merge(&inner).unwrap();
        prop_assert_eq!(&left, &whole);
        prop_assert_eq!(&right, &whole);
        prop_assert_eq!(right.encode(), whole.encode());
    }
}

#[test]
fn incompatible_merges_are_refused() {
    let mut f = filter_of(&[1, 2, 3], 1000, 0.01, 1);
    let before = f.clone();
    let others: Vec<Box<dyn Synopsis>> = vec![
        Box::new(BloomFilter::with_capacity_seed(1000, 0.01, 2).unwrap()),
        Box::new(BloomFilter::with_capacity_seed(1001, 0.01, 1).unwrap()),
        Box::new(BloomFilter::with_capacity_seed(1000, 0.02, 1).unwrap()),
        Box::new(CountMin::with_accuracy(0.1, 0.9, 1).unwrap()),
    ];
    for other in &others {
        let r = f.merge(other.as_ref());
        assert!(matches!(r, Err(SynopsisError::Incompatible { kind: Kind::BloomFilter, .. })), "{r:?}");
    }
    assert_eq!(f, before);
}
