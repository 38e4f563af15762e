use std::collections::HashSet;

use saams::cpc::{CPC_CONFIDENCE, Cpc};
use saams::{Datum, Query, Synopsis};

use crate::common;

/// Over many independent seeds, the 2-σ interval must hold the truth at least about as often as
/// it promises (allowing binomial slack for 60 trials), and the relative error stays near
/// 0.59/√K.
#[test]
fn zipf_distinct_counts_within_bounds() {
    let trials = 60;
    let mut held = 0;
    let mut sq = 0.0;
    for seed in 0..trials {
        let keys = common::zipf_stream(20_000, 1_000_000, 1.1, seed);
        let truth = keys.iter().collect::<HashSet<_>>().len() as f64;
        let mut s = Cpc::with_seed(10, 1000 + seed).unwrap();
        for k in &keys {
            s.update(Datum::Num(*k as f64));
        }
        let e = s.estimate(&Query::Distinct).unwrap();
        let v = e.as_f64().unwrap();
        assert!(e.lower <= v && v <= e.upper);
        if e.lower <= truth && truth <= e.upper {
            held += 1;
        }
        sq += ((v - truth) / truth).powi(2);
    }
    let rmse = (sq / trials as f64).sqrt();
    assert!(f64::from(held as u32) / trials as f64 >= CPC_CONFIDENCE - 0.08, "held {held}/{trials}");
    assert!(rmse < 2.0 * 0.59 / 32.0, "rmse {rmse}");
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn ais_vessels_and_spy_prices() {
    let mmsi = common::ais_mmsi();
    let truth = mmsi.iter().collect::<HashSet<_>>().len() as f64;
    let mut s = Cpc::new(11).unwrap();
    for m in &mmsi {
        s.update(Datum::Str(m));
    }
    let e = s.estimate(&Query::Distinct).unwrap();
    assert!(e.lower <= truth && truth <= e.upper, "{e:?} vs {truth}");

    let prices = common::spy_prices();
    let truth = prices.iter().map(|p| p.to_bits()).collect::<HashSet<_>>().len() as f64;
    let mut s = Cpc::new(11).unwrap();
    for p in &prices {
        s.update(Datum::Num(*p));
    }
    let e = s.estimate(&Query::Distinct).unwrap();
    assert!(e.lower <= truth && truth <= e.upper, "{e:?} vs {truth}");
}
