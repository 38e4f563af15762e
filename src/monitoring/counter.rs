//! A sliding-window counter of small relative error that tolerates out-of-order arrivals.
//!
//! Buckets cover disjoint stamp ranges `[lo, hi]` (both ends are stamps of real items). A bucket
//! whose range could still receive a late item (`hi ≥ now − τ`) is kept exact, one bucket per
//! stamp; older ("sealed") buckets are merged greedily, newest first, while the merged count
//! stays at most `2δ(S + 1) + 1`, where `S` is the count of every newer bucket. `S` can only grow
//! (newer buckets expire later and only gain late items), so the rule holds forever once true.
//!
//! For any cut `s` (the window is the stamps `> s`) the estimate is the count of the buckets
//! entirely after `s` plus half of the one bucket straddling it. That bucket's `hi` item is
//! inside and its `lo` item outside, so the true count lies in `[S + 1, S + c − 1]` and the
//! error is at most `(c − 1)/2 ≤ δ(S + 1) ≤ δ·true`: **relative error ≤ δ at every cut**, which
//! is what the sliding window (cut `now − W`) and the forward/backward protocol (any cut inside
//! the window) both need. This is the smooth-histogram / exponential-histogram idea with
//! out-of-order support; the memory is `O((1/δ)·log n)` sealed buckets plus one bucket per
//! distinct stamp of the last `τ` time units.

use std::collections::VecDeque;

use super::MonitorError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bucket {
    lo: i64,
    hi: i64,
    count: u64,
}

/// Sliding-window count of one stream (all items, or the copies of one item) with relative
/// error at most `δ` at every cut inside the window.
///
/// ```
/// use saams::monitoring::SlidingCounter;
/// let mut c = SlidingCounter::new(100, 0, 0.1).unwrap();
/// for t in 0..1000 {
///     c.insert(t, t).unwrap();
/// }
/// // The window at time 999 holds the stamps 900..=999: 100 items.
/// let est = c.estimate(999);
/// assert!((est as f64 - 100.0).abs() <= 0.1 * 100.0);
/// assert!(c.buckets() < 100, "old stamps were merged");
/// ```
#[derive(Clone, Debug)]
pub struct SlidingCounter {
    window: i64,
    tardiness: i64,
    delta: f64,
    buckets: VecDeque<Bucket>,
    total: u64,
    compact_at: usize,
}

impl SlidingCounter {
    /// A counter for a window of `window` time units, items at most `tardiness` late, and
    /// relative error `delta`.
    ///
    /// # Errors
    /// When `window ≤ 0`, `tardiness` is outside `0..window`, or `delta` is outside `(0, 1)`.
    pub fn new(window: i64, tardiness: i64, delta: f64) -> Result<Self, MonitorError> {
        if window <= 0 {
            return Err(MonitorError::BadParameter(format!("window must be positive, got {window}")));
        }
        if !(0..window).contains(&tardiness) {
            return Err(MonitorError::BadParameter(format!(
                "tardiness must be in 0..window ({window}), got {tardiness}"
            )));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(MonitorError::BadParameter(format!("delta must be in (0, 1), got {delta}")));
        }
        Ok(SlidingCounter { window, tardiness, delta, buckets: VecDeque::new(), total: 0, compact_at: 16 })
    }

    /// Count one item stamped `stamp` arriving at `now`.
    ///
    /// # Errors
    /// When the stamp is in the future or more than the tardiness late.
    pub fn insert(&mut self, now: i64, stamp: i64) -> Result<(), MonitorError> {
        if stamp > now || stamp < now - self.tardiness {
            return Err(MonitorError::BadInput(format!(
                "item stamped {stamp} arriving at {now} breaks the tardiness {}",
                self.tardiness
            )));
        }
        let fresh = Bucket { lo: stamp, hi: stamp, count: 1 };
        match self.buckets.back_mut() {
            None => self.buckets.push_back(fresh),
            Some(b) if b.hi < stamp => self.buckets.push_back(fresh),
            Some(b) if b.lo == stamp && b.hi == stamp => b.count += 1,
            Some(_) => {
                let idx = self.buckets.partition_point(|b| b.hi < stamp);
                // Sealed buckets end before now − τ ≤ stamp, so the stamp is never inside a merged
                // bucket: it either matches an exact bucket or opens a new one.
                if self.buckets[idx].lo <= stamp {
                    self.buckets[idx].count += 1;
                } else {
                    self.buckets.insert(idx, fresh);
                }
            }
        }
        self.total += 1;
        if self.buckets.len() > self.compact_at {
            self.compact(now);
            self.compact_at = 2 * self.buckets.len() + 16;
        }
        Ok(())
    }

