//! Construction, update, merge and estimation of the AMS (Fast-AMS) sketch, with the bounds
//! derived from Chebyshev's inequality per row and a binomial tail for the median.

use crate::hash::SplitMix64;
use crate::linear_hash::hash_item;
use crate::params::Params;
use crate::{Datum, Estimate, Kind, PairQuery, Query, Synopsis, SynopsisError, downcast};

/// The seed used when a request gives none, so every sketch built from the reference
/// parameters hashes alike and partials from any worker merge.
pub const DEFAULT_SEED: u64 = 0x414D_5354_5547_0007;

/// Most rows.
pub const MAX_DEPTH: u64 = 64;
/// Most counters a sketch may hold (1 GiB of `i64`).
pub const MAX_COUNTERS: u64 = 1 << 27;

/// Probability that an interval reported by [`Ams`] misses the true answer.
pub const FAILURE_PROBABILITY: f64 = 0.05;

/// AMS sketch: `depth` rows of `buckets` signed counters.
///
/// Row `i` maps a value `v` to bucket `b_i(v)` and sign `s_i(v) = ±1` and adds `s_i(v)` to
/// that counter. Guarantees, for a stream with frequency vector `f` (and `g` for a second
/// stream), each at confidence `1 − 0.05 = 0.95`, where `p(δ)` is the largest per-row failure
/// probability for which at least half of `depth` rows fail with probability at most `δ`
/// (a binomial tail; `p = δ` for one row, `p ≈ 0.22` for 10 rows and `δ = 0.05`):
/// - [`Query::F2`]: a row's `Σ_j c_j²` is unbiased with variance ≤ `2·F2²/buckets`, so with
///   `ε = √(2/(buckets·p(0.05)))` the median is within `ε·F2` of F2; reported as
///   `[F̂2/(1+ε), F̂2/(1−ε)]` (also clamped to the deterministic `[N, N²]`). For the reference
///   `[10, 10000]`, `ε ≈ 0.030`.
/// - [`Query::Count`]`(v)`: a row's `s_i(v)·c_i[b_i(v)]` is unbiased with variance ≤
///   `F2/buckets`, so the median is within `√(F2⁺/(buckets·p(0.025)))` of `f(v)`, where `F2⁺`
///   is the upper end of F2's interval at `δ = 0.025` (union bound: 0.95 overall).
/// - `estimate_pair(other, InnerProduct)`: a row's `Σ_j c_j·c′_j` is unbiased for `⟨f, g⟩`
///   with variance ≤ `2·F2(f)·F2(g)/buckets`; the median is within
///   `√(2·F2⁺(f)·F2⁺(g)/(buckets·p(0.05/3)))` (three-way union bound).
///
/// Merging adds counters, which is exact: the guarantees hold for the union unchanged.
#[derive(Clone, Debug, PartialEq)]
pub struct Ams {
    depth: usize,
    buckets: usize,
    seed: u64,
    keys: Vec<u64>,
    total: u64,
    counters: Vec<i64>,
}

/// Check the shape `(depth, buckets)`.
pub(crate) fn check_shape(depth: u64, buckets: u64) -> Result<(), SynopsisError> {
    let bad = |reason: String| SynopsisError::BadParameter { kind: Kind::Ams, reason };
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(bad(format!("depth must be in 1..={MAX_DEPTH}, got {depth}")));
    }
    if buckets < 2 {
        return Err(bad(format!("buckets must be at least 2, got {buckets}")));
    }
    if depth.saturating_mul(buckets) > MAX_COUNTERS {
        return Err(bad(format!("{depth} x {buckets} counters is more than {MAX_COUNTERS}")));
    }
    Ok(())
}

/// P[Binomial(d, p) ≥ ⌈d/2⌉]: the probability that the median of `d` rows fails when each
/// row fails independently with probability `p`.
fn median_failure(d: usize, p: f64) -> f64 {
    let need = d.div_ceil(2);
    let mut total = 0.0;
    let mut binom = 1.0f64; // C(d, j)
    for j in 0..=d {
        if j > 0 {
            binom = binom * (d - j + 1) as f64 / j as f64;
        }
        if j >= need {
            total += binom * p.powi(j as i32) * (1.0 - p).powi((d - j) as i32);
        }
    }
    total
}

