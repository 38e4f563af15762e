use saams::{Datum, Query, Synopsis, SynopsisError};

use super::*;

#[test]
fn small_streams_are_exact() {
    let mut gk = GkQuantiles::with_epsilon(0.01).unwrap();
    for x in [5.0, 1.0, 3.0, 2.0, 4.0, -0.0] {
        gk.update(Datum::Num(x));
    }
    gk.update(Datum::Str("ignored"));
    gk.update(Datum::Num(f64::NAN));
    assert_eq!(gk.total(), 6);
    for (q, want) in [(0.0, 0.0), (0.5, 2.0), (1.0, 5.0), (0.51, 3.0)] {
        let e = gk.estimate(&Query::Quantile(q)).unwrap();
        assert_eq!((e.as_f64().unwrap(), e.lower, e.upper), (want, want, want), "q = {q}");
    }
    let e = gk.estimate(&Query::Rank(3.0)).unwrap();
    assert_eq!((e.as_f64().unwrap(), e.lower, e.upper), (4.0 / 6.0, 4.0 / 6.0, 4.0 / 6.0));
    assert_eq!(gk.estimate(&Query::Rank(-1.0)).unwrap().upper, 0.0);
}

#[test]
fn bound_holds_at_every_point_of_a_stream() {
    let xs = zipf(20_000, 7);
    let mut gk = GkQuantiles::with_epsilon(0.02).unwrap();
    for (i, x) in xs.iter().enumerate() {
        gk.insert(*x);
        if [1, 2, 100, 255, 256, 257, 1000, 5000, 19_999].contains(&i) {
            check_ranks(&gk, &xs[..=i], 0.02 * (i + 1) as f64);
        }
    }
}

#[test]
fn errors_for_bad_queries_and_parameters() {
    let mut gk = GkQuantiles::with_epsilon(0.01).unwrap();
    assert!(matches!(gk.estimate(&Query::Quantile(0.5)), Err(SynopsisError::NotYet { .. })));
    gk.insert(1.0);
    for q in [-0.1, 1.1, f64::NAN] {
        assert!(matches!(gk.estimate(&Query::Quantile(q)), Err(SynopsisError::BadQuery { .. })));
    }
    assert!(matches!(gk.estimate(&Query::Rank(f64::NAN)), Err(SynopsisError::BadQuery { .. })));
    assert!(matches!(gk.estimate(&Query::Distinct), Err(SynopsisError::UnsupportedQuery { .. })));
    for bad in [0.0, 1.0, -1.0, f64::NAN] {
        assert!(matches!(GkQuantiles::with_epsilon(bad), Err(SynopsisError::BadParameter { .. })));
    }
}

#[test]
fn size_stays_small_on_a_long_stream() {
    let gk = build(0.01, &zipf(1_000_000, 3));
    assert!(gk.size_bytes() < 16 * 1024, "{} bytes, {} tuples", gk.size_bytes(), gk.tuples());
}
