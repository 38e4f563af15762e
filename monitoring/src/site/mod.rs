//! The site state machine: local statistics plus one sender per tracked statistic.

use std::collections::{BTreeSet, HashMap};

use crate::config::{Config, Protocol};
use crate::error::MonitorError;
use crate::local::{LocalMemory, LocalStats};
use crate::message::{Channel, Message};

mod quantiles;
mod seed;

use quantiles::Quantiles;
use seed::{SeedCount, SeedItems};

/// Forward/backward state shared by the site's trackers: the phase, the exact count of the
/// site's items stamped after the current split (they cannot expire during the phase) and after
/// the next split (pre-counted during the τ overlap), the items whose forward count may have
/// changed, the reference total `R` the granularities were chosen for, and what the root holds of
/// the forward part. An item's forward count is its record's suffix at the split, which carries
/// no bucket error (records never merge across a split) and may only miss what the record lost.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Forward {
    phase: Option<i64>,
    total: u64,
    next_total: u64,
    dirty: BTreeSet<u64>,
    /// The backward summaries and forward steps must be (re)sent at the next advance.
    resend: bool,
    reference: f64,
    count_step: [u64; 2],
    count_est: [u64; 2],
    item_step: [u64; 2],
    item_est: [HashMap<u64, u64>; 2],
}

/// The forward/backward granularities hold while the site's total is at least `RHO·R`;
/// below that (or above `GROW·R`, to stop paying for a needlessly fine grain) they are resent.
const RHO: f64 = 0.75;
const GROW: f64 = 2.0;
/// Items: the backward part gets `1.2θ` and the forward part `0.8θ` (a listed item costs its id
/// and list length once per summary; a coarser backward grain lists fewer items). Measured on
/// the stock data, 1.2 was the best of 0.8, 1.0, 1.2, 1.4.
const ITEM_BACKWARD_SHARE: f64 = 1.2;
const COUNT_CHANNELS: [Channel; 2] = [Channel::Count, Channel::FrequentTotal];
const ITEM_CHANNELS: [Channel; 2] = [Channel::Items, Channel::FrequentItems];

/// The level spacing for share `theta` of reference `r`: the largest integer `G` with
/// `G/2 ≤ θ·ρ·R` (at least 1; with `G = 1` integer counts are tracked exactly).
fn grain(theta: f64, r: f64) -> u64 {
    ((2.0 * theta * RHO * r).floor() as u64).max(1)
}

/// An item's forward count: its record's count after the split `p` (0 without a record).
fn forward_of(local: &LocalStats, item: u64, p: i64) -> u64 {
    local.item_counter(item).map_or(0, |c| c.suffix(p))
}

/// Level crossings of a nonincreasing `value` over the cuts `[points[0], end)` (it changes only
/// at `points`): levels `(m − ½)·step` for `m = 1, 2, …` up to `value(points[0])`; for each,
/// the first cut where `value` is below it (`end` when it never is). The count of ticks after a
/// cut `s`, times `step`, is then within `step/2` of `value(s)`.
fn level_ticks(points: &[i64], end: i64, value: impl Fn(i64) -> u64, step: u64) -> Vec<i64> {
    let Some(&first) = points.first() else { return Vec::new() };
    let v0 = value(first);
    // m ≤ (2·v0 + step) / (2·step)
    let mut m = (2 * v0 + step) / (2 * step);
    let mut out = Vec::with_capacity(m as usize);
    for &p in points {
        if m == 0 {
            break;
        }
        let v = value(p);
        while m >= 1 && 2 * v < (2 * m - 1) * step {
            out.push(p);
            m -= 1;
        }
    }
    out.extend(std::iter::repeat_n(end, m as usize));
    out
}

/// A site's memory in words, by part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SiteMemory {
    /// The local statistics.
    pub local: LocalMemory,
    /// The count and item senders (seed trackers' sent values and gap index, forward/backward
    /// counters) plus a few scalars.
    pub senders: usize,
    /// The quantile sender's mirror of the root's groups and its indexes.
    pub quantile_sender: usize,
    /// The quantile sender's sliding-window rank structure ([`crate::QuantileWindow`]).
    pub quantile_window: usize,
}

impl SiteMemory {
    /// Everything.
    pub fn sum(&self) -> usize {
        self.local.sum() + self.senders + self.quantile_sender + self.quantile_window
    }

    /// Two sites' memories added part by part (a fallback site may hold two instances).
    pub fn plus(self, other: SiteMemory) -> SiteMemory {
        SiteMemory {
            local: LocalMemory {
                total: self.local.total + other.local.total,
                items: self.local.items + other.local.items,
                schedule: self.local.schedule + other.local.schedule,
            },
            senders: self.senders + other.senders,
            quantile_sender: self.quantile_sender + other.quantile_sender,
            quantile_window: self.quantile_window + other.quantile_window,
        }
    }

