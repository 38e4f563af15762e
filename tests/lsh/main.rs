//! LSH (kind 9) tests: signatures, similarity bounds against exact cosine, merge as
//! concatenation, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use saams::Synopsis;
use saams::lsh::Lsh;

/// Cosine similarity of two mean-centered vectors (= their Pearson correlation).
pub fn centered_cosine(x: &[f64], y: &[f64]) -> f64 {
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

/// A synopsis fed with `values`.
pub fn fed(values: &[f64], window: usize, dims: usize, bands: usize, seed: u64) -> Lsh {
    let mut s = Lsh::new(window, dims, bands, seed).unwrap();
    values.iter().for_each(|x| s.update(saams::Datum::Num(*x)));
    s
}
