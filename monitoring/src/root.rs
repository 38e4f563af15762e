//! The root state machine: keeps the latest values each site sent and answers the four queries.

use std::collections::{BTreeMap, HashMap};

use crate::config::{Config, Protocol};
use crate::error::MonitorError;
use crate::message::{Channel, Message};

/// What the root holds for one site on one forward/backward channel.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct FbSite {
    phase: Option<i64>,
    step: u64,
    ticks: Vec<i64>,
    forward: u64,
    forward_step: u64,
    item_ticks: HashMap<u64, Vec<i64>>,
    item_forward: HashMap<u64, u64>,
}

/// The backward estimate at cut `s`: `step` per level not yet crossed (ticks after `s`).
fn levels_after(ticks: &[i64], step: u64, s: i64) -> u64 {
    let left = ticks.len() - ticks.partition_point(|&c| c <= s);
    step.saturating_mul(left as u64)
}

/// The root (coordinator): feed it every site's messages with [`Root::receive`]; it answers at
/// any time from them alone.
///
/// ```
/// use saams_monitoring::{Channel, Config, Message, Protocol, Root};
/// let cfg = Config::new(2, 100, 0, 0.1, Protocol::Seed).unwrap();
/// let mut root = Root::new(cfg);
/// assert_eq!(root.count(0), 0);
/// root.receive(0, 5, &Message::Count { channel: Channel::Count, value: 10 }).unwrap();
/// root.receive(1, 6, &Message::Count { channel: Channel::Count, value: 4 }).unwrap();
/// assert_eq!(root.count(6), 14);
/// assert!(root.receive(2, 6, &Message::Count { channel: Channel::Count, value: 1 }).is_err());
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Root {
    cfg: Config,
    counts: HashMap<Channel, Vec<u64>>,
    items: HashMap<Channel, Vec<HashMap<u64, u64>>>,
    item_sums: HashMap<Channel, HashMap<u64, u64>>,
    summaries: Vec<BTreeMap<u64, u64>>,
    fb: HashMap<Channel, Vec<FbSite>>,
}

impl Root {
    /// An empty root for `cfg.sites` sites.
    pub fn new(cfg: Config) -> Self {
        let k = cfg.sites;
        let mut counts = HashMap::new();
        let mut items = HashMap::new();
        let mut item_sums = HashMap::new();
        let mut fb = HashMap::new();
        for ch in Channel::ALL {
            counts.insert(ch, vec![0; k]);
            items.insert(ch, vec![HashMap::new(); k]);
            item_sums.insert(ch, HashMap::new());
            fb.insert(ch, vec![FbSite::default(); k]);
        }
        Root { cfg, counts, items, item_sums, summaries: vec![BTreeMap::new(); k], fb }
    }

    fn set_item(&mut self, channel: Channel, site: usize, item: u64, value: u64) {
        let per_site = &mut self.items.get_mut(&channel).expect("every channel has a map")[site];
        let old = if value == 0 { per_site.remove(&item) } else { per_site.insert(item, value) }.unwrap_or(0);
        let sums = self.item_sums.get_mut(&channel).expect("every channel has a map");
        let sum = sums.entry(item).or_insert(0);
        *sum = *sum + value - old;
        if *sum == 0 {
            sums.remove(&item);
        }
    }

