use proptest::prelude::*;
use saams::codec::{decode_envelope, encode_envelope};
use saams::frequent_items::FrequentItems;
use saams::{Datum, Query, Synopsis, Value, registry};

use crate::common;

fn zipf_fi(n: usize, lg: u64) -> FrequentItems {
    let mut s = FrequentItems::new(lg).unwrap();
    for x in common::zipf_stream(n, 1_000_000, 1.1, 7) {
        s.update(Datum::Num(x as f64));
    }
    s.update(Datum::Str("text item"));
    s
}

#[test]
fn round_trip_keeps_answers() {
    for s in [FrequentItems::new(10).unwrap(), zipf_fi(10, 10), zipf_fi(100_000, 10)] {
        let bytes = s.encode();
        let d = registry::decode(&bytes).unwrap();
        for q in [Query::Total, Query::Count(Value::Num(1.0)), Query::Count(Value::Str("text item".into()))] {
            assert_eq!(d.estimate(&q).ok(), s.estimate(&q).ok());
        }
        // The payload lists items in canonical order, so decoding and re-encoding is exact.
        assert_eq!(d.encode(), bytes);
    }
}

#[test]
fn corrupt_and_truncated_input_is_an_error() {
    let s = zipf_fi(500, 4);
    let bytes = s.encode();
    crate::common::assert_every_flip_and_truncation_fails(&bytes);
    let (h, payload) = decode_envelope(&bytes).unwrap();
    for i in 0..payload.len() {
        for mask in [0x01u8, 0x10, 0x80, 0xff] {
            let mut p = payload.to_vec();
            p[i] ^= mask;
            let _ = registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &p));
        }
        assert!(registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &payload[..i])).is_err(), "truncate {i}");
    }
    // A forged lgCurMapSize / lgMaxMapSize must be refused before the library allocates.
    let mut p = payload.to_vec();
    p[4] = 30;
    assert!(registry::decode(&encode_envelope(h.kind, h.seed, &h.params, &p)).is_err());
    assert!(registry::decode(&encode_envelope(h.kind, h.seed, &[5.0], payload)).is_err());
    assert!(registry::decode(&encode_envelope(h.kind, h.seed, &[30.0], payload)).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn codec_round_trip(keys in proptest::collection::vec(0u64..100, 0..2000), words in proptest::collection::vec("[a-z]{0,6}", 0..50)) {
        let mut s = FrequentItems::new(5).unwrap();
        for k in &keys {
            s.update(Datum::Num(*k as f64));
        }
        for w in &words {
            s.update(Datum::Str(w));
        }
        let d = registry::decode(&s.encode()).unwrap();
        prop_assert_eq!(d.estimate(&Query::Total).unwrap(), s.estimate(&Query::Total).unwrap());
        for k in 0..100u64 {
            let q = Query::Count(Value::Num(k as f64));
            prop_assert_eq!(d.estimate(&q).unwrap(), s.estimate(&q).unwrap());
        }
        prop_assert_eq!(d.encode(), s.encode());
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = registry::decode(&encode_envelope(saams::Kind::FrequentItems, 0, &[10.0], &bytes));
    }
}

/// What this build writes for the golden streams is exactly the committed bytes.
#[test]
fn golden_files_match_this_build() {
    for (file, bytes) in [
        ("frequent_items_v1_empty.bin", FrequentItems::new(10).unwrap().encode()),
        ("frequent_items_v1_zipf1000.bin", zipf_fi(1000, 5).encode()),
    ] {
        common::assert_golden(file, &bytes);
    }
}