/// The largest per-row failure probability `p` for which the median of `d` rows fails with
/// probability at most `delta` (bisection; `median_failure` grows with `p`).
pub fn row_failure_budget(d: usize, delta: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if median_failure(d, mid) <= delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The murmur3 64-bit finalizer: mixes the item's hash with a row's key.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { 0.5 * (values[n / 2 - 1] + values[n / 2]) }
}

impl Ams {
    /// A sketch of `depth` rows of `buckets` counters hashing with `seed` (sketches merge and
    /// pair only with equal shape and seed).
    ///
    /// ```
    /// use saams::ams::Ams;
    /// let a = Ams::new(10, 10_000, 7).unwrap();
    /// assert!((a.f2_epsilon() - 0.0302).abs() < 0.001);
    /// assert!(Ams::new(0, 10, 7).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when depth is outside 1..=64, buckets is below 2, or
    /// there would be more than 2^27 counters.
    pub fn new(depth: u64, buckets: u64, seed: u64) -> Result<Self, SynopsisError> {
        check_shape(depth, buckets)?;
        let (depth, buckets) = (depth as usize, buckets as usize);
        let mut rng = SplitMix64::new(seed);
        let keys = (0..depth).map(|_| rng.next_u64()).collect();
        Ok(Ams { depth, buckets, seed, keys, total: 0, counters: vec![0; depth * buckets] })
    }

    /// A sketch from the reference request parameters `[depth, buckets]`, or
    /// `[depth, buckets, seed]`.
    ///
    /// ```
    /// use saams::{ams::Ams, params::Params, Kind};
    /// let raw = serde_json::json!([10, 10000]);
    /// let a = Ams::from_params(&Params::new(Kind::Ams, raw.as_array().unwrap())).unwrap();
    /// assert_eq!((a.depth(), a.buckets()), (10, 10000));
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong number of parameters or values out of range.
    pub fn from_params(p: &Params<'_>) -> Result<Self, SynopsisError> {
        p.arity(2, 3)?;
        let depth = p.integer(0, "depth", 1)?;
        let buckets = p.integer(1, "buckets", 2)?;
        let seed = if p.has(2) { p.u64(2, "seed")? } else { DEFAULT_SEED };
        Self::new(depth, buckets, seed)
    }

    /// Number of rows.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Counters per row.
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Number of items summarized (N).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The counters, row-major.
    pub fn counters(&self) -> &[i64] {
        &self.counters
    }

    pub(crate) fn set_state(&mut self, total: u64, counters: Vec<i64>) {
        self.total = total;
        self.counters = counters;
    }

    /// The relative error ε of [`Query::F2`] at confidence 0.95: `√(2/(buckets·p(0.05)))`.
    pub fn f2_epsilon(&self) -> f64 {
        self.epsilon_at(FAILURE_PROBABILITY)
    }

    fn epsilon_at(&self, delta: f64) -> f64 {
        (2.0 / (self.buckets as f64 * row_failure_budget(self.depth, delta))).sqrt()
    }

    #[inline]
    fn add_hash(&mut self, h: u64) {
        let buckets = self.buckets as u128;
        self.total = self.total.wrapping_add(1);
        for (row, key) in self.counters.chunks_exact_mut(self.buckets).zip(&self.keys) {
            let x = mix(h ^ key);
            let b = ((u128::from(x) * buckets) >> 64) as usize;
            // +1 when the low bit is set, −1 otherwise.
            row[b] = row[b].wrapping_add(((x & 1) as i64) * 2 - 1);
        }
    }

    /// Each row's F2 estimate, `Σ_j c_j²`.
    fn row_f2(&self) -> Vec<f64> {
        self.counters
            .chunks_exact(self.buckets)
            .map(|row| row.iter().fold(0i128, |acc, c| acc.wrapping_add(i128::from(*c) * i128::from(*c))) as f64)
            .collect()
    }

    /// The median F2 estimate.
    ///
    /// ```
    /// use saams::{ams::Ams, Datum, Synopsis};
    /// let mut a = Ams::new(3, 64, 1).unwrap();
    /// for _ in 0..5 { a.update(Datum::Str("x")); }
    /// assert_eq!(a.f2(), 25.0); // one value: every row holds ±5 in one counter
    /// ```
    pub fn f2(&self) -> f64 {
        median(&mut self.row_f2())
    }

