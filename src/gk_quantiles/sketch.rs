//! GK quantiles: a buffered, mergeable Greenwald–Khanna summary.

use std::borrow::Cow;

use crate::params::Params;
use crate::{Datum, Estimate, Kind, Query, Synopsis, SynopsisError, downcast};

/// One summary entry: a stored value and the bounds `[rmin, rmax]` on the (1-based) position of
/// one of its occurrences in the sorted stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tuple {
    pub v: f64,
    pub rmin: u64,
    pub rmax: u64,
}

/// Values buffered before they are folded into the summary in one sorted pass: large enough to
/// amortize the pass over the summary, small enough to keep the synopsis a few kilobytes.
pub const BUFFER: usize = 128;

/// Greenwald–Khanna ε-approximate quantile summary of `f64` values, buffered and mergeable.
///
/// The summary is a value-sorted list of tuples `(v, rmin, rmax)` where `[rmin, rmax]` bounds
/// the position of an occurrence of `v` in the sorted stream, with the first and last tuple
/// exact (the minimum and maximum). Its invariant is the GK gap condition
/// `rmax(i+1) − rmin(i) ≤ max(1, ⌊2εN⌋)` for consecutive tuples, which lets every rank and
/// quantile be answered within `εN`.
///
/// Incoming values are buffered ([`BUFFER`] of them), sorted, and folded into the summary with
/// the Greenwald–Khanna (2004) *combine* — an exact batch keeps the gap condition — and then
/// *compressed*: a tuple is dropped while its neighbours still satisfy the gap condition.
/// Queries, `merge` and `encode` see the buffer too (queries fold a copy, so they take `&self`).
///
/// **Guarantee** (deterministic, at every query, after any number of updates and merges):
/// [`Query::Quantile`]`(q)` returns a stored value whose rank is within `εN` of `⌈qN⌉`, with
/// `lower`/`upper` stored values that bracket the true value at that rank;
/// [`Query::Rank`]`(x)` is within `ε` of the true normalized rank `|{y ≤ x}|/N`, and
/// `[lower, upper]` contains it.
///
/// **Merge** keeps ε: combining two summaries that satisfy the gap condition for `N_a` and `N_b`
/// gives gaps `≤ gap_a + gap_b − 1 ≤ 2ε(N_a + N_b)` (GK 2004, Lemma 1), and compress only drops
/// tuples while the condition holds for the union. So any merge tree of partials answers
/// within `εN` over the union — the error does not grow with the number of merges (only the
/// summary's size may).
///
/// Only numbers are summarized: strings and NaN are ignored (they have no place in the order).
///
/// ```
/// use saams::gk_quantiles::GkQuantiles;
/// use saams::{Datum, Query, Synopsis};
/// let mut gk = GkQuantiles::with_epsilon(0.01).unwrap();
/// for i in 1..=10_000u32 {
///     gk.update(Datum::Num(f64::from(i)));
/// }
/// let median = gk.estimate(&Query::Quantile(0.5)).unwrap();
/// let m = median.as_f64().unwrap();
/// assert!((m - 5000.0).abs() <= 100.0);
/// assert!(median.lower <= 5000.0 && 5000.0 <= median.upper);
/// ```
#[derive(Clone, Debug)]
pub struct GkQuantiles {
    pub(crate) epsilon: f64,
    /// Items summarized, buffer included.
    pub(crate) n: u64,
    pub(crate) tuples: Vec<Tuple>,
    /// Buffered values as order-preserving keys ([`key`]).
    pub(crate) buf: Vec<u64>,
}

/// An order-preserving `u64` key of a non-NaN `f64` (with `-0.0` folded onto `0.0`).
#[inline]
pub(crate) fn key(x: f64) -> u64 {
    let b = if x == 0.0 { 0 } else { x.to_bits() };
    if b >> 63 == 1 { !b } else { b | (1 << 63) }
}

