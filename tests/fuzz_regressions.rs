//! Inputs the fuzz targets (fuzz/, scripts/fuzz.sh) found to crash a decoder, each with what it
//! must do instead. The fuzz corpus keeps them too; these run with the normal tests.

use saams::Kind;
use saams::codec::{decode_envelope, encode_envelope};
use saams::registry::decode;

/// The seed of the golden CPC envelope, which the fuzz target's CPC inputs are built with.
fn golden_seed(bytes: &[u8]) -> u64 {
    decode_envelope(bytes).unwrap().0.seed
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// A CPC image (lgK 8) claiming 16254 coupons: datasketches 0.6 deserializes it, then panics
/// when serializing it (window offset past 56). decode must refuse it instead.
#[test]
fn cpc_image_with_too_many_coupons_is_refused() {
    let seed = golden_seed(include_bytes!("golden/cpc_v1_empty.bin"));
    let payload = hex(FUZZ_CPC_PAYLOAD);
    let bytes = encode_envelope(Kind::Cpc, seed, &[8.0], &payload);
    let err = decode(&bytes).unwrap_err().to_string();
    assert!(err.contains("coupons"), "{err}");
    // Real sketches in the sliding flavor still decode, re-encode and decode again.
    let golden = decode(include_bytes!("golden/cpc_v1_zipf1000.bin")).unwrap();
    assert!(decode(&golden.encode()).is_ok());
}

const FUZZ_CPC_PAYLOAD: &str = "
    0a011008001ecc937e3f00000000000000000000907761405bd8a7a7420a8040010000
    0021000000d8b134558fe551da12ad2c4782b53e62c7d462362d3656f731eac1d61a86
    565b028b7076d472b0b825ac942df726aecc4d21856044d8fd0a47c30e6598474cae30
    d4d33974b20e2f29ce867024b9501010260c5a21315ccd4b0b40eba99971e35f0c40c4
    0065c779230a403bd54a630bff0b4034a149f473e50e40bea0416424620f4073ffd9ff
    4253
";
