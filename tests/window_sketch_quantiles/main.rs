//! Window sketch quantiles (kind 10): update, merge (time order), accuracy over the exact last-W
//! window, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use saams::window_sketch_quantiles::WindowSketchQuantiles;
use saams::{Query, Synopsis};

/// Proptest settings: a fixed seed so every run checks the same cases (deterministic CI), and no
/// failure file shared between test targets.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5AA5_F00D),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

pub fn build(eps: f64, w: u64, xs: &[f64]) -> WindowSketchQuantiles {
    let mut s = WindowSketchQuantiles::with_accuracy(eps, w).unwrap();
    for x in xs {
        s.insert(*x);
    }
    s
}

pub fn zipf(n: usize, seed: u64) -> Vec<f64> {
    common::zipf_stream(n, 1_000_000, 1.1, seed).into_iter().map(|k| k as f64).collect()
}

/// Largest rank error (items) of quantile and rank answers against the exact window `win`,
/// each checked against `bound` (items); brackets checked too.
pub fn check_window(s: &dyn Synopsis, win: &[f64], bound: f64) -> f64 {
    let mut sorted: Vec<f64> = win.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(n as f64));
    let mut worst: f64 = 0.0;
    for i in 0..=400 {
        let q = i as f64 / 400.0;
        let e = s.estimate(&Query::Quantile(q)).unwrap();
        let v = e.as_f64().unwrap();
        let r = ((q * n as f64).ceil() as usize).clamp(1, n);
        let below = sorted.partition_point(|y| *y < v);
        let upto = sorted.partition_point(|y| *y <= v);
        let err = if r <= below {
            (below + 1 - r) as f64
        } else if r > upto {
            (r - upto) as f64
        } else {
            0.0
        };
        assert!(err <= bound, "q = {q}: value {v} has ranks ({below}, {upto}], target {r}, bound {bound}");
        let truth = sorted[r - 1];
        assert!(e.lower <= truth && truth <= e.upper, "q = {q}: {truth} not in [{}, {}]", e.lower, e.upper);
        worst = worst.max(err);
    }
    for i in 0..=100 {
        let x = sorted[(i * (n - 1)) / 100] + if i % 2 == 0 { 0.0 } else { 0.25 };
        let e = s.estimate(&Query::Rank(x)).unwrap();
        let truth = sorted.partition_point(|y| *y <= x) as f64;
        let (v, lo, hi) = (e.as_f64().unwrap() * n as f64, e.lower * n as f64, e.upper * n as f64);
        assert!(lo <= truth + 1e-6 && truth <= hi + 1e-6, "rank({x}) = {truth} not in [{lo}, {hi}]");
        assert!((v - truth).abs() <= bound + 1e-6, "rank({x}): {v} vs {truth}, bound {bound}");
        worst = worst.max((v - truth).abs());
    }
    worst
}

#[test]
fn registry_builds_and_decodes_kind_10() {
    let s = saams::registry::construct(10, serde_json::json!([0.01, 40000]).as_array().unwrap()).unwrap();
    assert_eq!(s.kind(), saams::Kind::WindowSketchQuantiles);
    for bad in [
        serde_json::json!([0.01]),
        serde_json::json!([0.01, 0]),
        serde_json::json!([0.01, 10.5]),
        serde_json::json!([1.0, 100]),
        serde_json::json!([0.01, 100, 3]),
    ] {
        assert!(saams::registry::construct(10, bad.as_array().unwrap()).is_err(), "{bad}");
    }
    let w = build(0.01, 5000, &zipf(12_345, 1));
    assert_eq!(saams::registry::decode(&w.encode()).unwrap().encode(), w.encode());
}
