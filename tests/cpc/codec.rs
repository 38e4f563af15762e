use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::cpc::Cpc;
use saams::{Datum, Query, Synopsis, registry};

use crate::common;

fn zipf_cpc(n: usize, lg_k: u64) -> Cpc {
    let mut s = Cpc::new(lg_k).unwrap();
    for x in common::zipf_stream(n, 1_000_000, 1.1, 7) {
        s.update(Datum::Num(x as f64));
    }
    s
}

#[test]
fn round_trip_keeps_answers_and_bytes() {
    let mut merged = zipf_cpc(5_000, 11);
    merged.merge(&zipf_cpc(50_000, 11)).unwrap();
    for s in [Cpc::new(11).unwrap(), zipf_cpc(10, 11), zipf_cpc(1_000, 11), zipf_cpc(100_000, 11), merged] {
        let bytes = s.encode();
        let d = registry::decode(&bytes).unwrap();
        assert_eq!(d.encode(), bytes);
        assert_eq!(d.estimate(&Query::Distinct).unwrap(), s.estimate(&Query::Distinct).unwrap());
    }
}

#[test]
fn corrupt_and_truncated_input_is_an_error() {
    for s in [zipf_cpc(30, 6), zipf_cpc(3_000, 6)] {
        let bytes = s.encode();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            assert!(registry::decode(&b).is_err(), "flip at {i}");
            assert!(registry::decode(&bytes[..i]).is_err(), "truncate at {i}");
        }
        let (h, payload) = decode_envelope(&bytes).unwrap();
        for i in 0..payload.len() {
            for mask in [0x01u8, 0x10, 0x80, 0xff] {
                let mut p = payload.to_vec();
                p[i] ^= mask;
                let _ = registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &p));
            }
            assert!(
                registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &payload[..i])).is_err(),
                "truncate {i}"
            );
        }
        assert!(registry::decode(&encode_envelope(h.kind, h.seed, &[7.0], payload)).is_err(), "lgK mismatch");
        assert!(registry::decode(&encode_envelope(h.kind, 1234, &h.params, payload)).is_err(), "seed mismatch");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn codec_round_trip(keys in proptest::collection::vec(any::<u64>(), 0..3000), lg_k in 4u64..12) {
        let mut s = Cpc::new(lg_k).unwrap();
        for k in &keys {
            s.update(Datum::Num(*k as f64));
        }
        let bytes = s.encode();
        let d = registry::decode(&bytes).unwrap();
        prop_assert_eq!(d.encode(), bytes);
        prop_assert_eq!(d.estimate(&Query::Distinct).unwrap(), s.estimate(&Query::Distinct).unwrap());
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = registry::decode(&encode_envelope(saams::Kind::Cpc, 9001, &[11.0], &bytes));
    }
}

/// What this build writes for the golden streams is exactly the committed bytes.
#[test]
fn golden_files_match_this_build() {
    for (file, bytes) in
        [("cpc_v1_empty.bin", Cpc::new(11).unwrap().encode()), ("cpc_v1_zipf1000.bin", zipf_cpc(1000, 8).encode())]
    {
        common::assert_golden(file, &bytes);
    }
}
