//! Window quantiles: fixed-size blocks with equally spaced samples, expiring whole blocks.

use std::collections::VecDeque;

use crate::params::Params;
use crate::{Datum, Estimate, Kind, Query, Synopsis, SynopsisError, downcast};

/// A run of consecutive items, summarized by the values at sorted positions
/// `1, k, 2k, …, n` (all positions when `k = 1`, an exact block).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Block {
    pub n: u64,
    pub k: u64,
    pub vals: Vec<f64>,
}

impl Block {
    /// The block of sorted `vals` (all items) sampled with spacing `k`.
    fn seal(sorted: &[f64], k: u64) -> Block {
        let n = sorted.len() as u64;
        if k < 2 || n <= 2 {
            return Block { n, k: 1, vals: sorted.to_vec() };
        }
        let mut vals = Vec::with_capacity((n / k) as usize + 2);
        vals.push(sorted[0]);
        let mut p = k;
        while p <= n {
            vals.push(sorted[(p - 1) as usize]);
            p += k;
        }
        if !n.is_multiple_of(k) {
            vals.push(sorted[(n - 1) as usize]);
        }
        Block { n, k, vals }
    }

    /// How many values a block of `n` items with spacing `k` keeps.
    pub(crate) fn kept(n: u64, k: u64) -> u64 {
        if k < 2 || n <= 2 { n } else { 1 + n / k + u64::from(!n.is_multiple_of(k)) }
    }

    /// The sorted position of kept value `j`.
    #[inline]
    fn pos(&self, j: usize) -> u64 {
        if self.k == 1 {
            j as u64 + 1
        } else if j == 0 {
            1
        } else {
            (j as u64 * self.k).min(self.n)
        }
    }

    /// Bounds on the number of this block's items `≤ x`.
    #[inline]
    fn count_le(&self, x: f64) -> (u64, u64) {
        let j = self.vals.partition_point(|v| *v <= x);
        if j == 0 {
            (0, 0)
        } else if j == self.vals.len() {
            (self.n, self.n)
        } else {
            (self.pos(j - 1), self.pos(j) - 1)
        }
    }
}

/// Quantiles over the last `W` items of a stream, with a deterministic rank error `≤ εW`.
///
/// The stream is cut into blocks of `b` consecutive items. The newest, incomplete block is kept
/// exactly; a complete block is sorted and keeps only its values at sorted positions
/// `1, k, 2k, …, b` (so its count of items `≤ x` is known within `k − 1`). A block is dropped as
/// soon as all its items have left the window; only the oldest block can be partly expired, and
/// since we know *how many* of its items expired (not which), its live count `≤ x` is known
/// within `min(e, b − e) ≤ ⌊b/2⌋`. `b` and `k` are chosen at construction to minimize memory
/// subject to `⌈(⌊W/b⌋ + 1)·(k − 1)/2 + ⌊b/2⌋/2⌉ ≤ εW` — a single-level simplification of
/// Arasu–Manku's block summaries; memory is about `1/ε²` values once `W ≫ 1/ε²`, never more
/// than `W`.
///
/// **Guarantee** (deterministic): with `n_w = min(N, W)` items in the window,
/// [`Query::Rank`]`(x)` is within `ε·W/n_w` of the window's normalized rank of `x` (i.e. `εW`
/// items), with `[lower, upper]` containing it, and [`Query::Quantile`]`(q)` returns a value
/// whose window rank is within `εW` of `⌈q·n_w⌉`, with `lower`/`upper` values bracketing the true
/// value at that rank. [`Query::Total`] is `n_w`.
///
/// **Merge** is order-sensitive: `a.merge(&b)` means `b`'s items follow `a`'s. The result holds
/// `a`'s blocks (its incomplete block becomes an exact short block), then `b`'s, continuing `b`'s
/// incomplete block, and answers for the last `W` items of the concatenation with the same
/// bound: sampled blocks still have `b` items, exact blocks add no error, and only the oldest
/// block can be partly expired. Strings and NaN are ignored (not counted as items).
///
/// ```
/// use saams::window_sketch_quantiles::WindowSketchQuantiles;
/// use saams::{Datum, Query, Synopsis};
/// let mut w = WindowSketchQuantiles::with_accuracy(0.01, 10_000).unwrap();
/// for i in 0..50_000u32 {
///     w.update(Datum::Num(f64::from(i)));
/// }
/// // The window holds 40000..49999: its median is about 45000.
/// let m = w.estimate(&Query::Quantile(0.5)).unwrap().as_f64().unwrap();
/// assert!((m - 45_000.0).abs() <= 100.0);
/// assert_eq!(w.estimate(&Query::Total).unwrap().as_f64(), Some(10_000.0));
/// ```
#[derive(Clone, Debug)]
pub struct WindowSketchQuantiles {
    pub(crate) epsilon: f64,
    pub(crate) window: u64,
    pub(crate) block: u64,
    pub(crate) spacing: u64,
    pub(crate) n: u64,
    retained: u64,
    pub(crate) blocks: VecDeque<Block>,
    pub(crate) cur: Vec<f64>,
}

