//! Construction, update, merge and estimates of the KLL wrapper.

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
#[derive(Debug)]
pub struct Kll {
    pub(crate) sketch: KllSketch<KllFloat<f64>>,
    shadow: Shadow,
}

/// A clone holds exactly what it needs: the library's vectors clone at their lengths.
impl Clone for Kll {
    fn clone(&self) -> Self {
        Kll { sketch: self.sketch.clone(), shadow: self.shadow.exact() }
    }
}

/// The lengths and capacities of the library's level vectors, followed update by update, so
/// that [`Synopsis::size_bytes`] is the heap the sketch really holds. The library does not say
/// what it allocated, and its vectors carry slack: level 0 grows by `push`, and a level that
/// receives the first items compacted from below reuses that level's buffer, capacity and all.
/// The counting-allocator test in `tests/kll/update.rs` checks this against the real heap.
#[derive(Clone, Debug)]
struct Shadow {
    k: u16,
    lens: Vec<usize>,
    caps: Vec<usize>,
    /// Capacity of the library's vector of levels.
    outer: usize,
    /// Items retained, and the library's total capacity for this many levels (it compacts
    /// when the one reaches the other).
    retained: usize,
    capacity: usize,
}

/// The library's minimum level capacity `m`.
const KLL_M: usize = 8;

/// A vector's capacity after one `push` onto `len` items in `cap` slots (the standard
/// library's amortized growth: double, at least 4 slots for items of these sizes).
fn grown(len: usize, cap: usize) -> usize {
    if len < cap { cap } else { (2 * cap).max(len + 1).max(4) }
}

/// The library's capacity of level `level` among `levels` (its `level_capacity`).
fn level_capacity(k: u16, levels: usize, level: usize) -> usize {
    const POWERS_OF_THREE: [u64; 31] = {
        let mut p = [1u64; 31];
        let mut i = 1;
        while i < 31 {
            p[i] = p[i - 1] * 3;
            i += 1;
        }
        p
    };
    let shallow = |k: u64, depth: usize| ((((k << (depth + 1)) / POWERS_OF_THREE[depth]) + 1) >> 1) & 0xFFFF;
    let depth = levels - level - 1;
    let capacity = if depth < POWERS_OF_THREE.len() {
        shallow(u64::from(k), depth)
    } else {
        let first = depth / 2;
        shallow(shallow(u64::from(k), first), depth - first)
    };
    (capacity as usize).max(KLL_M)
}

/// The library's total capacity of `levels` levels (its `total_capacity`).
fn total_capacity(k: u16, levels: usize) -> usize {
    (0..levels).map(|l| level_capacity(k, levels, l)).sum()
}

impl Shadow {
    /// A new sketch: one empty level 0 in a vector of one level.
    fn new(k: u16) -> Self {
        Shadow { k, lens: vec![0], caps: vec![0], outer: 1, retained: 0, capacity: total_capacity(k, 1) }
    }

    /// The state of a sketch whose vectors were all built at their exact lengths (decoded or
    /// cloned), from its serialized image.
    fn from_image(k: u16, image: &[u8]) -> Self {
        let lens = level_lengths(image).unwrap_or_else(|| vec![usize::from(image.len() > 8)]);
        Shadow {
            k,
            caps: lens.clone(),
            outer: lens.len(),
            retained: lens.iter().sum(),
            capacity: total_capacity(k, lens.len()),
            lens,
        }
    }

    /// The same levels at exact capacities (what `Vec::clone` allocates).
    fn exact(&self) -> Self {
        Shadow { caps: self.lens.clone(), outer: self.lens.len(), ..self.clone() }
    }

    /// `added` items added, as that many calls of the library's `internal_update` leave it:
    /// compact whenever the levels are full, and push onto level 0 in between. Followed per
    /// batch rather than per item, as it depends only on how many items arrived.
    fn add(&mut self, mut added: usize) {
        while added > 0 {
            if self.retained >= self.capacity {
                self.compress();
            }
            let take = self.capacity.saturating_sub(self.retained).clamp(1, added);
            let (len, mut cap) = (self.lens[0] + take, self.caps[0]);
            // A push onto a full vector grows it (`grown`); after `take` pushes its capacity is
            // the first of those growths that holds them all.
            while cap < len {
                cap = grown(cap, cap);
            }
            self.caps[0] = cap;
            self.lens[0] = len;
            self.retained += take;
            added -= take;
        }
    }

