//! A site's local window statistics for counting: the window count and per-item counts with
//! error relative to the site's count (for counting, frequent items and forward/backward), with
//! a schedule of when each estimate can next change without an arrival. Quantiles have their own
//! structure, [`crate::QuantileWindow`].
//!
//! # Item records (error relative to the site)
//! `S(s)` is the site's count of items stamped after the cut `s`; it only grows while `s` is
//! inside the window. Each item's record is a [`SlidingCounter`] whose bucket caps use `δ_i/2`
//! and `L` = a lower bound on the site's items stamped `≥ hi` (from the total counter), so the
//! record's own error at any cut `s` is at most `(δ_i/2)·S(s)`. Records are deleted (Lossy
//! Counting's rule, moved to time) when, at a compaction at time `t`, a record created at `t₀`
//! after `A` site arrivals holds `C ≤ (δ_i/2)·min(A, L(t₀ + 1))` copies and, for every bucket
//! `b`, the copies in `b` and newer buckets number at most `(δ_i/2)·L(hi_b)`.
//! Invariant: the copies of the item lost to deletions and stamped after `s` number at most
//! `(δ_i/2)·S(s)`, for every cut `s`. When a record is deleted (copies stamped `≥ t₀ − τ`;
//! earlier losses all stamped before `t₀`):
//! * `s < t₀ − τ`: the earlier loss was `≤ (δ_i/2)·S(s)` at `t₀`, and all `A` arrivals since are
//!   stamped `≥ t₀ − τ > s`, so `S(s)` grew by `A ≥ C/(δ_i/2)`;
//! * `t₀ − τ ≤ s < t₀`: likewise, with the arrivals since `t₀` stamped after `t₀` (all of the
//!   site's items stamped `> t₀`, at least `L(t₀ + 1)`) in place of `A`;
//! * `s ≥ t₀`: no earlier loss is stamped after `s`, and the record's copies after `s` are at
//!   most the count of the buckets ending after `s`, checked against `L(hi_b) ≤ S(s)`.
//!
//! An item's error is its record's error plus the earlier loss: at most `δ_i·S(s)`.
//! Memory: a record survives a compaction only if some cut has `c_j(s) > (δ_i/2)·S(s)` — at most
//! `2/(δ_i/2)` items per doubling of `S` — or it is young (`C > (δ_i/2)·A`: at most `2/(δ_i/2)`
//! per doubling of `A`, as in Lossy Counting, and with tardiness also the records whose
//! `L(t₀ + 1)` is still small, i.e. created within about the last `τ`). So `O((1/δ_i)·log n)`
//! records, each with `O(log n)` buckets, for in-order input.
//!

use std::collections::{BTreeMap, BTreeSet};

use crate::counter::SlidingCounter;
use crate::error::MonitorError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
enum Key {
    Total,
    Item(u64),
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Record {
    counter: SlidingCounter,
    /// The site's arrival count when the record was created.
    created: u64,
    /// When the record was created.
    born: i64,
    due: Option<i64>,
}

/// Words of memory, by part (see [`LocalStats::memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LocalMemory {
    /// The site's total counter.
    pub total: usize,
    /// The per-item records of error `δ_i·S` (counting, frequent items, forward/backward).
    pub items: usize,
    /// The schedule of estimate changes of the total and the item records (2 words per entry).
    pub schedule: usize,
}

impl LocalMemory {
    /// The sum of the parts.
    pub fn sum(&self) -> usize {
        self.total + self.items + self.schedule
    }
}

