//! Window, hyperplanes, signature, band keys, merge and estimates of the LSH synopsis.

use std::collections::{HashMap, VecDeque};
use std::f64::consts::PI;
use std::sync::{Arc, Mutex, OnceLock};

use crate::hash::{SplitMix64, hash_bytes};
use crate::params::Params;
use crate::{Datum, Estimate, EstimateValue, Kind, PairQuery, Query, Synopsis, SynopsisError, downcast};

/// Hyperplane seed used when the request gives none.
pub const DEFAULT_SEED: u64 = 12345;
/// Confidence of the similarity bound (Hoeffding on the Hamming distance).
pub const LSH_CONFIDENCE: f64 = 0.95;
/// Largest hyperplane matrix (dimensions × window entries, 32 MiB of f64) a synopsis may ask for.
pub const MAX_MATRIX: usize = 1 << 22;

type Planes = Arc<[f64]>;
type PlaneCache = Mutex<HashMap<(u64, usize, usize), Planes>>;

/// Parameter sets whose hyperplanes the process-wide cache keeps; beyond that the cache is
/// emptied (synopses keep their own handle, so only new synopses regenerate).
const CACHE_ENTRIES: usize = 64;

/// The hyperplanes for (seed, window, dimensions), generated once per process and shared by
/// every synopsis with those parameters.
fn planes(seed: u64, window: usize, dims: usize) -> Planes {
    static CACHE: OnceLock<PlaneCache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = match cache.lock() {
        Ok(m) => m,
        Err(poisoned) => poisoned.into_inner(),
    };
    if map.len() >= CACHE_ENTRIES && !map.contains_key(&(seed, window, dims)) {
        map.clear();
    }
    map.entry((seed, window, dims))
        .or_insert_with(|| {
            let mut rng = SplitMix64::new(seed);
            (0..dims * window).map(|_| rng.next_gaussian()).collect()
        })
        .clone()
}

fn bad(reason: String) -> SynopsisError {
    SynopsisError::BadParameter { kind: Kind::Lsh, reason }
}

/// Dot product with four independent accumulators (lets the compiler vectorize; the order of
/// additions is fixed, so every platform gets the same bits).
#[inline]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// Random-hyperplane LSH of the last `window` values.
///
/// Hyperplane `k` (k < dimensions) is the `k`-th row of a `dimensions × window` matrix of
/// standard normals drawn in row-major order from [`SplitMix64`] seeded with `seed`: every
/// worker, process and run derives the same matrix, so it is never stored in the encoding.
/// Bit `k` of the signature is 1 when the mean-centered window (oldest value at coordinate 0;
/// a window of `m < window` values uses the first `m` coordinates) has a positive projection.
///
/// Guarantee (Charikar): for windows at angle θ each bit differs with probability θ/π,
/// independently across hyperplanes. `estimate_pair(Similarity)` returns `cos(π·h/d)` for
/// Hamming distance `h` over `d` bits, with `[lower, upper] = cos(π·(h/d ± t))` (clamped),
/// `t = √(ln(2/δ)/(2d))`, `δ = 1 −` [`LSH_CONFIDENCE`] — Hoeffding's bound, so the true cosine
/// similarity (= Pearson correlation of the windows) lies inside with probability ≥ 0.95.
/// `merge(other)` keeps the last `window` values of the concatenation: exactly the synopsis of
/// feeding both parts in order.
#[derive(Clone, Debug)]
pub struct Lsh {
    pub(crate) window: usize,
    pub(crate) dims: usize,
    pub(crate) bands: usize,
    pub(crate) seed: u64,
    /// Values added in total.
    pub(crate) n: u64,
    /// The last `min(n, window)` values, oldest first.
    pub(crate) buf: VecDeque<f64>,
    planes: OnceLock<Planes>,
}

