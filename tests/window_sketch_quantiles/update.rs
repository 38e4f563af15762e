use saams::{Datum, SynopsisError};

use super::*;

#[test]
fn layout_meets_the_bound_and_saves_memory() {
    for (eps, w) in [(0.01, 40_000u64), (0.001, 1_000_000), (0.1, 50), (0.01, 10), (0.05, 1), (0.01, 1 << 30)] {
        let s = WindowSketchQuantiles::with_accuracy(eps, w).unwrap();
        let (b, k) = s.layout();
        assert!(b >= 1 && b <= w && k >= 1, "{eps} {w}: {b} {k}");
        assert!(s.max_rank_error() <= eps * w as f64, "{eps} {w}: bound {}", s.max_rank_error());
    }
    let s = WindowSketchQuantiles::with_accuracy(0.01, 40_000).unwrap();
    let (b, k) = s.layout();
    assert!(k >= 4, "block {b}, spacing {k}");
}

#[test]
fn bound_holds_as_the_window_slides() {
    let eps = 0.01;
    let w = 4000u64;
    let xs = zipf(30_000, 2);
    let mut s = WindowSketchQuantiles::with_accuracy(eps, w).unwrap();
    for (i, x) in xs.iter().enumerate() {
        s.insert(*x);
        let n = i + 1;
        if n % 1237 == 0 || [1, 2, 3999, 4000, 4001].contains(&n) {
            let start = n.saturating_sub(w as usize);
            check_window(&s, &xs[start..n], eps * w as f64);
        }
    }
    // 1/ε² > W here: the best layout stores (nearly) every item, in few blocks.
    assert!(s.stored_values() <= (w + s.layout().0) as usize, "{} values stored", s.stored_values());
    assert!(s.layout().0 >= 50, "blocks of {}", s.layout().0);
}

#[test]
fn old_items_leave_the_window() {
    let mut s = WindowSketchQuantiles::with_accuracy(0.01, 1000).unwrap();
    for _ in 0..5000 {
        s.update(Datum::Num(1e9));
    }
    for i in 0..3000 {
        s.update(Datum::Num(f64::from(i)));
    }
    s.update(Datum::Str("ignored"));
    s.update(Datum::Num(f64::NAN));
    assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(1000.0));
    let e = s.estimate(&Query::Quantile(1.0)).unwrap();
    assert!((e.as_f64().unwrap() - 2999.0).abs() <= 10.0 && e.upper == 2999.0);
    assert_eq!(s.estimate(&Query::Rank(1e8)).unwrap().as_f64(), Some(1.0));
    assert!(s.stored_values() < 1100);
}

#[test]
fn errors_for_bad_queries_and_parameters() {
    let mut s = WindowSketchQuantiles::with_accuracy(0.01, 100).unwrap();
    assert!(matches!(s.estimate(&Query::Quantile(0.5)), Err(SynopsisError::NotYet { .. })));
    assert!(matches!(s.estimate(&Query::Rank(0.5)), Err(SynopsisError::NotYet { .. })));
    s.insert(1.0);
    assert!(matches!(s.estimate(&Query::Quantile(1.5)), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(s.estimate(&Query::Rank(f64::NAN)), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(s.estimate(&Query::F2), Err(SynopsisError::UnsupportedQuery { .. })));
    assert!(WindowSketchQuantiles::with_accuracy(0.0, 100).is_err());
    assert!(WindowSketchQuantiles::with_accuracy(0.1, 0).is_err());
    assert!(WindowSketchQuantiles::with_accuracy(0.1, u64::MAX).is_err());
}

#[test]
fn small_windows_and_budgets_below_one_item_are_exact_where_they_must_be() {
    // εW < 1 forces an exact layout; the bound is on integer ranks, so it must round up.
    let mut rng = saams::hash::SplitMix64::new(19);
    let xs: Vec<f64> = (0..300).map(|_| (rng.next_u64() % 1000) as f64 - 500.0).collect();
    for w in 1..60u64 {
        for eps in [0.05, 0.2] {
            let s = build(eps, w, &xs);
            assert!(s.max_rank_error() <= eps * w as f64);
            check_window(&s, &xs[xs.len() - w as usize..], eps * w as f64);
        }
    }
}