    /// Apply one message from `site`, sent at `now`.
    ///
    /// # Errors
    /// When the site id is out of range.
    pub fn receive(&mut self, site: usize, now: i64, msg: &Message) -> Result<(), MonitorError> {
        if site >= self.cfg.sites {
            return Err(MonitorError::BadInput(format!("site {site} out of range 0..{}", self.cfg.sites)));
        }
        let phase = self.cfg.phase_of(now);
        match msg {
            Message::Count { channel, value } => {
                self.counts.get_mut(channel).expect("every channel has a map")[site] = *value;
            }
            Message::ItemCount { channel, item, value } => self.set_item(*channel, site, *item, *value),
            Message::ItemOff { channel, item } => self.set_item(*channel, site, *item, 0),
            Message::Summary { entries } => self.summaries[site] = entries.iter().copied().collect(),
            Message::SummaryPatch { entries } => {
                let summary = &mut self.summaries[site];
                for &(item, weight) in entries {
                    if weight == 0 {
                        summary.remove(&item);
                    } else {
                        summary.insert(item, weight);
                    }
                }
            }
            Message::Backward { channel, step, ticks } => {
                let s = self.fb_mut(*channel, site, phase);
                s.step = *step;
                s.ticks = ticks.clone();
            }
            Message::BackwardItems { channel, step, forward_step, items } => {
                let s = self.fb_mut(*channel, site, phase);
                s.step = *step;
                s.forward_step = *forward_step;
                s.item_ticks = items.iter().cloned().collect();
            }
            Message::Forward { channel, value } => {
                self.fb_mut(*channel, site, phase).forward = *value;
            }
            Message::ForwardItem { channel, item, value } => {
                self.fb_mut(*channel, site, phase).item_forward.insert(*item, *value);
            }
            Message::ForwardTick { channel, item } => {
                let s = self.fb_mut(*channel, site, phase);
                let f = s.item_forward.entry(*item).or_insert(0);
                *f = f.saturating_add(s.forward_step);
            }
        }
        Ok(())
    }

    /// Forget everything `site` sent: its instance ended (a fallback site's drained instance, or
    /// one replaced by a fresh one), so the values it left behind must not count.
    pub(crate) fn reset_site(&mut self, site: usize) {
        if site >= self.cfg.sites {
            return;
        }
        for ch in Channel::ALL {
            self.counts.get_mut(&ch).expect("every channel has a map")[site] = 0;
            let held: Vec<u64> = self.items[&ch][site].keys().copied().collect();
            for item in held {
                self.set_item(ch, site, item, 0);
            }
            self.fb.get_mut(&ch).expect("every channel has a map")[site] = FbSite::default();
        }
        self.summaries[site].clear();
    }

    /// Every quantile group the root holds, over all sites: `(boundary value, weight in half
    /// items)`, unsorted.
    pub(crate) fn quantile_weights(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.summaries.iter().flat_map(|s| s.iter().map(|(&v, &w)| (v, w)))
    }

    /// The site's forward/backward state for `phase`, reset when a new phase begins.
    fn fb_mut(&mut self, channel: Channel, site: usize, phase: i64) -> &mut FbSite {
        let s = &mut self.fb.get_mut(&channel).expect("every channel has a map")[site];
        if s.phase != Some(phase) {
            *s = FbSite { phase: Some(phase), ..FbSite::default() };
        }
        s
    }

    /// The estimated window count of `channel` ([`Channel::Count`] or
    /// [`Channel::FrequentTotal`]) at `now`.
    pub fn total(&self, channel: Channel, now: i64) -> u64 {
        match self.cfg.protocol {
            Protocol::Seed => self.counts[&channel].iter().sum(),
            Protocol::ForwardBackward => {
                let phase = Some(self.cfg.phase_of(now));
                let cut = now - self.cfg.window;
                self.fb[&channel]
                    .iter()
                    .filter(|s| s.phase == phase)
                    .map(|s| levels_after(&s.ticks, s.step, cut).saturating_add(s.forward))
                    .sum()
            }
        }
    }

    /// Basic counting: the estimated number of items in the window at `now`, within `ε·c`.
    pub fn count(&self, now: i64) -> u64 {
        self.total(Channel::Count, now)
    }

