//! The quantile sender: the site's mirror of the groups the root holds, kept within the prefix
//! discrepancy the error analysis allows (see [`Quantiles`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::config::Config;
use crate::error::MonitorError;
use crate::message::{Channel, Message};
use crate::quantile::QuantileWindow;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
enum GroupKey {
    Group(u64),
    Tail,
}

/// Where the quantile sender's prefix discrepancy peaks: its size `P`, the signed partial sum
/// there, and the last boundary it covers (`None`: the total, tail included).
struct Peak {
    size: u64,
    sum: i64,
    upto: Option<u64>,
}

/// Quantiles: the root holds, per site, groups of consecutive values, each represented by a
/// boundary value `b` (every value of the group is in `(previous boundary, b]`) with a weight,
/// in half items. The site keeps the rank estimate `R̂₂` of its [`QuantileWindow`] (error
/// `δ_q·c_σ`), and each group's current weight is `R̂₂(b) − R̂₂(previous boundary)` (values above
/// the last boundary form a tail the root does not have), maintained from the structure's
/// changes. Its *interior* is that weight minus the weight at `b` itself.
/// * Prefix discrepancy `P` = the largest `|Σ_{b' ≤ b} (root weight − current weight)|` over
///   the boundaries, and of the sum over all groups minus the tail (the root's total against
///   `R̂₂(∞)`); `P ≤ D = Σ |root weight − current weight|`. When `P > θ·2c_σ` (`c_σ` from the
///   site's total counter, lower estimate) the site sends, at the peak of `|prefix|`, the
///   groups at or before it whose difference has the peak's sign, largest first (the tail as
///   new greedy groups), and repeats until `P ≤ 0.75·θ·2c_σ`. Triggering on `D` instead, and
///   sending the largest differences anywhere, cost 1.05–2.0× the quantile words on the stock
///   and AIS grid (arrivals and expiries in different groups cancel in `P`, not in `D`),
///   measured with `scripts/monitor-table.sh`; stopping at 0.75 rather than 0.5 of the trigger
///   saved 3–9% more (0.5–0.9 tried: AIS prefers higher, stocks lower). Not a gain everywhere:
///   in the real-data test (k = 8, ε = 0.05, W = 30 min) stocks send 20–23% fewer quantile
///   words, AIS 3% more in order and the same at τ = W/2.
/// * A group's interior must be at most `g·R̂₂(∞)/(1 + δ_q) ≤ 2g·c_σ`: a heavier group is split
///   greedily and the pieces sent.
/// * When splits have fragmented the summary beyond `3/g + 2` groups, a fresh greedy grouping
///   is shipped whole.
///
/// The root's cumulative weight at a boundary, and its total, are `R̂₂` within `P`, so the local
/// error enters once per site: per-site rank error (in items) `P/2 + δ_q·c_σ + interior/2 ≤ (θ + δ_q + g)·c_σ`
/// (module docs of [`crate`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Quantiles {
    theta: f64,
    group: f64,
    delta_total: f64,
    delta_q: f64,
    /// The site's rank structure: the site inserts its arrivals and expires the window here.
    pub(super) window: QuantileWindow,
    root_w: BTreeMap<u64, u64>,
    cur_w: BTreeMap<u64, u64>,
    /// The current weight at each boundary value itself.
    at_b: BTreeMap<u64, u64>,
    tail: u64,
    /// `R̂₂(∞)`: the sum of every current weight.
    total: u64,
    /// `D`, the sum of every group's (and the tail's) discrepancy: a cheap bound of `P`.
    disc: u64,
    /// An upper bound of the prefix discrepancy `P` (see [`Quantiles::prefix_peak`]):
    /// its value at the last scan plus every weight change noted since, so a scan is only
    /// needed when this bound (and `D`) exceed the send threshold.
    prefix_bound: u64,
    /// `(interior, boundary)` of every group.
    by_interior: BTreeSet<(u64, u64)>,
}

/// Greedy grouping of `(value, weight)` (ascending) into groups of weight `≤ cap` unless they
/// hold a single value: `(boundary, weight, weight at the boundary)`.
fn group_items(items: impl IntoIterator<Item = (u64, u64)>, cap: f64, out: &mut Vec<(u64, u64, u64)>) {
    let (mut cur_w, mut cur_max, mut cur_last) = (0u64, 0u64, 0u64);
    for (v, w) in items {
        if w == 0 {
            continue;
        }
        if cur_w > 0 && (cur_w + w) as f64 > cap {
            out.push((cur_max, cur_w, cur_last));
            cur_w = 0;
        }
        cur_w += w;
        cur_max = v;
        cur_last = w;
    }
    if cur_w > 0 {
        out.push((cur_max, cur_w, cur_last));
    }
}