impl Lsh {
    /// A synopsis of the last `window` values with `dims` hyperplanes cut into `bands` bands.
    ///
    /// ```
    /// use saams::lsh::Lsh;
    /// assert!(Lsh::new(100, 500, 20, 1).is_ok());
    /// assert!(Lsh::new(100, 500, 501, 1).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] unless `window ≥ 2`, `dims ≥ 1`, `1 ≤ bands ≤ dims` and
    /// `dims · window ≤` [`MAX_MATRIX`].
    pub fn new(window: usize, dims: usize, bands: usize, seed: u64) -> Result<Self, SynopsisError> {
        if window < 2 || dims == 0 || dims.checked_mul(window).is_none_or(|m| m > MAX_MATRIX) {
            return Err(bad(format!(
                "window (≥ 2) × dimensions (≥ 1) must be at most {MAX_MATRIX}, got {window} × {dims}"
            )));
        }
        if bands == 0 || bands > dims {
            return Err(bad(format!("bands must be in 1..={dims}, got {bands}")));
        }
        Ok(Lsh { window, dims, bands, seed, n: 0, buf: VecDeque::with_capacity(window), planes: OnceLock::new() })
    }

    /// Build from the reference parameters `[window, dimensions, bands]` or
    /// `[window, dimensions, bands, seed]`.
    ///
    /// ```
    /// use saams::{lsh::Lsh, params::Params, Kind};
    /// let raw = serde_json::json!([100, 500, 20]);
    /// let s = Lsh::from_params(&Params::new(Kind::Lsh, raw.as_array().unwrap())).unwrap();
    /// assert_eq!(s.rows_per_band(), 25);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong count or values out of range.
    pub fn from_params(p: &Params) -> Result<Self, SynopsisError> {
        p.arity(3, 4)?;
        let window = p.integer(0, "window", 2)?;
        let dims = p.integer(1, "dimensions", 1)?;
        let bands = p.integer(2, "bands", 1)?;
        let seed = if p.has(3) { p.u64(3, "seed")? } else { DEFAULT_SEED };
        let max = MAX_MATRIX as u64;
        if window > max || dims > max || bands > max {
            return Err(bad(format!("window, dimensions and bands must be at most {MAX_MATRIX}")));
        }
        Lsh::new(window as usize, dims as usize, bands as usize, seed)
    }

    /// Signature bits per band (`dimensions / bands`; trailing bits beyond `bands · rows` are
    /// used for similarity but not for banding).
    pub fn rows_per_band(&self) -> usize {
        self.dims / self.bands
    }

    /// Values added so far.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True before the first value.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The current window, oldest first.
    pub fn window_values(&self) -> Vec<f64> {
        self.buf.iter().copied().collect()
    }

    fn planes(&self) -> &Planes {
        self.planes.get_or_init(|| planes(self.seed, self.window, self.dims))
    }

    /// The signature as `dims` bits packed little-endian into u64 words.
    ///
    /// # Errors
    /// [`SynopsisError::NotYet`] before the first value.
    pub fn signature(&self) -> Result<Vec<u64>, SynopsisError> {
        Ok(self.signature_and_constancy()?.0)
    }

    fn signature_and_constancy(&self) -> Result<(Vec<u64>, bool), SynopsisError> {
        let m = self.buf.len();
        if m == 0 {
            return Err(SynopsisError::NotYet { kind: Kind::Lsh, reason: "no values yet".into() });
        }
        let mean = self.buf.iter().sum::<f64>() / m as f64;
        let (a, b) = self.buf.as_slices();
        let centered: Vec<f64> = a.iter().chain(b).map(|x| x - mean).collect();
        let constant = centered.iter().all(|v| *v == 0.0);
        let planes = self.planes();
        let mut words = vec![0u64; self.dims.div_ceil(64)];
        for (k, row) in planes.chunks_exact(self.window).enumerate() {
            let dot = dot(&row[..m], &centered);
            if dot > 0.0 {
                words[k / 64] |= 1 << (k % 64);
            }
        }
        Ok((words, constant))
    }

