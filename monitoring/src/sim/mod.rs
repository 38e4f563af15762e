//! A deterministic simulator: k sites and the root run over a stream of arrivals, and at
//! sampled times the root's four answers are checked against the exact sliding-window answers.
//! It also counts what the protocol sent against sending every item (naive) and against
//! shipping a full synopsis every Δ (periodic). `monitor-sim` and the tests both drive it.

use std::collections::BTreeSet;

use crate::config::Config;
use crate::error::MonitorError;
use crate::fallback::{Coordinator, FallbackPolicy, FallbackSite, SiteMessage, SiteSwitches};
use crate::message::Channel;
use crate::site::SiteMemory;

mod adversary;
mod check;

pub use adversary::adversary;
use check::{Oracle, check};

/// One item arriving at a site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The site (0-based).
    pub site: usize,
    /// The item's timestamp.
    pub stamp: i64,
    /// When it arrives (`stamp ≤ arrival ≤ stamp + τ`).
    pub arrival: i64,
    /// The item.
    pub item: u64,
}

/// What to check and measure besides the protocol's [`Config`].
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Evenly spaced query times over the run (from the first arrival to the last plus W).
    pub queries: usize,
    /// Extra query times (e.g. just after a burst or at a mass-expiry edge).
    pub extra_query_times: Vec<i64>,
    /// The frequent-items threshold φ.
    pub phi: f64,
    /// The quantiles asked at every query time.
    pub quantile_phis: Vec<f64>,
    /// The period Δ of the periodic baseline (default `max(1, ε·W)`).
    pub periodic_delta: Option<i64>,
    /// Sites forward their items when that is cheaper ([`crate::fallback`]); `None`: the
    /// protocol only.
    pub fallback: Option<FallbackPolicy>,
    /// Keep the root's answers at every query time in [`SimReport::answers`] (a live run is
    /// checked against them).
    pub record_answers: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            queries: 1000,
            extra_query_times: Vec::new(),
            phi: 0.1,
            quantile_phis: vec![0.05, 0.25, 0.5, 0.75, 0.95],
            periodic_delta: None,
            fallback: None,
            record_answers: false,
        }
    }
}

/// Messages, words and bytes sent on one channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    /// Messages.
    pub messages: u64,
    /// Words ([`crate::Message::words`]).
    pub words: u64,
    /// Encoded bytes ([`crate::Message::encode`]).
    pub bytes: u64,
}

/// The root's answers at one query time ([`SimOptions::record_answers`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SimAnswer {
    /// The query time.
    pub time: i64,
    /// Basic counting.
    pub count: u64,
    /// Frequent items at [`SimOptions::phi`], ascending.
    pub frequent: Vec<u64>,
    /// One answer per [`SimOptions::quantile_phis`].
    pub quantiles: Vec<Option<u64>>,
}

/// A failed check.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Query time.
    pub time: i64,
    /// Which query.
    pub query: &'static str,
    /// What was wrong.
    pub detail: String,
}

