//! F2, point counts and inner products against exact answers: the reported intervals hold at
//! (at least) their confidence.

use std::collections::HashMap;

use saams::ams::Ams;
use saams::{Datum, PairQuery, Query, Synopsis, Value};

use crate::{common, sketch_of};

fn exact(keys: &[u64]) -> HashMap<u64, i64> {
    let mut m = HashMap::new();
    for k in keys {
        *m.entry(*k).or_insert(0) += 1;
    }
    m
}

fn f2(counts: &HashMap<u64, i64>) -> f64 {
    counts.values().map(|c| (c * c) as f64).sum()
}

/// Share of `seeds` trials whose F2 interval holds the exact F2, and the worst relative error.
fn f2_coverage(depth: u64, buckets: u64, seeds: u64) -> (f64, f64) {
    let mut hits = 0;
    let mut worst = 0.0f64;
    for seed in 0..seeds {
        let keys = common::zipf_stream(50_000, 100_000, 1.1, seed);
        let truth = f2(&exact(&keys));
        let a = sketch_of(&keys, depth, buckets, 100 + seed);
        let e = a.estimate(&Query::F2).unwrap();
        let est = e.as_f64().unwrap();
        assert!(e.lower <= est && est <= e.upper);
        assert_eq!(e.confidence, 0.95);
        if e.lower <= truth && truth <= e.upper {
            hits += 1;
        }
        worst = worst.max((est / truth - 1.0).abs());
    }
    (hits as f64 / seeds as f64, worst)
}

#[test]
fn f2_within_bound_at_reference_shape() {
    let (coverage, worst) = f2_coverage(10, 10_000, 20);
    assert!(coverage >= 0.95, "{coverage}");
    let eps = Ams::new(10, 10_000, 0).unwrap().f2_epsilon();
    assert!(worst <= eps, "worst {worst} vs eps {eps}");
}

#[test]
fn f2_within_bound_for_a_small_sketch() {
    // Few buckets: errors of several percent, so the bound is really exercised.
    let (coverage, worst) = f2_coverage(5, 64, 60);
    assert!(coverage >= 0.95, "{coverage}");
    assert!(worst > 0.01, "the test should see real errors: {worst}");
}

#[test]
fn point_counts_within_bound() {
    let keys = common::zipf_stream(100_000, 100_000, 1.1, 9);
    let counts = exact(&keys);
    let a = sketch_of(&keys, 7, 512, 4);
    let mut by_count: Vec<(&u64, &i64)> = counts.iter().collect();
    by_count.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
    let mut asked = 0;
    let mut hits = 0;
    let probes = by_count.iter().take(300).map(|(k, c)| (**k, **c)).chain((200_000..200_200).map(|k| (k, 0)));
    for (k, truth) in probes {
        let e = a.estimate(&Query::Count(Value::Num(k as f64))).unwrap();
        let est = e.as_f64().unwrap();
        assert!(e.lower <= est && est <= e.upper && e.lower >= 0.0);
        asked += 1;
        if e.lower <= truth as f64 && truth as f64 <= e.upper {
            hits += 1;
        }
    }
    assert!(hits as f64 / asked as f64 >= 0.95, "{hits}/{asked}");
}

#[test]
fn inner_product_within_bound() {
    let mut hits = 0;
    for seed in 0..20u64 {
        let ka = common::zipf_stream(30_000, 10_000, 1.1, seed);
        let kb = common::zipf_stream(30_000, 10_000, 1.3, 1000 + seed);
        let (ca, cb) = (exact(&ka), exact(&kb));
        let truth: f64 = ca.iter().map(|(k, x)| (x * cb.get(k).copied().unwrap_or(0)) as f64).sum();
        let a = sketch_of(&ka, 7, 1024, seed);
        let b = sketch_of(&kb, 7, 1024, seed);
        let e = a.estimate_pair(&b, &PairQuery::InnerProduct).unwrap();
        let est = e.as_f64().unwrap();
        assert!(e.lower <= est && est <= e.upper);
        if e.lower <= truth && truth <= e.upper {
            hits += 1;
        }
    }
    assert!(hits >= 19, "{hits}/20");
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn real_data_f2() {
    let mmsi = common::ais_mmsi();
    let mut a = Ams::new(10, 10_000, 1).unwrap();
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for m in &mmsi {
        a.update(Datum::Str(m));
        *counts.entry(m.as_str()).or_insert(0) += 1;
    }
    let truth: f64 = counts.values().map(|c| (c * c) as f64).sum();
    let e = a.estimate(&Query::F2).unwrap();
    assert!(e.lower <= truth && truth <= e.upper, "{e:?} vs {truth}");

    for column in [common::spy_prices(), common::spy_volumes()] {
        let mut a = Ams::new(10, 10_000, 1).unwrap();
        let mut counts: HashMap<u64, i64> = HashMap::new();
        for x in &column {
            a.update(Datum::Num(*x));
            *counts.entry(x.to_bits()).or_insert(0) += 1;
        }
        let truth = f2(&counts);
        let e = a.estimate(&Query::F2).unwrap();
        assert!(e.lower <= truth && truth <= e.upper, "{e:?} vs {truth}");
    }
}
