use proptest::prelude::*;
use saams::ams::Ams;
use saams::codec::{decode_envelope, encode_envelope};
use saams::registry::decode;
use saams::{Kind, Synopsis, SynopsisError};

use crate::{common, sketch_of};

fn roundtrip(a: &Ams) -> Ams {
    let bytes = a.encode();
    let back = decode(&bytes).unwrap();
    assert_eq!(back.encode(), bytes);
    back.as_any().downcast_ref::<Ams>().unwrap().clone()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn encode_decode_round_trips(keys in prop::collection::vec(0u64..300, 0..2000), seed in any::<u64>()) {
        let a = sketch_of(&keys, 3, 50, seed);
        prop_assert_eq!(roundtrip(&a), a);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any payload inside a valid envelope decodes to a working synopsis or is refused; it
    /// never panics, and what decodes re-encodes to the same bytes.
    #[test]
    fn arbitrary_payloads_never_panic(payload in prop::collection::vec(any::<u8>(), 0..200), seed in any::<u64>()) {
        let bytes = encode_envelope(Kind::Ams, seed, &[2.0, 16.0], &payload);
        if let Ok(s) = decode(&bytes) {
            prop_assert_eq!(s.encode(), bytes);
            let _ = s.estimate(&saams::Query::F2);
            let mut twice = s.clone();
            twice.merge(s.as_ref()).unwrap();
        }
    }
}

fn small() -> Ams {
    sketch_of(&common::zipf_stream(100, 50, 1.1, 1), 2, 16, 5)
}

#[test]
fn every_flipped_byte_and_every_truncation_is_an_error() {
    let bytes = small().encode();
    crate::common::assert_every_flip_and_truncation_fails(&bytes);
}

fn rewrap(params: &[f64], payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    decode(&encode_envelope(Kind::Ams, 5, params, payload))
}

#[test]
fn inconsistent_payloads_are_refused() {
    let a = small();
    let bytes = a.encode();
    let (header, payload) = decode_envelope(&bytes).unwrap();
    assert!(rewrap(&header.params, payload).is_ok());
    // Total changed by one: the parity of every row breaks.
    let mut p = payload.to_vec();
    p[0] ^= 1;
    assert!(matches!(rewrap(&header.params, &p), Err(SynopsisError::Codec(_))));
    // Hand-made payloads for depth 2 × 16 buckets: N, then 32 zigzag counters.
    let made = |total: u8, first: u8| {
        let mut p = vec![total, first];
        p.extend(std::iter::repeat_n(0u8, 15));
        p.extend([first]);
        p.extend(std::iter::repeat_n(0u8, 15));
        rewrap(&[2.0, 16.0], &p)
    };
    assert!(made(3, 6).is_ok()); // N = 3, one counter +3 per row
    assert!(made(1, 6).is_err()); // |+3| cannot come from one item
    assert!(made(2, 2).is_err()); // +1 from two items: wrong parity
    // The same N = 3 written as an overlong varint ([0x83, 0x00]) would decode to the same
    // sketch and re-encode to other bytes: refused, so every sketch has one encoding.
    let mut p = vec![0x83, 0x00, 6];
    p.extend(std::iter::repeat_n(0u8, 15));
    p.extend([6]);
    p.extend(std::iter::repeat_n(0u8, 15));
    let overlong = rewrap(&[2.0, 16.0], &p).unwrap_err();
    assert!(overlong.to_string().contains("shortest form"), "{overlong}");
    let mut p = payload.to_vec();
    p.push(0);
    assert!(rewrap(&header.params, &p).is_err());
    assert!(rewrap(&header.params, &payload[..payload.len() - 1]).is_err());
    for params in [vec![2.0], vec![0.0, 16.0], vec![2.5, 16.0], vec![2.0, 1.0], vec![2.0, 17.0], vec![100.0, 16.0]] {
        assert!(rewrap(&params, payload).is_err(), "{params:?}");
    }
}

fn golden_cases() -> Vec<(&'static str, Ams)> {
    vec![
        ("empty", Ams::new(3, 64, saams::ams::DEFAULT_SEED).unwrap()),
        ("zipf1000", sketch_of(&common::zipf_stream(1000, 10_000, 1.1, 42), 3, 64, saams::ams::DEFAULT_SEED)),
    ]
}

#[test]
fn golden_files_match_this_build() {
    for (case, a) in golden_cases() {
        common::assert_golden(&format!("ams_v1_{case}.bin"), &a.encode());
        assert_eq!(roundtrip(&a), a);
    }
}
