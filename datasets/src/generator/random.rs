//! The draws the streams make from their seeded generators.

use saams::hash::SplitMix64;

/// Uniform in (0, 1]: safe to take the log of.
#[inline]
pub(super) fn open01(rng: &mut SplitMix64) -> f64 {
    1.0 - rng.next_f64()
}

/// Uniform in [lo, hi).
#[inline]
pub(super) fn uniform(rng: &mut SplitMix64, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.next_f64()
}

/// A standard normal pair (Box–Muller, both branches), so a tick costs one log/sqrt.
#[inline]
pub(super) fn gaussian_pair(rng: &mut SplitMix64) -> (f64, f64) {
    let r = (-2.0 * open01(rng).ln()).sqrt();
    let (s, c) = (std::f64::consts::TAU * rng.next_f64()).sin_cos();
    (r * c, r * s)
}

/// Round to `scale` = 10^k steps; dividing an integer by an exact power of ten gives the double
/// nearest the decimal, so values print short.
#[inline]
pub(super) fn round_to(x: f64, scale: f64) -> f64 {
    (x * scale).round() / scale
}