    /// One key per band: the seeded hash of the band's bits. Two streams whose keys agree in at
    /// least one band are candidate similar pairs; for windows at angle θ that happens with
    /// probability `1 − (1 − (1 − θ/π)^r)^b` (`r` = rows per band, `b` = bands).
    ///
    /// ```
    /// use saams::lsh::Lsh;
    /// use saams::{Datum, Synopsis};
    /// let mut s = Lsh::new(10, 40, 4, 1).unwrap();
    /// (0..10).for_each(|i| s.update(Datum::Num(i as f64)));
    /// assert_eq!(s.band_keys().unwrap().len(), 4);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::NotYet`] before the first value.
    pub fn band_keys(&self) -> Result<Vec<u64>, SynopsisError> {
        let sig = self.signature()?;
        let rows = self.rows_per_band();
        let mut bytes = Vec::with_capacity(rows.div_ceil(8));
        Ok((0..self.bands)
            .map(|j| {
                bytes.clear();
                bytes.resize(rows.div_ceil(8), 0);
                for r in 0..rows {
                    let k = j * rows + r;
                    if sig[k / 64] >> (k % 64) & 1 == 1 {
                        bytes[r / 8] |= 1 << (r % 8);
                    }
                }
                hash_bytes(&bytes, self.seed ^ (j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
            })
            .collect())
    }

    fn same_params(&self, other: &Lsh) -> bool {
        (self.window, self.dims, self.bands, self.seed) == (other.window, other.dims, other.bands, other.seed)
    }

    fn incompatible(&self, other: &Lsh) -> SynopsisError {
        SynopsisError::Incompatible {
            kind: Kind::Lsh,
            reason: format!(
                "[window, dimensions, bands, seed] differ: {:?} vs {:?}",
                (self.window, self.dims, self.bands, self.seed),
                (other.window, other.dims, other.bands, other.seed)
            ),
        }
    }
}

impl Synopsis for Lsh {
    fn kind(&self) -> Kind {
        Kind::Lsh
    }

    /// Append a value to the window (non-numeric and non-finite values are ignored).
    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        if let Datum::Num(x) = item
            && x.is_finite()
        {
            if self.buf.len() == self.window {
                self.buf.pop_front();
            }
            self.buf.push_back(x);
            self.n += 1;
        }
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<Lsh>(Kind::Lsh, other)?;
        if !self.same_params(other) {
            return Err(self.incompatible(other));
        }
        for x in &other.buf {
            if self.buf.len() == self.window {
                self.buf.pop_front();
            }
            self.buf.push_back(*x);
        }
        self.n += other.n;
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::Vector => {
                let sig = self.signature()?;
                let bits = (0..self.dims).map(|k| (sig[k / 64] >> (k % 64) & 1) as f64).collect();
                Ok(Estimate { value: EstimateValue::Vector(bits), lower: 0.0, upper: 1.0, confidence: 1.0 })
            }
            Query::Total => {
                let n = self.n as f64;
                Ok(Estimate::number(n, n, n, 1.0))
            }
            q => Err(SynopsisError::UnsupportedQuery { kind: Kind::Lsh, query: format!("{q:?}") }),
        }
    }

    fn estimate_pair(&self, other: &dyn Synopsis, query: &PairQuery) -> Result<Estimate, SynopsisError> {
        if *query != PairQuery::Similarity {
            return Err(SynopsisError::UnsupportedQuery { kind: Kind::Lsh, query: format!("{query:?}") });
        }
        let other = downcast::<Lsh>(Kind::Lsh, other)?;
        if !self.same_params(other) {
            return Err(self.incompatible(other));
        }
        if self.buf.len() != other.buf.len() {
            return Err(SynopsisError::BadQuery {
                kind: Kind::Lsh,
                reason: format!("windows of {} and {} values cannot be compared", self.buf.len(), other.buf.len()),
            });
        }
        let (a, ca) = self.signature_and_constancy()?;
        let (b, cb) = other.signature_and_constancy()?;
        if ca || cb {
            return Err(SynopsisError::BadQuery {
                kind: Kind::Lsh,
                reason: "a constant window has no direction".into(),
            });
        }
        let h: u32 = a.iter().zip(&b).map(|(x, y)| (x ^ y).count_ones()).sum();
        let d = self.dims as f64;
        let frac = f64::from(h) / d;
        let t = ((2.0 / (1.0 - LSH_CONFIDENCE)).ln() / (2.0 * d)).sqrt();
        let lower = (PI * (frac + t).min(1.0)).cos();
        let upper = (PI * (frac - t).max(0.0)).cos();
        Ok(Estimate::number((PI * frac).cos(), lower, upper, LSH_CONFIDENCE))
    }

    fn size_bytes(&self) -> usize {
        // The hyperplanes are shared per (seed, window, dimensions) and not counted here.
        std::mem::size_of::<Self>() + self.buf.capacity() * 8
    }
}
