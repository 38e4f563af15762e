use saams::bloom_filter::BloomFilter;
use saams::{Datum, EstimateValue, Kind, Query, Synopsis, SynopsisError, Value};

use crate::{common, filter_of};

#[test]
fn geometry_meets_the_rate_with_few_extra_bits() {
    for (n, fpp) in [(150_000u64, 0.01), (1_000_000, 0.01), (10_000, 0.001), (1000, 0.1)] {
        let f = BloomFilter::with_capacity(n, fpp).unwrap();
        let textbook = -(n as f64) * fpp.ln() / std::f64::consts::LN_2.powi(2);
        assert!(f.false_positive_rate() <= fpp);
        // The smallest meeting the rate: one block fewer would not.
        let fewer = saams::bloom_filter::blocked_false_positive_rate(n, f.num_blocks() - 1, f.hashes());
        assert!(fewer > fpp || f.num_blocks() == 1);
        let extra = f.num_bits() as f64 / textbook;
        assert!((1.0..1.2).contains(&extra), "n {n} fpp {fpp}: {extra}x the textbook bits");
    }
    let f = BloomFilter::with_capacity(150_000, 0.01).unwrap();
    assert_eq!(f.num_bits(), f.num_blocks() * 512);
    assert!(f.size_bytes() >= f.num_bits() / 8);
}

#[test]
fn blocked_rate_formula_is_exact_for_one_hash() {
    // With k = 1 the Poisson mixture has a closed form: E[1 − q^c] = 1 − e^(−λ/512) for
    // c ~ Poisson(λ), q = 1 − 1/512. Checks the Poisson summation from sparse to full blocks.
    for (n, blocks) in [(10u64, 1000usize), (1000, 100), (50_000, 1000), (100_000, 100), (1_000_000, 1)] {
        let lambda = n as f64 / blocks as f64;
        let closed = 1.0 - (-lambda / 512.0).exp();
        let summed = saams::bloom_filter::blocked_false_positive_rate(n, blocks, 1);
        assert!((summed / closed - 1.0).abs() < 1e-6, "n {n} blocks {blocks}: {summed} vs {closed}");
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn no_false_negatives() {
    let keys = common::zipf_stream(50_000, 1_000_000, 1.1, 3);
    let f = filter_of(&keys, 20_000, 0.01, 1);
    assert!(keys.iter().all(|k| f.contains(Datum::Num(*k as f64))));
    let mut g = BloomFilter::with_capacity(10, 0.5).unwrap(); // heavily overfilled: still no false negative
    for s in common::ais_mmsi() {
        g.update(Datum::Str(&s));
    }
    assert!(common::ais_mmsi().iter().all(|s| g.contains(Datum::Str(s))));
}

#[test]
fn answers_and_confidences() {
    let mut f = BloomFilter::with_capacity(1000, 0.01).unwrap();
    assert!(!f.contains(Datum::Str("x")));
    f.update(Datum::Str("x"));
    let yes = f.estimate(&Query::Contains(Value::Str("x".into()))).unwrap();
    assert_eq!(yes.value, EstimateValue::Bool(true));
    assert_eq!((yes.lower, yes.upper, yes.confidence), (1.0, 1.0, 0.99));
    let no = f.estimate(&Query::Contains(Value::Str("y".into()))).unwrap();
    assert_eq!(no.value, EstimateValue::Bool(false));
    assert_eq!((no.lower, no.upper, no.confidence), (0.0, 0.0, 1.0));
    for q in [Query::Total, Query::Distinct, Query::Count(Value::Num(1.0))] {
        assert!(matches!(f.estimate(&q), Err(SynopsisError::UnsupportedQuery { kind: Kind::BloomFilter, .. })));
    }
}

#[test]
fn update_batch_equals_single_updates() {
    let keys = common::zipf_stream(5000, 50_000, 1.1, 4);
    let items: Vec<Datum> = keys.iter().map(|k| Datum::Num(*k as f64)).collect();
    let mut b = BloomFilter::with_capacity(3000, 0.01).unwrap();
    b.update_batch(&items);
    assert_eq!(b, filter_of(&keys, 3000, 0.01, saams::bloom_filter::DEFAULT_SEED));
}

#[test]
fn reference_parameters_and_bad_ones() {
    let f = saams::registry::construct(3, serde_json::json!([150000, 0.01]).as_array().unwrap()).unwrap();
    assert_eq!(f.kind(), Kind::BloomFilter);
    let seeded = saams::registry::construct(3, serde_json::json!([150000, "0.01", 9]).as_array().unwrap()).unwrap();
    assert_eq!(seeded.kind(), Kind::BloomFilter);
    for raw in [
        serde_json::json!([150000]),
        serde_json::json!([0, 0.01]),
        serde_json::json!([1.5, 0.01]),
        serde_json::json!([150000, 1.0]),
        serde_json::json!([150000, 0.01, -3]),
        serde_json::json!([150000, 0.01, 1, 2]),
        serde_json::json!([1e15, 0.01]),
    ] {
        let r = saams::registry::construct(3, raw.as_array().unwrap());
        assert!(matches!(r, Err(SynopsisError::BadParameter { kind: Kind::BloomFilter, .. })), "{raw}");
    }
}