    /// Every item with a nonzero estimate on `channel` ([`Channel::Items`] or
    /// [`Channel::FrequentItems`]) at `now`; items not listed are estimated at 0.
    pub fn item_estimates(&self, channel: Channel, now: i64) -> HashMap<u64, u64> {
        match self.cfg.protocol {
            Protocol::Seed => self.item_sums[&channel].clone(),
            Protocol::ForwardBackward => {
                let phase = Some(self.cfg.phase_of(now));
                let cut = now - self.cfg.window;
                let mut out: HashMap<u64, u64> = HashMap::new();
                for s in self.fb[&channel].iter().filter(|s| s.phase == phase) {
                    for (&j, ticks) in &s.item_ticks {
                        let v = levels_after(ticks, s.step, cut);
                        if v > 0 {
                            *out.entry(j).or_insert(0) += v;
                        }
                    }
                    for (&j, &v) in &s.item_forward {
                        if v > 0 {
                            *out.entry(j).or_insert(0) += v;
                        }
                    }
                }
                out
            }
        }
    }

    /// Approximate counting: the estimated window count of `item` at `now`, within `ε·c`.
    pub fn item_count(&self, item: u64, now: i64) -> u64 {
        match self.cfg.protocol {
            Protocol::Seed => self.item_sums[&Channel::Items].get(&item).copied().unwrap_or(0),
            Protocol::ForwardBackward => self.item_estimates(Channel::Items, now).get(&item).copied().unwrap_or(0),
        }
    }

    /// Frequent items at threshold `phi`: every item with `c_j ≥ φc` and none with
    /// `c_j < (φ − ε)c`, ascending. The rule is the seed's: `Σ r_j ≥ (φ − ε/2)·Σ r_σ`.
    ///
    /// # Errors
    /// When `phi` is not in `(ε/2, 1]`.
    pub fn frequent(&self, phi: f64, now: i64) -> Result<Vec<u64>, MonitorError> {
        let eps = self.cfg.epsilon;
        if !(phi > eps / 2.0 && phi <= 1.0) {
            return Err(MonitorError::BadParameter(format!("phi must be in (ε/2, 1] = ({}, 1], got {phi}", eps / 2.0)));
        }
        Ok(frequent_over(
            self.item_estimates(Channel::FrequentItems, now),
            self.total(Channel::FrequentTotal, now),
            phi,
            eps,
        ))
    }

    /// Quantiles: an item whose rank is within `(φ ± ε)c` at `now`; `None` when the window is
    /// empty.
    ///
    /// # Errors
    /// When `phi` is not in `[0, 1]`.
    pub fn quantile(&self, phi: f64, now: i64) -> Result<Option<u64>, MonitorError> {
        if !(0.0..=1.0).contains(&phi) {
            return Err(MonitorError::BadParameter(format!("phi must be in [0, 1], got {phi}")));
        }
        let _ = now;
        Ok(quantile_of(self.quantile_weights().collect(), phi))
    }
}

/// The seed's frequent-items rule over item estimates and an estimated total: every item whose
/// estimate is positive and at least `(φ − ε/2)·total`, ascending. The root and the fallback
/// coordinator (which adds the exactly held forwarded items to both sides) share it.
pub(crate) fn frequent_over(estimates: HashMap<u64, u64>, total: u64, phi: f64, eps: f64) -> Vec<u64> {
    let threshold = (phi - eps / 2.0) * total as f64;
    let mut out: Vec<u64> =
        estimates.into_iter().filter(|&(_, v)| v > 0 && v as f64 >= threshold).map(|(j, _)| j).collect();
    out.sort_unstable();
    out
}

/// The first value whose cumulative weight reaches `φ·Σw` over `(value, weight)` groups in any
/// order; `None` when the weights sum to 0 (crate docs, *Quantiles*).
pub(crate) fn quantile_of(mut groups: Vec<(u64, u64)>, phi: f64) -> Option<u64> {
    groups.sort_unstable();
    let total: u64 = groups.iter().map(|&(_, w)| w).sum();
    if total == 0 {
        return None;
    }
    let target = phi * total as f64;
    let mut cum = 0u64;
    for (v, w) in groups {
        cum += w;
        if cum as f64 >= target {
            return Some(v);
        }
    }
    None
}
