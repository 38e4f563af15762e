use saams::dft::Dft;
use saams::{Datum, PairQuery, Synopsis, SynopsisError};

use crate::{common, pearson, random_walk};

/// Milliseconds since the epoch of a shared CSV row's `Date,Time` (shifted by `offset_h` hours).
fn time_ms(date: &str, time: &str, offset_h: i64) -> i64 {
    let day = saams::api::time::parse_date(date).expect("date");
    let tod = saams::api::time::parse_time_of_day(time).expect("time");
    day + tod + offset_h * 3_600_000
}

fn quotes(file: &str, offset_h: i64) -> Vec<(i64, f64)> {
    let path = common::datasets_dir().join("stocks/tick").join(file);
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((time_ms(f[0], f[1], offset_h), f[2].parse().ok()?))
        })
        .collect()
}

/// Checks the estimate against the exact Pearson correlation of the two committed windows.
/// Returns the absolute error.
fn check_pair(a: &Dft, b: &Dft) -> f64 {
    let e = a.estimate_pair(b, &PairQuery::Correlation).unwrap();
    let truth = pearson(&a.window_points(), &b.window_points());
    let v = e.as_f64().unwrap();
    assert!(e.lower <= v && v <= e.upper);
    assert!(e.lower <= truth && truth <= e.upper, "{e:?} vs exact {truth}");
    assert_eq!(e.confidence, 1.0);
    // The bound is exactly the Cauchy–Schwarz slack of the dropped energies.
    let slack = (a.dropped_energy() * b.dropped_energy()).sqrt();
    assert!(e.upper - e.lower <= 2.0 * slack + 2.1e-9);
    (v - truth).abs()
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn eurusd_feeds_of_two_brokers_correlate_within_the_bound() {
    // FXCM stamps UTC−05, OANDA UTC: align both on UTC and aggregate per second.
    let fxcm = quotes("forex_fxcm_EURUSD_tick_quote.csv", 5);
    let oanda = quotes("forex_oanda_EURUSD_tick_quote.csv", 0);
    let (mut a, mut b) = (Dft::new(1.0, 500, 2000, 8).unwrap(), Dft::new(1.0, 500, 2000, 8).unwrap());
    let start = fxcm[0].0.max(oanda[0].0);
    let end = fxcm.last().unwrap().0.min(oanda.last().unwrap().0);
    let (mut i, mut j) = (0, 0);
    let mut checked = 0;
    let mut worst = 0.0f64;
    let mut last_check = i64::MIN / 2;
    // Feed both in event-time order, second by second, and compare whenever both windows are
    // full and aligned on the same seconds.
    for sec in (start / 1000)..=(end / 1000) {
        let until = (sec + 1) * 1000;
        while i < fxcm.len() && fxcm[i].0 < until {
            if fxcm[i].0 >= start {
                a.update_at(Datum::Num(fxcm[i].1), fxcm[i].0);
            }
            i += 1;
        }
        while j < oanda.len() && oanda[j].0 < until {
            if oanda[j].0 >= start {
                b.update_at(Datum::Num(oanda[j].1), oanda[j].0);
            }
            j += 1;
        }
        if sec - last_check >= 600 && a.window_len() == 2000 && a.points() == b.points() {
            last_check = sec;
            worst = worst.max(check_pair(&a, &b));
            checked += 1;
        }
    }
    assert!(checked >= 50, "only {checked} aligned windows");
    eprintln!("EURUSD FXCM vs OANDA: {checked} windows, worst |estimate − exact| = {worst:.4}");
}

#[test]
fn synthetic_pairs_from_uncorrelated_to_identical() {
    let base = random_walk(20_000, 50.0, 1.0, 7);
    for (mix, seed) in [(0.0, 1), (0.3, 2), (0.7, 3), (0.95, 4), (1.0, 5)] {
        let noise = random_walk(20_000, 10.0, 1.0, seed);
        let other: Vec<f64> = base.iter().zip(&noise).map(|(x, z)| mix * x + (1.0 - mix) * z).collect();
        let (mut a, mut b) = (Dft::new(1.0, 100, 1000, 16).unwrap(), Dft::new(1.0, 100, 1000, 16).unwrap());
        for (x, y) in base.iter().zip(&other) {
            a.update(Datum::Num(*x));
            b.update(Datum::Num(*y));
            if a.points() % 1000 == 0 && a.window_len() == 1000 {
                check_pair(&a, &b);
            }
        }
        if mix == 1.0 {
            let e = a.estimate_pair(&b, &PairQuery::Correlation).unwrap();
            assert!((e.as_f64().unwrap() - 1.0).abs() < 1e-9);
        }
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn spy_against_its_own_lagged_copy() {
    let p = common::spy_prices();
    let (mut a, mut b) = (Dft::new(1.0, 250, 1000, 8).unwrap(), Dft::new(1.0, 250, 1000, 8).unwrap());
    for i in 100..p.len() {
        a.update(Datum::Num(p[i]));
        b.update(Datum::Num(p[i - 100]));
        if a.points() % 5000 == 0 && a.window_len() == 1000 {
            check_pair(&a, &b);
        }
    }
}

#[test]
fn pair_refusals() {
    let mut a = Dft::new(1.0, 10, 100, 4).unwrap();
    let mut b = Dft::new(1.0, 10, 100, 5).unwrap();
    assert!(matches!(a.estimate_pair(&b, &PairQuery::Correlation), Err(SynopsisError::Incompatible { .. })));
    b = Dft::new(1.0, 10, 100, 4).unwrap();
    for i in 0..100 {
        a.update(Datum::Num(f64::from(i).sin()));
    }
    for i in 0..50 {
        b.update(Datum::Num(f64::from(i).cos()));
    }
    assert!(matches!(a.estimate_pair(&b, &PairQuery::Correlation), Err(SynopsisError::NotYet { .. })));
    assert!(matches!(a.estimate_pair(&b, &PairQuery::Similarity), Err(SynopsisError::UnsupportedQuery { .. })));
    let cpc = saams::cpc::Cpc::new(11).unwrap();
    assert!(matches!(a.estimate_pair(&cpc, &PairQuery::Correlation), Err(SynopsisError::Incompatible { .. })));
}
