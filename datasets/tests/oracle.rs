//! The exact oracles against brute-force recomputation on seeded and real data.

use std::path::PathBuf;

use saams::Datum;
use saams::hash::SplitMix64;
use saams_datasets::oracle::{ExactCounts, ExactQuantiles, Windowed, pearson, window_start};
use saams_datasets::read_path;

#[test]
fn counts_match_brute_force() {
    let mut rng = SplitMix64::new(7);
    let values: Vec<f64> = (0..5000).map(|_| (rng.next_f64() * rng.next_f64() * 50.0).floor()).collect();
    let mut c = ExactCounts::default();
    for &v in &values {
        c.add(Datum::Num(v));
    }
    for probe in [0.0, 1.0, 7.0, 49.0, 50.0, 0.5] {
        assert_eq!(c.count(Datum::Num(probe)), values.iter().filter(|&&v| v == probe).count() as u64);
    }
    let mut distinct = values.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    assert_eq!(c.distinct(), distinct.len() as u64);
    let f2: u128 = distinct.iter().map(|d| values.iter().filter(|&&v| v == *d).count() as u128).map(|n| n * n).sum();
    assert_eq!(c.f2(), f2);
    assert_eq!(c.inner_product(&c), f2);
    let frequent = c.frequent(0.05);
    assert!(frequent.windows(2).all(|w| w[0].1 >= w[1].1));
    assert!(frequent.iter().all(|(_, n)| *n as f64 >= 0.05 * 5000.0));
    assert_eq!(c.top_k(3), frequent[..3].to_vec());
    // Merging two halves gives the whole.
    let (mut a, mut b) = (ExactCounts::default(), ExactCounts::default());
    for (i, &v) in values.iter().enumerate() {
        if i % 2 == 0 { a.add(Datum::Num(v)) } else { b.add(Datum::Num(v)) }
    }
    a.merge(&b);
    assert_eq!(a, c);
}

#[test]
fn quantiles_and_ranks_match_brute_force() {
    let mut rng = SplitMix64::new(11);
    let values: Vec<f64> = (0..2001).map(|_| (rng.next_gaussian() * 10.0).round()).collect();
    let q = ExactQuantiles::new(values.clone());
    let n = values.len();
    for phi in [0.0, 0.01, 0.25, 0.5, 0.9, 0.999, 1.0] {
        let x = q.quantile(phi).unwrap();
        let below = values.iter().filter(|&&v| v < x).count();
        let at_most = values.iter().filter(|&&v| v <= x).count();
        assert_eq!(q.rank_range(x), (below, at_most));
        let target = ((phi * n as f64).ceil() as usize).max(1);
        assert!(below < target && target <= at_most, "phi {phi}");
        assert!(q.is_within(x, phi, 0.0));
    }
    assert!(q.quantile(1.5).is_none());
    assert!(ExactQuantiles::new(vec![]).quantile(0.5).is_none());
    let median = q.quantile(0.5).unwrap();
    assert!(!q.is_within(median + 15.0, 0.5, 0.05));
}

#[test]
fn pearson_matches_the_textbook_formula() {
    let mut rng = SplitMix64::new(3);
    let x: Vec<f64> = (0..500).map(|_| rng.next_gaussian()).collect();
    let y: Vec<f64> = x.iter().map(|v| 0.6 * v + 0.8 * rng.next_gaussian()).collect();
    let n = x.len() as f64;
    let (sx, sy): (f64, f64) = (x.iter().sum(), y.iter().sum());
    let sxy: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
    let (sxx, syy): (f64, f64) = (x.iter().map(|a| a * a).sum(), y.iter().map(|b| b * b).sum());
    let textbook = (n * sxy - sx * sy) / ((n * sxx - sx * sx).sqrt() * (n * syy - sy * sy).sqrt());
    let r = pearson(&x, &y).unwrap();
    assert!((r - textbook).abs() < 1e-9);
    assert!((0.45..0.75).contains(&r), "{r}");
    assert_eq!(pearson(&x, &y[1..]), None);
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn windows_partition_the_real_stream() {
    let path = PathBuf::from(env!("SAAMS_DATASETS_DIR")).join("stocks/minute/future_cme_ES_201312_minute_trade.csv");
    let tuples: Vec<_> = read_path(&path, None).unwrap().map(|t| t.unwrap()).collect();
    let hour = 3_600_000;
    let w = Windowed::new(&tuples, "price", Some(hour));
    let windows = w.windows("future_cme", "ES_201312");
    assert!(windows.len() > 40);
    let total: u64 = windows.iter().map(|&s| w.counts("future_cme", "ES_201312", s).unwrap().total()).sum();
    assert_eq!(total, tuples.len() as u64);
    // Each window holds exactly the tuples whose time falls in it, in arrival order.
    let first = windows[0];
    let expect: Vec<f64> = tuples
        .iter()
        .filter(|t| window_start(t.time_ms.unwrap(), hour) == first)
        .map(|t| t.field("price").unwrap().as_f64().unwrap())
        .collect();
    let got: Vec<f64> =
        w.values("future_cme", "ES_201312", first).unwrap().iter().map(|v| v.as_datum().as_f64().unwrap()).collect();
    assert_eq!(got, expect);
    assert_eq!(w.last_n("future_cme", "ES_201312", first, 5), expect[expect.len() - 5..].to_vec());
    // The dataset-level group of a one-stream dataset equals the stream's group.
    assert_eq!(w.values("future_cme", "", first), w.values("future_cme", "ES_201312", first));
    let q = w.quantiles("future_cme", "ES_201312", first).unwrap();
    assert_eq!(q.len(), expect.len());
}
