//! Sticky Sampling: construction, update, merge, estimates with probabilistic bounds.

use crate::counting_table::{self, Entry, identity, value_identity};
use crate::hash::SplitMix64;
use crate::params::Params;
use crate::{Datum, Estimate, EstimateValue, Kind, Query, Synopsis, SynopsisError, downcast};

/// The seed used when the reference parameters give none.
pub const DEFAULT_SEED: u64 = 0x5EED_57C1_C4E5_A3D1;

/// Sticky Sampling's item table: 16-byte records, an item and its count (no bucket delta).
type Table = counting_table::Table<Entry>;

/// Sticky Sampling (Manku–Motwani 2002): the frequent items of a stream, and their counts, from
/// a sample whose rate halves as the stream grows, with a probabilistic bound.
///
/// With `t = ⌈(1/ε)·ln(1/(s·δ))⌉`, the first `2t` items are sampled at rate 1, the next `2t` at
/// rate ½, the next `4t` at rate ¼, and so on; an item already tracked is always counted. At each
/// rate change every count is diminished by a run of fair coin tosses (as if sampled at the new
/// rate from the start). Randomness comes from [`SplitMix64`] seeded with `seed`, so runs are
/// reproducible.
///
/// **Guarantee** (single stream of `N` items): counts never exceed the truth, and an item's
/// count is more than `εN` below it with probability at most `s·δ`; hence with probability
/// ≥ `1 − δ`, [`Query::FrequentItems`] at the synopsis' support `s` returns every item with
/// count ≥ `sN` (no false negatives), and only items with count ≥ `(s − ε)N` are returned
/// (always: counts are never overestimated). Listed counts come with `lower` 0 and `upper`
/// `⌊εN⌋` (each count `f` satisfies `f ≤ c ≤ f + upper` with the reported confidence);
/// [`Query::IsFrequent`] answers whether `f ≥ (s − ε)N`, with `[lower, upper] = [f, f + ⌊εN⌋]`.
///
/// **Merge**: the side sampled at the higher rate is brought to the other's lower rate `R`
/// (its counts diminished by coin tosses, once per halving, as at a rate change), then counts
/// are summed. The merged summary keeps sampling at `R` — never sparser than a single stream
/// of the same length would, which is what keeps the bound — and halves again at the next
/// boundary `2t·2ʲ` of the schedule. After `k` partials are merged, an item's undercount is a
/// sum of at most `k` independent terms, each at most geometric with parameter `1/R`, so it
/// exceeds `εN` with probability at most `P = P[Binomial(⌊εN⌋ + 1, 1/R) < k]` — `≤ s·δ` for
/// `k = 1`; for `k` equal partials (`R ≈ N/(kt)`) it is far smaller still, and in any case at most
/// `k·s·δ` (a union bound over the parts). Every estimate reports the confidence `P` gives
/// (`1 − P` for a count, `1 − P/s'` for frequent items at support `s'`).
///
/// ```
/// use saams::sticky_sampling::StickySampling;
/// use saams::{Datum, Query, Synopsis, Value};
/// let mut ss = StickySampling::with_accuracy(0.05, 0.005, 0.01, 7).unwrap();
/// for i in 0..100_000u32 {
///     ss.update(Datum::Num(if i % 5 == 0 { 1.0 } else { f64::from(i) + 0.5 }));
/// }
/// let e = ss.estimate(&Query::IsFrequent(Value::Num(1.0))).unwrap();
/// assert_eq!(e.value, saams::EstimateValue::Bool(true));
/// assert!(e.confidence >= 0.99);
/// ```
#[derive(Clone, Debug)]
pub struct StickySampling {
    pub(crate) support: f64,
    pub(crate) epsilon: f64,
    pub(crate) delta: f64,
    pub(crate) seed: u64,
    t: u64,
    pub(crate) n: u64,
    pub(crate) rate: u64,
    next_change: u64,
    /// Number of non-empty partials merged into this summary (1 for a single stream).
    pub(crate) parts: u64,
    pub(crate) rng: SplitMix64,
    pub(crate) table: Table,
}

fn bad(reason: String) -> SynopsisError {
    SynopsisError::BadParameter { kind: Kind::StickySampling, reason }
}

