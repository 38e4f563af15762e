//! Lossy Counting: construction, update, merge, estimates with deterministic bounds.

use crate::counting_table::{Slot, Table, identity, value_identity};
use crate::params::Params;
use crate::{Datum, Estimate, EstimateValue, Kind, Query, Synopsis, SynopsisError, downcast};

/// Lossy Counting (Manku–Motwani 2002): approximate item frequencies with a deterministic
/// undercount bound, and every item above a support threshold, with no false negatives.
///
/// The stream is cut into buckets of `w = ⌈1/ε⌉` items. Each tracked item has a count `f` (its
/// occurrences since it was last inserted) and a `Δ`, the most it can have been seen before; at
/// each bucket boundary the items with `f + Δ ≤ ⌊N/w⌋` are dropped.
///
/// **Guarantee** (deterministic, after any number of updates *and merges*), with `N` the number
/// of items summarized: for every item with true count `c`,
/// `f ≤ c ≤ f + Δ` and `Δ ≤ ⌊N/w⌋ ≤ εN` (an item not tracked has `c ≤ ⌊N/w⌋`). Hence
/// [`Query::FrequentItems`] at support `s > ε` returns every item with `c ≥ sN` (no false
/// negatives) and only items with `c ≥ (s − ε)N`: it lists the tracked items whose upper bound
/// `f + Δ` reaches `sN`, largest `f` first, with `f` as their count; the estimate's `lower` is 0
/// and `upper` is `⌊N/w⌋`, so every listed count `f` satisfies `f ≤ c ≤ f + upper`.
///
/// **Merge**: counts and `Δ`s of common items are summed; an item tracked on one side only gets
/// the other side's untracked bound `⌊N_b/w⌋` added to its `Δ`; then items with
/// `f + Δ ≤ ⌊(N_a + N_b)/w⌋` are dropped. Since `⌊N_a/w⌋ + ⌊N_b/w⌋ ≤ ⌊(N_a+N_b)/w⌋`, the
/// merged summary satisfies the single-stream invariant over the union: the bound stays `εN`
/// for `N = N_a + N_b`, whatever the merge tree. Merging is commutative (identical state either
/// way round); intermediate pruning makes it not bit-identical across different merge trees.
///
/// Items are identified exactly for numbers (their bits, `-0.0` = `0.0`) and by a 64-bit hash
/// for strings (distinct strings collide with probability ~2⁻⁶⁴ per pair).
///
/// ```
/// use saams::lossy_counting::LossyCounting;
/// use saams::{Datum, Query, Synopsis, Value};
/// let mut lc = LossyCounting::with_epsilon(0.01).unwrap();
/// for i in 0..10_000u32 {
///     lc.update(Datum::Num(if i % 4 == 0 { 7.0 } else { f64::from(i) + 0.5 }));
/// }
/// let e = lc.estimate(&Query::Count(Value::Num(7.0))).unwrap();
/// assert!(e.lower <= 2500.0 && 2500.0 <= e.upper && e.upper - e.lower <= 100.0);
/// ```
#[derive(Clone, Debug)]
pub struct LossyCounting {
    pub(crate) epsilon: f64,
    pub(crate) width: u64,
    pub(crate) n: u64,
    /// `⌊N/w⌋`: the bound on an untracked item's count and the `Δ` of new entries.
    pub(crate) err: u64,
    until_boundary: u64,
    pub(crate) table: Table,
}

impl LossyCounting {
    /// A summary whose counts are at most `εN` below the truth.
    ///
    /// ```
    /// use saams::lossy_counting::LossyCounting;
    /// assert!(LossyCounting::with_epsilon(0.001).is_ok());
    /// assert!(LossyCounting::with_epsilon(0.0).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] unless `0 < epsilon < 1`.
    pub fn with_epsilon(epsilon: f64) -> Result<Self, SynopsisError> {
        SynopsisError::unless_fraction(Kind::LossyCounting, "epsilon", epsilon)?;
        let width = (1.0 / epsilon).ceil() as u64;
        Ok(LossyCounting { epsilon, width, n: 0, err: 0, until_boundary: width, table: Table::new() })
    }

    /// Build from the reference parameters `[epsilon]`.
    ///
    /// ```
    /// use saams::{lossy_counting::LossyCounting, params::Params, Kind};
    /// let raw = serde_json::json!([0.001]);
    /// let lc = LossyCounting::from_params(&Params::new(Kind::LossyCounting, raw.as_array().unwrap())).unwrap();
    /// assert_eq!(lc.epsilon(), 0.001);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a missing, extra or out-of-range parameter.
    pub fn from_params(p: &Params<'_>) -> Result<Self, SynopsisError> {
        p.arity(1, 1)?;
        Self::with_epsilon(p.fraction(0, "epsilon")?)
    }

