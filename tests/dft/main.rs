//! DFT (kind 4) tests: update against a naive DFT, correlation against exact Pearson, merge as
//! concatenation, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use saams::hash::SplitMix64;

/// Naive normalized unitary DFT coefficients 1..=c of `points`.
pub fn naive(points: &[f64], c: usize) -> Vec<(f64, f64)> {
    let m = points.len();
    let mean = points.iter().sum::<f64>() / m as f64;
    let norm = points.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>().sqrt();
    (1..=c)
        .map(|f| {
            let (mut re, mut im) = (0.0, 0.0);
            for (i, x) in points.iter().enumerate() {
                let (s, co) = (2.0 * std::f64::consts::PI * ((f * i) % m) as f64 / m as f64).sin_cos();
                re += (x - mean) / norm * co;
                im -= (x - mean) / norm * s;
            }
            (re / (m as f64).sqrt(), im / (m as f64).sqrt())
        })
        .collect()
}

/// Exact Pearson correlation.
pub fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    sxy / (sxx * syy).sqrt()
}

/// A seeded Gaussian random walk starting at `start`.
pub fn random_walk(n: usize, start: f64, step: f64, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    let mut x = start;
    (0..n)
        .map(|_| {
            x += step * rng.next_gaussian();
            x
        })
        .collect()
}