    /// What counting, approximate counting, frequent items and forward/backward use: the total
    /// counter, the item records, their schedule and the senders.
    pub fn counting(&self) -> usize {
        self.local.total + self.local.items + self.local.schedule + self.senders
    }

    /// What quantiles use: the rank structure and the quantile sender.
    pub fn quantiles(&self) -> usize {
        self.quantile_window + self.quantile_sender
    }
}

/// One remote site: feed it arrivals with [`Site::insert`], then call [`Site::advance`] at
/// every time it asks for ([`Site::next_due`]) and after arrivals; it returns the messages for
/// the root. Messages at time `t` reflect every arrival at `t`.
///
/// ```
/// use saams_monitoring::{Config, Protocol, Root, Site};
/// let cfg = Config::new(1, 100, 0, 0.1, Protocol::Seed).unwrap();
/// let (mut site, mut root) = (Site::new(cfg).unwrap(), Root::new(cfg));
/// for t in 0..50 {
///     site.insert(t, t, (t % 3) as u64).unwrap();
///     for m in site.advance(t).unwrap() {
///         root.receive(0, t, &m).unwrap();
///     }
/// }
/// let c = root.count(49);
/// assert!((c as f64 - 50.0).abs() <= 0.1 * 50.0);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Site {
    cfg: Config,
    local: LocalStats,
    now: i64,
    dirty: BTreeSet<u64>,
    counts: Vec<SeedCount>,
    items: Vec<SeedItems>,
    quantiles: Quantiles,
    forward: Forward,
    outbox: Vec<Message>,
}

impl Site {
    /// A site for `cfg`.
    ///
    /// # Errors
    /// When the configuration is invalid.
    pub fn new(cfg: Config) -> Result<Self, MonitorError> {
        cfg.validate()?;
        let local = LocalStats::new(cfg.window, cfg.tardiness, cfg.delta_total(), cfg.delta_item())?;
        let local = match cfg.protocol {
            Protocol::Seed => local,
            Protocol::ForwardBackward => local.with_splits(cfg.phase_len())?,
        };
        let counts = [Channel::Count, Channel::FrequentTotal]
            .into_iter()
            .map(|channel| SeedCount::new(channel, cfg.theta(channel)))
            .collect();
        let items = [Channel::Items, Channel::FrequentItems]
            .into_iter()
            .map(|channel| SeedItems::new(channel, cfg.theta(channel)))
            .collect();
        let quantiles = Quantiles::new(&cfg)?;
        let forward = Forward::default();
        Ok(Site {
            cfg,
            local,
            now: i64::MIN,
            dirty: BTreeSet::new(),
            counts,
            items,
            quantiles,
            forward,
            outbox: vec![],
        })
    }

    /// An item stamped `stamp` arrives at `now`.
    ///
    /// # Errors
    /// When time runs backwards or the stamp breaks the tardiness.
    pub fn insert(&mut self, now: i64, stamp: i64, item: u64) -> Result<(), MonitorError> {
        if now < self.now {
            return Err(MonitorError::BadInput(format!("time ran backwards: {now} after {}", self.now)));
        }
        if stamp > now || stamp < now - self.cfg.tardiness {
            return Err(MonitorError::BadInput(format!(
                "item stamped {stamp} arriving at {now} breaks the tardiness {}",
                self.cfg.tardiness
            )));
        }
        if self.cfg.protocol == Protocol::ForwardBackward {
            // Phases that started before `now` are computed without `now`'s arrivals.
            self.roll_phases(now, false);
        }
        self.local.insert(now, stamp, item)?;
        self.quantiles.window.insert(now, stamp, item)?;
        self.now = now;
        self.dirty.insert(item);
        if self.cfg.protocol == Protocol::ForwardBackward {
            // A phase starting exactly now starts after this instant's arrivals (in `advance`).
            let phase = self.forward.phase.unwrap_or_else(|| {
                self.forward.resend = true;
                let p = self.cfg.phase_of(now);
                if self.cfg.phase_start(p) == now { p - 1 } else { p }
            });
            self.forward.phase = Some(phase);
            let f = &mut self.forward;
            if stamp > self.cfg.split(phase) {
                f.total += 1;
                f.dirty.insert(item);
            }
            if stamp > self.cfg.split(phase + 1) {
                f.next_total += 1;
            }
        }
        Ok(())
    }