    /// The error parameter ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// Number of items summarized.
    pub fn total(&self) -> u64 {
        self.n
    }

    /// Number of items currently tracked.
    pub fn tracked(&self) -> usize {
        self.table.len()
    }

    /// The most any count can be below the truth now: `⌊N/w⌋ ≤ εN`.
    ///
    /// ```
    /// use saams::{lossy_counting::LossyCounting, Datum, Synopsis};
    /// let mut lc = LossyCounting::with_epsilon(0.01).unwrap();
    /// for i in 0..1000u32 {
    ///     lc.update(Datum::Num(f64::from(i)));
    /// }
    /// assert_eq!((lc.total(), lc.max_error()), (1000, 10));
    /// assert!(lc.tracked() <= 100);
    /// ```
    pub fn max_error(&self) -> u64 {
        self.err
    }

    /// Rebuild from decoded parts, checking the invariants the guarantee rests on.
    pub(crate) fn from_parts(epsilon: f64, n: u64, table: Table) -> Result<Self, SynopsisError> {
        let mut lc = Self::with_epsilon(epsilon).map_err(|e| SynopsisError::Codec(e.to_string()))?;
        lc.n = n;
        lc.err = n / lc.width;
        lc.until_boundary = lc.width - n % lc.width;
        let mut sum = 0u64;
        for s in table.sorted() {
            if s.delta > lc.err || s.count.saturating_add(s.delta) <= lc.err {
                return Err(SynopsisError::Codec("an item's error term is out of range".into()));
            }
            sum = sum.saturating_add(s.count);
        }
        if sum > n {
            return Err(SynopsisError::Codec("item counts exceed the stream length".into()));
        }
        lc.table = table;
        Ok(lc)
    }

    fn prune(&mut self) {
        self.table.prune(self.err);
    }

    fn bad_query(&self, reason: String) -> SynopsisError {
        SynopsisError::BadQuery { kind: Kind::LossyCounting, reason }
    }
}

impl Synopsis for LossyCounting {
    fn kind(&self) -> Kind {
        Kind::LossyCounting
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        let (id, text) = identity(item);
        self.n += 1;
        if !self.table.bump(id, 1) {
            self.table.insert_new(Slot { id, count: 1, delta: self.err }, text);
        }
        self.until_boundary -= 1;
        if self.until_boundary == 0 {
            self.until_boundary = self.width;
            self.err = self.n / self.width;
            self.prune();
        }
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<LossyCounting>(self.kind(), other)?;
        if self.epsilon.to_bits() != other.epsilon.to_bits() {
            return Err(SynopsisError::Incompatible {
                kind: self.kind(),
                reason: format!("epsilon {} differs from {}", self.epsilon, other.epsilon),
            });
        }
        let (err_a, err_b) = (self.err, other.err);
        self.table.for_each_mut(|s| match other.table.get(s.id) {
            Some(o) => {
                s.count += o.count;
                s.delta += o.delta;
            }
            None => s.delta += err_b,
        });
        for o in other.table.sorted() {
            if self.table.get(o.id).is_none() {
                self.table
                    .insert_new(Slot { id: o.id, count: o.count, delta: o.delta + err_a }, other.table.text(o.id));
            }
        }
        self.n += other.n;
        self.err = self.n / self.width;
        self.until_boundary = self.width - self.n % self.width;
        self.prune();
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::Count(v) => Ok(match self.table.get(value_identity(v)) {
                Some(s) => Estimate::number(s.count as f64, s.count as f64, (s.count + s.delta) as f64, 1.0),
                None => Estimate::number(0.0, 0.0, self.err as f64, 1.0),
            }),
            Query::FrequentItems { support } => {
                // Items outside the table have true counts of at most εN, so every item whose count
                // reaches sN is listed for s > ε; at s = ε (the reference's own example asks
                // exactly that) every item above εN is. Below ε the answer would miss items.
                let s = *support;
                if !(s >= self.epsilon && s <= 1.0) {
                    return Err(self.bad_query(format!(
                        "support must be in [epsilon = {}, 1] for a no-false-negative answer, got {s}",
                        self.epsilon
                    )));
                }
                let threshold = s * self.n as f64;
                let mut items: Vec<Slot> =
                    self.table.sorted().into_iter().filter(|e| (e.count + e.delta) as f64 >= threshold).collect();
                items.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
                let list = items.iter().map(|e| (self.table.value(e.id), e.count as f64)).collect();
                Ok(Estimate { value: EstimateValue::Items(list), lower: 0.0, upper: self.err as f64, confidence: 1.0 })
            }
            Query::Total => Ok(Estimate::number(self.n as f64, self.n as f64, self.n as f64, 1.0)),
            q => Err(SynopsisError::UnsupportedQuery { kind: self.kind(), query: format!("{q:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.table.heap_bytes()
    }
}