/// The outcome of a run.
#[derive(Clone, Debug, Default)]
pub struct SimReport {
    /// Query times checked.
    pub queries: u64,
    /// Failed checks over all four queries (each query time checks all four; each failing one
    /// counts once).
    pub violations: u64,
    /// Failed checks by query: count, items, frequent, quantiles.
    pub violations_by_query: [u64; 4],
    /// The first few failures, for diagnosis.
    pub examples: Vec<Violation>,
    /// Cost per channel, in [`Channel::ALL`] order (protocol messages only).
    pub cost: Vec<(Channel, Cost)>,
    /// Forwarded items ([`SiteMessage::Item`], [`SiteMessage::StampedItem`]).
    pub forward: Cost,
    /// Switches between forwarding and the protocol.
    pub switches: Cost,
    /// Switches and items by mode, over all sites.
    pub site_switches: SiteSwitches,
    /// The most forwarded items the root held at a query time (its exact window).
    pub max_root_exact_items: u64,
    /// Items in the stream.
    pub items: u64,
    /// Simulated time: first arrival to last arrival plus W.
    pub duration: i64,
    /// Time during which some window is non-empty.
    pub active_duration: i64,
    /// `active_duration / W`: the number of windows the per-window figures divide by.
    pub windows: f64,
    /// Items arriving or expiring per window, on average (`2·items/windows`).
    pub n_per_window: f64,
    /// Total of the bound expressions (constant 1) over the run, see [`bound_per_window`].
    pub bound: f64,
    /// Words if every item were sent: 1 word (the item; its arrival time is its stamp), or 2 with
    /// its stamp when τ > 0.
    pub naive_words: u64,
    /// Words if every site shipped a full synopsis every Δ: each site with a non-empty window
    /// sends `1 + 4·min(D_σ, ⌈1/ε⌉)` words (its count, `≤ 1/ε` item counts and `≤ 1/ε` quantile
    /// entries, two words each). This baseline has no deterministic guarantee between shipments.
    pub periodic_words: u64,
    /// The largest site memory seen at a query time, in words.
    pub max_site_memory_words: usize,
    /// The largest memory of a site's counting part ([`crate::SiteMemory::counting`]) seen at a
    /// query time, in words.
    pub max_site_counting_words: usize,
    /// The largest memory of a site's quantile part ([`crate::SiteMemory::quantiles`]) seen at a
    /// query time, in words.
    pub max_site_quantile_words: usize,
    /// The parts of the site memory when the counting part was largest.
    pub max_counting_parts: SiteMemory,
    /// The parts of the site memory when the quantile part was largest.
    pub max_quantile_parts: SiteMemory,
    /// The largest exact window count of one site seen at a query time.
    pub max_site_window_count: u64,
    /// The largest window count seen at a query time.
    pub max_window_count: u64,
    /// The root's answers at every query time, when [`SimOptions::record_answers`].
    pub answers: Vec<SimAnswer>,
}

impl SimReport {
    /// Total cost over every channel, forwarded items and switches.
    pub fn total(&self) -> Cost {
        let mut t = Cost::default();
        for c in self.cost.iter().map(|(_, c)| c).chain([&self.forward, &self.switches]) {
            t.messages += c.messages;
            t.words += c.words;
            t.bytes += c.bytes;
        }
        t
    }

    /// Cost of one channel.
    pub fn channel(&self, channel: Channel) -> Cost {
        self.cost.iter().find(|(c, _)| *c == channel).map(|(_, c)| *c).unwrap_or_default()
    }

    /// Words per window of the frequent-items query (its two channels).
    pub fn frequent_words(&self) -> u64 {
        self.channel(Channel::FrequentTotal).words + self.channel(Channel::FrequentItems).words
    }
}

/// The bound expressions per window with constant 1, summed over the four queries
/// (`k` sites, error `ε`, `n` items arriving or expiring per window, `log = log₂(2 + ·)`):
/// count `(k/ε)·log(εn/k)`, items and frequent items `(k/ε)·log(n/k)` each, quantiles
/// `(k/ε²)·log(n/k)`; multiplied by `W/(W − τ)` for out-of-order input.
///
/// ```
/// let b = saams_monitoring::sim::bound_per_window(4, 0.1, 1000.0, 0.0);
/// assert!(b > 4.0 / 0.1 / 0.1);
/// ```
pub fn bound_per_window(k: usize, epsilon: f64, n: f64, tardiness_fraction: f64) -> f64 {
    let k = k as f64;
    let lg = |x: f64| (2.0 + x).log2();
    let per =
        (k / epsilon) * lg(epsilon * n / k) + 2.0 * (k / epsilon) * lg(n / k) + (k / (epsilon * epsilon)) * lg(n / k);
    per / (1.0 - tardiness_fraction)
}