    /// Start every phase whose start time is `< now` (or `≤ now` when `inclusive`).
    fn roll_phases(&mut self, now: i64, inclusive: bool) {
        if self.local.total_counter().is_empty() && self.forward.total == 0 && self.forward.next_total == 0 {
            // Nothing to report for any phase in between: jump straight to the current one.
            if let Some(phase) = self.forward.phase {
                let current = self.cfg.phase_of(now);
                let current = if !inclusive && self.cfg.phase_start(current) == now { current - 1 } else { current };
                if current > phase {
                    self.forward.phase = Some(current);
                    self.forward.dirty.clear();
                    self.forward.count_est = [0; 2];
                    self.forward.item_est.iter_mut().for_each(HashMap::clear);
                    self.forward.resend = true;
                }
            }
        }
        while let Some(phase) = self.forward.phase {
            let start = self.cfg.phase_start(phase + 1);
            if start > now || (start == now && !inclusive) {
                break;
            }
            self.start_phase(phase + 1);
        }
    }

    fn start_phase(&mut self, phase: i64) {
        let f = &mut self.forward;
        f.phase = Some(phase);
        f.total = std::mem::take(&mut f.next_total);
        let p = self.cfg.split(phase);
        f.dirty = self.local.item_counters().filter(|(_, c)| c.suffix(p) > 0).map(|(j, _)| j).collect();
        f.count_est = [0; 2];
        f.item_est.iter_mut().for_each(HashMap::clear);
        self.send_backward(self.cfg.phase_start(phase));
    }

    /// Send the backward summaries for the cuts `[t − W, p)` of the current phase (split `p`)
    /// with granularities for the reference `R = ` the site's total at `t` (lower estimate), and
    /// re-base the forward estimates the root holds that the new forward step no longer covers.
    fn send_backward(&mut self, t: i64) {
        let f = &mut self.forward;
        f.resend = false;
        let Some(phase) = f.phase else { return };
        let (start, end) = (t - self.cfg.window, self.cfg.split(phase));
        let r = self.local.total(t) as f64 / (1.0 + self.cfg.delta_total());
        f.reference = r;
        let total = self.local.total_counter();
        let table = total.table();
        let f_total = f.total;
        let mut points = vec![start];
        points.extend(total.cut_points(start + 1, end));
        for (i, channel) in COUNT_CHANNELS.into_iter().enumerate() {
            let theta = self.cfg.fb_theta(channel);
            let step = grain(theta, r);
            let ticks = level_ticks(&points, end, |s| table.suffix(s).saturating_sub(f_total), step);
            self.outbox.push(Message::Backward { channel, step, ticks });
            f.count_step[i] = grain(theta, r);
            if 2 * f_total.abs_diff(f.count_est[i]) > f.count_step[i] {
                f.count_est[i] = f_total;
                self.outbox.push(Message::Forward { channel, value: f_total });
            }
        }
        for (i, channel) in ITEM_CHANNELS.into_iter().enumerate() {
            let theta = self.cfg.fb_theta(channel);
            let step = grain(theta * ITEM_BACKWARD_SHARE, r);
            let forward_step = grain(theta * (2.0 - ITEM_BACKWARD_SHARE), r);
            let mut items = Vec::new();
            for (j, counter) in self.local.item_counters() {
                let fj = counter.suffix(end);
                if 2 * counter.suffix(start).saturating_sub(fj) < step {
                    continue;
                }
                let tj = counter.table();
                let mut points = vec![start];
                points.extend(counter.cut_points(start + 1, end));
                let ticks = level_ticks(&points, end, |s| tj.suffix(s).saturating_sub(fj), step);
                if !ticks.is_empty() {
                    items.push((j, ticks));
                }
            }
            self.outbox.push(Message::BackwardItems { channel, step, forward_step, items });
            f.item_step[i] = forward_step;
            let mut rebase: Vec<(u64, u64)> = Vec::new();
            for (&j, &e) in &f.item_est[i] {
                let fj = forward_of(&self.local, j, end);
                if 2 * fj.abs_diff(e) > forward_step {
                    rebase.push((j, fj));
                }
            }
            rebase.sort_unstable();
            for (j, fj) in rebase {
                f.item_est[i].insert(j, fj);
                self.outbox.push(Message::ForwardItem { channel, item: j, value: fj });
            }
            f.dirty.extend(self.local.item_counters().filter(|(_, c)| c.suffix(end) > 0).map(|(j, _)| j));
        }
    }

