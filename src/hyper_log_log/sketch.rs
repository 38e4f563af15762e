//! Construction, update, merge and estimation of HyperLogLog.

use crate::linear_hash::hash_item;
use crate::params::Params;
use crate::{Datum, Estimate, Kind, Query, Synopsis, SynopsisError, downcast};

/// The seed used when a request gives none: every HyperLogLog built from the reference
/// parameters hashes alike, so partials from any worker merge.
pub const DEFAULT_SEED: u64 = 0x4859_5045_524C_4C02;

/// Smallest supported precision (16 registers).
pub const MIN_PRECISION: u8 = 4;
/// Largest supported precision (1 048 576 registers, 1 MiB): the reference requests ask for
/// rsd 0.002, which needs 2^19.
pub const MAX_PRECISION: u8 = 20;

/// The standard error factor of HyperLogLog: relative standard error ≈ `1.04/√m`.
const RSD_FACTOR: f64 = 1.04;

/// HyperLogLog sketch with `m = 2^p` one-byte registers.
///
/// Guarantee: the estimate of the number of distinct values `n` has a relative standard
/// error of about `σ = 1.04/√m`, roughly normally distributed, across the whole range of `n`
/// (smaller for `n` well below `m`). [`Query::Distinct`] reports `[n̂(1 − 2σ), n̂(1 + 2σ)]`,
/// a two-sigma interval, at confidence 0.95; the lower end is raised to the number of
/// non-empty registers, a deterministic lower bound on `n`. Merging (register-wise maximum) is
/// exact: the merged registers equal those of one sketch fed the union, so the guarantee
/// holds for the union unchanged.
///
/// `m` is the smallest power of two with `1.04/√m ≤ rsd` (precision `p` in 4..=20).
#[derive(Clone, Debug, PartialEq)]
pub struct HyperLogLog {
    rsd: f64,
    seed: u64,
    p: u8,
    registers: Vec<u8>,
    /// `histogram[r]` = number of registers holding `r`, kept up to date on every register
    /// change so an estimate costs O(64) instead of a scan of all `m` registers (the engine
    /// answers continuous distinct-count queries at every window close).
    histogram: Vec<u32>,
}

/// The precision for a target relative standard error.
pub(crate) fn precision_for(rsd: f64) -> Result<u8, SynopsisError> {
    SynopsisError::unless_fraction(Kind::HyperLogLog, "rsd", rsd)?;
    for p in MIN_PRECISION..=MAX_PRECISION {
        if RSD_FACTOR / f64::from(1u32 << p).sqrt() <= rsd {
            return Ok(p);
        }
    }
    Err(SynopsisError::BadParameter {
        kind: Kind::HyperLogLog,
        reason: format!(
            "rsd {rsd} needs more than 2^{MAX_PRECISION} registers (smallest supported rsd is {:.5})",
            RSD_FACTOR / f64::from(1u32 << MAX_PRECISION).sqrt()
        ),
    })
}

impl HyperLogLog {
    /// A sketch whose relative standard error is at most `rsd` (precision raised to the
    /// minimum, 4, when `rsd` asks for less), with the default seed.
    ///
    /// ```
    /// use saams::hyper_log_log::HyperLogLog;
    /// assert_eq!(HyperLogLog::with_rsd(0.02).unwrap().precision(), 12);
    /// assert!(HyperLogLog::with_rsd(0.001).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `rsd` is outside (0, 1) or would need more than
    /// 2^20 registers.
    pub fn with_rsd(rsd: f64) -> Result<Self, SynopsisError> {
        Self::with_rsd_seed(rsd, DEFAULT_SEED)
    }

    /// As [`HyperLogLog::with_rsd`] with an explicit hash seed (sketches merge only with
    /// equal seeds).
    ///
    /// # Errors
    /// As [`HyperLogLog::with_rsd`].
    pub fn with_rsd_seed(rsd: f64, seed: u64) -> Result<Self, SynopsisError> {
        let p = precision_for(rsd)?;
        let mut histogram = vec![0u32; usize::from(65 - p) + 1];
        histogram[0] = 1 << p;
        Ok(HyperLogLog { rsd, seed, p, registers: vec![0; 1 << p], histogram })
    }

    /// A sketch from the reference request parameters `[rsd]`, or `[rsd, seed]`.
    ///
    /// ```
    /// use saams::{hyper_log_log::HyperLogLog, params::Params, Kind};
    /// let raw = serde_json::json!([0.02]);
    /// let h = HyperLogLog::from_params(&Params::new(Kind::HyperLogLog, raw.as_array().unwrap())).unwrap();
    /// assert_eq!(h.registers().len(), 4096);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong number of parameters or values out of range.
    pub fn from_params(p: &Params<'_>) -> Result<Self, SynopsisError> {
        p.arity(1, 2)?;
        let rsd = p.fraction(0, "rsd")?;
        let seed = if p.has(1) { p.u64(1, "seed")? } else { DEFAULT_SEED };
        Self::with_rsd_seed(rsd, seed)
    }