/// The value of a [`key`].
#[inline]
pub(crate) fn unkey(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Largest allowed gap `rmax(i+1) − rmin(i)` for a summary of `n` items.
#[inline]
pub(crate) fn budget(epsilon: f64, n: u64) -> u64 {
    ((2.0 * epsilon * n as f64).floor() as u64).max(1)
}

/// Fold a sorted exact batch (`keys`) into `tuples` (summarizing `ns` items), in place.
pub(crate) fn fold_sorted_batch(tuples: &mut Vec<Tuple>, ns: u64, keys: &[u64]) {
    let s = tuples.len();
    let b = keys.len();
    if b == 0 {
        return;
    }
    tuples.reserve_exact(b);
    tuples.resize(s + b, Tuple { v: 0.0, rmin: 0, rmax: 0 });
    let (mut i, mut j, mut w) = (s, b, s + b);
    // rmax of the summary tuple just after the current position (a phantom at ns + 1 at the end).
    let mut succ_rmax = ns + 1;
    // Branch-free merge from the back. `t` is the summary tuple before the current position (a
    // sentinel below everything once the summary is used up); the tuple written is either `t`
    // shifted by the `j` batch items before it, or batch item `j` with `rmin = j + rmin(t)` and
    // `rmax = j + rmax(successor) − 1` — the same `rmin` formula either way.
    const SENTINEL: Tuple = Tuple { v: f64::NEG_INFINITY, rmin: 0, rmax: 0 };
    while j > 0 {
        let y = unkey(keys[j - 1]);
        let t = if i > 0 { tuples[i - 1] } else { SENTINEL };
        let take = t.v > y;
        let ju = j as u64;
        let v = if take { t.v } else { y };
        let rmax = if take { t.rmax + ju } else { ju + succ_rmax - 1 };
        succ_rmax = if take { t.rmax } else { succ_rmax };
        tuples[w - 1] = Tuple { v, rmin: t.rmin + ju, rmax };
        i -= usize::from(take);
        j -= usize::from(!take);
        w -= 1;
    }
}

/// Greenwald–Khanna (2004) combine of two summaries of `na` and `nb` items (ties: `a` first).
pub(crate) fn combine(a: &[Tuple], na: u64, b: &[Tuple], nb: u64) -> Vec<Tuple> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if j == b.len() || (i < a.len() && a[i].v <= b[j].v) {
            let x = a[i];
            let lo = if j > 0 { b[j - 1].rmin } else { 0 };
            let hi = if j < b.len() { b[j].rmax - 1 } else { nb };
            out.push(Tuple { v: x.v, rmin: x.rmin + lo, rmax: x.rmax + hi });
            i += 1;
        } else {
            let y = b[j];
            let lo = if i > 0 { a[i - 1].rmin } else { 0 };
            let hi = if i < a.len() { a[i].rmax - 1 } else { na };
            out.push(Tuple { v: y.v, rmin: y.rmin + lo, rmax: y.rmax + hi });
            j += 1;
        }
    }
    out
}

/// Drop tuples (never the first or last) while the gap condition for `n` items still holds.
pub(crate) fn compress(t: &mut Vec<Tuple>, epsilon: f64, n: u64) {
    let len = t.len();
    if len <= 2 {
        return;
    }
    let budget = budget(epsilon, n);
    let mut w = 1;
    // Branch-free: which tuples survive is data-dependent, so a branch would mispredict often.
    let mut last_rmin = t[0].rmin;
    for i in 1..len - 1 {
        let x = t[i];
        let keep = t[i + 1].rmax.saturating_sub(last_rmin) > budget;
        last_rmin = if keep { x.rmin } else { last_rmin };
        t[w] = x;
        w += usize::from(keep);
    }
    t[w] = t[len - 1];
    t.truncate(w + 1);
}

impl GkQuantiles {
    /// A summary answering every rank and quantile within `εN`.
    ///
    /// ```
    /// use saams::gk_quantiles::GkQuantiles;
    /// assert!(GkQuantiles::with_epsilon(0.01).is_ok());
    /// assert!(GkQuantiles::with_epsilon(1.0).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] unless `0 < epsilon < 1`.
    pub fn with_epsilon(epsilon: f64) -> Result<Self, SynopsisError> {
        SynopsisError::unless_fraction(Kind::GkQuantiles, "epsilon", epsilon)?;
        Ok(GkQuantiles { epsilon, n: 0, tuples: Vec::new(), buf: Vec::with_capacity(BUFFER) })
    }

    /// Build from the reference parameters `[epsilon]`.
    ///
    /// ```
    /// use saams::{gk_quantiles::GkQuantiles, params::Params, Kind};
    /// let raw = serde_json::json!([0.01]);
    /// let gk = GkQuantiles::from_params(&Params::new(Kind::GkQuantiles, raw.as_array().unwrap())).unwrap();
    /// assert_eq!(gk.epsilon(), 0.01);
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

    /// Number of values summarized.
    pub fn total(&self) -> u64 {
        self.n
    }

    /// Number of tuples in the summary (buffer excluded).
    pub fn tuples(&self) -> usize {
        self.tuples.len()
    }

    /// Add one number (NaN is ignored).
    ///
    /// ```
    /// use saams::gk_quantiles::GkQuantiles;
    /// let mut gk = GkQuantiles::with_epsilon(0.01).unwrap();
    /// for i in 0..100_000u32 {
    ///     gk.insert(f64::from(i));
    /// }
    /// gk.insert(f64::NAN);
    /// assert_eq!(gk.total(), 100_000);
    /// assert!(gk.tuples() < 1000);
    /// ```
    #[inline]
    pub fn insert(&mut self, x: f64) {
        if x.is_nan() {
            return;
        }
        self.buf.push(key(x));
        self.n += 1;
        if self.buf.len() >= BUFFER {
            self.flush();
        }
    }

