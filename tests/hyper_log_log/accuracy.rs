//! RMS relative error against exact distinct counts, and the coverage of the reported interval.

use saams::hyper_log_log::HyperLogLog;
use saams::{Datum, Query, Synopsis};

use crate::common;

/// Relative errors of sketches with `seeds` hash seeds on the distinct values `0..n`, and the
/// number of trials whose interval held the truth.
fn trials(rsd: f64, n: u64, seeds: u64) -> (Vec<f64>, usize) {
    let mut errors = Vec::new();
    let mut covered = 0;
    for seed in 0..seeds {
        let mut h = HyperLogLog::with_rsd_seed(rsd, 1000 + seed).unwrap();
        for i in 0..n {
            h.update(Datum::Num(i as f64));
        }
        let e = h.estimate(&Query::Distinct).unwrap();
        let est = e.as_f64().unwrap();
        assert!(e.lower <= est && est <= e.upper);
        if e.lower <= n as f64 && n as f64 <= e.upper {
            covered += 1;
        }
        errors.push(est / n as f64 - 1.0);
    }
    (errors, covered)
}

fn rms(errors: &[f64]) -> f64 {
    (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt()
}

#[test]
fn rms_error_at_2_to_the_12_registers_is_within_1_1_times_the_standard_error() {
    let sigma = 1.04 / 64.0;
    let mut all = Vec::new();
    let mut covered = 0;
    for n in [3_000u64, 20_000, 100_000] {
        let (errors, c) = trials(0.02, n, 24);
        assert!(rms(&errors) <= 1.1 * sigma * 1.25, "n {n}: rms {} vs sigma {sigma}", rms(&errors));
        all.extend(errors);
        covered += c;
    }
    assert!(rms(&all) <= 1.1 * sigma, "rms {} vs 1.1 sigma {}", rms(&all), 1.1 * sigma);
    // The two-sigma interval at confidence 0.95.
    assert!(covered as f64 / all.len() as f64 >= 0.9, "coverage {covered}/{}", all.len());
}

#[test]
fn small_cardinalities_match_linear_counting_accuracy() {
    // Far below m the estimator behaves like linear counting, whose standard error is
    // √(m(e^t − t − 1))/n with t = n/m (Whang et al.): about 1.1 % at n = 100, m = 4096.
    let (n, m) = (100f64, 4096f64);
    let t = n / m;
    let sigma = (m * (t.exp() - t - 1.0)).sqrt() / n;
    let (errors, covered) = trials(0.02, 100, 64);
    assert!(rms(&errors) <= 1.3 * sigma, "rms {} vs linear counting {sigma}", rms(&errors));
    assert!(covered >= 60, "{covered}/64");
}

#[test]
fn coarse_sketch_keeps_its_bound() {
    // p = 7: large errors, where a wrong estimator shows at once.
    let sigma = 1.04 / (128f64).sqrt();
    let mut all = Vec::new();
    for n in [500u64, 5_000, 50_000] {
        all.extend(trials(0.1, n, 32).0);
    }
    assert!(rms(&all) <= 1.1 * sigma, "rms {} vs sigma {sigma}", rms(&all));
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn ais_and_spy_distinct_counts() {
    let mmsi = common::ais_mmsi();
    let mut h = HyperLogLog::with_rsd(0.02).unwrap();
    for m in &mmsi {
        h.update(Datum::Str(m));
    }
    let mut exact = mmsi.clone();
    exact.sort();
    exact.dedup();
    let e = h.estimate(&Query::Distinct).unwrap();
    let n = exact.len() as f64;
    assert!(e.lower <= n && n <= e.upper, "{e:?} vs {n}");

    for column in [common::spy_prices(), common::spy_volumes()] {
        let mut h = HyperLogLog::with_rsd(0.02).unwrap();
        for x in &column {
            h.update(Datum::Num(*x));
        }
        let mut bits: Vec<u64> = column.iter().map(|x| x.to_bits()).collect();
        bits.sort_unstable();
        bits.dedup();
        let e = h.estimate(&Query::Distinct).unwrap();
        let n = bits.len() as f64;
        assert!(e.lower <= n && n <= e.upper, "{e:?} vs {n}");
    }
}
