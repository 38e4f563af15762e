//! Construction, update, merge and estimates of the KLL wrapper.

use std::any::Any;

use datasketches::common::SearchCriteria;
use datasketches::kll::{KllFloat, KllSketch};

use crate::params::Params;
use crate::{Datum, Estimate, Kind, Query, Synopsis, SynopsisError, downcast};

/// The confidence DataSketches states for KLL's normalized rank error.
pub const KLL_CONFIDENCE: f64 = 0.99;
/// Default `k` (DataSketches' default).
pub const DEFAULT_K: u16 = 200;
const MIN_K: u16 = 8;

/// KLL quantiles sketch over numeric values.
///
/// Guarantee: with probability [`KLL_CONFIDENCE`], every rank the sketch reports is within
/// `ε = normalized_rank_error()` of the true normalized rank (DataSketches' single-sided error
/// for `k`, e.g. ε ≈ 0.0133 at k = 200). The guarantee holds unchanged after merging sketches
/// of the same `k` (merging different `k` is refused). `Quantile(q)` returns the sketch's
/// value at rank `q` with `[lower, upper]` = the values at ranks `q ∓ ε`; `Rank(x)` returns the
/// inclusive rank (fraction of items ≤ x) with `[r − ε, r + ε]`; `Total` is exact.
///
/// Text items and NaN are ignored: KLL orders numbers, and the library rejects NaN.
#[derive(Clone, Debug)]
pub struct Kll {
    pub(crate) sketch: KllSketch<KllFloat<f64>>,
}

impl Kll {
    /// A sketch with parameter `k` (8..=65535; larger k = smaller error, more space).
    ///
    /// ```
    /// use saams::kll::Kll;
    /// assert_eq!(Kll::new(200).unwrap().k(), 200);
    /// assert!(Kll::new(4).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `k` is outside 8..=65535.
    pub fn new(k: u64) -> Result<Self, SynopsisError> {
        if !(u64::from(MIN_K)..=u64::from(u16::MAX)).contains(&k) {
            return Err(bad(format!("k must be in {MIN_K}..=65535, got {k}")));
        }
        let sketch = KllSketch::new(k as u16).map_err(|e| bad(e.to_string()))?;
        Ok(Kll { sketch })
    }

    /// The smallest sketch whose normalized rank error is at most `epsilon`.
    ///
    /// ```
    /// use saams::kll::Kll;
    /// let s = Kll::with_rank_error(0.01).unwrap();
    /// assert!(s.normalized_rank_error() <= 0.01);
    /// assert!(Kll::new(u64::from(s.k()) - 1).unwrap().normalized_rank_error() > 0.01);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `epsilon` is not in (0, 1) or needs k > 65535.
    pub fn with_rank_error(epsilon: f64) -> Result<Self, SynopsisError> {
        if !(epsilon > 0.0 && epsilon < 1.0) {
            return Err(bad(format!("rank error must be in (0, 1), got {epsilon}")));
        }
        let err_of = |k: u16| KllSketch::<KllFloat<f64>>::new(k).map(|s| s.normalized_rank_error()).unwrap_or(1.0);
        if err_of(u16::MAX) > epsilon {
            return Err(bad(format!("rank error {epsilon} needs k > 65535")));
        }
        let (mut lo, mut hi) = (MIN_K, u16::MAX);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if err_of(mid) <= epsilon { hi = mid } else { lo = mid + 1 }
        }
        Kll::new(u64::from(lo))
    }

    /// Build from the reference parameters `[k]` (k optional, default 200).
    ///
    /// ```
    /// use saams::{kll::Kll, params::Params, Kind};
    /// let raw = serde_json::json!([100]);
    /// assert_eq!(Kll::from_params(&Params::new(Kind::Kll, raw.as_array().unwrap())).unwrap().k(), 100);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for more than one parameter or k out of range.
    pub fn from_params(p: &Params) -> Result<Self, SynopsisError> {
        p.arity(0, 1)?;
        let k = if p.has(0) { p.integer(0, "k", u64::from(MIN_K))? } else { u64::from(DEFAULT_K) };
        Kll::new(k)
    }

    /// The sketch's `k`.
    pub fn k(&self) -> u16 {
        self.sketch.k()
    }

    /// Number of items summarized.
    pub fn n(&self) -> u64 {
        self.sketch.n()
    }

    /// The normalized (single-sided) rank error ε at [`KLL_CONFIDENCE`].
    pub fn normalized_rank_error(&self) -> f64 {
        self.sketch.normalized_rank_error()
    }

    /// The wrapped DataSketches sketch (read-only), for callers that need its other queries
    /// (CDF, PMF).
    pub fn inner(&self) -> &KllSketch<KllFloat<f64>> {
        &self.sketch
    }

    /// Values at `ranks` (each clamped into [0, 1]) from one sorted view of the sketch.
    fn quantiles_at(&self, ranks: [f64; 3]) -> Result<[f64; 3], SynopsisError> {
        match self.sketch.quantiles(&ranks.map(|r| r.clamp(0.0, 1.0)), SearchCriteria::Inclusive) {
            Ok(Some(v)) if v.len() == 3 => Ok([v[0].into_inner(), v[1].into_inner(), v[2].into_inner()]),
            Ok(_) => Err(self.empty()),
            Err(e) => Err(SynopsisError::BadQuery { kind: Kind::Kll, reason: e.to_string() }),
        }
    }

    #[inline(always)]
    fn update_one(&mut self, item: Datum<'_>) {
        // The library asserts (panics) at n = u64::MAX; update must never panic.
        if let Datum::Num(x) = item
            && let Ok(v) = KllFloat::<f64>::new(x)
            && self.sketch.n() < u64::MAX
        {
            self.sketch.update(v);
        }
    }

    fn empty(&self) -> SynopsisError {
        SynopsisError::BadQuery { kind: Kind::Kll, reason: "the sketch is empty: no quantiles yet".into() }
    }
}

