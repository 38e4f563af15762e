//! The measured false-positive rate at design capacity is within ±25 % of the target.

use saams::bloom_filter::BloomFilter;
use saams::{Datum, Synopsis};

use crate::common;

/// Insert `n` distinct values, query `probes` values never inserted, return the measured rate.
fn measured_fpr(n: u64, fpp: f64, probes: u64, seed: u64) -> f64 {
    let mut f = BloomFilter::with_capacity_seed(n, fpp, seed).unwrap();
    for i in 0..n {
        f.update(Datum::Num(i as f64));
    }
    let positives = (0..probes).filter(|i| f.contains(Datum::Num((n + i) as f64))).count();
    positives as f64 / probes as f64
}

#[test]
fn false_positive_rate_at_design_capacity() {
    for (n, fpp, probes) in
        [(150_000u64, 0.01, 1_000_000u64), (1_000_000, 0.01, 1_000_000), (100_000, 0.001, 2_000_000)]
    {
        let rate = measured_fpr(n, fpp, probes, 7);
        assert!((0.75 * fpp..=1.25 * fpp).contains(&rate), "n {n} fpp {fpp}: measured {rate}");
    }
}

#[test]
fn false_positive_rate_with_other_seeds_and_a_coarse_target() {
    for seed in [1, 2, 3] {
        let rate = measured_fpr(20_000, 0.05, 400_000, seed);
        assert!((0.0375..=0.0625).contains(&rate), "seed {seed}: {rate}");
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn real_values_at_capacity() {
    // AIS vessel ids in, SPY prices (never vessel ids) as probes.
    let mut mmsi = common::ais_mmsi();
    mmsi.sort();
    mmsi.dedup();
    let mut f = BloomFilter::with_capacity(mmsi.len() as u64, 0.01).unwrap();
    for m in &mmsi {
        f.update(Datum::Str(m));
    }
    assert!(mmsi.iter().all(|m| f.contains(Datum::Str(m))));
    let probes: Vec<String> = (0..400_000u64).map(|i| format!("{}", 900_000_000 + i * 7)).collect();
    let absent: Vec<&String> = probes.iter().filter(|p| mmsi.binary_search(p).is_err()).collect();
    let rate = absent.iter().filter(|p| f.contains(Datum::Str(p))).count() as f64 / absent.len() as f64;
    assert!((0.0075..=0.0125).contains(&rate), "{rate}");
}