    /// The precision `p` (`m = 2^p` registers).
    pub fn precision(&self) -> u8 {
        self.p
    }

    /// The requested relative standard error.
    pub fn rsd(&self) -> f64 {
        self.rsd
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The registers (each the maximum rank seen, 0 for none).
    pub fn registers(&self) -> &[u8] {
        &self.registers
    }

    /// Largest value a register can hold: `64 − p + 1`.
    pub fn max_register(&self) -> u8 {
        65 - self.p
    }

    /// The relative standard error the sketch achieves, `1.04/√m`.
    pub fn standard_error(&self) -> f64 {
        RSD_FACTOR / (self.registers.len() as f64).sqrt()
    }

    pub(crate) fn set_registers(&mut self, registers: Vec<u8>) {
        self.registers = registers;
        self.rebuild_histogram();
    }

    fn rebuild_histogram(&mut self) {
        let top = self.histogram.len() - 1;
        self.histogram.iter_mut().for_each(|c| *c = 0);
        for r in &self.registers {
            self.histogram[usize::from(*r).min(top)] += 1;
        }
    }

    #[inline]
    fn add_hash(&mut self, h: u64) {
        let p = u32::from(self.p);
        let idx = (h >> (64 - p)) as usize;
        // Rank of the remaining 64 − p bits: position of the first 1, or 65 − p when all are 0.
        let rank = (((h << p) | (1 << (p - 1))).leading_zeros() + 1) as u8;
        if let Some(r) = self.registers.get_mut(idx)
            && rank > *r
        {
            // Ranks never exceed 65 − p, the histogram's last index.
            self.histogram[usize::from(*r)] -= 1;
            self.histogram[usize::from(rank)] += 1;
            *r = rank;
        }
    }

    /// The estimated number of distinct values (Ertl's improved estimator).
    ///
    /// ```
    /// use saams::{hyper_log_log::HyperLogLog, Datum, Synopsis};
    /// let mut h = HyperLogLog::with_rsd(0.05).unwrap();
    /// assert_eq!(h.distinct(), 0.0);
    /// for s in ["a", "b", "c", "a"] { h.update(Datum::Str(s)); }
    /// assert!((h.distinct() - 3.0).abs() < 0.1);
    /// ```
    pub fn distinct(&self) -> f64 {
        let q = 64 - usize::from(self.p);
        let hist = &self.histogram;
        let m = self.registers.len() as f64;
        let mut z = m * tau(1.0 - f64::from(hist[q + 1]) / m);
        for k in (1..=q).rev() {
            z = 0.5 * (z + f64::from(hist[k]));
        }
        z += m * sigma(f64::from(hist[0]) / m);
        if z.is_infinite() {
            return 0.0;
        }
        m * m / (2.0 * std::f64::consts::LN_2 * z)
    }

    /// `other` as a HyperLogLog of the same precision and seed, or why not.
    fn compatible<'a>(&self, other: &'a dyn Synopsis) -> Result<&'a HyperLogLog, SynopsisError> {
        let other = downcast::<HyperLogLog>(Kind::HyperLogLog, other)?;
        SynopsisError::unless_compatible(Kind::HyperLogLog, self.p == other.p && self.seed == other.seed, || {
            format!("precision/seed differ: p {} seed {} vs p {} seed {}", self.p, self.seed, other.p, other.seed)
        })?;
        Ok(other)
    }
}

/// Ertl's σ(x) = x + Σ_{k≥1} x^(2^k) 2^(k−1), the correction for empty registers.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_old = z;
        z += x * y;
        y += y;
        if z_old == z {
            return z;
        }
    }
}

/// Ertl's τ(x) = (1 − x − Σ_{k≥1} (1 − x^(2^−k))² 2^−k) / 3, the correction for saturated
/// registers.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_old = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if z_old == z {
            return z / 3.0;
        }
    }
}

impl Synopsis for HyperLogLog {
    fn kind(&self) -> Kind {
        Kind::HyperLogLog
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        self.add_hash(hash_item(item, self.seed));
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = self.compatible(other)?;
        for (a, b) in self.registers.iter_mut().zip(&other.registers) {
            *a = (*a).max(*b);
        }
        self.rebuild_histogram();
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::Distinct => {
                let est = self.distinct();
                let sigma = self.standard_error();
                let nonzero = f64::from(self.registers.len() as u32 - self.histogram[0]);
                let lower = (est * (1.0 - 2.0 * sigma)).max(nonzero).min(est);
                Ok(Estimate::number(est, lower, est * (1.0 + 2.0 * sigma), 0.95))
            }
            other => Err(SynopsisError::UnsupportedQuery { kind: Kind::HyperLogLog, query: format!("{other:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.registers.capacity() + 4 * self.histogram.capacity()
    }
}
