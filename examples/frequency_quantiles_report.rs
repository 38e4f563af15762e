//! Bytes, precision/recall and error of Lossy Counting, Sticky Sampling, GK and window quantiles
//! against exact answers and the baseline crates, on the seeded Zipf(1.1) stream (10 M keys over
//! a 1 M domain by default). Speed is measured by `cargo bench --bench frequency_quantiles`.
//!
//! Run: `cargo run --release --example frequency_quantiles_report [-- <keys>]`

use std::collections::HashMap;

use datasketches::frequencies::{ErrorType, FrequentItemsSketch};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};
use saams::gk_quantiles::GkQuantiles;
use saams::lossy_counting::LossyCounting;
use saams::sticky_sampling::StickySampling;
use saams::window_sketch_quantiles::WindowSketchQuantiles;
use saams::{Datum, EstimateValue, Query, Synopsis, Value};

const PHI: f64 = 0.001;

fn zipf_keys(n: usize) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(1);
    let z = Zipf::new(1_000_000.0, 1.1).expect("valid Zipf parameters");
    (0..n).map(|_| z.sample(&mut rng) as u64).collect()
}

/// Precision and recall of `reported` against the items with true count ≥ φN.
fn pr(reported: &[u64], truth: &HashMap<u64, u64>, n: usize) -> (f64, f64, usize) {
    let threshold = PHI * n as f64;
    let heavy: Vec<u64> = truth.iter().filter(|(_, c)| **c as f64 >= threshold).map(|(k, _)| *k).collect();
    let hits = reported.iter().filter(|k| truth.get(k).is_some_and(|c| *c as f64 >= threshold)).count();
    let precision = if reported.is_empty() { 1.0 } else { hits as f64 / reported.len() as f64 };
    (precision, hits as f64 / heavy.len() as f64, heavy.len())
}

