use proptest::prelude::*;
use saams::lsh::Lsh;
use saams::{Synopsis, SynopsisError};

use crate::fed;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Any split into three consecutive parts, merged in either association, is exactly the
    /// synopsis of the whole sequence (same bytes, same signature).
    #[test]
    fn merge_is_associative_concatenation(values in proptest::collection::vec(-1e3f64..1e3, 0..300),
                                          c1 in 0usize..300, c2 in 0usize..300) {
        let (c1, c2) = (c1.min(values.len()), c2.min(values.len()));
        let (lo, hi) = (c1.min(c2), c1.max(c2));
        let whole = fed(&values, 50, 64, 8, 3);
        let (a, b, c) = (fed(&values[..lo], 50, 64, 8, 3), fed(&values[lo..hi], 50, 64, 8, 3), fed(&values[hi..], 50, 64, 8, 3));
        let mut left = a.clone();
        left.merge(&b).unwrap();
        left.merge(&c).unwrap();
        let mut bc = b.clone();
        bc.merge(&c).unwrap();
        let mut right = a.clone();
        right.merge(&bc).unwrap();
        prop_assert_eq!(left.encode(), whole.encode());
        prop_assert_eq!(right.encode(), whole.encode());
        if !values.is_empty() {
            prop_assert_eq!(right.signature().unwrap(), whole.signature().unwrap());
        }
    }
}

#[test]
fn incompatible_merges_are_errors() {
    let mut a = Lsh::new(10, 32, 4, 1).unwrap();
    for other in [Lsh::new(11, 32, 4, 1), Lsh::new(10, 64, 4, 1), Lsh::new(10, 32, 8, 1), Lsh::new(10, 32, 4, 2)] {
        assert!(matches!(a.merge(&other.unwrap()), Err(SynopsisError::Incompatible { .. })));
    }
    assert!(matches!(a.merge(&saams::kll::Kll::new(200).unwrap()), Err(SynopsisError::Incompatible { .. })));
}
