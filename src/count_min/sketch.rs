//! Construction, update, merge and estimation of the Count-Min sketch.

use std::borrow::Cow;

use crate::hash::SplitMix64;
use crate::linear_hash::hash_item;
use crate::params::Params;
use crate::{Datum, Estimate, Kind, Query, Synopsis, SynopsisError, downcast};

/// Most counters a sketch may hold (1 GiB of `u64`): a guard against parameters that would
/// exhaust memory.
pub(crate) const MAX_COUNTERS: usize = 1 << 27;

/// Count-Min sketch: `depth` rows of `width` counters.
///
/// Guarantee, for a stream of `N` items and any value `v` with true count `f(v)`:
/// - `f(v) ≤ estimate(v)` always (deterministic);
/// - `estimate(v) ≤ f(v) + ε′N` with probability at least `1 − e^(−depth)`, where
///   `width = ⌈e/ε⌉`, `depth = ⌈ln(1/(1 − confidence))⌉` and `ε′ = e/width ≤ ε`.
///
/// The reported interval is `[max(0, estimate − ε′N), estimate]` at confidence
/// `1 − e^(−depth) ≥ confidence`. The sketch is linear, so the same guarantee holds after any
/// number of merges, with `N` the length of the union: the merged counters equal, bit for bit,
/// those of one sketch fed the whole stream.
///
/// Each row hashes the item's one 64-bit XXH3 hash with its own random odd multiplier
/// (multiply-shift universal hashing) and maps it to a column with a multiply-high reduction,
/// so an update costs one hash and `depth` multiplications, with no division.
#[derive(Clone, Debug, PartialEq)]
pub struct CountMin {
    epsilon: f64,
    confidence: f64,
    seed: u64,
    width: usize,
    depth: usize,
    multipliers: Vec<u64>,
    total: u64,
    counts: Counters,
}

/// The counters, row-major: 32 bits each while the total fits in 32 bits, 64 after. Every
/// counter is at most the total (an item adds one to one counter of every row, a merge adds
/// totals and counters alike, and decoding checks that every row sums to the total), so a narrow
/// counter cannot overflow, and which form a sketch has follows from its total alone.
///
/// Why: a job keeps one sketch per stream and window (the paper's 1360 × 5 is 54 KB in `u64`s),
/// and its updates are cache misses: the counter's increment drew ~89 % of Count-Min's samples,
/// ~12 % of a JSON-lines ingest's. Half the bytes is half the lines to fetch, half the copy when
/// a window starts from the empty sketch, and half the state.
#[derive(Clone, Debug, PartialEq)]
enum Counters {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Counters {
    /// The most a narrow counter (and so a narrow sketch's total) may reach.
    const NARROW_MAX: u64 = u32::MAX as u64;

    /// The counters as `u64`s, converting a narrow sketch's; `self` is left empty.
    fn take_wide(&mut self) -> Vec<u64> {
        match std::mem::replace(self, Counters::Wide(Vec::new())) {
            Counters::Narrow(c) => c.into_iter().map(u64::from).collect(),
            Counters::Wide(c) => c,
        }
    }

