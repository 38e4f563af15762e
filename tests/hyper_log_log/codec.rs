use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::hyper_log_log::HyperLogLog;
use saams::registry::decode;
use saams::{Kind, Synopsis, SynopsisError};

use crate::{common, sketch_of};

fn roundtrip(h: &HyperLogLog) -> HyperLogLog {
    let bytes = h.encode();
    let back = decode(&bytes).unwrap();
    assert_eq!(back.encode(), bytes);
    back.as_any().downcast_ref::<HyperLogLog>().unwrap().clone()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn encode_decode_round_trips(keys in prop::collection::vec(any::<u64>(), 0..3000), seed in any::<u64>()) {
        let h = sketch_of(&keys, 0.05, seed);
        prop_assert_eq!(roundtrip(&h), h);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any payload inside a valid envelope decodes to a working synopsis or is refused; it
    /// never panics, and what decodes re-encodes to the same bytes.
    #[test]
    fn arbitrary_payloads_never_panic(payload in prop::collection::vec(any::<u8>(), 0..200), seed in any::<u64>()) {
        let bytes = encode_envelope(Kind::HyperLogLog, seed, &[0.26], &payload);
        if let Ok(s) = decode(&bytes) {
            prop_assert_eq!(s.encode(), bytes);
            let _ = s.estimate(&saams::Query::Distinct);
            let mut twice = s.clone();
            twice.merge(s.as_ref()).unwrap();
        }
    }
}

fn small() -> HyperLogLog {
    sketch_of(&common::zipf_stream(100, 50, 1.1, 1), 0.26, 5)
}

#[test]
fn every_flipped_byte_and_every_truncation_is_an_error() {
    let bytes = small().encode();
    crate::common::assert_every_flip_and_truncation_fails(&bytes);
}

fn rewrap(params: &[f64], payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    decode(&encode_envelope(Kind::HyperLogLog, 5, params, payload))
}

#[test]
fn inconsistent_payloads_are_refused() {
    let h = small();
    let bytes = h.encode();
    let (header, payload) = decode_envelope(&bytes).unwrap();
    assert!(rewrap(&header.params, payload).is_ok());
    let mut p = payload.to_vec();
    p[3] = h.max_register() + 1;
    assert!(matches!(rewrap(&header.params, &p), Err(SynopsisError::Codec(_))));
    let mut p = payload.to_vec();
    p.push(0);
    assert!(rewrap(&header.params, &p).is_err());
    assert!(rewrap(&header.params, &payload[..payload.len() - 1]).is_err());
    assert!(rewrap(&[], payload).is_err());
    assert!(rewrap(&[0.26, 1.0], payload).is_err());
    assert!(rewrap(&[0.1], payload).is_err());
    assert!(rewrap(&[0.0001], payload).is_err());
    assert!(rewrap(&[f64::NAN], payload).is_err());
}

fn golden_cases() -> Vec<(&'static str, HyperLogLog)> {
    let zipf = common::zipf_stream(1000, 10_000, 1.1, 42);
    let mut seeded = HyperLogLog::with_rsd(0.1).unwrap();
    for k in &zipf {
        seeded.update(saams::Datum::Num(*k as f64));
    }
    vec![("empty", HyperLogLog::with_rsd(0.1).unwrap()), ("zipf1000", seeded)]
}

#[test]
fn golden_files_match_this_build() {
    for (case, h) in golden_cases() {
        common::assert_golden(&format!("hyper_log_log_v1_{case}.bin"), &h.encode());
        assert_eq!(roundtrip(&h), h);
    }
}