    /// F2 with its interval when each end may fail with total probability `delta`.
    fn f2_interval(&self, delta: f64) -> (f64, f64, f64) {
        let est = self.f2();
        let eps = self.epsilon_at(delta);
        let n = self.total as f64;
        let lower = (est / (1.0 + eps)).max(n).min(est);
        let upper = if eps < 1.0 { est / (1.0 - eps) } else { f64::MAX };
        (est, lower, upper.min(n * n).max(est))
    }

    /// The point estimate of `item`'s count (median over rows of sign × counter).
    fn count_estimate(&self, h: u64) -> f64 {
        let buckets = self.buckets as u128;
        let mut rows: Vec<f64> = self
            .counters
            .chunks_exact(self.buckets)
            .zip(&self.keys)
            .map(|(row, key)| {
                let x = mix(h ^ key);
                let b = ((u128::from(x) * buckets) >> 64) as usize;
                row[b].wrapping_mul(((x & 1) as i64) * 2 - 1) as f64
            })
            .collect();
        median(&mut rows)
    }

    /// `other` as an AMS sketch of the same shape and seed, or why not.
    fn compatible<'a>(&self, other: &'a dyn Synopsis) -> Result<&'a Ams, SynopsisError> {
        let other = downcast::<Ams>(Kind::Ams, other)?;
        let same = self.depth == other.depth && self.buckets == other.buckets && self.seed == other.seed;
        SynopsisError::unless_compatible(Kind::Ams, same, || {
            format!(
                "shape/seed differ: {}x{} seed {} vs {}x{} seed {}",
                self.depth, self.buckets, self.seed, other.depth, other.buckets, other.seed
            )
        })?;
        Ok(other)
    }
}

impl Synopsis for Ams {
    fn kind(&self) -> Kind {
        Kind::Ams
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        self.add_hash(hash_item(item, self.seed));
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = self.compatible(other)?;
        self.total = self.total.wrapping_add(other.total);
        for (a, b) in self.counters.iter_mut().zip(&other.counters) {
            *a = a.wrapping_add(*b);
        }
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::F2 => {
                let (est, lower, upper) = self.f2_interval(FAILURE_PROBABILITY);
                Ok(Estimate::number(est, lower, upper, 1.0 - FAILURE_PROBABILITY))
            }
            Query::Count(v) => {
                let delta = FAILURE_PROBABILITY / 2.0;
                let (_, _, f2_upper) = self.f2_interval(delta);
                let n = self.total as f64;
                let est = self.count_estimate(hash_item(v.as_datum(), self.seed)).clamp(0.0, n);
                let slack = (f2_upper / (self.buckets as f64 * row_failure_budget(self.depth, delta))).sqrt();
                Ok(Estimate::number(est, (est - slack).max(0.0), (est + slack).min(n), 1.0 - FAILURE_PROBABILITY))
            }
            Query::Total => {
                let n = self.total as f64;
                Ok(Estimate::number(n, n, n, 1.0))
            }
            other => Err(SynopsisError::UnsupportedQuery { kind: Kind::Ams, query: format!("{other:?}") }),
        }
    }

    fn estimate_pair(&self, other: &dyn Synopsis, query: &PairQuery) -> Result<Estimate, SynopsisError> {
        if *query != PairQuery::InnerProduct {
            return Err(SynopsisError::UnsupportedQuery { kind: Kind::Ams, query: format!("{query:?}") });
        }
        let other = self.compatible(other)?;
        let mut rows: Vec<f64> = self
            .counters
            .chunks_exact(self.buckets)
            .zip(other.counters.chunks_exact(self.buckets))
            .map(|(a, b)| {
                a.iter().zip(b).fold(0i128, |acc, (x, y)| acc.wrapping_add(i128::from(*x) * i128::from(*y))) as f64
            })
            .collect();
        let max = self.total as f64 * other.total as f64;
        let est = median(&mut rows).clamp(0.0, max);
        let delta = FAILURE_PROBABILITY / 3.0;
        let (_, _, fa) = self.f2_interval(delta);
        let (_, _, fb) = other.f2_interval(delta);
        let slack = (2.0 * fa * fb / (self.buckets as f64 * row_failure_budget(self.depth, delta))).sqrt();
        Ok(Estimate::number(est, (est - slack).max(0.0), (est + slack).min(max), 1.0 - FAILURE_PROBABILITY))
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.counters.capacity() * std::mem::size_of::<i64>()
            + self.keys.capacity() * std::mem::size_of::<u64>()
    }
}
