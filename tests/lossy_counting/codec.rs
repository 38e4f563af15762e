use crate::common;
use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::registry::decode;
use saams::{Kind, Synopsis};

use super::*;

fn small() -> LossyCounting {
    let mut lc = build(0.1, &zipf_values(60, 20, 9));
    lc.update(Datum::Str("ΑΒΓ"));
    lc
}

#[test]
fn round_trip_preserves_answers() {
    let items = zipf_values(50_000, 10_000, 4);
    let lc = build(0.001, &items);
    let back = decode(&lc.encode()).unwrap();
    assert_eq!(back.encode(), lc.encode());
    for v in items.iter().take(500) {
        let q = Query::Count(v.clone());
        assert_eq!(back.estimate(&q).unwrap(), lc.estimate(&q).unwrap());
    }
    let q = Query::FrequentItems { support: 0.01 };
    assert_eq!(back.estimate(&q).unwrap(), lc.estimate(&q).unwrap());
}

#[test]
fn corrupted_or_truncated_bytes_are_errors() {
    let bytes = small().encode();
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            assert!(decode(&b).is_err(), "flip at {i} accepted");
        }
    }
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len]).is_err(), "truncation at {len} accepted");
    }
}

#[test]
fn payload_corruption_behind_a_valid_checksum_never_panics() {
    let bytes = small().encode();
    let (header, payload) = decode_envelope(&bytes).unwrap();
    for i in 0..payload.len() {
        for x in [0x00u8, 0x01, 0x7f, 0x80, 0xff] {
            let mut p = payload.to_vec();
            p[i] = x;
            let _ = decode(&encode_envelope(Kind::LossyCounting, header.seed, &header.params, &p));
        }
        let _ = decode(&encode_envelope(Kind::LossyCounting, 0, &header.params, &payload[..i]));
    }
    // Specific invalid states are refused.
    let mut lc = LossyCounting::with_epsilon(0.5).unwrap();
    lc.update(Datum::Num(1.0));
    let (h, p) = {
        let b = lc.encode();
        let (h, p) = decode_envelope(&b).unwrap();
        (h, p.to_vec())
    };
    // n = 0 while an item has count 1.
    let mut q = p.clone();
    q[0] = 0;
    assert!(decode(&encode_envelope(Kind::LossyCounting, 0, &h.params, &q)).is_err());
    // wrong seed, wrong parameter count, bad epsilon
    assert!(decode(&encode_envelope(Kind::LossyCounting, 1, &h.params, &p)).is_err());
    assert!(decode(&encode_envelope(Kind::LossyCounting, 0, &[0.5, 0.1], &p)).is_err());
    assert!(decode(&encode_envelope(Kind::LossyCounting, 0, &[1.5], &p)).is_err());
    assert!(decode(&encode_envelope(Kind::LossyCounting, 0, &h.params, &[p.as_slice(), &[0]].concat())).is_err());
}

proptest! {
    #![proptest_config(crate::proptest_config(64))]
    #[test]
    fn round_trip_is_identity(xs in proptest::collection::vec(-50i32..50, 0..400), words in proptest::collection::vec("[a-z]{0,3}", 0..20)) {
        let mut lc = LossyCounting::with_epsilon(0.05).unwrap();
        for x in &xs { lc.update(Datum::Num(f64::from(*x) / 4.0)); }
        for w in &words { lc.update(Datum::Str(w)); }
        let bytes = lc.encode();
        let back = decode(&bytes).unwrap();
        prop_assert_eq!(back.encode(), bytes);
        prop_assert_eq!(back.size_bytes() > 0, true);
    }
}

/// What this build writes for the golden streams is exactly the committed bytes.
#[test]
fn golden_files_match_this_build() {
    common::assert_golden("lossy_counting_v1_empty.bin", &LossyCounting::with_epsilon(0.001).unwrap().encode());
    let mut lc = build(0.01, &zipf_values(1000, 1000, 1000));
    lc.update(Datum::Str("golden"));
    common::assert_golden("lossy_counting_v1_zipf1000.bin", &lc.encode());
}