    /// The library's `compress_while_updating`: compact the lowest full level into the next.
    fn compress(&mut self) {
        let levels = self.lens.len();
        let Some(level) = (0..levels).find(|&l| self.lens[l] >= level_capacity(self.k, levels, l)) else {
            return;
        };
        if level + 1 == levels {
            self.outer = grown(levels, self.outer);
            self.lens.push(0);
            self.caps.push(0);
            self.capacity = total_capacity(self.k, levels + 1);
        }
        let (len, cap) = (self.lens[level], self.caps[level]);
        let odd = len % 2;
        let promoted = (len - odd) / 2;
        if self.lens[level + 1] == 0 {
            // The promoted half is collected in place: it keeps the compacted level's buffer.
            self.caps[level + 1] = cap;
            self.lens[level + 1] = promoted;
        } else {
            // Merged with the level above into a vector of exact capacity.
            self.lens[level + 1] += promoted;
            self.caps[level + 1] = self.lens[level + 1];
        }
        self.lens[level] = odd;
        self.caps[level] = if odd == 1 { 4 } else { 0 };
        self.retained -= promoted;
    }

    /// The library's vectors plus the shadow's own two.
    fn heap_bytes(&self) -> usize {
        self.outer * std::mem::size_of::<Vec<f64>>()
            + self.caps.iter().sum::<usize>() * std::mem::size_of::<f64>()
            + (self.lens.capacity() + self.caps.capacity()) * std::mem::size_of::<usize>()
    }
}

/// The library's level lengths, from its serialized image; `None` for an empty or one-item
/// image (no level table).
fn level_lengths(image: &[u8]) -> Option<Vec<usize>> {
    // A full image (preamble ints 5): 20 bytes of preamble, the u32 LE start offset of each
    // level, min and max (16 bytes), then the items; the last level ends with the items.
    if image.first() != Some(&5) {
        return None;
    }
    let num_levels = usize::from(*image.get(18)?);
    let offsets: Vec<usize> = (0..num_levels)
        .map(|i| image.get(20 + 4 * i..24 + 4 * i).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize))
        .collect::<Option<_>>()?;
    let items = image.len().checked_sub(20 + 4 * num_levels + 16)? / 8;
    let end = offsets.first()? + items;
    Some(offsets.iter().zip(offsets.iter().skip(1).chain([&end])).map(|(a, b)| b.saturating_sub(*a)).collect())
}

impl Kll {
    /// A decoded sketch (its vectors are allocated at their exact lengths).
    pub(crate) fn decoded(sketch: KllSketch<KllFloat<f64>>, image: &[u8]) -> Self {
        let shadow = Shadow::from_image(sketch.k(), image);
        Kll { sketch, shadow }
    }

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
        Ok(Kll { sketch, shadow: Shadow::new(k as u16) })
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
        SynopsisError::unless_fraction(Kind::Kll, "rank error", epsilon)?;
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

    /// Add one item to the library's sketch (not to the shadow); whether it was taken.
    #[inline(always)]
    fn update_one(&mut self, item: Datum<'_>) -> bool {
        // The library asserts (panics) at n = u64::MAX; update must never panic.
        if let Datum::Num(x) = item
            && let Ok(v) = KllFloat::<f64>::new(x)
            && self.sketch.n() < u64::MAX
        {
            self.sketch.update(v);
            return true;
        }
        false
    }

    fn empty(&self) -> SynopsisError {
        SynopsisError::NotYet { kind: Kind::Kll, reason: "the sketch is empty: no quantiles yet".into() }
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
        if self.update_one(item) {
            self.shadow.add(1);
        }
    }

    /// One loop over the batch with the library's update inlined into it, instead of one
    /// dynamic call per item (the operators feed batches); the shadow follows once per batch.
    fn update_batch(&mut self, items: &[Datum<'_>]) {
        let mut added = 0;
        for item in items {
            added += usize::from(self.update_one(*item));
        }
        self.shadow.add(added);
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
            .map_err(|e| SynopsisError::Incompatible { kind: Kind::Kll, reason: e.to_string() })?;
        // The library's merge rebuilds levels in ways the shadow does not follow; a clone has
        // every vector at its exact length, which the image then tells.
        self.sketch = self.sketch.clone();
        self.shadow = Shadow::from_image(self.k(), &self.sketch.serialize());
        Ok(())
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
        std::mem::size_of::<Self>() + self.shadow.heap_bytes()
    }
}