    /// Bytes of the counters on the heap.
    fn heap_bytes(&self) -> usize {
        match self {
            Counters::Narrow(c) => c.capacity() * std::mem::size_of::<u32>(),
            Counters::Wide(c) => c.capacity() * std::mem::size_of::<u64>(),
        }
    }
}

/// A counter of either width.
trait Counter: Copy {
    fn increment(&mut self);
    fn value(self) -> u64;
}

impl Counter for u32 {
    #[inline]
    fn increment(&mut self) {
        // Cannot wrap: a narrow sketch's counters stay at most its total, at most `u32::MAX`.
        *self = self.wrapping_add(1);
    }
    #[inline]
    fn value(self) -> u64 {
        u64::from(self)
    }
}

impl Counter for u64 {
    #[inline]
    fn increment(&mut self) {
        *self = self.wrapping_add(1);
    }
    #[inline]
    fn value(self) -> u64 {
        self
    }
}

/// Add one item with hash `h` to `counts` (`multipliers.len()` rows of `width`).
#[inline]
fn add_hash<C: Counter>(counts: &mut [C], width: usize, multipliers: &[u64], h: u64) {
    for (row, a) in counts.chunks_exact_mut(width).zip(multipliers) {
        let col = ((u128::from(h.wrapping_mul(*a)) * width as u128) >> 64) as usize;
        row[col].increment();
    }
}

/// The least counter of the item with hash `h` over the rows.
#[inline]
fn min_count<C: Counter>(counts: &[C], width: usize, multipliers: &[u64], h: u64) -> u64 {
    let mut min = u64::MAX;
    for (row, a) in counts.chunks_exact(width).zip(multipliers) {
        let col = ((u128::from(h.wrapping_mul(*a)) * width as u128) >> 64) as usize;
        min = min.min(row[col].value());
    }
    min
}

/// `(width, depth)` for an accuracy target, or why the target is not possible.
pub(crate) fn geometry(epsilon: f64, confidence: f64) -> Result<(usize, usize), SynopsisError> {
    let bad = |reason: String| SynopsisError::BadParameter { kind: Kind::CountMin, reason };
    SynopsisError::unless_fraction(Kind::CountMin, "epsilon", epsilon)?;
    SynopsisError::unless_fraction(Kind::CountMin, "confidence", confidence)?;
    let width = (std::f64::consts::E / epsilon).ceil();
    let depth = (1.0 / (1.0 - confidence)).ln().ceil().max(1.0);
    if width * depth > MAX_COUNTERS as f64 {
        return Err(bad(format!(
            "epsilon {epsilon} and confidence {confidence} need {width} x {depth} counters, more than {MAX_COUNTERS}"
        )));
    }
    Ok((width as usize, depth as usize))
}

impl CountMin {
    /// A sketch whose estimates exceed the true count by at most `epsilon`·N with probability
    /// at least `confidence`, hashing with `seed` (sketches merge only with equal seeds).
    ///
    /// ```
    /// use saams::count_min::CountMin;
    /// let cm = CountMin::with_accuracy(0.002, 0.99, 12345).unwrap();
    /// assert_eq!((cm.width(), cm.depth()), (1360, 5));
    /// assert!(CountMin::with_accuracy(0.0, 0.99, 1).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `epsilon` or `confidence` is outside (0, 1), or
    /// the sketch would need more than 2^27 counters.
    pub fn with_accuracy(epsilon: f64, confidence: f64, seed: u64) -> Result<Self, SynopsisError> {
        let (width, depth) = geometry(epsilon, confidence)?;
        let mut rng = SplitMix64::new(seed);
        let multipliers = (0..depth).map(|_| rng.next_u64() | 1).collect();
        Ok(CountMin {
            epsilon,
            confidence,
            seed,
            width,
            depth,
            multipliers,
            total: 0,
            counts: Counters::Narrow(vec![0; width * depth]),
        })
    }

    /// A sketch from the reference request parameters `[epsilon, confidence, seed]`.
    ///
    /// ```
    /// use saams::{count_min::CountMin, params::Params, Kind};
    /// let raw = serde_json::json!([0.002, 0.99, 12345]);
    /// let cm = CountMin::from_params(&Params::new(Kind::CountMin, raw.as_array().unwrap())).unwrap();
    /// assert_eq!(cm.seed(), 12345);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong number of parameters or values out of range.
    pub fn from_params(p: &Params<'_>) -> Result<Self, SynopsisError> {
        p.arity(3, 3)?;
        let epsilon = p.fraction(0, "epsilon")?;
        let confidence = p.fraction(1, "confidence")?;
        let seed = p.u64(2, "seed")?;
        Self::with_accuracy(epsilon, confidence, seed)
    }

    /// Counters per row, `⌈e/ε⌉`.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Number of rows, `⌈ln(1/(1 − confidence))⌉`.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The requested ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The requested confidence.
    pub fn confidence(&self) -> f64 {
        self.confidence
    }

    /// Number of items summarized (N).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The error factor the sketch really achieves, `e/width ≤ ε`: estimates exceed the true
    /// count by at most this times N with probability [`CountMin::effective_confidence`].
    pub fn effective_epsilon(&self) -> f64 {
        std::f64::consts::E / self.width as f64
    }

    /// The confidence the sketch really achieves, `1 − e^(−depth) ≥ confidence`.
    pub fn effective_confidence(&self) -> f64 {
        1.0 - (-(self.depth as f64)).exp()
    }

    /// The counters, row-major (`depth` rows of `width`); copied into `u64`s while the sketch
    /// keeps them in 32 bits (a total below 2^32).
    ///
    /// ```
    /// use saams::{count_min::CountMin, Datum, Synopsis};
    /// let mut cm = CountMin::with_accuracy(0.1, 0.9, 7).unwrap();
    /// cm.update_batch(&[Datum::Num(1.0), Datum::Num(2.0), Datum::Num(1.0)]);
    /// for row in cm.counts().chunks(cm.width()) {
    ///     assert_eq!(row.iter().sum::<u64>(), 3);
    /// }
    /// ```
    pub fn counts(&self) -> Cow<'_, [u64]> {
        match &self.counts {
            Counters::Narrow(c) => Cow::Owned(c.iter().map(|&x| u64::from(x)).collect()),
            Counters::Wide(c) => Cow::Borrowed(c),
        }
    }

    /// Each counter, row-major, to `f` (the encoder: no copy of a narrow sketch's counters).
    pub(crate) fn for_each_count(&self, mut f: impl FnMut(u64)) {
        match &self.counts {
            Counters::Narrow(c) => c.iter().for_each(|&x| f(u64::from(x))),
            Counters::Wide(c) => c.iter().for_each(|&x| f(x)),
        }
    }

