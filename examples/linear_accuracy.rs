//! Error and memory of the linear sketches next to their baseline crates, on seeded streams
//! (the figures the benches cannot show). Prints tagged TSV lines.
//!
//! Run: `cargo run --release --example linear_accuracy`

use std::collections::HashMap;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};
use saams::ams::Ams;
use saams::bloom_filter::BloomFilter;
use saams::count_min::CountMin;
use saams::hyper_log_log::HyperLogLog;
use saams::{Datum, Query, Synopsis};

fn zipf_keys(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let zipf = Zipf::new(1_000_000.0, 1.1).expect("valid Zipf parameters");
    (0..n).map(|_| zipf.sample(&mut rng) as u64).collect()
}

fn exact(keys: &[u64]) -> HashMap<u64, u64> {
    let mut m = HashMap::new();
    for k in keys {
        *m.entry(*k).or_insert(0) += 1;
    }
    m
}

fn rms(errors: &[f64]) -> f64 {
    (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt()
}

fn count_min() {
    let keys = zipf_keys(10_000_000, 1);
    let counts = exact(&keys);
    let mut ours = CountMin::with_accuracy(0.002, 0.99, 12345).unwrap();
    let buckets = datasketches::countmin::CountMinSketch::<u64>::suggest_num_buckets(0.002).unwrap();
    let hashes = datasketches::countmin::CountMinSketch::<u64>::suggest_num_hashes(0.99).unwrap();
    let mut theirs = datasketches::countmin::CountMinSketch::<u64>::with_seed(hashes, buckets, 12345).unwrap();
    for k in &keys {
        ours.update(Datum::Num(*k as f64));
        theirs.update(k);
    }
    let slack = 0.002 * keys.len() as f64;
    let ours_est = |k: u64| ours.count(Datum::Num(k as f64)) as f64;
    let theirs_est = |k: u64| theirs.estimate(k) as f64;
    let estimators: [(&str, &dyn Fn(u64) -> f64); 2] = [("saams", &ours_est), ("datasketches", &theirs_est)];
    for (name, est) in estimators {
        let mut within = 0;
        let mut under = 0;
        let mut max_err = 0f64;
        let mut sum_err = 0f64;
        for (k, c) in &counts {
            let err = est(*k) - *c as f64;
            under += usize::from(err < 0.0);
            within += usize::from(err <= slack);
            max_err = max_err.max(err);
            sum_err += err;
        }
        let bytes = if name == "saams" { ours.size_bytes() } else { theirs.estimated_size() };
        println!(
            "countmin\t{name}\teps=0.002\tconf=0.99\tN={}\tdistinct={}\twithin_epsN={:.5}\tunder={under}\tmax_err/epsN={:.3}\tmean_err={:.2}\tbytes={bytes}",
            keys.len(),
            counts.len(),
            within as f64 / counts.len() as f64,
            max_err / slack,
            sum_err / counts.len() as f64
        );
    }
    println!("countmin\tsaams\tencoded_bytes={}", ours.encode().len());
}

fn hyper_log_log() {
    // RMS relative error at 2^12 registers: 16 seeds (disjoint value ranges) per cardinality
    // on a log ladder from 100 to 1 M.
    let ladder: Vec<u64> = (0..=16).map(|i| (100.0 * 10f64.powf(i as f64 / 4.0)).round() as u64).collect();
    let mut all = (Vec::new(), Vec::new());
    let mut large = (Vec::new(), Vec::new());
    for &n in &ladder {
        let mut errs = (Vec::new(), Vec::new());
        for seed in 0..16u64 {
            let mut ours = HyperLogLog::with_rsd(0.02).unwrap();
            let mut theirs = streaming_algorithms::HyperLogLog::<u64>::with_p(12);
            for i in 0..n {
                let v = (seed << 40) | i;
                ours.update(Datum::Num(v as f64));
                theirs.push(&v);
            }
            errs.0.push(ours.distinct() / n as f64 - 1.0);
            errs.1.push(theirs.len() / n as f64 - 1.0);
        }
        println!("hll\tp=12\tn={n}\tsaams_rms={:.5}\tstreaming_algorithms_rms={:.5}", rms(&errs.0), rms(&errs.1));
        if n >= 10_000 {
            large.0.extend(&errs.0);
            large.1.extend(&errs.1);
        }
        all.0.extend(errs.0);
        all.1.extend(errs.1);
    }
    println!(
        "hll\tp=12\tladder_100_to_1M\tsaams_rms={:.5}\tstreaming_algorithms_rms={:.5}\t1.04/sqrt(m)={:.5}",
        rms(&all.0),
        rms(&all.1),
        1.04 / 64.0
    );
    println!("hll\tp=12\tn>=10000\tsaams_rms={:.5}\tstreaming_algorithms_rms={:.5}", rms(&large.0), rms(&large.1));
    let h = HyperLogLog::with_rsd(0.02).unwrap();
    println!("hll\tsaams\tbytes={}\tencoded_bytes={}", h.size_bytes(), h.encode().len());
}

fn bloom() {
    let n = 1_000_000u64;
    let mut ours = BloomFilter::with_capacity(n, 0.01).unwrap();
    let mut theirs = fastbloom::BloomFilter::with_false_pos(0.01).expected_items(n as usize);
    for i in 0..n {
        ours.update(Datum::Num(i as f64));
        theirs.insert(&i);
    }
    let probes = 4_000_000u64;
    let fp_ours = (n..n + probes).filter(|i| ours.contains(Datum::Num(*i as f64))).count();
    let fp_theirs = (n..n + probes).filter(|i| theirs.contains(i)).count();
    println!(
        "bloom\tn=1M\tfpp=0.01\tsaams_fpr={:.5}\tsaams_bits={}\tsaams_k={}\tsaams_bytes={}\tfastbloom_fpr={:.5}\tfastbloom_bits={}\tfastbloom_k={}",
        fp_ours as f64 / probes as f64,
        ours.num_bits(),
        ours.hashes(),
        ours.size_bytes(),
        fp_theirs as f64 / probes as f64,
        theirs.num_bits(),
        theirs.num_hashes()
    );
}

fn ams() {
    let mut errors = Vec::new();
    let mut covered = 0;
    for seed in 0..16u64 {
        let keys = zipf_keys(1_000_000, 100 + seed);
        let truth: f64 = exact(&keys).values().map(|c| (*c as f64) * (*c as f64)).sum();
        let mut a = Ams::new(10, 10_000, seed).unwrap();
        for k in &keys {
            a.update(Datum::Num(*k as f64));
        }
        let e = a.estimate(&Query::F2).unwrap();
        errors.push(e.as_f64().unwrap() / truth - 1.0);
        covered += usize::from(e.lower <= truth && truth <= e.upper);
    }
    let a = Ams::new(10, 10_000, 0).unwrap();
    println!(
        "ams\t10x10000\tzipf1.1_1M\tf2_rms={:.5}\tf2_max={:.5}\teps_at_0.95={:.5}\tcovered={covered}/16\tbytes={}",
        rms(&errors),
        errors.iter().fold(0f64, |m, e| m.max(e.abs())),
        a.f2_epsilon(),
        a.size_bytes()
    );
}

fn main() {
    count_min();
    hyper_log_log();
    bloom();
    ams();
}
