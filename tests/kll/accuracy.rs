use saams::kll::{KLL_CONFIDENCE, Kll};
use saams::{Datum, Query, Synopsis};

use crate::common;

/// Exact inclusive rank of `x` in sorted data.
fn exact_rank(sorted: &[f64], x: f64) -> f64 {
    sorted.partition_point(|v| *v <= x) as f64 / sorted.len() as f64
}

/// Checks quantiles and ranks against exact answers; returns (fraction of quantile intervals
/// holding the true quantile, max rank error observed).
fn check(values: &[f64], k: u64) -> (f64, f64) {
    let mut s = Kll::new(k).unwrap();
    for v in values {
        s.update(Datum::Num(*v));
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let eps = s.normalized_rank_error();
    let (mut held, mut total, mut max_err) = (0, 0, 0.0f64);
    for i in 1..100 {
        let q = f64::from(i) / 100.0;
        let e = s.estimate(&Query::Quantile(q)).unwrap();
        let v = e.as_f64().unwrap();
        assert!(e.lower <= v && v <= e.upper);
        // The returned value's true rank interval [rank(<v), rank(≤v)] must come within ε of q.
        let lo = sorted.partition_point(|x| *x < v) as f64 / sorted.len() as f64;
        let hi = exact_rank(&sorted, v);
        let err = if q < lo {
            lo - q
        } else if q > hi {
            q - hi
        } else {
            0.0
        };
        max_err = max_err.max(err);
        let truth = sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
        total += 1;
        if e.lower <= truth && truth <= e.upper {
            held += 1;
        }
        let r = s.estimate(&Query::Rank(v)).unwrap();
        let true_r = exact_rank(&sorted, v);
        assert!((r.as_f64().unwrap() - true_r).abs() <= eps + 1e-12, "rank of {v}: {r:?} vs {true_r}");
        assert!(r.lower <= true_r + 1e-12 && true_r <= r.upper + 1e-12);
    }
    assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(values.len() as f64));
    assert!(max_err <= eps, "max rank error {max_err} > ε {eps}");
    (f64::from(held) / f64::from(total), max_err)
}

#[test]
fn zipf_quantiles_within_rank_error() {
    let values: Vec<f64> = common::zipf_stream(200_000, 1_000_000, 1.1, 42).into_iter().map(|k| k as f64).collect();
    let (held, _) = check(&values, 200);
    assert!(held >= KLL_CONFIDENCE, "{held}");
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn spy_prices_and_ais_speed_within_rank_error() {
    for values in [common::spy_prices(), common::spy_volumes(), common::ais_speed()] {
        let (held, _) = check(&values, 200);
        assert!(held >= KLL_CONFIDENCE, "{held}");
    }
}

#[test]
fn smaller_k_is_still_within_its_error() {
    let values: Vec<f64> = common::zipf_stream(100_000, 1_000_000, 1.1, 9).into_iter().map(|k| k as f64).collect();
    check(&values, 50);
}