impl StickySampling {
    /// A summary finding the items above support `support`, with counts at most `εN` low, each
    /// guarantee holding with probability `1 − delta`; sampling seeded by `seed`.
    ///
    /// ```
    /// use saams::sticky_sampling::StickySampling;
    /// assert!(StickySampling::with_accuracy(0.01, 0.001, 0.01, 42).is_ok());
    /// assert!(StickySampling::with_accuracy(0.01, 0.02, 0.01, 42).is_err()); // epsilon ≥ support
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] unless `0 < epsilon < support < 1` and `0 < delta < 1`.
    pub fn with_accuracy(support: f64, epsilon: f64, delta: f64, seed: u64) -> Result<Self, SynopsisError> {
        for (name, x) in [("support", support), ("epsilon", epsilon), ("delta", delta)] {
            SynopsisError::unless_fraction(Kind::StickySampling, name, x)?;
        }
        if epsilon >= support {
            return Err(bad(format!("epsilon ({epsilon}) must be smaller than support ({support})")));
        }
        let t = ((1.0 / epsilon) * (1.0 / (support * delta)).ln()).ceil().max(1.0);
        if t > 1e15 {
            return Err(bad(format!("epsilon {epsilon} and delta {delta} need an unreasonably large sample")));
        }
        let t = t as u64;
        Ok(StickySampling {
            support,
            epsilon,
            delta,
            seed,
            t,
            n: 0,
            rate: 1,
            next_change: 2 * t,
            parts: 1,
            rng: SplitMix64::new(seed),
            table: Table::default(),
        })
    }

    /// Build from the reference parameters `[support, epsilon, delta]` or
    /// `[support, epsilon, delta, seed]` (default seed [`DEFAULT_SEED`]).
    ///
    /// ```
    /// use saams::{params::Params, sticky_sampling::StickySampling, Kind};
    /// let raw = serde_json::json!([0.001, 1e-4, 0.001]);
    /// let ss = StickySampling::from_params(&Params::new(Kind::StickySampling, raw.as_array().unwrap())).unwrap();
    /// assert_eq!(ss.sample_parameter(), 138_156);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong number of parameters or values out of range.
    pub fn from_params(p: &Params<'_>) -> Result<Self, SynopsisError> {
        p.arity(3, 4)?;
        let seed = if p.has(3) { p.u64(3, "seed")? } else { DEFAULT_SEED };
        Self::with_accuracy(p.fraction(0, "support")?, p.fraction(1, "epsilon")?, p.fraction(2, "delta")?, seed)
    }

    /// `t = ⌈(1/ε)·ln(1/(s·δ))⌉`: the sampling rate halves after `2t`, `4t`, `8t`, … items.
    pub fn sample_parameter(&self) -> u64 {
        self.t
    }

    /// Number of items summarized.
    pub fn total(&self) -> u64 {
        self.n
    }

    /// Number of items currently tracked.
    pub fn tracked(&self) -> usize {
        self.table.len()
    }

    /// The current sampling rate is `1 / sampling_divisor()`.
    pub fn sampling_divisor(&self) -> u64 {
        self.rate
    }

    /// `(rate divisor, next change)` of the schedule for a stream of `n` items: the divisor `r`
    /// is the power of two with `n < 2tr` (or 1), and the rate halves again after item `2tr`.
    fn schedule(t: u64, n: u64) -> (u64, u64) {
        let mut r = 1u64;
        while n >= 2 * t * r && r < 1 << 62 {
            r *= 2;
        }
        (r, 2 * t * r)
    }

    /// Rebuild from decoded parts, checking what the guarantee rests on.
    pub(crate) fn from_parts(
        params: (f64, f64, f64),
        seed: u64,
        (n, rate_log2, parts, rng): (u64, u8, u64, u64),
        table: Table,
    ) -> Result<Self, SynopsisError> {
        let mut ss =
            Self::with_accuracy(params.0, params.1, params.2, seed).map_err(|e| SynopsisError::Codec(e.to_string()))?;
        if parts == 0 || (parts > n && parts > 1) {
            return Err(SynopsisError::Codec("the number of merged parts must be in [1, max(1, n)]".into()));
        }
        let sum = table.iter().fold(0u64, |a, s| a.saturating_add(s.count));
        if sum > n {
            return Err(SynopsisError::Codec("item counts exceed the stream length".into()));
        }
        let (max_rate, next_change) = Self::schedule(ss.t, n);
        if rate_log2 > 62 || 1u64 << rate_log2 > max_rate {
            return Err(SynopsisError::Codec("sampling rate sparser than the schedule allows".into()));
        }
        ss.rate = 1 << rate_log2;
        ss.next_change = next_change;
        ss.n = n;
        ss.parts = parts;
        ss.rng = SplitMix64::new(rng);
        ss.table = table;
        Ok(ss)
    }

    /// Diminish every count by a run of fair coin tosses, `halvings` times over (one per rate
    /// halving), visiting items in id order so the outcome depends only on the state, not on
    /// the table's layout. The items are sorted once: the survivors of one halving are still in
    /// id order for the next. The result is the table halving one step at a time would build.
    fn halve(table: &Table, halvings: u32, rng: &mut SplitMix64) -> Table {
        let (kept, before) = Self::thin(table, halvings, rng);
        // Sized as starting at half the size and growing while inserting them would leave it
        // (most single-count items are dropped).
        Table::from_distinct(before / 2, &kept, |id| table.text(id))
    }

    /// The survivors of [`StickySampling::halve`]'s coin tosses, in id order, and the number of
    /// items before the last halving (which sizes the table they would be placed in).
    fn thin(table: &Table, halvings: u32, rng: &mut SplitMix64) -> (Vec<Entry>, usize) {
        let mut kept = table.sorted();
        let mut before = kept.len();
        for _ in 0..halvings {
            before = kept.len();
            // The survivors are kept in place, without a branch on the coin (it mispredicts on
            // about every other single-count item).
            let mut w = 0;
            for i in 0..kept.len() {
                let s = kept[i];
                let tails = u64::from(rng.next_u64().trailing_zeros());
                kept[w] = Entry { id: s.id, count: s.count.saturating_sub(tails) };
                w += usize::from(s.count > tails);
            }
            kept.truncate(w);
        }
        (kept, before)
    }

    /// Probability that one item's count is more than `εN` below its true count.
    ///
    /// ```
    /// use saams::{sticky_sampling::StickySampling, Datum, Synopsis};
    /// let mut ss = StickySampling::with_accuracy(0.1, 0.01, 0.1, 1).unwrap();
    /// assert_eq!(ss.item_failure_probability(), 0.0); // rate 1: exact
    /// for i in 0..10_000u32 {
    ///     ss.update(Datum::Num(f64::from(i % 50)));
    /// }
    /// assert!(ss.sampling_divisor() > 1);
    /// assert!(ss.item_failure_probability() <= 0.1 * 0.1);
    /// ```
    pub fn item_failure_probability(&self) -> f64 {
        if self.rate == 1 {
            return 0.0;
        }
        let m = (self.epsilon * self.n as f64).floor() + 1.0;
        let p = 1.0 / self.rate as f64;
        let k = self.parts as f64;
        if m < k {
            return 1.0;
        }
        if k > 1000.0 {
            // Chernoff: P[Bin(m, p) < k] ≤ exp(−(μ − k)²/(2μ)) for k < μ = mp.
            let mu = m * p;
            return if k < mu { (-(mu - k) * (mu - k) / (2.0 * mu)).exp().min(1.0) } else { 1.0 };
        }
        // P[Bin(m, p) < k] = Σ_{j<k} C(m, j) p^j (1−p)^(m−j), summed in log space.
        let (lp, lq) = (p.ln(), (-p).ln_1p());
        let mut log_c = 0.0;
        let mut total = 0.0;
        let mut j = 0.0;
        while j < k {
            total += (log_c + j * lp + (m - j) * lq).exp();
            log_c += (m - j).ln() - (j + 1.0).ln();
            j += 1.0;
        }
        total.min(1.0)
    }

    fn frequent_confidence(&self, support: f64) -> f64 {
        (1.0 - self.item_failure_probability() / support).max(0.0)
    }

    fn bound(&self) -> f64 {
        (self.epsilon * self.n as f64).floor()
    }

    fn same_params(&self, o: &StickySampling) -> bool {
        self.support.to_bits() == o.support.to_bits()
            && self.epsilon.to_bits() == o.epsilon.to_bits()
            && self.delta.to_bits() == o.delta.to_bits()
            && self.seed == o.seed
    }
}

