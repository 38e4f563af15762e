use crate::common;
use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::registry::decode;
use saams::{Kind, Synopsis};

use super::*;

#[test]
fn round_trip_preserves_answers() {
    let xs = zipf(100_123, 4);
    let gk = build(0.01, &xs);
    let back = decode(&gk.encode()).unwrap();
    assert_eq!(back.encode(), gk.encode());
    check_ranks(back.as_ref(), &xs, 0.01 * xs.len() as f64);
    for q in [0.0, 0.3, 0.999] {
        assert_eq!(back.estimate(&Query::Quantile(q)).unwrap(), gk.estimate(&Query::Quantile(q)).unwrap());
    }
}

#[test]
fn corrupted_or_truncated_bytes_are_errors() {
    let bytes = build(0.1, &zipf(300, 5)).encode();
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x04;
        assert!(decode(&b).is_err(), "flip at {i} accepted");
    }
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len]).is_err(), "truncation at {len} accepted");
    }
}

#[test]
fn payload_corruption_behind_a_valid_checksum_never_panics_and_breaks_no_invariant() {
    let xs = zipf(300, 6);
    let bytes = build(0.1, &xs).encode();
    let (h, p) = decode_envelope(&bytes).unwrap();
    for i in 0..p.len() {
        for x in [0x00u8, 0x01, 0x7f, 0x80, 0xff] {
            let mut q = p.to_vec();
            q[i] = x;
            if let Ok(s) = decode(&encode_envelope(Kind::GkQuantiles, 0, &h.params, &q)) {
                // Whatever decodes must still answer without panicking.
                let _ = s.estimate(&Query::Quantile(0.5));
                let _ = s.estimate(&Query::Rank(3.0));
            }
        }
        assert!(decode(&encode_envelope(Kind::GkQuantiles, 0, &h.params, &p[..i])).is_err());
    }
    assert!(decode(&encode_envelope(Kind::GkQuantiles, 3, &h.params, p)).is_err());
    assert!(decode(&encode_envelope(Kind::GkQuantiles, 0, &[0.1, 0.2], p)).is_err());
    assert!(decode(&encode_envelope(Kind::GkQuantiles, 0, &[2.0], p)).is_err());
    // Claiming a tighter epsilon than the summary satisfies is refused (gap condition).
    let big = build(0.1, &zipf(5000, 6)).encode();
    let (_, bp) = decode_envelope(&big).unwrap();
    assert!(decode(&encode_envelope(Kind::GkQuantiles, 0, &[0.001], bp)).is_err());
}

proptest! {
    #![proptest_config(crate::proptest_config(64))]
    #[test]
    fn round_trip_is_identity(xs in proptest::collection::vec(proptest::num::f64::ANY, 0..1500)) {
        let gk = build(0.05, &xs);
        let bytes = gk.encode();
        let back = decode(&bytes).unwrap();
        prop_assert_eq!(back.encode(), bytes);
    }
}

/// What this build writes for the golden streams is exactly the committed bytes.
#[test]
fn golden_files_match_this_build() {
    for (file, bytes) in [
        ("gk_quantiles_v1_empty.bin", GkQuantiles::with_epsilon(0.01).unwrap().encode()),
        ("gk_quantiles_v1_zipf1000.bin", build(0.01, &zipf(1000, 1000)).encode()),
    ] {
        common::assert_golden(file, &bytes);
    }
}
