use saams::dft::Dft;
use saams::{Datum, EstimateValue, Query, Synopsis, SynopsisError};

use crate::{common, naive, random_walk};

fn assert_matches_naive(s: &Dft, raw: &[f64], basic: usize, window: usize, c: usize) {
    let committed = raw.len() - raw.len() % basic;
    let m = committed.min(window);
    let expect_window = &raw[committed - m..committed];
    assert_eq!(s.window_points(), expect_window);
    if m == 0 {
        return;
    }
    let got = s.coefficients();
    let want = naive(expect_window, c);
    for (g, w) in got.iter().zip(&want) {
        // Normalized windows have unit energy: 1e-9 absolute is 1e-9 relative to the window.
        assert!((g.0 - w.0).abs() <= 1e-9 && (g.1 - w.1).abs() <= 1e-9, "n={}: {g:?} vs {w:?}", raw.len());
    }
}

#[test]
fn coefficients_equal_a_naive_dft_while_filling_and_sliding() {
    let (b, w, c) = (50, 200, 8);
    let raw = random_walk(3_000, 100.0, 0.5, 1);
    let mut s = Dft::new(1.0, b, w, c).unwrap();
    for (i, x) in raw.iter().enumerate() {
        s.update(Datum::Num(*x));
        if i % 37 == 0 || (i + 1) % b == 0 {
            assert_matches_naive(&s, &raw[..=i], b, w, c);
        }
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn reference_parameters_on_spy_prices_stay_exact_after_many_slides() {
    // 250 k ticks = 125 window turnovers with periodic exact recomputation in between.
    let (b, w, c) = (500, 2000, 8);
    let raw = common::spy_prices();
    let mut s = Dft::new(1.0, b, w, c).unwrap();
    for (i, x) in raw.iter().enumerate() {
        s.update(Datum::Num(*x));
        if (i + 1) % 24_999 == 0 {
            assert_matches_naive(&s, &raw[..=i], b, w, c);
        }
    }
    assert_matches_naive(&s, &raw, b, w, c);
    let e = s.estimate(&Query::Vector).unwrap();
    let EstimateValue::Vector(v) = &e.value else { panic!() };
    assert_eq!(v.len(), 2 * c);
    assert!((0.0..=1.0).contains(&e.upper));
    assert!((e.upper - s.dropped_energy()).abs() < 1e-15);
}

#[test]
fn intervals_take_the_last_value_and_carry_gaps_forward() {
    let mut s = Dft::new(1.0, 1, 8, 1).unwrap();
    s.update_at(Datum::Num(1.0), 0);
    s.update_at(Datum::Num(2.0), 500); // same second: last value wins
    s.update_at(Datum::Num(5.0), 3_200); // closes second 0, seconds 1 and 2 repeat it
    s.update_at(Datum::Num(6.0), 3_900);
    s.update_at(Datum::Num(7.0), 4_000); // closes second 3
    s.update_at(Datum::Str("ignored"), 4_100);
    s.update_at(Datum::Num(f64::NAN), 9_000);
    assert_eq!(s.window_points(), vec![2.0, 2.0, 2.0, 6.0]);
    assert_eq!(s.points(), 4);
    // A huge gap fills the whole window with the carried value.
    s.update_at(Datum::Num(8.0), 1_000_000_000);
    assert_eq!(s.points(), 4 + 1 + (1_000_000 - 4 - 1));
    assert_eq!(s.window_points(), vec![7.0; 8]);
}

#[test]
fn queries_and_errors() {
    let mut s = Dft::new(1.0, 4, 16, 2).unwrap();
    assert!(matches!(s.estimate(&Query::Vector), Err(SynopsisError::NotYet { .. })));
    assert!(matches!(s.estimate(&Query::Distinct), Err(SynopsisError::UnsupportedQuery { .. })));
    for _ in 0..4 {
        s.update(Datum::Num(3.0));
    }
    // A constant window: zero coefficients, everything "dropped", correlation undefined.
    let e = s.estimate(&Query::Vector).unwrap();
    assert_eq!(e.value, EstimateValue::Vector(vec![0.0; 4]));
    assert_eq!(e.upper, 1.0);
    assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(4.0));
}

#[test]
fn params_from_the_registry() {
    use serde_json::json;
    assert!(saams::registry::construct(4, &[json!(1), json!(500), json!(2000), json!(8)]).is_ok());
    for bad in [
        vec![json!(1), json!(500), json!(2000)],
        vec![json!(0), json!(500), json!(2000), json!(8)],
        vec![json!(1), json!(0), json!(2000), json!(8)],
        vec![json!(1), json!(300), json!(2000), json!(8)],
        vec![json!(1), json!(500), json!(2000), json!(0)],
        vec![json!(1), json!(500), json!(2000), json!(1000)],
        vec![json!(1), json!(500), json!(1e12), json!(8)],
        vec![json!("x"), json!(500), json!(2000), json!(8)],
    ] {
        assert!(matches!(saams::registry::construct(4, &bad), Err(SynopsisError::BadParameter { .. })), "{bad:?}");
    }
}