/// The least count `c ≥ 1` with `c as f64 >= threshold`, if any: a count reaches the threshold
/// exactly when it is at least this (the conversion to `f64` never decreases), so a query can
/// compare integers. Found by bisection, which is exact however large the threshold.
fn least_count_reaching(threshold: f64) -> Option<u64> {
    let reaches = |c: u64| c as f64 >= threshold;
    if !reaches(u64::MAX) {
        return None;
    }
    if reaches(1) {
        return Some(1);
    }
    // Invariant: `lo` does not reach the threshold, `hi` does.
    let (mut lo, mut hi) = (1u64, u64::MAX);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

impl Synopsis for StickySampling {
    fn kind(&self) -> Kind {
        Kind::StickySampling
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        let (id, text) = identity(item);
        self.n += 1;
        if !self.table.bump(id, 1) && (self.rate == 1 || self.rng.next_u64() & (self.rate - 1) == 0) {
            self.table.insert_new(Entry { id, count: 1 }, text);
        }
        if self.n == self.next_change {
            if self.rate < 1 << 62 {
                self.rate *= 2;
            }
            self.next_change = self.next_change.saturating_mul(2);
            self.table = Self::halve(&self.table, 1, &mut self.rng);
        }
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<StickySampling>(self.kind(), other)?;
        if !self.same_params(other) {
            return Err(SynopsisError::Incompatible {
                kind: self.kind(),
                reason: format!(
                    "parameters (support {}, epsilon {}, delta {}, seed {}) differ from ({}, {}, {}, {})",
                    self.support,
                    self.epsilon,
                    self.delta,
                    self.seed,
                    other.support,
                    other.epsilon,
                    other.delta,
                    other.seed
                ),
            });
        }
        if other.n == 0 {
            return Ok(());
        }
        if self.n == 0 {
            *self = other.clone();
            return Ok(());
        }
        let n = self.n + other.n;
        let rate = self.rate.max(other.rate);
        // Rates are powers of two: the difference of their logarithms is the halvings needed.
        let halvings = |r: u64| rate.trailing_zeros() - r.trailing_zeros();
        if self.rate < rate {
            self.table = Self::halve(&self.table, halvings(self.rate), &mut self.rng);
        }
        // Summing counts does not depend on the order items are visited in, so the other side
        // is read in slot order, without a copy or a sort, unless it must be thinned first
        // (coin tosses are drawn in id order, so their outcome depends only on the state); the
        // thinned records are added as they are, not placed into a table of their own first.
        if other.rate < rate {
            let (theirs, _) = Self::thin(&other.table, halvings(other.rate), &mut self.rng);
            self.table.absorb_records(&theirs, |id| other.table.text(id), other.table.has_texts());
        } else {
            self.table.absorb(&other.table);
        }
        self.n = n;
        self.rate = rate;
        self.next_change = Self::schedule(self.t, n).1;
        self.parts += other.parts;
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        let bound = self.bound();
        match query {
            Query::Count(v) => {
                let c = self.table.count(value_identity(v)) as f64;
                Ok(Estimate::number(c, c, c + bound, 1.0 - self.item_failure_probability()))
            }
            Query::IsFrequent(v) => {
                let c = self.table.count(value_identity(v)) as f64;
                let frequent = c >= (self.support - self.epsilon) * self.n as f64 && self.n > 0;
                Ok(Estimate {
                    value: EstimateValue::Bool(frequent),
                    lower: c,
                    upper: c + bound,
                    confidence: self.frequent_confidence(self.support),
                })
            }
            Query::FrequentItems { support } => {
                let s = *support;
                if !(s > self.epsilon && s <= 1.0) {
                    return Err(SynopsisError::BadQuery {
                        kind: self.kind(),
                        reason: format!("support must be in (epsilon = {}, 1], got {s}", self.epsilon),
                    });
                }
                let threshold = (s - self.epsilon) * self.n as f64;
                // One pass over the slots keeps the few items above the threshold, compared as
                // integers (the same items as `count as f64 >= threshold`); only those are
                // sorted (sorting every tracked item first cost a millisecond a query).
                let mut items: Vec<Entry> = match least_count_reaching(threshold) {
                    Some(min) => self.table.at_least(min),
                    None => Vec::new(),
                };
                items.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
                let list = items.iter().map(|e| (self.table.value(e.id), e.count as f64)).collect();
                Ok(Estimate {
                    value: EstimateValue::Items(list),
                    lower: 0.0,
                    upper: bound,
                    confidence: self.frequent_confidence(s),
                })
            }
            Query::Total => Ok(Estimate::number(self.n as f64, self.n as f64, self.n as f64, 1.0)),
            q => Err(SynopsisError::UnsupportedQuery { kind: self.kind(), query: format!("{q:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.table.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::least_count_reaching;

    #[test]
    fn least_count_reaching_agrees_with_the_float_comparison() {
        let big = (1u64 << 53) as f64;
        for threshold in
            [-1.0, 0.0, 0.5, 1.0, 1.5, 7999.2, 8000.0, 1e12 + 0.25, big - 1.0, big, big + 2.0, 4.6e18, 1.8e19]
        {
            let m = least_count_reaching(threshold).unwrap();
            assert!(m >= 1 && m as f64 >= threshold, "{threshold}");
            assert!(m == 1 || ((m - 1) as f64) < threshold, "{threshold}: {m} is not the least");
        }
        assert_eq!(least_count_reaching(8000.0), Some(8000));
        assert_eq!(least_count_reaching(7999.2), Some(8000));
        assert_eq!(least_count_reaching(1e20), None);
        assert_eq!(least_count_reaching(f64::NAN), None);
    }
}
