use saams::hash::SplitMix64;
use saams::lsh::LSH_CONFIDENCE;
use saams::{PairQuery, Synopsis, SynopsisError};

use crate::{centered_cosine, common, fed};

/// Random window pairs with correlations spread over [−1, 1]: `y = c·x + √(1−c²)·z`.
fn pairs(count: usize, len: usize, seed: u64) -> Vec<(Vec<f64>, Vec<f64>)> {
    let mut r = SplitMix64::new(seed);
    (0..count)
        .map(|_| {
            let c = 2.0 * r.next_f64() - 1.0;
            let x: Vec<f64> = (0..len).map(|_| r.next_gaussian()).collect();
            let y = x.iter().map(|xi| c * xi + (1.0 - c * c).sqrt() * r.next_gaussian() + 5.0).collect();
            (x, y)
        })
        .collect()
}

/// Fraction of pairs whose exact cosine lies in the reported interval, and the RMS error of the
/// estimated angle fraction θ/π.
fn coverage(dims: usize, count: usize, seed: u64) -> (f64, f64) {
    let mut inside = 0;
    let mut sq = 0.0;
    for (k, (x, y)) in pairs(count, 100, seed).iter().enumerate() {
        // A few hyperplane sets: the random windows already make the pairs independent.
        let (a, b) = (fed(x, 100, dims, 1, k as u64 % 4), fed(y, 100, dims, 1, k as u64 % 4));
        let e = a.estimate_pair(&b, &PairQuery::Similarity).unwrap();
        let truth = centered_cosine(x, y);
        let v = e.as_f64().unwrap();
        assert!(e.lower <= v && v <= e.upper);
        assert_eq!(e.confidence, LSH_CONFIDENCE);
        if e.lower <= truth && truth <= e.upper {
            inside += 1;
        }
        sq += (v.clamp(-1.0, 1.0).acos() / std::f64::consts::PI - truth.acos() / std::f64::consts::PI).powi(2);
    }
    (f64::from(inside) / count as f64, (sq / count as f64).sqrt())
}

#[test]
fn similarity_bound_holds_at_its_confidence() {
    for dims in [64, 500] {
        let (inside, _) = coverage(dims, 400, dims as u64);
        assert!(inside >= LSH_CONFIDENCE, "dims {dims}: {inside}");
    }
}

#[test]
fn angle_error_shrinks_like_one_over_sqrt_dimensions() {
    // Each bit is a Bernoulli(θ/π): the RMS error of h/d is at most 1/(2√d).
    let (_, e64) = coverage(64, 300, 11);
    let (_, e1024) = coverage(1024, 300, 12);
    assert!(e64 <= 1.0 / (2.0 * 64f64.sqrt()), "{e64}");
    assert!(e1024 <= 1.0 / (2.0 * 1024f64.sqrt()), "{e1024}");
    assert!(e1024 < e64 / 2.0, "{e1024} vs {e64}");
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn real_streams_spy_price_against_volume_and_lagged_price() {
    let (p, v) = (common::spy_prices(), common::spy_volumes());
    let (mut inside, mut total) = (0, 0);
    for start in (0..200_000).step_by(4_000) {
        for (x, y) in
            [(&p[start..start + 100], &v[start..start + 100]), (&p[start..start + 100], &p[start + 50..start + 150])]
        {
            let (a, b) = (fed(x, 100, 500, 20, 1), fed(y, 100, 500, 20, 1));
            match a.estimate_pair(&b, &PairQuery::Similarity) {
                Ok(e) => {
                    let truth = centered_cosine(x, y);
                    total += 1;
                    if e.lower <= truth && truth <= e.upper {
                        inside += 1;
                    }
                }
                // Flat stretches (no trade moved the price) have no direction.
                Err(SynopsisError::BadQuery { .. }) => {
                    assert!(x.iter().all(|q| *q == x[0]) || y.iter().all(|q| *q == y[0]))
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    assert!(total >= 80);
    assert!(f64::from(inside) / f64::from(total) >= LSH_CONFIDENCE, "{inside}/{total}");
}

#[test]
fn similar_streams_share_a_band_dissimilar_ones_rarely() {
    let mut r = SplitMix64::new(99);
    let (mut close_hits, mut far_hits) = (0, 0);
    for k in 0..100 {
        let x: Vec<f64> = (0..100).map(|_| r.next_gaussian()).collect();
        let close: Vec<f64> = x.iter().map(|v| v + 0.1 * r.next_gaussian()).collect();
        let far: Vec<f64> = (0..100).map(|_| r.next_gaussian()).collect();
        let a = fed(&x, 100, 500, 20, k % 4);
        let keys = a.band_keys().unwrap();
        let shares =
            |o: &[f64]| fed(o, 100, 500, 20, k % 4).band_keys().unwrap().iter().zip(&keys).any(|(p, q)| p == q);
        close_hits += u32::from(shares(&close));
        far_hits += u32::from(shares(&far));
    }
    // corr ≈ 0.995 → θ/π ≈ 0.03, 25 rows: P(band equal) ≈ 0.47, P(candidate) ≈ 1 − 0.53^20 ≈ 1.
    // corr ≈ 0 → θ/π ≈ 0.5: P(candidate) ≈ 20 · 2^-25 ≈ 0.
    assert!(close_hits >= 95, "{close_hits}");
    assert!(far_hits <= 2, "{far_hits}");
}

#[test]
fn pair_refusals() {
    let a = fed(&[1.0, 2.0, 3.0], 3, 16, 2, 1);
    assert!(matches!(
        a.estimate_pair(&fed(&[1.0, 2.0, 3.0], 3, 16, 2, 2), &PairQuery::Similarity),
        Err(SynopsisError::Incompatible { .. })
    ));
    assert!(matches!(
        a.estimate_pair(&fed(&[1.0, 2.0], 3, 16, 2, 1), &PairQuery::Similarity),
        Err(SynopsisError::BadQuery { .. })
    ));
    assert!(matches!(
        a.estimate_pair(&fed(&[4.0; 3], 3, 16, 2, 1), &PairQuery::Similarity),
        Err(SynopsisError::BadQuery { .. })
    ));
    assert!(matches!(a.estimate_pair(&a, &PairQuery::Correlation), Err(SynopsisError::UnsupportedQuery { .. })));
    assert_eq!(a.estimate_pair(&a, &PairQuery::Similarity).unwrap().as_f64(), Some(1.0));
}
