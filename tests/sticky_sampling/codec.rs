use crate::common;
use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::registry::decode;
use saams::{Datum, Kind, Synopsis};

use super::*;

fn small() -> StickySampling {
    let mut ss = build((0.2, 0.1, 0.2), 9, &zipf_values(80, 20, 9));
    ss.update(Datum::Str("héllo"));
    ss
}

#[test]
fn round_trip_preserves_answers_and_future_updates() {
    let items = zipf_values(200_000, 100_000, 4);
    let p = (0.01, 0.001, 0.01);
    let mut ss = build(p, 3, &items[..100_000]);
    let mut back = decode(&ss.encode()).unwrap();
    assert_eq!(back.encode(), ss.encode());
    for v in &items[100_000..] {
        ss.update(v.as_datum());
        back.update(v.as_datum());
    }
    assert_eq!(back.encode(), ss.encode(), "a decoded synopsis evolves exactly as the original");
}

#[test]
fn corrupted_or_truncated_bytes_are_errors() {
    let bytes = small().encode();
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x10;
        assert!(decode(&b).is_err(), "flip at {i} accepted");
    }
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len]).is_err(), "truncation at {len} accepted");
    }
}

#[test]
fn payload_corruption_behind_a_valid_checksum_never_panics() {
    let bytes = small().encode();
    let (h, p) = decode_envelope(&bytes).unwrap();
    for i in 0..p.len() {
        for x in [0x00u8, 0x01, 0x7f, 0x80, 0xff] {
            let mut q = p.to_vec();
            q[i] = x;
            let _ = decode(&encode_envelope(Kind::StickySampling, h.seed, &h.params, &q));
        }
        assert!(decode(&encode_envelope(Kind::StickySampling, h.seed, &h.params, &p[..i])).is_err());
    }
    assert!(decode(&encode_envelope(Kind::StickySampling, h.seed, &[0.2, 0.1], p)).is_err());
    assert!(decode(&encode_envelope(Kind::StickySampling, h.seed, &[0.1, 0.2, 0.2], p)).is_err());
    // n smaller than the counts
    let mut q = p.to_vec();
    q[..8].copy_from_slice(&1u64.to_le_bytes());
    assert!(decode(&encode_envelope(Kind::StickySampling, h.seed, &h.params, &q)).is_err());
}

proptest! {
    #![proptest_config(crate::proptest_config(48))]
    #[test]
    fn round_trip_is_identity(xs in proptest::collection::vec(0u16..500, 0..3000), seed in any::<u64>()) {
        let items: Vec<Value> = xs.iter().map(|x| Value::Num(f64::from(*x))).collect();
        let ss = build((0.1, 0.02, 0.1), seed, &items);
        let bytes = ss.encode();
        prop_assert_eq!(decode(&bytes).unwrap().encode(), bytes);
    }
}

/// What this build writes for the golden streams is exactly the committed bytes.
#[test]
fn golden_files_match_this_build() {
    let empty = StickySampling::with_accuracy(0.001, 1e-4, 0.001, saams::sticky_sampling::DEFAULT_SEED).unwrap();
    common::assert_golden("sticky_sampling_v1_empty.bin", &empty.encode());
    let mut ss = build((0.05, 0.01, 0.05), 1000, &zipf_values(1000, 1000, 1000));
    ss.update(Datum::Str("golden"));
    common::assert_golden("sticky_sampling_v1_zipf1000.bin", &ss.encode());
}