/// The ε-approximate local statistics of one site (module docs): window count (relative error
/// `delta_total`), per-item window counts with additive error `delta_item` times the site's count
/// after the cut. Items whose estimates are zero are forgotten.
///
/// ```
/// use saams_monitoring::LocalStats;
/// let mut s = LocalStats::new(10, 0, 0.01, 0.01).unwrap();
/// s.insert(0, 0, 7).unwrap();
/// s.insert(1, 1, 7).unwrap();
/// s.insert(1, 1, 8).unwrap();
/// assert_eq!(s.total(1), 3);
/// assert_eq!(s.item(7, 1), 2);
/// s.advance(10); // stamp 0 leaves the window (0, 10]
/// assert_eq!(s.item(7, 10), 1);
/// s.advance(11);
/// assert_eq!(s.total(11), 0);
/// assert_eq!(s.distinct(), 0);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LocalStats {
    window: i64,
    tardiness: i64,
    delta_total: f64,
    delta_item: f64,
    total: SlidingCounter,
    total_due: Option<i64>,
    items: BTreeMap<u64, Record>,
    schedule: BTreeSet<(i64, Key)>,
    now: i64,
    arrivals: u64,
    /// Upper bound on the item records' buckets and overlays since the last compaction.
    item_units: usize,
    compact_at: usize,
    /// Items whose record estimate changed outside an arrival or expiry (compaction, deletion).
    changed: Vec<u64>,
    /// Item record buckets never span a multiple of this (forward/backward splits).
    split: Option<i64>,
}

impl LocalStats {
    /// Statistics for a window of `window` units, tardiness `tardiness`, and the two errors.
    ///
    /// # Errors
    /// As [`SlidingCounter::new`].
    pub fn new(window: i64, tardiness: i64, delta_total: f64, delta_item: f64) -> Result<Self, MonitorError> {
        SlidingCounter::new(window, tardiness, delta_item)?;
        Ok(LocalStats {
            window,
            tardiness,
            delta_total,
            delta_item,
            total: SlidingCounter::new(window, tardiness, delta_total)?,
            total_due: None,
            items: BTreeMap::new(),
            schedule: BTreeSet::new(),
            now: i64::MIN,
            arrivals: 0,
            item_units: 0,
            compact_at: 64,
            changed: Vec::new(),
            split: None,
        })
    }

    /// Keep every item record's buckets within one `(mL, (m+1)L]` (`L = len`), so that item
    /// suffixes at the forward/backward splits `mL` carry no bucket error.
    ///
    /// # Errors
    /// When `len ≤ 0`.
    pub fn with_splits(mut self, len: i64) -> Result<Self, MonitorError> {
        if len <= 0 {
            return Err(MonitorError::BadParameter(format!("split length must be positive, got {len}")));
        }
        self.split = Some(len);
        Ok(self)
    }

    fn set_due(&mut self, key: Key, new: Option<i64>) {
        let old = match key {
            Key::Total => self.total_due,
            Key::Item(j) => self.items.get(&j).and_then(|r| r.due),
        };
        if old == new {
            return;
        }
        if let Some(t) = old {
            self.schedule.remove(&(t, key));
        }
        if let Some(t) = new {
            self.schedule.insert((t, key));
        }
        match key {
            Key::Total => self.total_due = new,
            Key::Item(j) => {
                if let Some(r) = self.items.get_mut(&j) {
                    r.due = new;
                }
            }
        }
    }

    /// Count `item` stamped `stamp`, arriving at `now`.
    ///
    /// # Errors
    /// When time runs backwards or the item is later than the tardiness allows.
    pub fn insert(&mut self, now: i64, stamp: i64, item: u64) -> Result<(), MonitorError> {
        if now < self.now {
            return Err(MonitorError::BadInput(format!("time ran backwards: {now} after {}", self.now)));
        }
        self.now = now;
        self.total.insert(now, stamp)?;
        let due = self.total.next_change(now);
        self.set_due(Key::Total, due);
        let (window, tardiness) = (self.window, self.tardiness);
        if !self.items.contains_key(&item) {
            let counter = SlidingCounter::new_record(window, tardiness, self.delta_item / 2.0)?;
            self.items.insert(item, Record { counter, created: self.arrivals, born: now, due: None });
        }
        let record = self.items.get_mut(&item).expect("inserted above");
        record.counter.insert(now, stamp)?;
        let due = record.counter.next_change(now);
        self.set_due(Key::Item(item), due);
        self.arrivals += 1;
        self.item_units += 1;
        if self.item_units > self.compact_at {
            self.compact_items(now);
        }
        Ok(())
    }