/// The largest rank error (in items) of blocks of `b` with spacing `k` over a window of `w`:
/// half the width of the summed count bounds, rounded up because a returned quantile's rank is an
/// integer (a half-width of `h` bounds the rank error by `⌈h⌉`).
fn error_bound(w: u64, b: u64, k: u64) -> f64 {
    let nb = (w / b + 1) as f64;
    (nb * (k - 1) as f64 / 2.0 + (b / 2) as f64 / 2.0).ceil()
}

/// Per-block bookkeeping (the block record and its allocation), in units of stored values.
const BLOCK_OVERHEAD: u64 = 6;

/// Choose `(b, k)` minimizing memory with `error_bound ≤ εW` (`b = 1`, `k = 1` — every item kept —
/// always qualifies).
fn layout(epsilon: f64, w: u64) -> (u64, u64) {
    let budget = epsilon * w as f64;
    let mut best = (u64::MAX, 1, 1);
    let mut b = 1u64;
    while b <= w {
        let nb = w / b + 1;
        if error_bound(w, b, 1) <= budget {
            let avail = budget - (b / 2) as f64 / 2.0;
            let mut k = ((2.0 * avail / nb as f64).floor() as u64).saturating_add(1).clamp(1, b);
            while k > 1 && error_bound(w, b, k) > budget {
                k -= 1;
            }
            // Each block also costs its header and allocation: about BLOCK_OVERHEAD values.
            let mem = nb.saturating_mul(Block::kept(b, k) + BLOCK_OVERHEAD).saturating_add(b);
            if mem < best.0 {
                best = (mem, b, k);
            }
        }
        b = if b < 64 { b + 1 } else { b + b / 32 };
    }
    (best.1, best.2)
}

impl WindowSketchQuantiles {
    /// Quantiles of the last `window` items with rank error at most `epsilon · window`.
    ///
    /// ```
    /// use saams::window_sketch_quantiles::WindowSketchQuantiles;
    /// let w = WindowSketchQuantiles::with_accuracy(0.01, 40_000).unwrap();
    /// let (b, k) = w.layout();
    /// assert!(w.max_rank_error() <= 400.0 && b <= 40_000 && k > 1);
    /// assert!(WindowSketchQuantiles::with_accuracy(0.01, 0).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] unless `0 < epsilon < 1` and `1 ≤ window ≤ 2⁴⁸`.
    pub fn with_accuracy(epsilon: f64, window: u64) -> Result<Self, SynopsisError> {
        let bad = |reason: String| SynopsisError::BadParameter { kind: Kind::WindowSketchQuantiles, reason };
        SynopsisError::unless_fraction(Kind::WindowSketchQuantiles, "epsilon", epsilon)?;
        if !(1..=1 << 48).contains(&window) {
            return Err(bad(format!("window size must be in [1, 2^48], got {window}")));
        }
        let (block, spacing) = layout(epsilon, window);
        Ok(WindowSketchQuantiles {
            epsilon,
            window,
            block,
            spacing,
            n: 0,
            retained: 0,
            blocks: VecDeque::new(),
            cur: Vec::new(),
        })
    }