    /// Replace the state with decoded counters (the caller checked their shape and that every
    /// row sums to `total`).
    pub(crate) fn set_state(&mut self, total: u64, counts: Vec<u64>) {
        self.total = total;
        self.counts = match counts.iter().all(|&c| c <= total) && total <= Counters::NARROW_MAX {
            true => Counters::Narrow(counts.into_iter().map(|c| c as u32).collect()),
            false => Counters::Wide(counts),
        };
    }

    /// Add the items with hashes `hashes` (`n` of them), widening the counters first if the
    /// total would pass what 32 bits hold.
    #[inline]
    fn add_hashes(&mut self, n: usize, hashes: impl Iterator<Item = u64>) {
        if self.total.saturating_add(n as u64) > Counters::NARROW_MAX && matches!(self.counts, Counters::Narrow(_)) {
            self.counts = Counters::Wide(self.counts.take_wide());
        }
        self.total = self.total.wrapping_add(n as u64);
        let (width, multipliers) = (self.width, &self.multipliers[..]);
        match &mut self.counts {
            Counters::Narrow(c) => hashes.for_each(|h| add_hash(c, width, multipliers, h)),
            Counters::Wide(c) => hashes.for_each(|h| add_hash(c, width, multipliers, h)),
        }
    }

    /// The Count-Min estimate (minimum over rows) of the item with hash `h`.
    #[inline]
    fn min_count(&self, h: u64) -> u64 {
        match &self.counts {
            Counters::Narrow(c) => min_count(c, self.width, &self.multipliers, h),
            Counters::Wide(c) => min_count(c, self.width, &self.multipliers, h),
        }
    }

    /// The estimated count of `item`: at least its true count.
    ///
    /// ```
    /// use saams::{count_min::CountMin, Datum, Synopsis};
    /// let mut cm = CountMin::with_accuracy(0.01, 0.9, 1).unwrap();
    /// cm.update(Datum::Num(2.0));
    /// assert!(cm.count(Datum::Num(2.0)) >= 1);
    /// ```
    pub fn count(&self, item: Datum<'_>) -> u64 {
        self.min_count(hash_item(item, self.seed))
    }

    /// `other` as a Count-Min sketch of the same parameters and seed, or why not.
    fn compatible<'a>(&self, other: &'a dyn Synopsis) -> Result<&'a CountMin, SynopsisError> {
        let other = downcast::<CountMin>(Kind::CountMin, other)?;
        let same = self.width == other.width
            && self.depth == other.depth
            && self.seed == other.seed
            && self.epsilon.to_bits() == other.epsilon.to_bits()
            && self.confidence.to_bits() == other.confidence.to_bits();
        SynopsisError::unless_compatible(Kind::CountMin, same, || {
            format!(
                "parameters differ: (epsilon {}, confidence {}, seed {}) vs (epsilon {}, confidence {}, seed {})",
                self.epsilon, self.confidence, self.seed, other.epsilon, other.confidence, other.seed
            )
        })?;
        Ok(other)
    }
}

impl Synopsis for CountMin {
    fn kind(&self) -> Kind {
        Kind::CountMin
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        self.add_hashes(1, std::iter::once(hash_item(item, self.seed)));
    }

    fn update_batch(&mut self, items: &[Datum<'_>]) {
        let seed = self.seed;
        self.add_hashes(items.len(), items.iter().map(|item| hash_item(*item, seed)));
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = self.compatible(other)?;
        let narrow = self.total.saturating_add(other.total) <= Counters::NARROW_MAX;
        self.total = self.total.wrapping_add(other.total);
        match (&mut self.counts, &other.counts) {
            // Both totals fit in 32 bits together, so every summed counter does.
            (Counters::Narrow(a), Counters::Narrow(b)) if narrow => {
                for (a, b) in a.iter_mut().zip(b) {
                    *a = a.wrapping_add(*b);
                }
            }
            (counts, other) => {
                let mut wide = counts.take_wide();
                match other {
                    Counters::Narrow(b) => wide.iter_mut().zip(b).for_each(|(a, b)| *a = a.wrapping_add(u64::from(*b))),
                    Counters::Wide(b) => wide.iter_mut().zip(b).for_each(|(a, b)| *a = a.wrapping_add(*b)),
                }
                *counts = Counters::Wide(wide);
            }
        }
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::Count(v) => {
                let est = self.count(v.as_datum()) as f64;
                let slack = self.effective_epsilon() * self.total as f64;
                Ok(Estimate::number(est, (est - slack).max(0.0), est, self.effective_confidence()))
            }
            Query::Total => {
                let n = self.total as f64;
                Ok(Estimate::number(n, n, n, 1.0))
            }
            other => Err(SynopsisError::UnsupportedQuery { kind: Kind::CountMin, query: format!("{other:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.counts.heap_bytes()
            + self.multipliers.capacity() * std::mem::size_of::<u64>()
    }
}
