use crate::common;
use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::registry::decode;
use saams::{Kind, Synopsis};

use super::*;

#[test]
fn round_trip_preserves_answers_and_future_updates() {
    let xs = zipf(60_000, 6);
    let mut s = build(0.01, 20_000, &xs[..30_000]);
    let mut back = decode(&s.encode()).unwrap();
    assert_eq!(back.encode(), s.encode());
    for x in &xs[30_000..] {
        s.insert(*x);
        back.update(saams::Datum::Num(*x));
    }
    assert_eq!(back.encode(), s.encode());
    check_window(back.as_ref(), &xs[40_000..], 200.0);
}

#[test]
fn corrupted_or_truncated_bytes_are_errors() {
    let bytes = build(0.2, 40, &zipf(57, 7)).encode();
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x20;
        assert!(decode(&b).is_err(), "flip at {i} accepted");
    }
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len]).is_err(), "truncation at {len} accepted");
    }
}

#[test]
fn payload_corruption_behind_a_valid_checksum_never_panics() {
    let bytes = build(0.2, 40, &zipf(57, 7)).encode();
    let (h, p) = decode_envelope(&bytes).unwrap();
    for i in 0..p.len() {
        for x in [0x00u8, 0x01, 0x7f, 0x80, 0xff] {
            let mut q = p.to_vec();
            q[i] = x;
            if let Ok(s) = decode(&encode_envelope(Kind::WindowSketchQuantiles, 0, &h.params, &q)) {
                let _ = s.estimate(&Query::Quantile(0.5));
            }
        }
        assert!(decode(&encode_envelope(Kind::WindowSketchQuantiles, 0, &h.params, &p[..i])).is_err());
    }
    for params in [vec![0.2], vec![0.2, 40.5], vec![0.2, 0.0], vec![0.2, 400.0], vec![0.1, 40.0]] {
        assert!(decode(&encode_envelope(Kind::WindowSketchQuantiles, 0, &params, p)).is_err(), "{params:?}");
    }
    assert!(decode(&encode_envelope(Kind::WindowSketchQuantiles, 1, &h.params, p)).is_err());
}

proptest! {
    #![proptest_config(crate::proptest_config(64))]
    #[test]
    fn round_trip_is_identity(xs in proptest::collection::vec(proptest::num::f64::ANY, 0..800), w in 1u64..500) {
        let s = build(0.05, w, &xs);
        let bytes = s.encode();
        prop_assert_eq!(decode(&bytes).unwrap().encode(), bytes);
    }
}

/// What this build writes for the golden streams is exactly the committed bytes.
#[test]
fn golden_files_match_this_build() {
    for (file, bytes) in [
        ("window_sketch_quantiles_v1_empty.bin", WindowSketchQuantiles::with_accuracy(0.01, 40_000).unwrap().encode()),
        ("window_sketch_quantiles_v1_zipf1000.bin", build(0.05, 500, &zipf(1000, 1000)).encode()),
    ] {
        common::assert_golden(file, &bytes);
    }
}
