//! A sliding-window counter of small relative error that tolerates out-of-order arrivals.
//!
//! Buckets cover disjoint stamp ranges `[lo, hi]` (both ends are stamps of real items). For any
//! cut `s` (the window is the stamps `> s`) the estimate is the count of the buckets entirely
//! after `s` plus half of the one bucket straddling it. That bucket's `hi` item is inside and its
//! `lo` item outside, so the error is at most `(c − 1)/2` for its count `c`. A bucket may hold
//! `c ≤ cap = ⌊2δL⌋ + 1` items, where `L` is a lower bound on the number of items stamped `≥ hi`
//! (the bucket's own `hi` item included) of the stream the error is measured against: then the
//! error at every cut inside it is at most `δL ≤ δ·(items stamped after the cut)`. That stream
//! count only grows while the cut is inside the window (late items add to it, expiry removes only
//! older stamps), so a cap once valid stays valid. A single-stamp bucket is never straddled and
//! has no cap.
//!
//! * [`SlidingCounter`] measures against its own stream (`L` = the items of the newer buckets
//!   plus one): relative error `δ` at every cut, `O((1/δ)·log n)` buckets.
//! * The per-item records of [`crate::LocalStats`] measure against the whole site's stream (`L`
//!   from the site's total counter), so an item's error is `δ` times the SITE's count after the
//!   cut, and rare items collapse into one bucket.
//!
//! Out-of-order input (tardiness `τ`): buckets whose range may still receive late items
//! (`hi ≥ now − τ`, "unsealed") are merged too, but only up to half their cap (`⌊δL⌋ + 1`), which
//! leaves room for late items: a late item stamped inside a merged bucket joins it while its count
//! is below the cap recorded at the last compaction (a lower bound of the current cap). When the
//! bucket is full, the item is kept in an exact per-stamp *overlay* (never straddled, so it adds
//! no error) until a later compaction finds room for it in its bucket. Memory is therefore
//! `O((1/δ)·log n)` buckets plus the overlays, which only bursts of late items into full buckets
//! create.

use std::collections::{BTreeMap, VecDeque};

use crate::error::{MonitorError, check_window};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Bucket {
    lo: i64,
    hi: i64,
    count: u64,
    /// The cap `⌊2δL⌋ + 1` at the last compaction (a lower bound of the current cap).
    cap: u64,
}

/// Sliding-window count of one stream (all items, or the copies of one item) with error at most
/// `δ` times the count of the reference stream after any cut inside the window (module docs).
///
/// ```
/// use saams_monitoring::SlidingCounter;
/// let mut c = SlidingCounter::new(100, 0, 0.1).unwrap();
/// for t in 0..1000 {
///     c.insert(t, t).unwrap();
/// }
/// // The window at time 999 holds the stamps 900..=999: 100 items.
/// let est = c.estimate(999);
/// assert!((est as f64 - 100.0).abs() <= 0.1 * 100.0);
/// assert!(c.buckets() < 100, "old stamps were merged");
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SlidingCounter {
    window: i64,
    tardiness: i64,
    delta: f64,
    buckets: VecDeque<Bucket>,
    overlay: BTreeMap<i64, u64>,
    total: u64,
    compact_at: usize,
    /// False for per-item records, which are compacted by their owner against the site total.
    self_compact: bool,
}

impl SlidingCounter {
    /// A counter for a window of `window` time units, items at most `tardiness` late, and
    /// relative error `delta`.
    ///
    /// # Errors
    /// When `window ≤ 0`, `tardiness` is outside `0..window`, or `delta` is outside `(0, 1)`.
    pub fn new(window: i64, tardiness: i64, delta: f64) -> Result<Self, MonitorError> {
        check_window(window, tardiness)?;
        if !(delta > 0.0 && delta < 1.0) {
            return Err(MonitorError::BadParameter(format!("delta must be in (0, 1), got {delta}")));
        }
        Ok(SlidingCounter {
            window,
            tardiness,
            delta,
            buckets: VecDeque::new(),
            overlay: BTreeMap::new(),
            total: 0,
            compact_at: 16,
            self_compact: true,
        })
    }

