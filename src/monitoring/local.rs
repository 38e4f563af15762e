//! A site's local window statistics: one [`SlidingCounter`] for all its items and one per
//! distinct item, with a schedule of when each estimate can next change without an arrival.

use std::collections::{BTreeMap, BTreeSet};

use super::{MonitorError, SlidingCounter};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Total,
    Item(u64),
}

/// The ε-approximate local statistics of one site: window count (relative error
/// `delta_total`) and per-item window counts (relative error `delta_item` on each count, hence
/// at most `delta_item·c_σ` additive). Items whose window count is zero are forgotten.
///
/// ```
/// use saams::monitoring::LocalStats;
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
#[derive(Clone, Debug)]
pub struct LocalStats {
    window: i64,
    tardiness: i64,
    delta_item: f64,
    total: SlidingCounter,
    total_due: Option<i64>,
    items: BTreeMap<u64, (SlidingCounter, Option<i64>)>,
    schedule: BTreeSet<(i64, Key)>,
    now: i64,
}

impl LocalStats {
    /// Statistics for a window of `window` units, tardiness `tardiness`, and the two relative
    /// errors.
    ///
    /// # Errors
    /// As [`SlidingCounter::new`].
    pub fn new(window: i64, tardiness: i64, delta_total: f64, delta_item: f64) -> Result<Self, MonitorError> {
        SlidingCounter::new(window, tardiness, delta_item)?;
        Ok(LocalStats {
            window,
            tardiness,
            delta_item,
            total: SlidingCounter::new(window, tardiness, delta_total)?,
            total_due: None,
            items: BTreeMap::new(),
            schedule: BTreeSet::new(),
            now: i64::MIN,
        })
    }

    fn reschedule(&mut self, key: Key, old: Option<i64>, new: Option<i64>) {
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
                if let Some(e) = self.items.get_mut(&j) {
                    e.1 = new;
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
        self.reschedule(Key::Total, self.total_due, due);
        let (window, tardiness, delta) = (self.window, self.tardiness, self.delta_item);
        let entry = match self.items.entry(item) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert((SlidingCounter::new(window, tardiness, delta)?, None))
            }
        };
        entry.0.insert(now, stamp)?;
        let (old, new) = (entry.1, entry.0.next_change(now));
        self.reschedule(Key::Item(item), old, new);
        Ok(())
    }

    /// Process every scheduled change up to `now`; returns the items whose estimate may have
    /// changed (the total may have changed too).
    pub fn advance(&mut self, now: i64) -> Vec<u64> {
        self.now = self.now.max(now);
        let mut changed = Vec::new();
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
                    self.reschedule(Key::Total, None, due);
                }
                Key::Item(j) => {
                    changed.push(j);
                    let Some(entry) = self.items.get_mut(&j) else { continue };
                    entry.1 = None;
                    entry.0.expire(now);
                    if entry.0.is_empty() {
                        self.items.remove(&j);
                    } else {
                        let due = entry.0.next_change(now);
                        self.reschedule(Key::Item(j), None, due);
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

    /// Estimated window count of `item` at `now`.
    pub fn item(&self, item: u64, now: i64) -> u64 {
        self.items.get(&item).map_or(0, |(c, _)| c.estimate(now))
    }

    /// Every tracked item with its estimated window count at `now`, ascending by item.
    pub fn items(&self, now: i64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.items.iter().map(move |(&j, (c, _))| (j, c.estimate(now)))
    }

    /// The tracked items in `range` with their estimated window counts at `now`, ascending.
    pub fn items_range(
        &self,
        range: impl std::ops::RangeBounds<u64>,
        now: i64,
    ) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.items.range(range).map(move |(&j, (c, _))| (j, c.estimate(now)))
    }

    /// The total counter (for suffix queries at other cuts).
    pub fn total_counter(&self) -> &SlidingCounter {
        &self.total
    }

    /// The per-item counters, ascending by item.
    pub fn item_counters(&self) -> impl Iterator<Item = (u64, &SlidingCounter)> + '_ {
        self.items.iter().map(|(&j, (c, _))| (j, c))
    }

    /// Distinct items tracked.
    pub fn distinct(&self) -> usize {
        self.items.len()
    }

    /// Memory in words: 3 per bucket, plus item id and due time per item, plus 2 per schedule
    /// entry.
    pub fn memory_words(&self) -> usize {
        3 * self.total.buckets()
            + self.items.values().map(|(c, _)| 3 * c.buckets() + 2).sum::<usize>()
            + 2 * self.schedule.len()
    }
}