    /// Build from the reference parameters `[epsilon, window size]`.
    ///
    /// ```
    /// use saams::{params::Params, window_sketch_quantiles::WindowSketchQuantiles, Kind};
    /// let raw = serde_json::json!([0.01, 40000]);
    /// let w = WindowSketchQuantiles::from_params(&Params::new(Kind::WindowSketchQuantiles, raw.as_array().unwrap()))
    ///     .unwrap();
    /// assert!(w.max_rank_error() <= 400.0);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong number of parameters or values out of range.
    pub fn from_params(p: &Params<'_>) -> Result<Self, SynopsisError> {
        p.arity(2, 2)?;
        Self::with_accuracy(p.fraction(0, "epsilon")?, p.integer(1, "window size", 1)?)
    }

    /// The guaranteed bound on any rank error, in items (`≤ εW`).
    pub fn max_rank_error(&self) -> f64 {
        error_bound(self.window, self.block, self.spacing)
    }

    /// `(block size b, sample spacing k)` chosen for ε and W.
    pub fn layout(&self) -> (u64, u64) {
        (self.block, self.spacing)
    }

    /// Items currently in the window.
    pub fn live(&self) -> u64 {
        self.n.min(self.window)
    }

    /// Number of values stored (samples plus the incomplete block).
    pub fn stored_values(&self) -> usize {
        self.blocks.iter().map(|b| b.vals.len()).sum::<usize>() + self.cur.len()
    }

    /// Add one number (NaN is ignored).
    ///
    /// ```
    /// use saams::window_sketch_quantiles::WindowSketchQuantiles;
    /// let mut w = WindowSketchQuantiles::with_accuracy(0.05, 100).unwrap();
    /// for i in 0..1000u32 {
    ///     w.insert(f64::from(i));
    /// }
    /// assert_eq!(w.live(), 100);
    /// assert!(w.stored_values() <= 100 + w.layout().0 as usize);
    /// ```
    #[inline]
    pub fn insert(&mut self, x: f64) {
        if x.is_nan() {
            return;
        }
        self.cur.push(if x == 0.0 { 0.0 } else { x });
        self.n += 1;
        self.retained += 1;
        if self.cur.len() as u64 >= self.block {
            self.cur.sort_unstable_by(f64::total_cmp);
            self.blocks.push_back(Block::seal(&self.cur, self.spacing));
            self.cur.clear();
        }
        self.expire();
    }

    fn expire(&mut self) {
        let live = self.live();
        while let Some(f) = self.blocks.front() {
            if self.retained - f.n >= live {
                self.retained -= f.n;
                self.blocks.pop_front();
            } else {
                break;
            }
        }
    }

    /// Rebuild from decoded parts, checking what the guarantee rests on.
    pub(crate) fn from_parts(
        epsilon: f64,
        window: u64,
        n: u64,
        blocks: VecDeque<Block>,
        cur: Vec<f64>,
    ) -> Result<Self, SynopsisError> {
        let err = |m: &str| SynopsisError::Codec(m.to_string());
        let mut w = Self::with_accuracy(epsilon, window).map_err(|e| SynopsisError::Codec(e.to_string()))?;
        if cur.len() as u64 >= w.block {
            return Err(err("incomplete block longer than a block"));
        }
        let mut retained = cur.len() as u64;
        for b in &blocks {
            let sampled = b.k != 1;
            if (sampled && (b.k != w.spacing || b.n != w.block)) || b.n == 0 || b.n > w.block {
                return Err(err("a block's size or spacing does not match the parameters"));
            }
            if b.vals.len() as u64 != Block::kept(b.n, b.k) {
                return Err(err("a block keeps the wrong number of values"));
            }
            retained = retained.checked_add(b.n).ok_or_else(|| err("block sizes overflow"))?;
        }
        let live = n.min(window);
        if retained > n || retained < live {
            return Err(err("retained items do not cover the window"));
        }
        if let Some(f) = blocks.front()
            && retained - f.n >= live
        {
            return Err(err("the oldest block has fully expired"));
        }
        w.n = n;
        w.retained = retained;
        w.blocks = blocks;
        w.cur = cur;
        Ok(w)
    }

