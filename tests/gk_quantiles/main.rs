//! GK quantiles (kind 8): update, merge, accuracy against exact ranks, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use saams::gk_quantiles::GkQuantiles;
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

pub fn build(eps: f64, xs: &[f64]) -> GkQuantiles {
    let mut gk = GkQuantiles::with_epsilon(eps).unwrap();
    for x in xs {
        gk.insert(*x);
    }
    gk
}

pub fn zipf(n: usize, seed: u64) -> Vec<f64> {
    common::zipf_stream(n, 1_000_000, 1.1, seed).into_iter().map(|k| k as f64).collect()
}

/// Largest rank error over a grid of quantiles and ranks, checked against `bound` (items), with
/// the brackets checked too. `xs` need not be sorted.
pub fn check_ranks(s: &dyn Synopsis, xs: &[f64], bound: f64) -> f64 {
    let mut sorted: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(n as f64));
    let mut worst: f64 = 0.0;
    for i in 0..=1000 {
        let q = i as f64 / 1000.0;
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
        assert_eq!(e.confidence, 1.0);
        worst = worst.max(err);
    }
    for i in 0..=200 {
        let x = sorted[(i * (n - 1)) / 200] + if i % 2 == 0 { 0.0 } else { 0.5 };
        let e = s.estimate(&Query::Rank(x)).unwrap();
        let truth = sorted.partition_point(|y| *y <= x) as f64 / n as f64;
        assert!(
            e.lower <= truth + 1e-12 && truth <= e.upper + 1e-12,
            "rank({x}) = {truth} not in [{}, {}]",
            e.lower,
            e.upper
        );
        let err = (e.as_f64().unwrap() - truth).abs() * n as f64;
        assert!(err <= bound + 1e-6, "rank({x}): error {err} over {bound}");
        worst = worst.max(err);
    }
    worst
}

#[test]
fn registry_builds_and_decodes_kind_8() {
    let s = saams::registry::construct(8, serde_json::json!([0.01]).as_array().unwrap()).unwrap();
    assert_eq!(s.kind(), saams::Kind::GkQuantiles);
    for bad in [serde_json::json!([]), serde_json::json!([0.0]), serde_json::json!([0.1, 1]), serde_json::json!([null])]
    {
        assert!(saams::registry::construct(8, bad.as_array().unwrap()).is_err());
    }
    let gk = build(0.01, &zipf(10_000, 1));
    let back = saams::registry::decode(&gk.encode()).unwrap();
    assert_eq!(back.encode(), gk.encode());
}
