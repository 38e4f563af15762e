//! The exact sliding window the simulator checks the root against, and the check.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashSet};

use crate::config::Config;
use crate::error::MonitorError;
use crate::fallback::Coordinator;
use crate::message::Channel;
use crate::sim::{SimOptions, SimReport, Violation};

/// The exact window: every item's count, each site's count and distinct items.
pub(crate) struct Oracle {
    window: i64,
    pub(crate) counts: BTreeMap<u64, u64>,
    pub(crate) total: u64,
    pub(crate) site_totals: Vec<u64>,
    /// Each site's item counts (the periodic baseline ships `min(D_σ, 1/ε)` of them).
    pub(crate) site_counts: Vec<BTreeMap<u64, u64>>,
    heap: BinaryHeap<Reverse<(i64, u64, usize)>>,
}

impl Oracle {
    pub(crate) fn new(window: i64, sites: usize) -> Self {
        Oracle {
            window,
            counts: BTreeMap::new(),
            total: 0,
            site_totals: vec![0; sites],
            site_counts: vec![BTreeMap::new(); sites],
            heap: BinaryHeap::new(),
        }
    }

    pub(crate) fn insert(&mut self, stamp: i64, item: u64, site: usize) {
        *self.counts.entry(item).or_insert(0) += 1;
        *self.site_counts[site].entry(item).or_insert(0) += 1;
        self.total += 1;
        self.site_totals[site] += 1;
        self.heap.push(Reverse((stamp, item, site)));
    }

    pub(crate) fn expire(&mut self, now: i64) {
        while let Some(&Reverse((s, j, site))) = self.heap.peek() {
            if s + self.window > now {
                break;
            }
            self.heap.pop();
            self.total -= 1;
            self.site_totals[site] -= 1;
            decrement(&mut self.counts, j);
            decrement(&mut self.site_counts[site], j);
        }
    }
}

/// Decrement an item's count, forgetting it at 0.
fn decrement(counts: &mut BTreeMap<u64, u64>, item: u64) {
    let c = counts.get_mut(&item).expect("expiring item is counted");
    *c -= 1;
    if *c == 0 {
        counts.remove(&item);
    }
}

pub(crate) fn within(diff: f64, bound: f64) -> bool {
    diff <= bound * (1.0 + 1e-12) + 1e-9
}

fn fail(report: &mut SimReport, idx: usize, time: i64, query: &'static str, detail: String) {
    report.violations += 1;
    report.violations_by_query[idx] += 1;
    if report.examples.len() < 10 {
        report.examples.push(Violation { time, query, detail });
    }
}

pub(crate) fn check(
    cfg: &Config,
    opts: &SimOptions,
    root: &mut Coordinator,
    oracle: &Oracle,
    t: i64,
    report: &mut SimReport,
) -> Result<(), MonitorError> {
    report.queries += 1;
    let eps = cfg.epsilon;
    let c = oracle.total as f64;
    let est = root.count(t)? as f64;
    if !within((est - c).abs(), eps * c) {
        fail(report, 0, t, "count", format!("estimate {est} for true count {c}"));
    }
    let items = root.item_estimates(Channel::Items, t)?;
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