    /// Fold the buffer into the summary and compress.
    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        self.buf.sort_unstable();
        let ns = self.n - self.buf.len() as u64;
        fold_sorted_batch(&mut self.tuples, ns, &self.buf);
        self.buf.clear();
        compress(&mut self.tuples, self.epsilon, self.n);
    }

    /// The summary with the buffer folded in (borrowed when the buffer is empty).
    pub(crate) fn view(&self) -> Cow<'_, [Tuple]> {
        if self.buf.is_empty() {
            return Cow::Borrowed(&self.tuples);
        }
        let mut keys = self.buf.clone();
        keys.sort_unstable();
        let mut t = Vec::with_capacity(self.tuples.len() + keys.len());
        t.extend_from_slice(&self.tuples);
        fold_sorted_batch(&mut t, self.n - keys.len() as u64, &keys);
        Cow::Owned(t)
    }

    fn bad_query(&self, reason: impl Into<String>) -> SynopsisError {
        SynopsisError::BadQuery { kind: Kind::GkQuantiles, reason: reason.into() }
    }
}

/// Answer a quantile query over a summary of `n > 0` items: `(value, lower, upper)`.
pub(crate) fn quantile(t: &[Tuple], n: u64, q: f64) -> (f64, f64, f64) {
    let r = ((q * n as f64).ceil() as u64).clamp(1, n) as i128;
    let mut best = (i128::MAX, 0);
    let (mut lower, mut upper) = (t[0].v, t[t.len() - 1].v);
    let mut found_upper = false;
    for (i, x) in t.iter().enumerate() {
        let err = (r - x.rmin as i128).max(x.rmax as i128 - r);
        if err < best.0 {
            best = (err, i);
        }
        if x.rmax as i128 <= r {
            lower = x.v;
        }
        if !found_upper && x.rmin as i128 >= r {
            upper = x.v;
            found_upper = true;
        }
    }
    (t[best.1].v, lower, upper)
}

/// Bounds on `|{y ≤ x}|` from a summary of `n` items.
pub(crate) fn rank_bounds(t: &[Tuple], n: u64, x: f64) -> (u64, u64) {
    let p = t.partition_point(|e| e.v <= x);
    let lo = if p > 0 { t[p - 1].rmin } else { 0 };
    let hi = if p < t.len() { t[p].rmax - 1 } else { n };
    (lo, hi.max(lo))
}

impl Synopsis for GkQuantiles {
    fn kind(&self) -> Kind {
        Kind::GkQuantiles
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        if let Datum::Num(x) = item {
            self.insert(x);
        }
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<GkQuantiles>(self.kind(), other)?;
        if self.epsilon.to_bits() != other.epsilon.to_bits() {
            return Err(SynopsisError::Incompatible {
                kind: self.kind(),
                reason: format!("epsilon {} differs from {}", self.epsilon, other.epsilon),
            });
        }
        if other.n == 0 {
            return Ok(());
        }
        self.flush();
        let theirs = other.view();
        self.tuples = combine(&self.tuples, self.n, &theirs, other.n);
        self.n += other.n;
        compress(&mut self.tuples, self.epsilon, self.n);
        self.tuples.shrink_to(self.tuples.len() + BUFFER);
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::Quantile(q) => {
                if !(0.0..=1.0).contains(q) {
                    return Err(self.bad_query(format!("quantile must be in [0, 1], got {q}")));
                }
                if self.n == 0 {
                    return Err(SynopsisError::NotYet {
                        kind: Kind::GkQuantiles,
                        reason: "no values summarized yet".into(),
                    });
                }
                let (v, lo, hi) = quantile(&self.view(), self.n, *q);
                Ok(Estimate::number(v, lo, hi, 1.0))
            }
            Query::Rank(x) => {
                if x.is_nan() {
                    return Err(self.bad_query("rank of NaN"));
                }
                if self.n == 0 {
                    return Err(SynopsisError::NotYet {
                        kind: Kind::GkQuantiles,
                        reason: "no values summarized yet".into(),
                    });
                }
                let (lo, hi) = rank_bounds(&self.view(), self.n, *x);
                let n = self.n as f64;
                Ok(Estimate::number((lo + hi) as f64 / 2.0 / n, lo as f64 / n, hi as f64 / n, 1.0))
            }
            Query::Total => Ok(Estimate::number(self.n as f64, self.n as f64, self.n as f64, 1.0)),
            q => Err(SynopsisError::UnsupportedQuery { kind: self.kind(), query: format!("{q:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.tuples.capacity() * std::mem::size_of::<Tuple>()
            + self.buf.capacity() * std::mem::size_of::<u64>()
    }
}
