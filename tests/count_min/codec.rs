use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::count_min::CountMin;
use saams::registry::decode;
use saams::{Kind, Synopsis, SynopsisError};

use crate::{common, sketch_of};

fn roundtrip(cm: &CountMin) -> CountMin {
    let bytes = cm.encode();
    let back = decode(&bytes).unwrap();
    assert_eq!(back.encode(), bytes);
    back.as_any().downcast_ref::<CountMin>().unwrap().clone()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn encode_decode_round_trips(keys in prop::collection::vec(0u64..500, 0..2000), seed in any::<u64>()) {
        let cm = sketch_of(&keys, 0.05, 0.9, seed);
        prop_assert_eq!(roundtrip(&cm), cm);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any payload inside a valid envelope decodes to a working synopsis or is refused; it
    /// never panics, and what decodes re-encodes to the same bytes.
    #[test]
    fn arbitrary_payloads_never_panic(payload in prop::collection::vec(any::<u8>(), 0..200), seed in any::<u64>()) {
        let bytes = encode_envelope(Kind::CountMin, seed, &[0.3, 0.9], &payload);
        if let Ok(s) = decode(&bytes) {
            prop_assert_eq!(s.encode(), bytes);
            let _ = s.estimate(&saams::Query::Count(saams::Value::Num(1.0)));
            let mut twice = s.clone();
            twice.merge(s.as_ref()).unwrap();
        }
    }
}

fn small() -> CountMin {
    sketch_of(&common::zipf_stream(100, 50, 1.1, 1), 0.3, 0.9, 5)
}

#[test]
fn every_flipped_byte_and_every_truncation_is_an_error() {
    let bytes = small().encode();
    crate::common::assert_every_flip_and_truncation_fails(&bytes);
}

/// Re-wrap a payload so the envelope (CRC included) is valid and only the payload is wrong.
fn rewrap(params: &[f64], payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    decode(&encode_envelope(Kind::CountMin, 5, params, payload))
}

#[test]
fn inconsistent_payloads_are_refused() {
    let cm = small();
    let bytes = cm.encode();
    let (header, payload) = decode_envelope(&bytes).unwrap();
    assert!(rewrap(&header.params, payload).is_ok());
    // A counter changed: its row no longer sums to N.
    let mut p = payload.to_vec();
    let last = p.len() - 1;
    p[last] = p[last].wrapping_add(1) & 0x7f;
    assert!(matches!(rewrap(&header.params, &p), Err(SynopsisError::Codec(_))));
    // Trailing and missing bytes.
    let mut p = payload.to_vec();
    p.push(0);
    assert!(rewrap(&header.params, &p).is_err());
    assert!(rewrap(&header.params, &payload[..payload.len() - 1]).is_err());
    // Parameters that build no sketch, or a different one.
    assert!(rewrap(&[0.3], payload).is_err());
    assert!(rewrap(&[0.0, 0.9], payload).is_err());
    assert!(rewrap(&[0.3, 1.0], payload).is_err());
    assert!(rewrap(&[0.1, 0.9], payload).is_err());
    assert!(rewrap(&[1e-9, 0.9], payload).is_err());
}

fn golden_cases() -> Vec<(&'static str, CountMin)> {
    vec![
        ("empty", CountMin::with_accuracy(0.05, 0.9, 12345).unwrap()),
        ("zipf1000", sketch_of(&common::zipf_stream(1000, 10_000, 1.1, 42), 0.05, 0.9, 12345)),
    ]
}

/// The committed golden files are what this build writes for the same streams, so neither the
/// byte layout nor the hashing can change unnoticed.
#[test]
fn golden_files_match_this_build() {
    for (case, cm) in golden_cases() {
        common::assert_golden(&format!("count_min_v1_{case}.bin"), &cm.encode());
        assert_eq!(roundtrip(&cm), cm);
    }
}
