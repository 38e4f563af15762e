use saams::hash::SplitMix64;
use saams::lsh::Lsh;
use saams::{Datum, EstimateValue, Kind, Query, Synopsis, SynopsisError};

use crate::fed;

fn random(n: usize, seed: u64) -> Vec<f64> {
    let mut r = SplitMix64::new(seed);
    (0..n).map(|_| r.next_gaussian()).collect()
}

#[test]
fn signature_is_a_function_of_seed_and_window_only() {
    let v = random(150, 1);
    let a = fed(&v, 100, 500, 20, 7);
    let b = fed(&v[50..], 100, 500, 20, 7); // same last 100 values
    assert_eq!(a.signature().unwrap(), b.signature().unwrap());
    // Through the registry (another "worker") and through bytes (another process).
    let mut c = saams::registry::construct(9, &[100.into(), 500.into(), 20.into(), 7.into()]).unwrap();
    v.iter().for_each(|x| c.update(Datum::Num(*x)));
    let d = saams::registry::decode(&c.encode()).unwrap();
    for s in [&c, &d] {
        assert_eq!(s.estimate(&Query::Vector).unwrap(), a.estimate(&Query::Vector).unwrap());
    }
    // Another seed draws other hyperplanes: about half of the bits change.
    let other = fed(&v, 100, 500, 20, 8);
    let diff: u32 =
        a.signature().unwrap().iter().zip(other.signature().unwrap()).map(|(x, y)| (x ^ y).count_ones()).sum();
    assert!((150..350).contains(&diff), "{diff}");
    // The default seed is fixed.
    let e = saams::registry::construct(9, &[100.into(), 500.into(), 20.into()]).unwrap();
    assert_eq!(saams::codec::decode_envelope(&e.encode()).unwrap().0.seed, saams::lsh::DEFAULT_SEED);
}

#[test]
fn signature_bits_are_signs_of_projections() {
    // With one hyperplane per bit, negating the centered window flips every bit, and shifting
    // or scaling it flips none.
    let v = random(64, 3);
    let neg: Vec<f64> = v.iter().map(|x| -x).collect();
    let affine: Vec<f64> = v.iter().map(|x| 4.0 * x + 100.0).collect();
    let (a, n, f) = (fed(&v, 64, 128, 8, 1), fed(&neg, 64, 128, 8, 1), fed(&affine, 64, 128, 8, 1));
    let (sa, sn, sf) = (a.signature().unwrap(), n.signature().unwrap(), f.signature().unwrap());
    assert_eq!(sa, sf);
    assert!(sa.iter().zip(&sn).all(|(x, y)| x ^ y == u64::MAX));
    let EstimateValue::Vector(bits) = a.estimate(&Query::Vector).unwrap().value else { panic!() };
    assert_eq!(bits.len(), 128);
    assert!(bits.iter().all(|b| *b == 0.0 || *b == 1.0));
    assert_eq!(bits.iter().sum::<f64>() as u32, sa.iter().map(|w| w.count_ones()).sum::<u32>());
}

#[test]
fn queries_and_errors() {
    let mut s = Lsh::new(10, 32, 4, 1).unwrap();
    assert!(matches!(s.estimate(&Query::Vector), Err(SynopsisError::NotYet { .. })));
    assert!(matches!(s.band_keys(), Err(SynopsisError::NotYet { .. })));
    assert!(matches!(s.estimate(&Query::Distinct), Err(SynopsisError::UnsupportedQuery { .. })));
    s.update(Datum::Str("ignored"));
    s.update(Datum::Num(f64::INFINITY));
    assert!(s.is_empty());
    for i in 0..25 {
        s.update(Datum::Num(f64::from(i)));
    }
    assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(25.0));
    assert_eq!(s.window_values(), (15..25).map(f64::from).collect::<Vec<_>>());
}

#[test]
fn params_from_the_registry() {
    use serde_json::json;
    let s = saams::registry::construct(9, &[json!(100), json!(500), json!(20)]).unwrap();
    assert_eq!(s.kind(), Kind::Lsh);
    for bad in [
        vec![json!(100), json!(500)],
        vec![json!(1), json!(500), json!(20)],
        vec![json!(100), json!(0), json!(20)],
        vec![json!(100), json!(500), json!(0)],
        vec![json!(100), json!(500), json!(501)],
        vec![json!(100_000), json!(100_000), json!(20)],
        vec![json!(5_000), json!(1_000), json!(20)], // a 5 M-entry hyperplane matrix
        vec![json!(100), json!(500), json!(20), json!(-3)],
    ] {
        assert!(matches!(saams::registry::construct(9, &bad), Err(SynopsisError::BadParameter { .. })), "{bad:?}");
    }
}