impl Quantiles {
    pub(super) fn new(cfg: &Config) -> Result<Self, MonitorError> {
        Ok(Quantiles {
            theta: cfg.theta(Channel::Quantiles),
            group: cfg.quantile_group(),
            delta_total: cfg.delta_total(),
            delta_q: cfg.delta_quantile(),
            window: QuantileWindow::new(cfg.window, cfg.tardiness, cfg.delta_quantile())?,
            root_w: BTreeMap::new(),
            cur_w: BTreeMap::new(),
            at_b: BTreeMap::new(),
            tail: 0,
            total: 0,
            disc: 0,
            prefix_bound: 0,
            by_interior: BTreeSet::new(),
        })
    }

    fn key_of(&self, item: u64) -> GroupKey {
        self.cur_w.range(item..).next().map_or(GroupKey::Tail, |(&b, _)| GroupKey::Group(b))
    }

    fn discrepancy(&self, key: GroupKey) -> u64 {
        match key {
            GroupKey::Tail => self.tail,
            GroupKey::Group(b) => {
                let r = self.root_w.get(&b).copied().unwrap_or(0);
                r.abs_diff(self.cur_w.get(&b).copied().unwrap_or(0))
            }
        }
    }

    fn interior(&self, b: u64) -> Option<u64> {
        let w = self.cur_w.get(&b)?;
        Some(w - self.at_b.get(&b).copied().unwrap_or(0))
    }

    /// Remove `key`'s bookkeeping (its discrepancy and interior entries) before changing it.
    fn detach(&mut self, key: GroupKey) {
        let d = self.discrepancy(key);
        self.disc -= d;
        if let GroupKey::Group(b) = key
            && let Some(i) = self.interior(b)
        {
            self.by_interior.remove(&(i, b));
        }
    }

    fn attach(&mut self, key: GroupKey) {
        let d = self.discrepancy(key);
        self.disc += d;
        if let GroupKey::Group(b) = key
            && let Some(i) = self.interior(b)
        {
            self.by_interior.insert((i, b));
        }
    }

    /// Account a change `d` (half items) of the estimate's weight at `item`.
    fn note(&mut self, item: u64, d: i64) {
        let add = |w: u64| {
            debug_assert!(w as i64 + d >= 0, "weights stay nonnegative");
            w.saturating_add_signed(d)
        };
        self.total = add(self.total);
        self.prefix_bound = self.prefix_bound.saturating_add(d.unsigned_abs());
        let key = self.key_of(item);
        self.detach(key);
        match key {
            GroupKey::Tail => self.tail = add(self.tail),
            GroupKey::Group(b) => {
                let w = self.cur_w.get_mut(&b).expect("group exists");
                *w = add(*w);
                if item == b {
                    let a = self.at_b.entry(b).or_insert(0);
                    *a = add(*a);
                }
            }
        }
        self.attach(key);
    }

    /// Replace group `b` (or the tail) by `pieces`, all sent to the root.
    fn replace(&mut self, key: GroupKey, pieces: &[(u64, u64, u64)], patch: &mut BTreeMap<u64, u64>) {
        // Zeroing a discrepancy moves the later prefix sums by at most that much.
        self.prefix_bound = self.prefix_bound.saturating_add(self.discrepancy(key));
        self.detach(key);
        match key {
            GroupKey::Tail => self.tail = 0,
            GroupKey::Group(b) => {
                self.cur_w.remove(&b);
                self.at_b.remove(&b);
                if self.root_w.remove(&b).is_some() {
                    patch.insert(b, 0);
                }
            }
        }
        for &(v, w, wb) in pieces {
            self.cur_w.insert(v, w);
            self.at_b.insert(v, wb);
            self.root_w.insert(v, w);
            patch.insert(v, w);
            self.attach(GroupKey::Group(v));
        }
    }

