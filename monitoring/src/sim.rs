//! A deterministic simulator: k sites and the root run over a stream of arrivals, and at
//! sampled times the root's four answers are checked against the exact sliding-window answers.
//! It also counts what the protocol sent against sending every item (naive) and against
//! shipping a full synopsis every Δ (periodic). `monitor-sim` and the tests both drive it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashSet};

use saams::hash::SplitMix64;

use crate::config::Config;
use crate::error::MonitorError;
use crate::message::Channel;
use crate::root::Root;
use crate::site::{Site, SiteMemory};

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
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            queries: 1000,
            extra_query_times: Vec::new(),
            phi: 0.1,
            quantile_phis: vec![0.05, 0.25, 0.5, 0.75, 0.95],
            periodic_delta: None,
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
    /// Cost per channel, in [`Channel::ALL`] order.
    pub cost: Vec<(Channel, Cost)>,
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
}

impl SimReport {
    /// Total cost over every channel.
    pub fn total(&self) -> Cost {
        let mut t = Cost::default();
        for (_, c) in &self.cost {
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

struct Oracle {
    window: i64,
    counts: BTreeMap<u64, u64>,
    total: u64,
    site_totals: Vec<u64>,
    heap: BinaryHeap<Reverse<(i64, u64, usize)>>,
}

impl Oracle {
    fn insert(&mut self, stamp: i64, item: u64, site: usize) {
        *self.counts.entry(item).or_insert(0) += 1;
        self.total += 1;
        self.site_totals[site] += 1;
        self.heap.push(Reverse((stamp, item, site)));
    }

    fn expire(&mut self, now: i64) {
        while let Some(&Reverse((s, j, site))) = self.heap.peek() {
            if s + self.window > now {
                break;
            }
            self.heap.pop();
            self.total -= 1;
            self.site_totals[site] -= 1;
            let c = self.counts.get_mut(&j).expect("expiring item is counted");
            *c -= 1;
            if *c == 0 {
                self.counts.remove(&j);
            }
        }
    }
}

fn within(diff: f64, bound: f64) -> bool {
    diff <= bound * (1.0 + 1e-12) + 1e-9
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

    let mut sites: Vec<Site> = (0..cfg.sites).map(|_| Site::new(cfg)).collect::<Result<_, _>>()?;
    let mut root = Root::new(cfg);
    let mut oracle = Oracle {
        window: cfg.window,
        counts: BTreeMap::new(),
        total: 0,
        site_totals: vec![0; cfg.sites],
        heap: BinaryHeap::new(),
    };
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
            for m in sites[s].advance(t)? {
                let c = &mut cost[m.channel() as usize];
                c.messages += 1;
                c.words += m.words();
                c.bytes += m.encode().len() as u64;
                root.receive(s, t, &m)?;
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
            for site in &sites {
                if site.local().total(t) > 0 {
                    report.periodic_words += 1 + 4 * (site.local().distinct() as u64).min(per_summary);
                }
            }
            next_periodic += delta;
        }
        if tq == t {
            check(&cfg, opts, &root, &oracle, t, &mut report)?;
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

fn fail(report: &mut SimReport, idx: usize, time: i64, query: &'static str, detail: String) {
    report.violations += 1;
    report.violations_by_query[idx] += 1;
    if report.examples.len() < 10 {
        report.examples.push(Violation { time, query, detail });
    }
}

fn check(
    cfg: &Config,
    opts: &SimOptions,
    root: &Root,
    oracle: &Oracle,
    t: i64,
    report: &mut SimReport,
) -> Result<(), MonitorError> {
    report.queries += 1;
    let eps = cfg.epsilon;
    let c = oracle.total as f64;
    let est = root.count(t) as f64;
    if !within((est - c).abs(), eps * c) {
        fail(report, 0, t, "count", format!("estimate {est} for true count {c}"));
    }
    let items = root.item_estimates(Channel::Items, t);
    let mut worst: Option<(u64, f64, f64)> = None;
    for (&j, &cj) in &oracle.counts {
        let e = items.get(&j).copied().unwrap_or(0) as f64;
        if !within((e - cj as f64).abs(), eps * c) {
            worst = Some((j, e, cj as f64));
        }
    }
    for (&j, &e) in &items {
        if !oracle.counts.contains_key(&j) && !within(e as f64, eps * c) {
            worst = Some((j, e as f64, 0.0));
        }
    }
    if let Some((j, e, cj)) = worst {
        fail(report, 1, t, "items", format!("item {j}: estimate {e}, true {cj}, total {c}"));
    }
    let frequent: HashSet<u64> = root.frequent(opts.phi, t)?.into_iter().collect();
    let mut bad = None;
    for (&j, &cj) in &oracle.counts {
        if cj as f64 >= opts.phi * c && !frequent.contains(&j) {
            bad = Some(format!("item {j} with count {cj} ≥ φc = {} is missing", opts.phi * c));
        }
    }
    for &j in &frequent {
        let cj = oracle.counts.get(&j).copied().unwrap_or(0) as f64;
        if cj < (opts.phi - eps) * c * (1.0 - 1e-12) - 1e-9 {
            bad = Some(format!("item {j} with count {cj} < (φ−ε)c = {} was returned", (opts.phi - eps) * c));
        }
    }
    if let Some(d) = bad {
        fail(report, 2, t, "frequent", d);
    }
    for &phi in &opts.quantile_phis {
        let answer = root.quantile(phi, t)?;
        let ok = match answer {
            None => oracle.total == 0,
            Some(v) => {
                let below: u64 = oracle.counts.range(..v).map(|(_, &n)| n).sum();
                let at = oracle.counts.get(&v).copied().unwrap_or(0);
                within(below as f64 - (phi + eps) * c, 0.0) && within((phi - eps) * c - (below + at) as f64, 0.0)
            }
        };
        if !ok {
            fail(report, 3, t, "quantiles", format!("phi {phi}: answer {answer:?}, total {c}"));
            break;
        }
    }
    Ok(())
}

/// The adversarial streams `monitor-sim --adversary` and the tests use, over `windows` windows
/// of `window` time units, about `rate` items per time unit over `k` sites, seeded. Each item
/// gets a delay in `[0, τ]` (for `late`: τ for most items), so out-of-order input is exercised.
///
/// * `uniform` — steady rate, a skewed item mix.
/// * `burst` — a low base rate with bursts of 50× the rate at single stamps on one site, heavy
///   on a few items.
/// * `expiry` — everything arrives in short pulses once per 1.5 windows, so the whole window
///   expires at once at the edge.
/// * `distinct` — almost every item distinct, plus one heavy item on and off.
/// * `late` — like `uniform` but items arrive exactly τ late, interleaved with on-time ones.
/// * `onoff` — a few items alternate between heavy and absent every half window (turning off
///   and on), over a background.
/// * `wave` — the rate swings between 1× and 4× every window.
/// * `mixed` — `burst`, `expiry` and `distinct` together.
///
/// ```
/// let s = saams_monitoring::sim::adversary("expiry", 3, 100, 10, 2, 4, 1).unwrap();
/// assert!(s.windows(2).all(|w| w[0].arrival <= w[1].arrival));
/// assert!(s.iter().all(|a| a.site < 3 && a.arrival - a.stamp <= 10));
/// assert!(saams_monitoring::sim::adversary("nope", 3, 100, 0, 2, 4, 1).is_err());
/// ```
///
/// # Errors
/// For an unknown name or parameters out of range.
pub fn adversary(
    name: &str,
    k: usize,
    window: i64,
    tardiness: i64,
    rate: u64,
    windows: i64,
    seed: u64,
) -> Result<Vec<Arrival>, MonitorError> {
    if k == 0 || window <= 0 || !(0..window).contains(&tardiness) || rate == 0 || windows <= 0 {
        return Err(MonitorError::BadParameter(format!(
            "adversary needs k ≥ 1, W > 0, 0 ≤ τ < W, rate ≥ 1, windows ≥ 1 (got k={k}, W={window}, τ={tardiness}, \
             rate={rate}, windows={windows})"
        )));
    }
    let mut rng = SplitMix64::new(seed);
    let horizon = window * windows;
    let mut out: Vec<(i64, i64, usize, u64)> = Vec::new();
    let skewed = |rng: &mut SplitMix64| -> u64 {
        // P(item = i) ∝ 1/(i+1)² roughly: a few heavy items and a long tail.
        let u = rng.next_f64();
        ((1.0 / (1.0 - u * 0.999)).powf(1.5) as u64).min(5000)
    };
    let mut push = |rng: &mut SplitMix64, stamp: i64, site: usize, item: u64, late: bool| {
        let delay = if tardiness == 0 {
            0
        } else if late {
            if rng.next_u64().is_multiple_of(4) { 0 } else { tardiness }
        } else {
            (rng.next_u64() % (tardiness as u64 + 1)) as i64
        };
        out.push((stamp, stamp + delay, site, item));
    };
    let site_of = |rng: &mut SplitMix64| (rng.next_u64() % k as u64) as usize;
    let uniform = |rng: &mut SplitMix64, push: &mut dyn FnMut(&mut SplitMix64, i64, usize, u64, bool), late: bool| {
        for t in 0..horizon {
            for _ in 0..rate {
                let s = site_of(rng);
                let j = skewed(rng);
                push(rng, t, s, j, late);
            }
        }
    };
    let burst = |rng: &mut SplitMix64, push: &mut dyn FnMut(&mut SplitMix64, i64, usize, u64, bool)| {
        for t in 0..horizon {
            if rng.next_u64().is_multiple_of(10) {
                let s = site_of(rng);
                let j = skewed(rng);
                push(rng, t, s, j, false);
            }
            if t % (window / 3).max(1) == window / 7 {
                let s = site_of(rng);
                for i in 0..50 * rate * (window as u64 / 10).max(1) {
                    let j = if i % 3 == 0 { skewed(rng) } else { i % 4 };
                    push(rng, t, s, j, false);
                }
            }
        }
    };
    let expiry = |rng: &mut SplitMix64, push: &mut dyn FnMut(&mut SplitMix64, i64, usize, u64, bool)| {
        let period = window + window / 2;
        for t in 0..horizon {
            if t % period < (window / 20).max(1) {
                for _ in 0..20 * rate {
                    let s = site_of(rng);
                    let j = skewed(rng);
                    push(rng, t, s, j, false);
                }
            }
        }
    };
    let distinct = |rng: &mut SplitMix64, push: &mut dyn FnMut(&mut SplitMix64, i64, usize, u64, bool)| {
        let mut next = 1_000_000u64;
        for t in 0..horizon {
            for _ in 0..rate {
                let s = site_of(rng);
                next += 1;
                push(rng, t, s, next, false);
            }
            if (t / window) % 2 == 0 {
                let s = site_of(rng);
                push(rng, t, s, 7, false);
            }
        }
    };
    match name {
        "uniform" => uniform(&mut rng, &mut push, false),
        "late" => uniform(&mut rng, &mut push, true),
        "burst" => burst(&mut rng, &mut push),
        "expiry" => expiry(&mut rng, &mut push),
        "distinct" => distinct(&mut rng, &mut push),
        "mixed" => {
            burst(&mut rng, &mut push);
            expiry(&mut rng, &mut push);
            distinct(&mut rng, &mut push);
        }
        "onoff" => {
            for t in 0..horizon {
                let phase = (2 * t / window) % 2;
                for _ in 0..rate {
                    let s = site_of(&mut rng);
                    let j = 100 + rng.next_u64() % 500;
                    push(&mut rng, t, s, j, false);
                }
                for j in 0..3u64 {
                    if (phase as u64 + j).is_multiple_of(2) {
                        for _ in 0..rate {
                            let s = site_of(&mut rng);
                            push(&mut rng, t, s, j, false);
                        }
                    }
                }
            }
        }
        "wave" => {
            for t in 0..horizon {
                let n = if (t / window) % 2 == 0 { rate } else { 4 * rate };
                for _ in 0..n {
                    let s = site_of(&mut rng);
                    let j = skewed(&mut rng);
                    push(&mut rng, t, s, j, false);
                }
            }
        }
        other => {
            return Err(MonitorError::BadParameter(format!(
                "unknown adversary {other:?} (uniform | burst | expiry | distinct | late | onoff | wave | mixed)"
            )));
        }
    }
    out.sort_by_key(|&(stamp, arrival, _, _)| (arrival, stamp));
    Ok(out.into_iter().map(|(stamp, arrival, site, item)| Arrival { site, stamp, arrival, item }).collect())
}
