//! Construction, update, merge and estimates of the CPC wrapper.

use datasketches::common::NumStdDev;
use datasketches::cpc::{CpcSketch, CpcUnion};

use crate::hash::canonical_bits;
use crate::params::Params;
use crate::{Datum, Estimate, Kind, Query, Synopsis, SynopsisError, downcast};

/// DataSketches' default update seed (9001): sketches built with it are compatible with the
/// other DataSketches libraries' defaults.
pub const DEFAULT_SEED: u64 = 9001;
/// Confidence of the ±2 standard deviation bounds the estimate reports.
pub const CPC_CONFIDENCE: f64 = 0.9545;
const MIN_LG_K: u64 = 4;
const MAX_LG_K: u64 = 26;

/// CPC distinct-count sketch.
///
/// Guarantee: `Distinct` returns the library's estimate with its 2-standard-deviation bounds,
/// so the true distinct count lies in `[lower, upper]` with probability ≈ [`CPC_CONFIDENCE`].
/// The relative standard error is ≈ 0.59/√K for a sketch that was only updated (HIP
/// estimator) and ≈ 0.69/√K once it has been merged (ICON estimator); the bounds widen
/// accordingly, so they remain valid after merges.
///
/// Items are hashed by the library (MurmurHash3 under the seed): numbers by their canonical
/// bit pattern (`-0.0` = `0.0`, one NaN), strings by their bytes; a number and a string never
/// collide by construction (a hashed `str` ends with the byte 0xFF, which no 8-byte number
/// image of a valid UTF-8 string can imitate).
#[derive(Clone, Debug)]
pub struct Cpc {
    pub(crate) sketch: CpcSketch,
    pub(crate) seed: u64,
}

impl Cpc {
    /// A sketch with `K = 2^lg_k` (4 ≤ lg_k ≤ 26) and DataSketches' default seed.
    ///
    /// ```
    /// use saams::cpc::Cpc;
    /// assert_eq!(Cpc::new(11).unwrap().lg_k(), 11);
    /// assert!(Cpc::new(3).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `lg_k` is outside 4..=26.
    pub fn new(lg_k: u64) -> Result<Self, SynopsisError> {
        Cpc::with_seed(lg_k, DEFAULT_SEED)
    }

    /// A sketch with `K = 2^lg_k` hashing under `seed` (sketches merge only with equal seeds).
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `lg_k` is outside 4..=26 or the library rejects
    /// the seed (its 16-bit seed hash is zero).
    pub fn with_seed(lg_k: u64, seed: u64) -> Result<Self, SynopsisError> {
        if !(MIN_LG_K..=MAX_LG_K).contains(&lg_k) {
            return Err(bad(format!("lgK must be in {MIN_LG_K}..=26, got {lg_k}")));
        }
        let sketch = CpcSketch::with_seed(lg_k as u8, seed).map_err(|e| bad(e.to_string()))?;
        Ok(Cpc { sketch, seed })
    }

    /// The smallest sketch whose relative standard error after merging (0.693/√K, the worse of
    /// the two estimators) is at most `rsd`.
    ///
    /// ```
    /// use saams::cpc::Cpc;
    /// assert_eq!(Cpc::with_rsd(0.02).unwrap().lg_k(), 11);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `rsd` is not in (0, 1) or needs lgK > 26.
    pub fn with_rsd(rsd: f64) -> Result<Self, SynopsisError> {
        SynopsisError::unless_fraction(Kind::Cpc, "rsd", rsd)?;
        let lg_k = (MIN_LG_K..=MAX_LG_K)
            .find(|lg| 0.693 / ((1u64 << lg) as f64).sqrt() <= rsd)
            .ok_or_else(|| bad(format!("rsd {rsd} needs lgK > 26")))?;
        Cpc::new(lg_k)
    }

    /// Build from the reference parameters `[lgK]` or `[lgK, seed]`.
    ///
    /// ```
    /// use saams::{cpc::Cpc, params::Params, Kind};
    /// let raw = serde_json::json!([12]);
    /// assert_eq!(Cpc::from_params(&Params::new(Kind::Cpc, raw.as_array().unwrap())).unwrap().lg_k(), 12);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong count or out-of-range values.
    pub fn from_params(p: &Params) -> Result<Self, SynopsisError> {
        p.arity(1, 2)?;
        let lg_k = p.integer(0, "lgK", MIN_LG_K)?;
        let seed = if p.has(1) { p.u64(1, "seed")? } else { DEFAULT_SEED };
        Cpc::with_seed(lg_k, seed)
    }

    /// `lg K`.
    pub fn lg_k(&self) -> u8 {
        self.sketch.lg_k()
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The wrapped DataSketches sketch (read-only).
    pub fn inner(&self) -> &CpcSketch {
        &self.sketch
    }

    #[inline(always)]
    fn update_one(&mut self, item: Datum<'_>) {
        match item {
            Datum::Num(x) => self.sketch.update(canonical_bits(x)),
            Datum::Str(s) => self.sketch.update(s),
        }
    }
}

fn bad(reason: String) -> SynopsisError {
    SynopsisError::BadParameter { kind: Kind::Cpc, reason }
}

impl Synopsis for Cpc {
    fn kind(&self) -> Kind {
        Kind::Cpc
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        self.update_one(item);
    }

    /// One loop over the batch with the library's hash and update inlined into it, instead of
    /// one dynamic call per item (the operators feed batches).
    fn update_batch(&mut self, items: &[Datum<'_>]) {
        for item in items {
            self.update_one(*item);
        }
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<Cpc>(Kind::Cpc, other)?;
        if other.lg_k() != self.lg_k() || other.seed != self.seed {
            return Err(SynopsisError::Incompatible {
                kind: Kind::Cpc,
                reason: format!("lgK/seed differ: {}/{} vs {}/{}", self.lg_k(), self.seed, other.lg_k(), other.seed),
            });
        }
        let incompatible =
            |e: datasketches::error::Error| SynopsisError::Incompatible { kind: Kind::Cpc, reason: e.to_string() };
        let mut union = CpcUnion::with_seed(self.lg_k(), self.seed).map_err(incompatible)?;
        union.update(&self.sketch).map_err(incompatible)?;
        union.update(&other.sketch).map_err(incompatible)?;
        self.sketch = union.to_sketch();
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::Distinct => Ok(Estimate::number(
                self.sketch.estimate(),
                self.sketch.lower_bound(NumStdDev::Two),
                self.sketch.upper_bound(NumStdDev::Two),
                CPC_CONFIDENCE,
            )),
            q => Err(SynopsisError::UnsupportedQuery { kind: Kind::Cpc, query: format!("{q:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.sketch.estimated_size()
    }
}
