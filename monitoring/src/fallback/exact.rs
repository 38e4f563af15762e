//! The root's exact copy of the forwarded items still in the window: the price of forwarding
//! is this memory, one entry per forwarded item of the last `W` (at most the forwarding sites'
//! rate × `W`), which the protocol would have replaced by `O((1/ε)·log n)` words per site.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Forwarded items of the last `W`, counted exactly.
///
/// ```
/// use saams_monitoring::fallback::ExactWindow;
/// let mut w = ExactWindow::new(10);
/// w.insert(1, 7);
/// w.insert(5, 7);
/// w.insert(6, 3);
/// w.expire(11); // the window at 11 holds stamps in (1, 11]
/// assert_eq!(w.total(), 2);
/// assert_eq!(w.count(7), 1);
/// assert_eq!(w.values().collect::<Vec<_>>(), vec![(3, 1), (7, 1)]);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ExactWindow {
    window: i64,
    by_stamp: BinaryHeap<Reverse<(i64, u64)>>,
    counts: BTreeMap<u64, u64>,
    total: u64,
}

impl ExactWindow {
    /// An empty store for window `W`.
    pub fn new(window: i64) -> Self {
        ExactWindow { window, by_stamp: BinaryHeap::new(), counts: BTreeMap::new(), total: 0 }
    }

    /// One forwarded item stamped `stamp`.
    pub fn insert(&mut self, stamp: i64, item: u64) {
        self.by_stamp.push(Reverse((stamp, item)));
        *self.counts.entry(item).or_insert(0) += 1;
        self.total += 1;
    }

    /// Drop the items no longer in the window at `now` (stamped `≤ now − W`).
    pub fn expire(&mut self, now: i64) {
        while let Some(&Reverse((stamp, item))) = self.by_stamp.peek() {
            if stamp > now.saturating_sub(self.window) {
                break;
            }
            self.by_stamp.pop();
            self.total -= 1;
            if let Some(c) = self.counts.get_mut(&item) {
                *c -= 1;
                if *c == 0 {
                    self.counts.remove(&item);
                }
            }
        }
    }

    /// Items held.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Copies of `item` held.
    pub fn count(&self, item: u64) -> u64 {
        self.counts.get(&item).copied().unwrap_or(0)
    }

    /// `(item, copies)` ascending by item.
    pub fn values(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().map(|(&v, &c)| (v, c))
    }

    /// Memory in words: two per held item (its stamp and value) plus two per distinct value.
    pub fn memory_words(&self) -> usize {
        2 * self.by_stamp.len() + 2 * self.counts.len()
    }
}