    /// Bounds on the number of live items `≤ x`, given the incomplete block sorted.
    fn bounds(&self, cur_sorted: &[f64], x: f64) -> (u64, u64) {
        let live = self.live();
        let mut expired = self.retained - live;
        let (mut lo, mut hi) = (0u64, 0u64);
        for b in &self.blocks {
            let (l, h) = b.count_le(x);
            if expired > 0 {
                // Only the oldest block can be partly expired.
                lo += l.saturating_sub(expired);
                hi += h.min(b.n - expired);
                expired = 0;
            } else {
                lo += l;
                hi += h;
            }
        }
        let c = cur_sorted.partition_point(|v| *v <= x) as u64;
        (lo + c, (hi + c).max(lo + c))
    }

    fn sorted_cur(&self) -> Vec<f64> {
        let mut c = self.cur.clone();
        c.sort_unstable_by(f64::total_cmp);
        c
    }

    fn bad_query(&self, reason: impl Into<String>) -> SynopsisError {
        SynopsisError::BadQuery { kind: Kind::WindowSketchQuantiles, reason: reason.into() }
    }
}

impl Synopsis for WindowSketchQuantiles {
    fn kind(&self) -> Kind {
        Kind::WindowSketchQuantiles
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        if let Datum::Num(x) = item {
            self.insert(x);
        }
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<WindowSketchQuantiles>(self.kind(), other)?;
        if self.epsilon.to_bits() != other.epsilon.to_bits() || self.window != other.window {
            return Err(SynopsisError::Incompatible {
                kind: self.kind(),
                reason: format!(
                    "(epsilon, window) ({}, {}) differs from ({}, {})",
                    self.epsilon, self.window, other.epsilon, other.window
                ),
            });
        }
        if other.n == 0 {
            return Ok(());
        }
        if !self.cur.is_empty() {
            self.cur.sort_unstable_by(f64::total_cmp);
            self.blocks.push_back(Block::seal(&self.cur, 1));
        }
        self.blocks.extend(other.blocks.iter().cloned());
        self.cur.clear();
        self.cur.extend_from_slice(&other.cur);
        self.n += other.n;
        self.retained += other.retained;
        self.expire();
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        let live = self.live();
        match query {
            Query::Quantile(q) => {
                if !(0.0..=1.0).contains(q) {
                    return Err(self.bad_query(format!("quantile must be in [0, 1], got {q}")));
                }
                if live == 0 {
                    return Err(SynopsisError::NotYet {
                        kind: Kind::WindowSketchQuantiles,
                        reason: "the window is empty".into(),
                    });
                }
                let cur = self.sorted_cur();
                let mut cand: Vec<f64> = self.blocks.iter().flat_map(|b| b.vals.iter().copied()).collect();
                cand.extend_from_slice(&cur);
                cand.sort_unstable_by(f64::total_cmp);
                cand.dedup();
                let r = ((q * live as f64).ceil() as u64).clamp(1, live);
                let first = |pred: &dyn Fn((u64, u64)) -> bool| cand.partition_point(|x| !pred(self.bounds(&cur, *x)));
                let i = first(&|(l, h)| l + h >= 2 * r).min(cand.len() - 1);
                let lo = first(&|(_, h)| h >= r);
                let hi = first(&|(l, _)| l >= r).min(cand.len() - 1);
                let lower = if lo == 0 { cand[0] } else { cand[lo - 1] };
                Ok(Estimate::number(cand[i], lower, cand[hi], 1.0))
            }
            Query::Rank(x) => {
                if x.is_nan() {
                    return Err(self.bad_query("rank of NaN"));
                }
                if live == 0 {
                    return Err(SynopsisError::NotYet {
                        kind: Kind::WindowSketchQuantiles,
                        reason: "the window is empty".into(),
                    });
                }
                let (l, h) = self.bounds(&self.sorted_cur(), *x);
                let n = live as f64;
                Ok(Estimate::number((l + h) as f64 / 2.0 / n, l as f64 / n, h as f64 / n, 1.0))
            }
            Query::Total => Ok(Estimate::number(live as f64, live as f64, live as f64, 1.0)),
            q => Err(SynopsisError::UnsupportedQuery { kind: self.kind(), query: format!("{q:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.blocks.iter().map(|b| b.vals.capacity() * 8).sum::<usize>()
            + self.cur.capacity() * 8
    }
}
