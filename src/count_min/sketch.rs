//! Construction, update, merge and estimation of the Count-Min sketch.

use std::any::Any;

use crate::codec::encode_envelope;
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
    counts: Vec<u64>,
}

/// `(width, depth)` for an accuracy target, or why the target is not possible.
pub(crate) fn geometry(epsilon: f64, confidence: f64) -> Result<(usize, usize), SynopsisError> {
    let bad = |reason: String| SynopsisError::BadParameter { kind: Kind::CountMin, reason };
    if !(epsilon > 0.0 && epsilon < 1.0) {
        return Err(bad(format!("epsilon must be in (0, 1), got {epsilon}")));
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(bad(format!("confidence must be in (0, 1), got {confidence}")));
    }
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
        Ok(CountMin { epsilon, confidence, seed, width, depth, multipliers, total: 0, counts: vec![0; width * depth] })
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

    /// The counters, row-major (`depth` rows of `width`).
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Replace the state with decoded counters (the caller checked their shape).
    pub(crate) fn set_state(&mut self, total: u64, counts: Vec<u64>) {
        self.total = total;
        self.counts = counts;
    }

    #[inline]
    fn add_hash(&mut self, h: u64) {
        let width = self.width as u128;
        self.total = self.total.wrapping_add(1);
        for (row, a) in self.counts.chunks_exact_mut(self.width).zip(&self.multipliers) {
            let col = ((u128::from(h.wrapping_mul(*a)) * width) >> 64) as usize;
            row[col] = row[col].wrapping_add(1);
        }
    }

    /// The Count-Min estimate (minimum over rows) of the item with hash `h`.
    #[inline]
    fn min_count(&self, h: u64) -> u64 {
        let width = self.width as u128;
        let mut min = u64::MAX;
        for (row, a) in self.counts.chunks_exact(self.width).zip(&self.multipliers) {
            let col = ((u128::from(h.wrapping_mul(*a)) * width) >> 64) as usize;
            min = min.min(row[col]);
        }
        min
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

    fn check_compatible(&self, other: &CountMin) -> Result<(), SynopsisError> {
        let same = self.width == other.width
            && self.depth == other.depth
            && self.seed == other.seed
            && self.epsilon.to_bits() == other.epsilon.to_bits()
            && self.confidence.to_bits() == other.confidence.to_bits();
        if same {
            Ok(())
        } else {
            Err(SynopsisError::Incompatible {
                kind: Kind::CountMin,
                reason: format!(
                    "parameters differ: (epsilon {}, confidence {}, seed {}) vs (epsilon {}, confidence {}, seed {})",
                    self.epsilon, self.confidence, self.seed, other.epsilon, other.confidence, other.seed
                ),
            })
        }
    }
}

impl Synopsis for CountMin {
    fn kind(&self) -> Kind {
        Kind::CountMin
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        self.add_hash(hash_item(item, self.seed));
    }

    fn update_batch(&mut self, items: &[Datum<'_>]) {
        for item in items {
            self.add_hash(hash_item(*item, self.seed));
        }
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<CountMin>(self.kind(), other)?;
        self.check_compatible(other)?;
        self.total = self.total.wrapping_add(other.total);
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a = a.wrapping_add(*b);
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
            + self.counts.capacity() * std::mem::size_of::<u64>()
            + self.multipliers.capacity() * std::mem::size_of::<u64>()
    }

    fn encode(&self) -> Vec<u8> {
        let payload = super::codec::encode_payload(self);
        encode_envelope(Kind::CountMin, self.seed, &[self.epsilon, self.confidence], &payload)
    }

    fn clone_box(&self) -> Box<dyn Synopsis> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
