use proptest::prelude::*;
use saams::kll::Kll;
use saams::{Datum, Query, Synopsis, SynopsisError};

use crate::common;

fn build(values: &[f64], k: u64) -> Kll {
    let mut s = Kll::new(k).unwrap();
    for v in values {
        s.update(Datum::Num(*v));
    }
    s
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn merged_partials_keep_the_rank_guarantee() {
    let values = common::spy_prices();
    let parts: Vec<Kll> = values.chunks(values.len() / 7 + 1).map(|c| build(c, 200)).collect();
    let mut merged = Kll::new(200).unwrap();
    for p in &parts {
        merged.merge(p).unwrap();
    }
    assert_eq!(merged.n(), values.len() as u64);
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    let eps = merged.normalized_rank_error();
    for i in 1..50 {
        let x = sorted[i * sorted.len() / 50];
        let r = merged.estimate(&Query::Rank(x)).unwrap().as_f64().unwrap();
        let truth = sorted.partition_point(|v| *v <= x) as f64 / sorted.len() as f64;
        assert!((r - truth).abs() <= eps, "{x}: {r} vs {truth}");
    }
}

#[test]
fn incompatible_merges_are_errors() {
    let mut a = Kll::new(200).unwrap();
    let b = Kll::new(100).unwrap();
    assert!(matches!(a.merge(&b), Err(SynopsisError::Incompatible { .. })));
    let c = saams::cpc::Cpc::new(11).unwrap();
    assert!(matches!(a.merge(&c), Err(SynopsisError::Incompatible { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn merge_is_order_independent_in_n_min_max(a in proptest::collection::vec(-1e6f64..1e6, 0..3000),
                                                b in proptest::collection::vec(-1e6f64..1e6, 0..3000)) {
        let mut ab = build(&a, 64);
        ab.merge(&build(&b, 64)).unwrap();
        let mut ba = build(&b, 64);
        ba.merge(&build(&a, 64)).unwrap();
        prop_assert_eq!(ab.n(), (a.len() + b.len()) as u64);
        prop_assert_eq!(ab.n(), ba.n());
        if !a.is_empty() || !b.is_empty() {
            for q in [0.0, 1.0] {
                prop_assert_eq!(ab.estimate(&Query::Quantile(q)).unwrap().as_f64(), ba.estimate(&Query::Quantile(q)).unwrap().as_f64());
            }
            let mut all: Vec<f64> = a.iter().chain(b.iter()).copied().collect();
            all.sort_by(f64::total_cmp);
            let eps = ab.normalized_rank_error();
            let x = all[all.len() / 2];
            let truth = all.partition_point(|v| *v <= x) as f64 / all.len() as f64;
            for s in [&ab, &ba] {
                let r = s.estimate(&Query::Rank(x)).unwrap().as_f64().unwrap();
                prop_assert!((r - truth).abs() <= eps, "{} vs {}", r, truth);
            }
        }
    }
}