fn bad(reason: String) -> SynopsisError {
    SynopsisError::BadParameter { kind: Kind::Kll, reason }
}

impl Synopsis for Kll {
    fn kind(&self) -> Kind {
        Kind::Kll
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        self.update_one(item);
    }

    /// One loop over the batch with the library's update inlined into it, instead of one
    /// dynamic call per item (the operators feed batches).
    fn update_batch(&mut self, items: &[Datum<'_>]) {
        for item in items {
            self.update_one(*item);
        }
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<Kll>(Kind::Kll, other)?;
        if other.k() != self.k() {
            return Err(SynopsisError::Incompatible {
                kind: Kind::Kll,
                reason: format!("k differs: {} vs {}", self.k(), other.k()),
            });
        }
        self.sketch
            .merge(&other.sketch)
            .map_err(|e| SynopsisError::Incompatible { kind: Kind::Kll, reason: e.to_string() })
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        let eps = self.normalized_rank_error();
        match query {
            Query::Quantile(q) => {
                if !(0.0..=1.0).contains(q) {
                    return Err(SynopsisError::BadQuery {
                        kind: Kind::Kll,
                        reason: format!("quantile rank must be in [0, 1], got {q}"),
                    });
                }
                let [value, lower, upper] = self.quantiles_at([*q, q - eps, q + eps])?;
                Ok(Estimate::number(value, lower, upper, KLL_CONFIDENCE))
            }
            Query::Rank(x) => {
                let item = KllFloat::<f64>::new(*x).map_err(|_| SynopsisError::BadQuery {
                    kind: Kind::Kll,
                    reason: format!("rank of {x}: not a number"),
                })?;
                let r = self.sketch.rank(&item, SearchCriteria::Inclusive).ok_or_else(|| self.empty())?;
                Ok(Estimate::number(r, (r - eps).max(0.0), (r + eps).min(1.0), KLL_CONFIDENCE))
            }
            Query::Total => {
                let n = self.n() as f64;
                Ok(Estimate::number(n, n, n, 1.0))
            }
            q => Err(SynopsisError::UnsupportedQuery { kind: Kind::Kll, query: format!("{q:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        // Retained items (8 bytes each) plus one vector header per level; the level count grows
        // as log2(n / k).
        let levels = (64 - (self.n() / u64::from(self.k())).max(1).leading_zeros()) as usize;
        std::mem::size_of::<Self>() + self.sketch.num_retained() * 8 + levels * std::mem::size_of::<Vec<f64>>()
    }

    fn encode(&self) -> Vec<u8> {
        super::codec::encode(self)
    }

    fn clone_box(&self) -> Box<dyn Synopsis> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
