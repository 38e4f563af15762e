use proptest::prelude::*;
use saams::bloom_filter::BloomFilter;
use saams::codec::{decode_envelope, encode_envelope};
use saams::registry::decode;
use saams::{Kind, Synopsis, SynopsisError};

use crate::{common, filter_of};

fn roundtrip(f: &BloomFilter) -> BloomFilter {
    let bytes = f.encode();
    let back = decode(&bytes).unwrap();
    assert_eq!(back.encode(), bytes);
    back.as_any().downcast_ref::<BloomFilter>().unwrap().clone()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn encode_decode_round_trips(keys in prop::collection::vec(any::<u64>(), 0..2000), n in 1u64..5000, seed in any::<u64>()) {
        let f = filter_of(&keys, n, 0.02, seed);
        prop_assert_eq!(roundtrip(&f), f);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any payload inside a valid envelope decodes to a working synopsis or is refused; it
    /// never panics, and what decodes re-encodes to the same bytes.
    #[test]
    fn arbitrary_payloads_never_panic(payload in prop::collection::vec(any::<u8>(), 0..200), seed in any::<u64>()) {
        let bytes = encode_envelope(Kind::BloomFilter, seed, &[20.0, 0.1], &payload);
        if let Ok(s) = decode(&bytes) {
            prop_assert_eq!(s.encode(), bytes);
            let _ = s.estimate(&saams::Query::Contains(saams::Value::Num(1.0)));
            let mut twice = s.clone();
            twice.merge(s.as_ref()).unwrap();
        }
    }
}

fn small() -> BloomFilter {
    filter_of(&common::zipf_stream(20, 50, 1.1, 1), 20, 0.1, 5)
}

#[test]
fn every_flipped_byte_and_every_truncation_is_an_error() {
    let bytes = small().encode();
    crate::common::assert_every_flip_and_truncation_fails(&bytes);
}

fn rewrap(params: &[f64], payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    decode(&encode_envelope(Kind::BloomFilter, 5, params, payload))
}

#[test]
fn inconsistent_payloads_are_refused() {
    let f = small();
    let bytes = f.encode();
    let (header, payload) = decode_envelope(&bytes).unwrap();
    assert!(rewrap(&header.params, payload).is_ok());
    for k in [0u8, 25, 255] {
        let mut p = payload.to_vec();
        p[0] = k;
        assert!(matches!(rewrap(&header.params, &p), Err(SynopsisError::Codec(_))), "k {k}");
    }
    let mut p = payload.to_vec();
    p[1] = 0; // zero blocks
    assert!(rewrap(&header.params, &p).is_err());
    let mut p = payload.to_vec();
    p[1] = 100; // more blocks than bytes
    assert!(rewrap(&header.params, &p).is_err());
    let mut p = payload.to_vec();
    p.push(0);
    assert!(rewrap(&header.params, &p).is_err());
    assert!(rewrap(&header.params, &payload[..payload.len() - 1]).is_err());
    for params in [vec![20.0], vec![0.0, 0.1], vec![2.5, 0.1], vec![20.0, 1.0], vec![20.0, f64::NAN]] {
        assert!(rewrap(&params, payload).is_err(), "{params:?}");
    }
}

fn golden_cases() -> Vec<(&'static str, BloomFilter)> {
    let zipf = common::zipf_stream(1000, 10_000, 1.1, 42);
    let mut full = BloomFilter::with_capacity(400, 0.01).unwrap();
    for k in &zipf {
        full.update(saams::Datum::Num(*k as f64));
    }
    vec![("empty", BloomFilter::with_capacity(100, 0.01).unwrap()), ("zipf1000", full)]
}

#[test]
fn golden_files_match_this_build() {
    for (case, f) in golden_cases() {
        common::assert_golden(&format!("bloom_filter_v1_{case}.bin"), &f.encode());
        assert_eq!(roundtrip(&f), f);
    }
}