/// The memory bound the counting part of a site ([`crate::SiteMemory::counting`]) stays below,
/// in words, for a site whose window holds at most `n` items: `(c/ε)·log₂(2 + n)` with
/// `c = 648` — up to 4 words per bucket, `1/(2δ)` buckets per factor `e` of the reference count
/// (twice that where late items may still arrive) for the total counter (`δ_t ≥ ε/96`, so
/// `4·96`) and for the item records (`δ_i/2 ≥ ε/64`, measured against the site's count, so
/// `4·64`), plus the records' and senders' bookkeeping (8).
///
/// ```
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(4, 1000, 0, 0.1, Protocol::Seed).unwrap();
/// let b = saams_monitoring::sim::counting_memory_bound(&cfg, 1_000_000);
/// assert!(b > 6480.0 * 19.0 && b < 6480.0 * 21.0);
/// ```
pub fn counting_memory_bound(cfg: &Config, n: u64) -> f64 {
    648.0 / cfg.epsilon * (2.0 + n as f64).log2()
}

/// The number of blocks a site's [`crate::QuantileWindow`] holds at most while its window holds
/// at most `n` items: `(3/γ)·log₂(2 + n) + 1/γ + 16` with `γ = 0.95·δ_q` — after a compaction
/// two adjacent blocks whose newer count is in `[L, 2L)` hold more than `γL − 1` items together
/// (or could not merge because one may still receive late items and their span reached
/// `W − τ`, which adds the blocks of the last `τ` for out-of-order input), the newest `1/γ`
/// items may sit in single-stamp blocks, and compaction waits for a quarter more blocks.
///
/// ```
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(4, 1000, 0, 0.1, Protocol::Seed).unwrap();
/// let b = saams_monitoring::sim::quantile_blocks_bound(&cfg, 1_000_000);
/// assert!(b > 4000.0 && b < 5000.0);
/// ```
pub fn quantile_blocks_bound(cfg: &Config, n: u64) -> f64 {
    let gamma = 0.95 * cfg.delta_quantile();
    3.0 / gamma * (2.0 + n as f64).log2() + 1.0 / gamma + 16.0
}

/// The memory bound the quantile part of a site ([`crate::SiteMemory::quantiles`]) stays below,
/// in words, for a site whose window holds at most `n` items drawn from `d` distinct values:
/// [`quantile_blocks_bound`] blocks of at most 5 words plus at most `min(d, n)` entries of 2 words each
/// (the plain cost; a block is packed only where that is smaller, and late arrivals for a packed
/// block wait in exact overlay stamps of `1 + 2·entries` words), plus the sender's groups (`≤ 3/g + 3` before a fresh summary, 8 words each, and 8 scalars).
/// That is `O((d/ε)·log n)`: logarithmic in `n` for a bounded value domain, but for arbitrary
/// values it is no better than the window (module docs of [`crate`]).
///
/// ```
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(4, 1000, 0, 0.1, Protocol::Seed).unwrap();
/// let small = saams_monitoring::sim::quantile_memory_bound(&cfg, 1_000_000, 10);
/// let large = saams_monitoring::sim::quantile_memory_bound(&cfg, 10_000_000, 10);
/// assert!(large / small < 1.2);
/// ```
pub fn quantile_memory_bound(cfg: &Config, n: u64, d: u64) -> f64 {
    let blocks = quantile_blocks_bound(cfg, n);
    blocks * (5.0 + 2.0 * d.min(n) as f64) + 8.0 * (3.0 / cfg.quantile_group() + 3.0) + 8.0
}