    /// Send what the forward part needs so that the root's forward estimates stay within half
    /// a forward step of the exact forward counts.
    fn send_forward(&mut self) {
        let f = &mut self.forward;
        let Some(phase) = f.phase else { return };
        let p = self.cfg.split(phase);
        for (i, channel) in COUNT_CHANNELS.into_iter().enumerate() {
            let step = f.count_step[i];
            if f.total > f.count_est[i] && 2 * (f.total - f.count_est[i]) >= step {
                let k = (f.total - f.count_est[i] + step / 2) / step;
                f.count_est[i] += k * step;
                self.outbox.push(Message::Forward { channel, value: f.count_est[i] });
            }
        }
        for (i, channel) in ITEM_CHANNELS.into_iter().enumerate() {
            let step = f.item_step[i];
            for &j in &f.dirty {
                let fj = forward_of(&self.local, j, p);
                let e = f.item_est[i].entry(j).or_insert(0);
                if *e > fj && 2 * (*e - fj) > step {
                    // The record lost copies (deleted as rare): follow it down.
                    *e = fj;
                    self.outbox.push(Message::ForwardItem { channel, item: j, value: fj });
                } else if fj > *e && 2 * (fj - *e) >= step {
                    let k = (fj - *e + step / 2) / step;
                    if k == 1 {
                        *e += step;
                        self.outbox.push(Message::ForwardTick { channel, item: j });
                    } else {
                        *e = fj;
                        self.outbox.push(Message::ForwardItem { channel, item: j, value: fj });
                    }
                }
                if *e == 0 {
                    f.item_est[i].remove(&j);
                }
            }
        }
        f.dirty.clear();
    }

    /// Process everything up to `now` and return the messages to send.
    ///
    /// # Errors
    /// When time runs backwards.
    pub fn advance(&mut self, now: i64) -> Result<Vec<Message>, MonitorError> {
        if now < self.now {
            return Err(MonitorError::BadInput(format!("time ran backwards: {now} after {}", self.now)));
        }
        self.now = now;
        let changed = self.local.advance(now);
        if self.cfg.protocol == Protocol::ForwardBackward {
            self.forward.dirty.extend(changed.iter().copied());
        }
        self.dirty.extend(changed);
        let e_total = self.local.total(now);
        match self.cfg.protocol {
            Protocol::Seed => {
                for c in &mut self.counts {
                    c.check(e_total, &mut self.outbox);
                }
                for tracker in &mut self.items {
                    for &j in &self.dirty {
                        tracker.update(j, self.local.item(j, now));
                    }
                    tracker.trigger(e_total, &self.local, now, &mut self.outbox);
                }
            }
            Protocol::ForwardBackward => {
                if self.forward.phase.is_none() && !self.local.total_counter().is_empty() {
                    self.forward.phase = Some(self.cfg.phase_of(now));
                    self.forward.resend = true;
                }
                self.roll_phases(now, true);
                let c_low = e_total as f64 / (1.0 + self.cfg.delta_total());
                let r = self.forward.reference;
                if self.forward.phase.is_some() && (self.forward.resend || c_low < RHO * r || c_low > GROW * r) {
                    self.send_backward(now);
                }
                self.send_forward();
            }
        }
        self.quantiles.window.expire(now);
        self.quantiles.check(e_total, &mut self.outbox);
        self.dirty.clear();
        Ok(std::mem::take(&mut self.outbox))
    }

    /// The next time the site must be advanced even without arrivals (an estimate changes or
    /// a forward/backward phase starts).
    pub fn next_due(&self) -> Option<i64> {
        let local = self.local.next_due();
        let phase = match (self.cfg.protocol, self.forward.phase) {
            (Protocol::ForwardBackward, Some(p)) => {
                let active = !self.local.total_counter().is_empty() || self.forward.total > 0;
                active.then(|| self.cfg.phase_start(p + 1))
            }
            _ => None,
        };
        [local, phase, self.quantiles.window.next_change(self.now)].into_iter().flatten().min()
    }

    /// The local statistics.
    pub fn local(&self) -> &LocalStats {
        &self.local
    }

    /// Memory in words by part (see [`SiteMemory`]).
    pub fn memory(&self) -> SiteMemory {
        let seed: usize = self.items.iter().map(SeedItems::memory_words).sum();
        let fwd = self.forward.dirty.len() + self.forward.item_est.iter().map(|m| 2 * m.len()).sum::<usize>();
        SiteMemory {
            local: self.local.memory(),
            senders: seed + fwd + 8,
            quantile_sender: self.quantiles.memory_words(),
            quantile_window: self.quantiles.window.memory_words(),
        }
    }

    /// Memory in words: local statistics plus what the senders remember (the values the root
    /// holds, gap and discrepancy indexes, forward counters).
    pub fn memory_words(&self) -> usize {
        self.memory().sum()
    }
}