    /// The values of group `key` with their weights.
    fn members(&self, key: GroupKey) -> Vec<(u64, u64)> {
        let (lo, hi) = match key {
            GroupKey::Group(b) => (self.cur_w.range(..b).next_back().map(|(&p, _)| p), Some(b)),
            GroupKey::Tail => (self.cur_w.keys().next_back().copied(), None),
        };
        let lower = lo.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        let upper = hi.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Included);
        self.window.weights((lower, upper))
    }

    /// Apply the structure's changes up to `now` and send what keeps the invariants; `count`
    /// is the site's estimated window count (total counter).
    pub(super) fn check(&mut self, count: u64, out: &mut Vec<Message>) {
        for (v, d) in self.window.drain_changes() {
            self.note(v, d);
        }
        let c_low2 = 2.0 * count as f64 / (1.0 + self.delta_total);
        let cap = self.group * self.total as f64 / (1.0 + self.delta_q);
        let mut patch: BTreeMap<u64, u64> = BTreeMap::new();
        // Split every group whose interior is heavier than the cap.
        let heavy: Vec<u64> =
            self.by_interior.iter().rev().take_while(|&&(i, _)| i as f64 > cap).map(|&(_, b)| b).collect();
        for b in heavy {
            let members = self.members(GroupKey::Group(b));
            let mut pieces = Vec::new();
            group_items(members, cap, &mut pieces);
            self.replace(GroupKey::Group(b), &pieces, &mut patch);
        }
        if self.cur_w.len() as f64 > 3.0 / self.group + 2.0 {
            let mut fresh = Vec::new();
            group_items(self.window.weights(..), cap, &mut fresh);
            self.root_w = fresh.iter().map(|&(v, w, _)| (v, w)).collect();
            self.cur_w = self.root_w.clone();
            self.at_b = fresh.iter().map(|&(v, _, wb)| (v, wb)).collect();
            self.by_interior = fresh.iter().map(|&(v, w, wb)| (w - wb, v)).collect();
            self.tail = 0;
            self.disc = 0;
            self.prefix_bound = 0;
            out.push(Message::Summary { entries: fresh.into_iter().map(|(v, w, _)| (v, w)).collect() });
            return;
        }
        let send_at = self.theta * c_low2;
        self.prefix_bound = self.prefix_bound.min(self.disc);
        if self.prefix_bound as f64 > send_at {
            let mut peak = self.prefix_peak();
            self.prefix_bound = peak.size;
            if peak.size as f64 > send_at {
                let target = (send_at * 0.75) as u64;
                while peak.size > target {
                    let picks = self.peak_picks(&peak, target);
                    if picks.is_empty() {
                        break;
                    }
                    for key in picks {
                        match key {
                            GroupKey::Tail => {
                                let mut pieces = Vec::new();
                                group_items(self.members(GroupKey::Tail), cap, &mut pieces);
                                self.replace(GroupKey::Tail, &pieces, &mut patch);
                            }
                            GroupKey::Group(b) => {
                                let w = self.cur_w[&b];
                                if w == 0 {
                                    self.replace(key, &[], &mut patch);
                                } else {
                                    self.detach(key);
                                    self.root_w.insert(b, w);
                                    patch.insert(b, w);
                                    self.attach(key);
                                }
                            }
                        }
                    }
                    peak = self.prefix_peak();
                    self.prefix_bound = peak.size;
                }
            }
        }
        if !patch.is_empty() {
            out.push(Message::SummaryPatch { entries: patch.into_iter().collect() });
        }
    }

    /// The prefix discrepancy `P` and where it peaks: the largest
    /// `|Σ_{b' ≤ b} (root weight − current weight)|` over the boundaries `b` in value order, and
    /// over all groups with the tail's current weight subtracted (the root's total against
    /// `R̂₂(∞)`). The root's cumulative weight at every boundary, and its total, are within `P` of
    /// the site's estimate `R̂₂`, which is all the error analysis uses; `P ≤ D`, and arrivals and
    /// expiries in different groups cancel in it, so triggering on `P` sends less on streams whose
    /// values drift (measured in `scripts/monitor-table.sh`). `O(groups)`; only run when the
    /// running bound exceeds the send threshold.
    fn prefix_peak(&self) -> Peak {
        let (mut prefix, mut best) = (0i64, Peak { size: 0, sum: 0, upto: None });
        for (b, &cur) in &self.cur_w {
            prefix += self.signed_discrepancy(*b, cur);
            if prefix.unsigned_abs() > best.size {
                best = Peak { size: prefix.unsigned_abs(), sum: prefix, upto: Some(*b) };
            }
        }
        let total = prefix - self.tail as i64;
        if total.unsigned_abs() >= best.size {
            best = Peak { size: total.unsigned_abs(), sum: total, upto: None };
        }
        best
    }

    /// Root weight minus current weight of group `b`.
    fn signed_discrepancy(&self, b: u64, cur: u64) -> i64 {
        self.root_w.get(&b).copied().unwrap_or(0) as i64 - cur as i64
    }

    /// The groups to send next: at the `peak`, the groups at or before it whose discrepancy has
    /// the peak's sign (the tail too, for the total), largest first, until they cover the peak's
    /// excess over `target`; sending them lowers the peak by their whole discrepancies, where a
    /// group past the peak or of the other sign could raise it.
    fn peak_picks(&self, peak: &Peak, target: u64) -> Vec<GroupKey> {
        let sign = peak.sum.signum();
        let mut candidates: Vec<(i64, GroupKey)> = Vec::new();
        if peak.upto.is_none() && sign < 0 && self.tail > 0 {
            candidates.push((self.tail as i64, GroupKey::Tail));
        }
        let range = match peak.upto {
            Some(b) => self.cur_w.range(..=b),
            None => self.cur_w.range(..),
        };
        for (&b, &cur) in range {
            let d = sign * self.signed_discrepancy(b, cur);
            if d > 0 {
                candidates.push((d, GroupKey::Group(b)));
            }
        }
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        let excess = peak.size.saturating_sub(target) as i64;
        let mut covered = 0i64;
        candidates
            .into_iter()
            .take_while(|&(d, _)| {
                let more = covered < excess;
                covered += d;
                more
            })
            .map(|(_, key)| key)
            .collect()
    }

    /// The sender's memory in words: per group its boundary, current and root weight and the
    /// weight at the boundary, an interior index entry of 2 words, plus a few scalars.
    pub(super) fn memory_words(&self) -> usize {
        4 * self.cur_w.len() + 2 * self.by_interior.len() + 8
    }
}