    /// A counter compacted only through [`SlidingCounter::compact_against`] (a per-item record).
    pub(crate) fn new_record(window: i64, tardiness: i64, delta: f64) -> Result<Self, MonitorError> {
        let mut c = SlidingCounter::new(window, tardiness, delta)?;
        c.self_compact = false;
        Ok(c)
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
        let fresh = Bucket { lo: stamp, hi: stamp, count: 1, cap: 1 };
        match self.buckets.back_mut() {
            None => self.buckets.push_back(fresh),
            Some(b) if b.hi < stamp => self.buckets.push_back(fresh),
            Some(b) if b.lo == stamp && b.hi == stamp => b.count += 1,
            Some(_) => {
                let idx = self.buckets.partition_point(|b| b.hi < stamp);
                let b = &mut self.buckets[idx];
                if b.lo > stamp {
                    self.buckets.insert(idx, fresh);
                } else if b.lo == b.hi || b.count < b.cap {
                    b.count += 1;
                } else {
                    *self.overlay.entry(stamp).or_insert(0) += 1;
                }
            }
        }
        self.total += 1;
        if self.self_compact && self.units() > self.compact_at {
            self.compact(now);
            // Compact again after a quarter more units: memory peaks at 1.25× the compacted size,
            // and each unit costs O(1) amortized compaction work.
            self.compact_at = self.units() + self.units() / 4 + 16;
        }
        Ok(())
    }

    /// Buckets plus overlay stamps.
    fn units(&self) -> usize {
        self.buckets.len() + self.overlay.len()
    }

    fn compact(&mut self, now: i64) {
        self.compact_against(now, |_, newer| (newer + 1) as f64, None);
    }

    /// Merge buckets newest first, with the cap of a bucket ending at `hi` computed from
    /// `lower(hi, newer)`: a lower bound on the reference stream's items stamped `≥ hi`, given the
    /// count `newer` of this counter's newer buckets (module docs). Then move overlay stamps into
    /// their buckets where there is room. With `split = Some(L)`, no bucket is merged across a
    /// multiple of `L` (a bucket's stamps stay within one `(mL, (m+1)L]`), so the suffix at every
    /// such cut is exact up to what the record lost.
    pub(crate) fn compact_against(&mut self, now: i64, lower: impl Fn(i64, u64) -> f64, split: Option<i64>) {
        if self.buckets.is_empty() {
            return;
        }
        let seal = now - self.tardiness;
        let delta = self.delta;
        let cap_of = |l: f64| (2.0 * delta * l).floor() as u64 + 1;
        let half_of = |l: f64| (delta * l).floor() as u64 + 1;
        let n = self.buckets.len();
        let mut newer: u64 = 0;
        let mut out: Vec<Bucket> = Vec::with_capacity(n);
        let mut cur = self.buckets[n - 1];
        for idx in (0..n - 1).rev() {
            let b = self.buckets[idx];
            let l = lower(cur.hi, newer);
            let limit = if cur.hi < seal { cap_of(l) } else { half_of(l) };
            let same_block = split.is_none_or(|len| (b.lo - 1).div_euclid(len) == (cur.hi - 1).div_euclid(len));
            if same_block && cur.count + b.count <= limit {
                cur = Bucket { lo: b.lo, hi: cur.hi, count: cur.count + b.count, cap: cap_of(l) };
            } else {
                cur.cap = cur.cap.max(cap_of(l));
                newer += cur.count;
                out.push(cur);
                cur = b;
            }
        }
        let l = lower(cur.hi, newer);
        cur.cap = cur.cap.max(cap_of(l));
        out.push(cur);
        self.buckets.clear();
        self.buckets.extend(out.into_iter().rev());
        if !self.overlay.is_empty() {
            let overlay = std::mem::take(&mut self.overlay);
            for (stamp, o) in overlay {
                let idx = self.buckets.partition_point(|b| b.hi < stamp);
                match self.buckets.get_mut(idx) {
                    Some(b) if b.lo <= stamp && (b.lo == b.hi || b.count + o <= b.cap) => b.count += o,
                    _ => {
                        self.overlay.insert(stamp, o);
                    }
                }
            }
        }
    }

    /// True when `ok(C, hi)` holds for every bucket, `C` the count held in that bucket and all
    /// newer ones (overlay stamps included) and `hi` the bucket's newest stamp: `C` bounds the
    /// count after any cut below `hi` and above the previous bucket's newest stamp.
    pub(crate) fn all_suffixes(&self, ok: impl Fn(u64, i64) -> bool) -> bool {
        let mut acc = 0u64;
        for b in self.buckets.iter().rev() {
            acc += b.count + self.overlay.range(b.lo..=b.hi).map(|(_, &o)| o).sum::<u64>();
            if !ok(acc, b.hi) {
                return false;
            }
        }
        true
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
        while let Some((&s, &o)) = self.overlay.first_key_value() {
            if s + self.window <= now {
                self.total -= o;
                self.overlay.pop_first();
            } else {
                break;
            }
        }
    }