/// Run `arrivals` (sorted by arrival time) through `cfg.sites` sites and a root.
///
/// ```
/// use saams_monitoring::sim::{adversary, simulate, SimOptions};
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(4, 200, 0, 0.1, Protocol::Seed).unwrap();
/// let stream = adversary("burst", 4, 200, 0, 1, 5, 7).unwrap();
/// let report = simulate(cfg, &stream, &SimOptions::default()).unwrap();
/// assert_eq!(report.violations, 0);
/// assert!(report.queries >= 1000);
/// ```
///
/// # Errors
/// When arrivals are out of order, name a site out of range, or break the tardiness, or the
/// options are out of range.
pub fn simulate(cfg: Config, arrivals: &[Arrival], opts: &SimOptions) -> Result<SimReport, MonitorError> {
    cfg.validate()?;
    if !(opts.phi > cfg.epsilon / 2.0 && opts.phi <= 1.0) {
        return Err(MonitorError::BadParameter(format!("phi must be in (ε/2, 1], got {}", opts.phi)));
    }
    for (i, a) in arrivals.iter().enumerate() {
        if a.site >= cfg.sites {
            return Err(MonitorError::BadInput(format!("arrival {i} names site {} of {}", a.site, cfg.sites)));
        }
        if a.arrival < a.stamp || a.arrival > a.stamp + cfg.tardiness {
            return Err(MonitorError::BadInput(format!(
                "arrival {i}: stamp {} arriving at {} breaks tardiness {}",
                a.stamp, a.arrival, cfg.tardiness
            )));
        }
        if i > 0 && a.arrival < arrivals[i - 1].arrival {
            return Err(MonitorError::BadInput(format!("arrival {i} is earlier than the one before it")));
        }
    }
    let mut report = SimReport { items: arrivals.len() as u64, ..SimReport::default() };
    let (Some(first), Some(last)) = (arrivals.first(), arrivals.last()) else {
        return Ok(report);
    };
    let (start, end) = (first.arrival, last.arrival + cfg.window);
    let mut times: BTreeSet<i64> = BTreeSet::new();
    let q = opts.queries.max(2) as i64;
    for i in 0..q {
        times.insert(start + ((end - start) as i128 * i as i128 / (q - 1) as i128) as i64);
    }
    times.extend(opts.extra_query_times.iter().copied());
    let times: Vec<i64> = times.into_iter().collect();

    let policy = opts.fallback.unwrap_or_else(|| FallbackPolicy::protocol_only(&cfg));
    let mut sites: Vec<FallbackSite> =
        (0..cfg.sites).map(|s| FallbackSite::new(cfg, policy, s)).collect::<Result<_, _>>()?;
    let mut root = Coordinator::new(cfg, policy);
    let mut oracle = Oracle::new(cfg.window, cfg.sites);
    let mut due: BTreeSet<(i64, usize)> = BTreeSet::new();
    let mut due_of: Vec<Option<i64>> = vec![None; cfg.sites];
    let mut cost = vec![Cost::default(); Channel::ALL.len()];
    let delta = opts.periodic_delta.unwrap_or(((cfg.epsilon * cfg.window as f64) as i64).max(1)).max(1);
    let mut next_periodic = start;
    let per_summary = (1.0 / cfg.epsilon).ceil() as u64;
    let (mut ai, mut qi) = (0usize, 0usize);
    let mut touched: Vec<usize> = Vec::new();
    let mut seen = vec![false; cfg.sites];
    loop {
        let ta = arrivals.get(ai).map_or(i64::MAX, |a| a.arrival);
        let tq = times.get(qi).copied().unwrap_or(i64::MAX);
        let td = due.first().map_or(i64::MAX, |&(t, _)| t);
        let tp = if next_periodic <= end { next_periodic } else { i64::MAX };
        let t = ta.min(tq).min(td).min(tp);
        if t == i64::MAX {
            break;
        }
        while let Some(a) = arrivals.get(ai) {
            if a.arrival != t {
                break;
            }
            sites[a.site].insert(t, a.stamp, a.item)?;
            oracle.insert(a.stamp, a.item, a.site);
            if !seen[a.site] {
                seen[a.site] = true;
                touched.push(a.site);
            }
            ai += 1;
        }
        while let Some(&(dt, s)) = due.first() {
            if dt > t {
                break;
            }
            due.pop_first();
            due_of[s] = None;
            if !seen[s] {
                seen[s] = true;
                touched.push(s);
            }
        }
        for &s in &touched {
            seen[s] = false;
            for e in sites[s].advance(t)? {
                let c = match &e.message {
                    SiteMessage::Protocol(m) => &mut cost[m.channel() as usize],
                    SiteMessage::Item { .. } | SiteMessage::StampedItem { .. } => &mut report.forward,
                    SiteMessage::StartProtocol | SiteMessage::StartForwarding => &mut report.switches,
                };
                c.messages += 1;
                c.words += e.message.words();
                c.bytes += e.message.encode().len() as u64;
                root.receive(&e)?;
            }
            let next = sites[s].next_due();
            if next != due_of[s] {
                if let Some(old) = due_of[s] {
                    due.remove(&(old, s));
                }
                if let Some(n) = next {
                    debug_assert!(n > t, "a site asked to be woken in the past");
                    due.insert((n, s));
                }
                due_of[s] = next;
            }
        }
        touched.clear();
        oracle.expire(t);
        if tp == t {
            for (total, counts) in oracle.site_totals.iter().zip(&oracle.site_counts) {
                if *total > 0 {
                    report.periodic_words += 1 + 4 * (counts.len() as u64).min(per_summary);
                }
            }
            next_periodic += delta;
        }
        if tq == t {
            check(&cfg, opts, &mut root, &oracle, t, &mut report)?;
            if opts.record_answers {
                let quantiles =
                    opts.quantile_phis.iter().map(|&phi| root.quantile(phi, t)).collect::<Result<_, _>>()?;
                let (count, frequent) = (root.count(t)?, root.frequent(opts.phi, t)?);
                report.answers.push(SimAnswer { time: t, count, frequent, quantiles });
            }
            report.max_root_exact_items = report.max_root_exact_items.max(root.exact_items());
            for site in &sites {
                let m = site.memory();
                report.max_site_memory_words = report.max_site_memory_words.max(m.sum());
                if m.counting() > report.max_site_counting_words {
                    report.max_site_counting_words = m.counting();
                    report.max_counting_parts = m;
                }
                if m.quantiles() > report.max_site_quantile_words {
                    report.max_site_quantile_words = m.quantiles();
                    report.max_quantile_parts = m;
                }
            }
            let site_max = oracle.site_totals.iter().copied().max().unwrap_or(0);
            report.max_site_window_count = report.max_site_window_count.max(site_max);
            report.max_window_count = report.max_window_count.max(oracle.total);
            qi += 1;
        }
    }
    report.cost = Channel::ALL.iter().map(|&ch| (ch, cost[ch as usize])).collect();
    for site in &sites {
        let s = site.switches();
        let t = &mut report.site_switches;
        t.to_protocol += s.to_protocol;
        t.to_forwarding += s.to_forwarding;
        t.forwarded_items += s.forwarded_items;
        t.protocol_items += s.protocol_items;
    }
    report.duration = end - start;
    // Normalise by the time some window is non-empty (items arrived and not yet expired): idle
    // stretches (nights, gaps between files) carry no items and cost nothing.
    let mut spans: Vec<(i64, i64)> = arrivals.iter().map(|a| (a.arrival, a.stamp + cfg.window)).collect();
    spans.sort_unstable();
    let (mut active, mut cur) = (0i64, None::<(i64, i64)>);
    for (a, b) in spans {
        cur = match cur {
            Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                active += cb - ca;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((ca, cb)) = cur {
        active += cb - ca;
    }
    report.active_duration = active;
    report.windows = active as f64 / cfg.window as f64;
    report.n_per_window = 2.0 * report.items as f64 / report.windows;
    let frac = cfg.tardiness as f64 / cfg.window as f64;
    report.bound = bound_per_window(cfg.sites, cfg.epsilon, report.n_per_window, frac) * report.windows;
    report.naive_words = report.items * if cfg.tardiness > 0 { 2 } else { 1 };
    Ok(report)
}
