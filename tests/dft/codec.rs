use crate::common;
use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::dft::Dft;
use saams::{Datum, Query, Synopsis, registry};

use crate::random_walk;

fn walk_dft(n: usize) -> Dft {
    let mut s = Dft::new(1.0, 8, 32, 3).unwrap();
    for (i, x) in random_walk(n, 5.0, 0.2, 9).into_iter().enumerate() {
        s.update_at(Datum::Num(x), i as i64 * 600);
    }
    s
}

#[test]
fn round_trip_keeps_state_and_bytes() {
    for s in [Dft::new(1.0, 500, 2000, 8).unwrap(), walk_dft(5), walk_dft(100), walk_dft(1000)] {
        let bytes = s.encode();
        let d = registry::decode(&bytes).unwrap();
        assert_eq!(d.encode(), bytes);
        assert_eq!(d.estimate(&Query::Total).unwrap(), s.estimate(&Query::Total).unwrap());
        if let (Ok(x), Ok(y)) = (d.estimate(&Query::Vector), s.estimate(&Query::Vector)) {
            let (saams::EstimateValue::Vector(x), saams::EstimateValue::Vector(y)) = (x.value, y.value) else {
                panic!()
            };
            assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 1e-9));
        }
    }
}

#[test]
fn corrupt_and_truncated_input_is_an_error() {
    let bytes = walk_dft(60).encode();
    crate::common::assert_every_flip_and_truncation_fails(&bytes);
    let (h, payload) = decode_envelope(&bytes).unwrap();
    for i in 0..payload.len() {
        assert!(registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &payload[..i])).is_err(), "truncate {i}");
        for mask in [0x01u8, 0x80, 0xff] {
            let mut p = payload.to_vec();
            p[i] ^= mask;
            let _ = registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &p));
        }
    }
    for params in
        [vec![1.0, 8.0, 32.0], vec![1.0, 8.0, 30.0, 3.0], vec![1.0, 8.0, 32.0, 20.0], vec![1.0, 8.0, 32.0, 3.5]]
    {
        assert!(registry::decode(&encode_envelope(h.kind, 0, &params, payload)).is_err(), "{params:?}");
    }
    // Keeping a window of another size than the parameters imply is refused.
    let long = walk_dft(300).encode();
    let (h, payload) = decode_envelope(&long).unwrap();
    assert!(registry::decode(&encode_envelope(h.kind, 0, &[1.0, 8.0, 48.0, 3.0], payload)).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn codec_round_trip(values in proptest::collection::vec(-1e6f64..1e6, 0..200), dt in 1i64..3000) {
        let mut s = Dft::new(1.0, 4, 16, 2).unwrap();
        for (i, v) in values.iter().enumerate() {
            s.update_at(Datum::Num(*v), i as i64 * dt);
        }
        let bytes = s.encode();
        let d = registry::decode(&bytes).unwrap();
        prop_assert_eq!(d.encode(), bytes);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = registry::decode(&encode_envelope(saams::Kind::Dft, 0, &[1.0, 4.0, 16.0, 2.0], &bytes));
    }
}

/// What this build writes for the golden streams is exactly the committed bytes.
#[test]
fn golden_files_match_this_build() {
    for (file, bytes) in [
        ("dft_v1_empty.bin", Dft::new(1.0, 500, 2000, 8).unwrap().encode()),
        ("dft_v1_walk100.bin", walk_dft(100).encode()),
    ] {
        common::assert_golden(file, &bytes);
    }
}
