use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::kll::Kll;
use saams::{Datum, Query, Synopsis, registry};

use crate::common;

fn zipf_kll(n: usize, k: u64) -> Kll {
    let mut s = Kll::new(k).unwrap();
    for x in common::zipf_stream(n, 1_000_000, 1.1, 7) {
        s.update(Datum::Num(x as f64));
    }
    s
}

#[test]
fn round_trip_keeps_answers_and_bytes() {
    for s in [Kll::new(200).unwrap(), zipf_kll(1, 200), zipf_kll(100_000, 200)] {
        let bytes = s.encode();
        let d = registry::decode(&bytes).unwrap();
        assert_eq!(d.encode(), bytes);
        for q in [Query::Total, Query::Quantile(0.5), Query::Rank(10.0)] {
            assert_eq!(d.estimate(&q).ok(), s.estimate(&q).ok());
        }
    }
}

/// Every corruption of a small encoding is an error, never a panic: flipped envelope bytes
/// (caught by the checksum) and flipped or truncated payload bytes re-wrapped with a valid
/// checksum (so the library's own checks are exercised).
#[test]
fn corrupt_and_truncated_input_is_an_error() {
    let s = zipf_kll(2_000, 8);
    let bytes = s.encode();
    crate::common::assert_every_flip_and_truncation_fails(&bytes);
    let (h, payload) = decode_envelope(&bytes).unwrap();
    let mut accepted = 0;
    for i in 0..payload.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut p = payload.to_vec();
            p[i] ^= mask;
            if registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &p)).is_ok() {
                accepted += 1; // a flipped item value is still a valid sketch
            }
        }
        assert!(registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &payload[..i])).is_err(), "truncate {i}");
    }
    assert!(accepted < 3 * payload.len());
    assert!(registry::decode(&encode_envelope(h.kind, h.seed, &[100.0], payload)).is_err(), "k mismatch");
    assert!(registry::decode(&encode_envelope(h.kind, 5, &h.params, payload)).is_err(), "seed");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn codec_round_trip(values in proptest::collection::vec(-1e9f64..1e9, 0..2000), k in 8u64..300) {
        let mut s = Kll::new(k).unwrap();
        for v in &values {
            s.update(Datum::Num(*v));
        }
        let bytes = s.encode();
        let d = registry::decode(&bytes).unwrap();
        prop_assert_eq!(d.encode(), bytes);
        prop_assert_eq!(d.estimate(&Query::Total).unwrap(), s.estimate(&Query::Total).unwrap());
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = registry::decode(&encode_envelope(saams::Kind::Kll, 0, &[200.0], &bytes));
    }
}

/// What this build writes is exactly the committed bytes. DataSketches' KLL draws its compaction
/// coin from an unseeded generator, so only sketches below their first compaction are byte-stable:
/// the empty one and 150 values at k = 200 (`kll_v1_zipf1000.bin`, compacted, is checked by the
/// round trip of `tests/golden.rs` only).
#[test]
fn golden_files_match_this_build() {
    common::assert_golden("kll_v1_empty.bin", &Kll::new(200).unwrap().encode());
    let below = || {
        let mut s = Kll::new(200).unwrap();
        for k in common::zipf_stream(150, 1000, 1.1, 11) {
            s.update(Datum::Num(k as f64));
        }
        s.encode()
    };
    let bytes = below();
    assert_eq!(bytes, below(), "no compaction coin was drawn");
    common::assert_golden("kll_v1_below_compaction.bin", &bytes);
}
