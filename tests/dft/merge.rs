use proptest::prelude::*;
use saams::dft::Dft;
use saams::{Datum, Synopsis, SynopsisError};

use crate::random_walk;

fn same(a: &Dft, b: &Dft) {
    assert_eq!(a.points(), b.points());
    assert_eq!(a.window_points(), b.window_points());
    assert_eq!(a.encode(), b.encode(), "raw state differs");
    for (x, y) in a.coefficients().iter().zip(b.coefficients()) {
        assert!((x.0 - y.0).abs() <= 1e-9 && (x.1 - y.1).abs() <= 1e-9);
    }
}

#[test]
fn merge_equals_concatenation_of_plain_points() {
    let raw = random_walk(5_000, 10.0, 0.1, 3);
    let mut whole = Dft::new(1.0, 40, 400, 6).unwrap();
    for x in &raw {
        whole.update(Datum::Num(*x));
    }
    for cut in [0, 1, 39, 40, 399, 401, 2_345, 4_990, 5_000] {
        let (mut a, mut b) = (Dft::new(1.0, 40, 400, 6).unwrap(), Dft::new(1.0, 40, 400, 6).unwrap());
        raw[..cut].iter().for_each(|x| a.update(Datum::Num(*x)));
        raw[cut..].iter().for_each(|x| b.update(Datum::Num(*x)));
        a.merge(&b).unwrap();
        same(&a, &whole);
        // Keep updating after the merge: the incremental state must have been rebuilt right.
        let (mut c, mut d) = (a.clone(), whole.clone());
        for x in random_walk(1_000, 10.0, 0.1, 4) {
            c.update(Datum::Num(x));
            d.update(Datum::Num(x));
        }
        same(&c, &d);
    }
}

#[test]
fn merge_equals_concatenation_with_event_time() {
    let raw = random_walk(3_000, 10.0, 0.1, 5);
    // In event-time order, 0.7 s apart (often two items per second) with a 5 s gap every 50 items.
    let times: Vec<i64> = (0..3_000).map(|i| i * 700 + (i / 50) * 5_000).collect();
    let mut whole = Dft::new(1.0, 20, 100, 4).unwrap();
    for (x, t) in raw.iter().zip(&times) {
        whole.update_at(Datum::Num(*x), *t);
    }
    for cut in [1, 2, 3, 49, 50, 51, 100, 1_501, 2_999] {
        let (mut a, mut b) = (Dft::new(1.0, 20, 100, 4).unwrap(), Dft::new(1.0, 20, 100, 4).unwrap());
        for i in 0..3_000 {
            let s = if i < cut { &mut a } else { &mut b };
            s.update_at(Datum::Num(raw[i]), times[i]);
        }
        a.merge(&b).unwrap();
        same(&a, &whole);
    }
}

#[test]
fn incompatible_merges_are_errors() {
    let mut a = Dft::new(1.0, 20, 100, 4).unwrap();
    assert!(matches!(a.merge(&Dft::new(2.0, 20, 100, 4).unwrap()), Err(SynopsisError::Incompatible { .. })));
    assert!(matches!(a.merge(&Dft::new(1.0, 10, 100, 4).unwrap()), Err(SynopsisError::Incompatible { .. })));
    assert!(matches!(a.merge(&saams::kll::Kll::new(200).unwrap()), Err(SynopsisError::Incompatible { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Any split into three consecutive parts, merged left-to-right or right-first
    /// (associativity), equals feeding everything in order.
    #[test]
    fn merge_is_associative_concatenation(values in proptest::collection::vec(-1e3f64..1e3, 0..600),
                                          c1 in 0usize..600, c2 in 0usize..600) {
        let (c1, c2) = (c1.min(values.len()), c2.min(values.len()));
        let (lo, hi) = (c1.min(c2), c1.max(c2));
        let build = |part: &[f64]| {
            let mut s = Dft::new(1.0, 8, 64, 3).unwrap();
            part.iter().for_each(|x| s.update(Datum::Num(*x)));
            s
        };
        let whole = build(&values);
        let (a, b, c) = (build(&values[..lo]), build(&values[lo..hi]), build(&values[hi..]));
        let mut left = a.clone();
        left.merge(&b).unwrap();
        left.merge(&c).unwrap();
        let mut bc = b.clone();
        bc.merge(&c).unwrap();
        let mut right = a.clone();
        right.merge(&bc).unwrap();
        prop_assert_eq!(left.encode(), whole.encode());
        prop_assert_eq!(right.encode(), whole.encode());
        for (x, y) in right.coefficients().iter().zip(whole.coefficients()) {
            prop_assert!((x.0 - y.0).abs() <= 1e-9 && (x.1 - y.1).abs() <= 1e-9);
        }
    }
}
