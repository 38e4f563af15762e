//! The site state machine: local statistics plus one sender per tracked statistic.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{Channel, Config, LocalStats, Message, MonitorError, Protocol};

/// Seed BC: send the estimate when it moved by more than `θ·e` from the last value sent
/// (an up event when it rose by a factor `1/(1−θ)`, a down event when it fell by `1/(1+θ)`).
#[derive(Clone, Debug)]
struct SeedCount {
    channel: Channel,
    theta: f64,
    sent: u64,
}

impl SeedCount {
    fn check(&mut self, e: u64, out: &mut Vec<Message>) {
        if e.abs_diff(self.sent) as f64 > self.theta * e as f64 {
            self.sent = e;
            out.push(Message::Count { channel: self.channel, value: e });
        }
    }
}

/// Seed AC: per item, send the estimate when it moved by more than `θ·e_σ` from the value the
/// root holds (0 for an item that is off); when the item's estimate is itself at most `θ·e_σ`
/// it is turned off instead. The gap set finds the items to send in `O(log)` when `e_σ` drops.
#[derive(Clone, Debug)]
struct SeedItems {
    channel: Channel,
    theta: f64,
    sent: HashMap<u64, u64>,
    gap_of: HashMap<u64, u64>,
    gaps: BTreeSet<(u64, u64)>,
}