fn reported_items(s: &dyn Synopsis) -> Vec<u64> {
    match s.estimate(&Query::FrequentItems { support: PHI }).map(|e| e.value) {
        Ok(EstimateValue::Items(items)) => items
            .into_iter()
            .filter_map(|(v, _)| match v {
                Value::Num(x) => Some(x as u64),
                Value::Str(_) => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn max_undercount(s: &dyn Synopsis, truth: &HashMap<u64, u64>) -> u64 {
    truth
        .iter()
        .map(|(k, c)| {
            c - s.estimate(&Query::Count(Value::Num(*k as f64))).map_or(0.0, |e| e.as_f64().unwrap_or(0.0)) as u64
        })
        .max()
        .unwrap_or(0)
}

/// Largest rank error over a grid of 1001 quantiles, against sorted data.
fn max_rank_error(sorted: &[f64], answer: impl Fn(f64) -> f64) -> f64 {
    let n = sorted.len();
    (0..=1000)
        .map(|i| {
            let q = f64::from(i) / 1000.0;
            let v = answer(q);
            let r = ((q * n as f64).ceil() as usize).clamp(1, n);
            let below = sorted.partition_point(|y| *y < v);
            let upto = sorted.partition_point(|y| *y <= v);
            if r <= below {
                (below + 1 - r) as f64
            } else if r > upto {
                (r - upto) as f64
            } else {
                0.0
            }
        })
        .fold(0.0, f64::max)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10_000_000);
    let keys = zipf_keys(n);
    let mut truth: HashMap<u64, u64> = HashMap::new();
    for k in &keys {
        *truth.entry(*k).or_insert(0) += 1;
    }
    println!("# {n} Zipf(1.1) keys over 1M; φ = {PHI}");
    println!("kind\tparams\tpeak_bytes\tfinal_bytes\tencoded_bytes\tprecision\trecall\theavy\tmax_undercount");
    for eps in [PHI / 10.0, PHI / 5.0, PHI / 2.0] {
        let mut lc = LossyCounting::with_epsilon(eps).expect("valid epsilon");
        let mut peak = 0;
        for (i, k) in keys.iter().enumerate() {
            lc.update(Datum::Num(*k as f64));
            if i % 997 == 0 {
                peak = peak.max(lc.size_bytes());
            }
        }
        let (p, r, h) = pr(&reported_items(&lc), &truth, n);
        let mu = max_undercount(&lc, &truth);
        println!(
            "LossyCounting\tε={eps}\t{peak}\t{}\t{}\t{p:.4}\t{r:.4}\t{h}\t{mu}",
            lc.size_bytes(),
            lc.encode().len()
        );
    }
    for (s, eps, delta) in [(PHI, PHI / 10.0, 0.001), (PHI, PHI / 2.0, 0.001)] {
        let mut ss = StickySampling::with_accuracy(s, eps, delta, saams::sticky_sampling::DEFAULT_SEED).expect("valid");
        let mut peak = 0;
        for (i, k) in keys.iter().enumerate() {
            ss.update(Datum::Num(*k as f64));
            if i % 997 == 0 {
                peak = peak.max(ss.size_bytes());
            }
        }
        let (p, r, h) = pr(&reported_items(&ss), &truth, n);
        let mu = max_undercount(&ss, &truth);
        println!(
            "StickySampling\ts={s},ε={eps},δ={delta}\t{peak}\t{}\t{}\t{p:.4}\t{r:.4}\t{h}\t{mu}",
            ss.size_bytes(),
            ss.encode().len()
        );
    }
    for map in [8192usize, 16384] {
        let mut fi = FrequentItemsSketch::<u64>::new(map).expect("power of two");
        for k in &keys {
            fi.update(*k);
        }
        let threshold = (PHI * n as f64).ceil() as u64 - 1;
        let rows = fi.frequent_items_with_threshold(ErrorType::NoFalseNegatives, threshold);
        let reported: Vec<u64> = rows.iter().map(|r| *r.item()).collect();
        let (p, r, h) = pr(&reported, &truth, n);
        let mu = truth.iter().map(|(k, c)| c.saturating_sub(fi.lower_bound(k))).max().unwrap_or(0);
        println!(
            "datasketches::frequencies\tmap={map}\t{}\t{}\t{}\t{p:.4}\t{r:.4}\t{h}\t{mu}",
            fi.estimated_size(),
            fi.estimated_size(),
            fi.serialize().len()
        );
    }

    let xs: Vec<f64> = keys.iter().map(|k| *k as f64).collect();
    let mut sorted = xs.clone();
    sorted.sort_by(f64::total_cmp);
    println!("kind\tparams\tbytes\tencoded_bytes\ttuples\tmax_rank_error\tεN");
    let eps = 0.01;
    let mut gk = GkQuantiles::with_epsilon(eps).expect("valid epsilon");
    for x in &xs {
        gk.insert(*x);
    }
    let err =
        max_rank_error(&sorted, |q| gk.estimate(&Query::Quantile(q)).ok().and_then(|e| e.as_f64()).unwrap_or(f64::NAN));
    println!(
        "GKQuantiles\tε={eps}\t{}\t{}\t{}\t{err}\t{}",
        gk.size_bytes(),
        gk.encode().len(),
        gk.tuples(),
        eps * n as f64
    );
    for parts in [2usize, 4, 8] {
        let mut ps: Vec<GkQuantiles> = (0..parts).map(|_| GkQuantiles::with_epsilon(eps).expect("valid")).collect();
        for (i, x) in xs.iter().enumerate() {
            ps[i % parts].insert(*x);
        }
        let mut acc = ps.remove(0);
        for p in &ps {
            acc.merge(p).expect("same parameters");
        }
        let err = max_rank_error(&sorted, |q| {
            acc.estimate(&Query::Quantile(q)).ok().and_then(|e| e.as_f64()).unwrap_or(f64::NAN)
        });
        println!(
            "GKQuantiles merged x{parts}\tε={eps}\t{}\t{}\t{}\t{err}\t{}",
            acc.size_bytes(),
            acc.encode().len(),
            acc.tuples(),
            eps * n as f64
        );
    }
    let mut base = quantiles::greenwald_khanna::Stream::<u64>::new(eps);
    for k in &keys {
        base.insert(*k);
    }
    let err = max_rank_error(&sorted, |q| *base.quantile(q) as f64);
    let tuple_bytes = std::mem::size_of::<u64>() + 2 * std::mem::size_of::<usize>();
    println!(
        "quantiles::greenwald_khanna\tε={eps}\t~{}\t-\t{}\t{err}\t{}",
        base.s() * tuple_bytes,
        base.s(),
        eps * n as f64
    );

    let (eps, w) = (0.01, 40_000u64);
    let mut win = WindowSketchQuantiles::with_accuracy(eps, w).expect("valid");
    for x in &xs {
        win.insert(*x);
    }
    let mut last: Vec<f64> = xs[xs.len().saturating_sub(w as usize)..].to_vec();
    last.sort_by(f64::total_cmp);
    let err =
        max_rank_error(&last, |q| win.estimate(&Query::Quantile(q)).ok().and_then(|e| e.as_f64()).unwrap_or(f64::NAN));
    println!(
        "WindowSketchQuantiles\tε={eps},W={w} (b,k)={:?}\t{}\t{}\t{}\t{err}\t{}",
        win.layout(),
        win.size_bytes(),
        win.encode().len(),
        win.stored_values(),
        eps * w as f64
    );
}