    fn compact(&mut self, now: i64) {
        let sealed = self.buckets.partition_point(|b| b.hi < now - self.tardiness);
        if sealed < 2 {
            return;
        }
        let mut newer: u64 = self.buckets.iter().skip(sealed).map(|b| b.count).sum();
        let mut out: Vec<Bucket> = Vec::with_capacity(sealed);
        let mut cur = self.buckets[sealed - 1];
        for idx in (0..sealed - 1).rev() {
            let b = self.buckets[idx];
            let limit = (2.0 * self.delta * (newer + 1) as f64).floor() as u64 + 1;
            if cur.count + b.count <= limit {
                cur = Bucket { lo: b.lo, hi: cur.hi, count: cur.count + b.count };
            } else {
                newer += cur.count;
                out.push(cur);
                cur = b;
            }
        }
        out.push(cur);
        let tail: Vec<Bucket> = self.buckets.drain(sealed..).collect();
        self.buckets.clear();
        self.buckets.extend(out.into_iter().rev());
        self.buckets.extend(tail);
    }

    /// Drop the buckets that left the window at `now` (stamps `≤ now − W`).
    pub fn expire(&mut self, now: i64) {
        while let Some(b) = self.buckets.front() {
            if b.hi + self.window <= now {
                self.total -= b.count;
                self.buckets.pop_front();
            } else {
                break;
            }
        }
    }

    /// The estimated number of items stamped after `cut` (relative error ≤ δ for any cut no
    /// older than the oldest bucket kept, i.e. inside the window). Cost: the buckets before the
    /// cut, so `O(1)` for the window edge once [`SlidingCounter::expire`] ran.
    pub fn suffix(&self, cut: i64) -> u64 {
        let mut sum = self.total;
        for b in &self.buckets {
            if b.hi <= cut {
                sum -= b.count;
            } else {
                if b.lo <= cut {
                    sum -= b.count - b.count / 2;
                }
                break;
            }
        }
        sum
    }

    /// The estimated window count at `now` (items stamped in `(now − W, now]`).
    pub fn estimate(&self, now: i64) -> u64 {
        self.suffix(now - self.window)
    }

    /// The next time the estimate can change without an arrival: when the oldest bucket starts
    /// straddling the window edge, or leaves the window.
    pub fn next_change(&self, now: i64) -> Option<i64> {
        let b = self.buckets.front()?;
        if b.lo + self.window > now { Some(b.lo + self.window) } else { Some(b.hi + self.window) }
    }

    /// True when no item is counted.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Buckets held (each is 3 words: two stamps and a count).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// The stamps where [`SlidingCounter::suffix`] changes (every bucket's `lo` and `hi`),
    /// ascending, restricted to `[from, to)`.
    pub fn cut_points(&self, from: i64, to: i64) -> Vec<i64> {
        let mut out = Vec::new();
        for b in &self.buckets {
            for s in [b.lo, b.hi] {
                if s >= from && s < to && out.last() != Some(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// A frozen copy for many suffix queries (`O(log n)` each).
    pub fn table(&self) -> SuffixTable {
        let mut his = Vec::with_capacity(self.buckets.len());
        let mut los = Vec::with_capacity(self.buckets.len());
        let mut counts = Vec::with_capacity(self.buckets.len());
        for b in &self.buckets {
            his.push(b.hi);
            los.push(b.lo);
            counts.push(b.count);
        }
        let mut after = vec![0u64; counts.len() + 1];
        for i in (0..counts.len()).rev() {
            after[i] = after[i + 1] + counts[i];
        }
        SuffixTable { los, his, counts, after }
    }
}

/// A snapshot of a [`SlidingCounter`] answering suffix counts by binary search.
///
/// ```
/// use saams::monitoring::SlidingCounter;
/// let mut c = SlidingCounter::new(1000, 0, 0.01).unwrap();
/// for t in 0..10 {
///     c.insert(t, t).unwrap();
/// }
/// let table = c.table();
/// assert_eq!(table.suffix(4), c.suffix(4));
/// assert_eq!(table.suffix(4), 5);
/// ```
#[derive(Clone, Debug)]
pub struct SuffixTable {
    los: Vec<i64>,
    his: Vec<i64>,
    counts: Vec<u64>,
    after: Vec<u64>,
}

impl SuffixTable {
    /// Same as [`SlidingCounter::suffix`] on the snapshot.
    pub fn suffix(&self, cut: i64) -> u64 {
        let idx = self.his.partition_point(|&hi| hi <= cut);
        let mut sum = self.after[idx];
        if idx < self.los.len() && self.los[idx] <= cut {
            sum -= self.counts[idx] - self.counts[idx] / 2;
        }
        sum
    }
}