impl SeedItems {
    fn new(channel: Channel, theta: f64) -> Self {
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

    fn update(&mut self, item: u64, e: u64) {
        let r = self.sent.get(&item).copied().unwrap_or(0);
        self.set_gap(item, e.abs_diff(r));
    }

    fn trigger(&mut self, e_total: u64, local: &LocalStats, now: i64, out: &mut Vec<Message>) {
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
}

/// Quantiles: the site keeps the summary the root holds (groups of consecutive items, each
/// represented by its largest item; a multi-item group weighs at most `g·T`, `T` the sum of the
/// item estimates) and updates it whenever it cannot certify that at most `θ·c_σ` items arrived
/// or expired since the last update. An update regroups the current estimates into the old
/// groups, splits any multi-item group now heavier than `g·T`, and sends only the entries that
/// changed; when the groups have fragmented (more than `4/g + 2`), it ships a fresh greedy
/// grouping (`≤ 2/g + 1` groups) instead.
#[derive(Clone, Debug)]
struct Quantiles {
    theta: f64,
    group: f64,
    delta_total: f64,
    shipped_total: u64,
    arrivals: u64,
    groups: BTreeMap<u64, u64>,
}

/// Greedy grouping of `(item, weight)` (ascending) into groups of weight `≤ cap` unless single.
fn group_items(items: &[(u64, u64)], cap: f64, out: &mut Vec<(u64, u64)>) {
    let (mut cur_w, mut cur_max) = (0u64, 0u64);
    for &(v, w) in items {
        if cur_w > 0 && (cur_w + w) as f64 > cap {
            out.push((cur_max, cur_w));
            cur_w = 0;
        }
        cur_w += w;
        cur_max = v;
    }
    if cur_w > 0 {
        out.push((cur_max, cur_w));
    }
}

impl Quantiles {
    fn check(&mut self, local: &LocalStats, now: i64, out: &mut Vec<Message>) {
        let e_now = local.total(now);
        let c_low = e_now as f64 / (1.0 + self.delta_total);
        let c_ship_high = self.shipped_total as f64 / (1.0 - self.delta_total);
        let expired_high = (c_ship_high + self.arrivals as f64 - c_low).max(0.0);
        if self.arrivals as f64 + expired_high <= self.theta * c_low {
            return;
        }
        let items: Vec<(u64, u64)> = local.items(now).filter(|&(_, w)| w > 0).collect();
        let total: u64 = items.iter().map(|&(_, w)| w).sum();
        let cap = self.group * total as f64;
        let mut fresh = Vec::new();
        let full = self.groups.is_empty() || self.groups.len() as f64 > 4.0 / self.group + 2.0;
        if full {
            group_items(&items, cap, &mut fresh);
        } else {
            // Regroup into the old boundaries (a group holds the items up to its boundary).
            let mut start = 0;
            let bounds: Vec<u64> = self.groups.keys().copied().collect();
            for (bi, &b) in bounds.iter().enumerate() {
                let end = if bi + 1 == bounds.len() {
                    items.len()
                } else {
                    start + items[start..].partition_point(|&(v, _)| v <= b)
                };
                let slice = &items[start..end];
                let w: u64 = slice.iter().map(|&(_, w)| w).sum();
                if slice.len() > 1 && w as f64 > cap {
                    group_items(slice, cap, &mut fresh);
                } else if let Some(&(max, _)) = slice.last() {
                    fresh.push((max, w));
                }
                start = end;
            }
        }
        let mut patch = Vec::new();
        let new: BTreeMap<u64, u64> = fresh.iter().copied().collect();
        if !full {
            for (&v, &w) in &new {
                if self.groups.get(&v) != Some(&w) {
                    patch.push((v, w));
                }
            }
            for &v in self.groups.keys() {
                if !new.contains_key(&v) {
                    patch.push((v, 0));
                }
            }
            patch.sort_unstable();
        }
        self.groups = new;
        self.shipped_total = e_now;
        self.arrivals = 0;
        if full {
            out.push(Message::Summary { entries: fresh });
        } else if !patch.is_empty() {
            out.push(Message::SummaryPatch { entries: patch });
        }
    }
}

/// Forward/backward state shared by the site's trackers: the phase, and exact counts of the
/// items stamped after the current split (they cannot expire during the phase) and after the
/// next split (pre-counted during the τ overlap).
#[derive(Clone, Debug, Default)]
struct Forward {
    phase: Option<i64>,
    total: u64,
    items: HashMap<u64, u64>,
    next_total: u64,
    next_items: HashMap<u64, u64>,
    dirty: BTreeSet<u64>,
    count_sent: Vec<u64>,
    items_sent: Vec<HashMap<u64, u64>>,
}

/// Greedy breakpoints of a nonincreasing step function `value` over the cuts `[points[0], end)`
/// (it changes only at `points`), so that the step function sent stays within
/// `θ·btot(s)` of `value(s)` at every cut `s`; `btot` changes only at `tot_cuts`.
fn breakpoints(
    points: &[i64],
    end: i64,
    value: impl Fn(i64) -> u64,
    btot: &impl Fn(i64) -> u64,
    tot_cuts: &[i64],
    theta: f64,
) -> Vec<(i64, u64)> {
    let mut out = Vec::new();
    let mut v = 0u64;
    for (idx, &sa) in points.iter().enumerate() {
        let sb = points.get(idx + 1).copied().unwrap_or(end);
        let x = value(sa);
        let gap = v.abs_diff(x);
        if gap == 0 {
            continue;
        }
        let violated = |s: i64| gap as f64 > theta * btot(s) as f64;
        if violated(sa) {
            out.push((sa, x));
            v = x;
        } else if violated(sb - 1) {
            let lo = tot_cuts.partition_point(|&c| c <= sa);
            let hi = tot_cuts.partition_point(|&c| c < sb);
            let slice = &tot_cuts[lo..hi];
            let k = slice.partition_point(|&c| !violated(c));
            out.push((slice.get(k).copied().unwrap_or(sb - 1), x));
            v = x;
        }
    }
    out
}

/// One remote site: feed it arrivals with [`Site::insert`], then call [`Site::advance`] at
/// every time it asks for ([`Site::next_due`]) and after arrivals; it returns the messages for
/// the root. Messages at time `t` reflect every arrival at `t`.
///
/// ```
/// use saams::monitoring::{Config, Protocol, Root, Site};
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
#[derive(Clone, Debug)]
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
        let counts = [Channel::Count, Channel::FrequentTotal]
            .into_iter()
            .map(|channel| SeedCount { channel, theta: cfg.theta(channel), sent: 0 })
            .collect();
        let items = [Channel::Items, Channel::FrequentItems]
            .into_iter()
            .map(|channel| SeedItems::new(channel, cfg.theta(channel)))
            .collect();
        let quantiles = Quantiles {
            theta: cfg.theta(Channel::Quantiles),
            group: cfg.quantile_group(),
            delta_total: cfg.delta_total(),
            shipped_total: 0,
            arrivals: 0,
            groups: BTreeMap::new(),
        };
        let forward = Forward { count_sent: vec![0; 2], items_sent: vec![HashMap::new(); 2], ..Forward::default() };
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
        self.now = now;
        self.dirty.insert(item);
        self.quantiles.arrivals += 1;
        if self.cfg.protocol == Protocol::ForwardBackward {
            // A phase starting exactly now starts after this instant's arrivals (in `advance`).
            let phase = self.forward.phase.unwrap_or_else(|| {
                let p = self.cfg.phase_of(now);
                if self.cfg.phase_start(p) == now { p - 1 } else { p }
            });
            self.forward.phase = Some(phase);
            let f = &mut self.forward;
            if stamp > self.cfg.split(phase) {
                f.total += 1;
                *f.items.entry(item).or_insert(0) += 1;
                f.dirty.insert(item);
            }
            if stamp > self.cfg.split(phase + 1) {
                f.next_total += 1;
                *f.next_items.entry(item).or_insert(0) += 1;
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
                    self.forward.next_items.clear();
                    self.forward.items.clear();
                    self.forward.dirty.clear();
                    self.forward.count_sent.iter_mut().for_each(|s| *s = 0);
                    self.forward.items_sent.iter_mut().for_each(HashMap::clear);
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
        f.items = std::mem::take(&mut f.next_items);
        f.dirty = f.items.keys().copied().collect();
        f.count_sent.iter_mut().for_each(|s| *s = 0);
        f.items_sent.iter_mut().for_each(HashMap::clear);
        let (s0, end) = (self.cfg.split(phase - 1), self.cfg.split(phase));
        let f0 = f.total;
        let total = self.local.total_counter();
        let table = total.table();
        let btot = |s: i64| table.suffix(s).saturating_sub(f0);
        let mut tot_cuts = vec![s0];
        tot_cuts.extend(total.cut_points(s0 + 1, end));
        for channel in [Channel::Count, Channel::FrequentTotal] {
            let cuts = breakpoints(&tot_cuts, end, btot, &btot, &tot_cuts, self.cfg.theta(channel));
            if !cuts.is_empty() {
                self.outbox.push(Message::Backward { channel, cuts });
            }
        }
        for channel in [Channel::Items, Channel::FrequentItems] {
            let theta = self.cfg.theta(channel);
            let mut items = Vec::new();
            for (j, counter) in self.local.item_counters() {
                let fj = self.forward.items.get(&j).copied().unwrap_or(0);
                let tj = counter.table();
                let mut points = vec![s0];
                points.extend(counter.cut_points(s0 + 1, end));
                let cuts = breakpoints(&points, end, |s| tj.suffix(s).saturating_sub(fj), &btot, &tot_cuts, theta);
                if !cuts.is_empty() {
                    items.push((j, cuts));
                }
            }
            if !items.is_empty() {
                self.outbox.push(Message::BackwardItems { channel, items });
            }
        }
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
                }
                self.roll_phases(now, true);
                let f = &mut self.forward;
                for (i, channel) in [Channel::Count, Channel::FrequentTotal].into_iter().enumerate() {
                    if (f.total - f.count_sent[i]) as f64 > self.cfg.theta(channel) * f.total as f64 {
                        f.count_sent[i] = f.total;
                        self.outbox.push(Message::Forward { channel, value: f.total });
                    }
                }
                for (i, channel) in [Channel::Items, Channel::FrequentItems].into_iter().enumerate() {
                    let threshold = self.cfg.theta(channel) * f.total as f64;
                    for &j in &f.dirty {
                        let fj = f.items.get(&j).copied().unwrap_or(0);
                        let sent = f.items_sent[i].entry(j).or_insert(0);
                        if (fj - *sent) as f64 > threshold {
                            *sent = fj;
                            self.outbox.push(Message::ForwardItem { channel, item: j, value: fj });
                        }
                    }
                }
                f.dirty.clear();
            }
        }
        self.quantiles.check(&self.local, now, &mut self.outbox);
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
        match (local, phase) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The local statistics.
    pub fn local(&self) -> &LocalStats {
        &self.local
    }

    /// Memory in words: local statistics plus what the senders remember.
    pub fn memory_words(&self) -> usize {
        let seed: usize = self.items.iter().map(|t| 2 * t.sent.len() + 3 * t.gap_of.len()).sum();
        let fwd = 2 * (self.forward.items.len() + self.forward.next_items.len())
            + self.forward.items_sent.iter().map(|m| 2 * m.len()).sum::<usize>();
        self.local.memory_words() + seed + fwd + 8
    }
}