    /// The estimated number of items stamped after `cut` (error ≤ δ times the reference stream's
    /// count after the cut, for any cut no older than the oldest bucket kept, i.e. inside the
    /// window). Cost: the buckets before the cut plus the overlay stamps after it.
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
        for (_, &o) in self.overlay.range(..=cut) {
            sum -= o;
        }
        sum
    }

    /// The estimated window count at `now` (items stamped in `(now − W, now]`).
    pub fn estimate(&self, now: i64) -> u64 {
        self.suffix(now - self.window)
    }

    /// The total count held (all buckets and overlays).
    pub fn held(&self) -> u64 {
        self.total
    }

    /// The next time the estimate can change without an arrival: when the oldest bucket starts
    /// straddling the window edge, or leaves the window, or the oldest overlay stamp leaves it.
    pub fn next_change(&self, now: i64) -> Option<i64> {
        let b = self
            .buckets
            .front()
            .map(|b| if b.lo + self.window > now { b.lo + self.window } else { b.hi + self.window });
        let o = self.overlay.first_key_value().map(|(&s, _)| s + self.window);
        match (b, o) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    /// True when no item is counted.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Buckets held (each is 3 words: two stamps and a count, plus a cap while it may still
    /// receive late items).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Overlay stamps held (each is 2 words: a stamp and a count).
    pub fn overlays(&self) -> usize {
        self.overlay.len()
    }

    /// Memory in words: 3 per bucket plus its cap while it is not sealed at `now` (its newest
    /// stamp `≥ now − τ`, so late items may join it), 2 per overlay stamp.
    pub fn memory_words(&self, now: i64) -> usize {
        let unsealed = self.buckets.len() - self.buckets.partition_point(|b| b.hi < now - self.tardiness);
        3 * self.buckets.len() + unsealed + 2 * self.overlay.len()
    }

    /// The stamps where [`SlidingCounter::suffix`] changes (every bucket's `lo` and `hi`, every
    /// overlay stamp), ascending, restricted to `[from, to)`.
    pub fn cut_points(&self, from: i64, to: i64) -> Vec<i64> {
        let mut out = Vec::new();
        for b in &self.buckets {
            for s in [b.lo, b.hi] {
                if s >= from && s < to && out.last() != Some(&s) {
                    out.push(s);
                }
            }
        }
        if self.overlay.range(from..to).next().is_some() {
            out.extend(self.overlay.range(from..to).map(|(&s, _)| s));
            out.sort_unstable();
            out.dedup();
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
        let ov_stamps: Vec<i64> = self.overlay.keys().copied().collect();
        let ov: Vec<u64> = self.overlay.values().copied().collect();
        let mut ov_after = vec![0u64; ov.len() + 1];
        for i in (0..ov.len()).rev() {
            ov_after[i] = ov_after[i + 1] + ov[i];
        }
        SuffixTable { los, his, counts, after, ov_stamps, ov_after }
    }
}

/// A snapshot of a [`SlidingCounter`] answering suffix counts by binary search.
///
/// ```
/// use saams_monitoring::SlidingCounter;
/// let mut c = SlidingCounter::new(1000, 0, 0.01).unwrap();
/// for t in 0..10 {
///     c.insert(t, t).unwrap();
/// }
/// let table = c.table();
/// assert_eq!(table.suffix(4), c.suffix(4));
/// assert_eq!(table.suffix(4), 5);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SuffixTable {
    los: Vec<i64>,
    his: Vec<i64>,
    counts: Vec<u64>,
    after: Vec<u64>,
    ov_stamps: Vec<i64>,
    ov_after: Vec<u64>,
}

impl SuffixTable {
    /// Same as [`SlidingCounter::suffix`] on the snapshot.
    pub fn suffix(&self, cut: i64) -> u64 {
        let idx = self.his.partition_point(|&hi| hi <= cut);
        let mut sum = self.after[idx];
        if idx < self.los.len() && self.los[idx] <= cut {
            sum -= self.counts[idx] - self.counts[idx] / 2;
        }
        sum + self.ov_after[self.ov_stamps.partition_point(|&s| s <= cut)]
    }
}
