//! The seed paper's count and item senders (BC and AC with turn-off): each sends a new value
//! when the local estimate moved by more than its threshold from what the root holds.

use std::collections::{BTreeSet, HashMap};

use crate::local::LocalStats;
use crate::message::{Channel, Message};

/// Seed BC: send the estimate when it moved by more than `θ·e` from the last value sent
/// (an up event when it rose by a factor `1/(1−θ)`, a down event when it fell by `1/(1+θ)`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct SeedCount {
    channel: Channel,
    theta: f64,
    sent: u64,
}

impl SeedCount {
    pub(super) fn new(channel: Channel, theta: f64) -> Self {
        SeedCount { channel, theta, sent: 0 }
    }

    pub(super) fn check(&mut self, e: u64, out: &mut Vec<Message>) {
        if e.abs_diff(self.sent) as f64 > self.theta * e as f64 {
            self.sent = e;
            out.push(Message::Count { channel: self.channel, value: e });
        }
    }
}

/// Seed AC: per item, send the estimate when it moved by more than `θ·e_σ` from the value the
/// root holds (0 for an item that is off); when the item's estimate is itself at most `θ·e_σ`
/// it is turned off instead. The gap set finds the items to send in `O(log)` when `e_σ` drops.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct SeedItems {
    channel: Channel,
    theta: f64,
    sent: HashMap<u64, u64>,
    gap_of: HashMap<u64, u64>,
    gaps: BTreeSet<(u64, u64)>,
}

impl SeedItems {
    pub(super) fn new(channel: Channel, theta: f64) -> Self {
        SeedItems { channel, theta, sent: HashMap::new(), gap_of: HashMap::new(), gaps: BTreeSet::new() }
    }

    fn set_gap(&mut self, item: u64, gap: u64) {
        if let Some(old) = self.gap_of.remove(&item) {
            self.gaps.remove(&(old, item));
        }
        if gap > 0 {
            self.gap_of.insert(item, gap);
            self.gaps.insert((gap, item));
        }
    }

    pub(super) fn update(&mut self, item: u64, e: u64) {
        let r = self.sent.get(&item).copied().unwrap_or(0);
        self.set_gap(item, e.abs_diff(r));
    }

    pub(super) fn trigger(&mut self, e_total: u64, local: &LocalStats, now: i64, out: &mut Vec<Message>) {
        let threshold = self.theta * e_total as f64;
        while let Some(&(gap, item)) = self.gaps.last() {
            if gap as f64 <= threshold {
                break;
            }
            let e = local.item(item, now);
            if e as f64 <= threshold {
                self.sent.remove(&item);
                out.push(Message::ItemOff { channel: self.channel, item });
                self.set_gap(item, e);
            } else {
                self.sent.insert(item, e);
                out.push(Message::ItemCount { channel: self.channel, item, value: e });
                self.set_gap(item, 0);
            }
        }
    }

    /// Memory in words: the value the root holds per item sent (2 words) and the gap index
    /// (3 words per item with a gap).
    pub(super) fn memory_words(&self) -> usize {
        2 * self.sent.len() + 3 * self.gap_of.len()
    }
}