    /// Merge every item record's buckets against the site total and delete the records the
    /// deletion rule allows (module docs).
    fn compact_items(&mut self, now: i64) {
        let table = self.total.table();
        let shrink = 1.0 + self.delta_total;
        let lower = |hi: i64| table.suffix(hi - 1) as f64 / shrink;
        // Bucket caps and deletions each get half of δ_i (module docs).
        let delta = self.delta_item / 2.0;
        let (arrivals, split) = (self.arrivals, self.split);
        let mut units = 0;
        let mut dead = Vec::new();
        let mut dues = Vec::new();
        for (&j, r) in self.items.iter_mut() {
            let before = r.counter.estimate(now);
            r.counter.compact_against(now, |hi, _| lower(hi), split);
            let young = (arrivals - r.created) as f64;
            let deletable = r.counter.held() as f64 <= delta * young.min(lower(r.born + 1))
                && r.counter.all_suffixes(|c, hi| c as f64 <= delta * lower(hi));
            if deletable {
                dead.push(j);
            } else {
                units += r.counter.buckets() + r.counter.overlays();
                if r.counter.estimate(now) != before {
                    self.changed.push(j);
                }
                dues.push((j, r.counter.next_change(now)));
            }
        }
        for (j, due) in dues {
            self.set_due(Key::Item(j), due);
        }
        for j in dead {
            self.set_due(Key::Item(j), None);
            self.items.remove(&j);
            self.changed.push(j);
        }
        self.item_units = units;
        self.compact_at = units + units / 4 + 64;
    }

    /// Process every scheduled change up to `now`; returns the items whose estimates may have
    /// changed (the total may have changed too).
    pub fn advance(&mut self, now: i64) -> Vec<u64> {
        self.now = self.now.max(now);
        let mut changed = std::mem::take(&mut self.changed);
        while let Some(&(t, key)) = self.schedule.first() {
            if t > now {
                break;
            }
            self.schedule.remove(&(t, key));
            match key {
                Key::Total => {
                    self.total_due = None;
                    self.total.expire(now);
                    let due = self.total.next_change(now);
                    self.set_due(Key::Total, due);
                }
                Key::Item(j) => {
                    changed.push(j);
                    let Some(r) = self.items.get_mut(&j) else { continue };
                    r.due = None;
                    r.counter.expire(now);
                    if r.counter.is_empty() {
                        self.items.remove(&j);
                    } else {
                        let due = r.counter.next_change(now);
                        self.set_due(Key::Item(j), due);
                    }
                }
            }
        }
        changed
    }

    /// The next time an estimate changes without an arrival.
    pub fn next_due(&self) -> Option<i64> {
        self.schedule.first().map(|&(t, _)| t)
    }

    /// Estimated window count of the site at `now`.
    pub fn total(&self, now: i64) -> u64 {
        self.total.estimate(now)
    }

    /// Estimated window count of `item` at `now` (error `≤ δ_i·c_σ`).
    pub fn item(&self, item: u64, now: i64) -> u64 {
        self.items.get(&item).map_or(0, |r| r.counter.estimate(now))
    }

    /// The total counter (for suffix queries at other cuts).
    pub fn total_counter(&self) -> &SlidingCounter {
        &self.total
    }

    /// The per-item records (error `δ_i` times the site's count after the cut), ascending by
    /// item.
    pub fn item_counters(&self) -> impl Iterator<Item = (u64, &SlidingCounter)> + '_ {
        self.items.iter().map(|(&j, r)| (j, &r.counter))
    }

    /// The record of one item, if kept.
    pub fn item_counter(&self, item: u64) -> Option<&SlidingCounter> {
        self.items.get(&item).map(|r| &r.counter)
    }

    /// Item records kept.
    pub fn distinct(&self) -> usize {
        self.items.len()
    }

    /// Memory in words by part: every counter's [`SlidingCounter::memory_words`], plus per item
    /// record its id, creation count and time, and due time, and 2 per schedule entry.
    pub fn memory(&self) -> LocalMemory {
        LocalMemory {
            total: self.total.memory_words(self.now),
            items: self.items.values().map(|r| r.counter.memory_words(self.now) + 4).sum(),
            schedule: 2 * self.schedule.len(),
        }
    }

    /// Memory in words (the sum of [`LocalStats::memory`]).
    pub fn memory_words(&self) -> usize {
        self.memory().sum()
    }
}
