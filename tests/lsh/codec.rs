use crate::common;
use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::lsh::Lsh;
use saams::{Query, Synopsis, registry};

use crate::fed;

fn sample(n: usize) -> Lsh {
    let v: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin() * 10.0 + i as f64 * 0.01).collect();
    fed(&v, 16, 64, 8, 5)
}

#[test]
fn round_trip_keeps_window_and_signature() {
    for s in [Lsh::new(100, 500, 20, 12345).unwrap(), sample(3), sample(16), sample(40)] {
        let bytes = s.encode();
        let d = registry::decode(&bytes).unwrap();
        assert_eq!(d.encode(), bytes);
        assert_eq!(d.estimate(&Query::Vector).ok(), s.estimate(&Query::Vector).ok());
        assert_eq!(d.estimate(&Query::Total).unwrap(), s.estimate(&Query::Total).unwrap());
    }
}

#[test]
fn corrupt_and_truncated_input_is_an_error() {
    let bytes = sample(40).encode();
    crate::common::assert_every_flip_and_truncation_fails(&bytes);
    let (h, payload) = decode_envelope(&bytes).unwrap();
    for i in 0..payload.len() {
        assert!(registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &payload[..i])).is_err(), "truncate {i}");
    }
    for params in
        [vec![16.0, 64.0], vec![17.0, 64.0, 8.0], vec![16.0, 64.0, 65.0], vec![16.0, 0.5, 8.0], vec![1e9, 1e9, 8.0]]
    {
        assert!(registry::decode(&encode_envelope(h.kind, h.seed, &params, payload)).is_err(), "{params:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn codec_round_trip(values in proptest::collection::vec(-1e9f64..1e9, 0..100), seed in any::<u64>()) {
        let s = fed(&values, 32, 40, 5, seed);
        let bytes = s.encode();
        let d = registry::decode(&bytes).unwrap();
        prop_assert_eq!(d.encode(), bytes);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = registry::decode(&encode_envelope(saams::Kind::Lsh, 1, &[16.0, 64.0, 8.0], &bytes));
    }
}

/// What this build writes for the golden streams is exactly the committed bytes.
#[test]
fn golden_files_match_this_build() {
    for (file, bytes) in [
        ("lsh_v1_empty.bin", Lsh::new(100, 500, 20, 12345).unwrap().encode()),
        ("lsh_v1_sine40.bin", sample(40).encode()),
    ] {
        common::assert_golden(file, &bytes);
    }
}
