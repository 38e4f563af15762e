//! The synopsis decoder of every kind (`saams::registry::decode`).
//!
//! Random bytes almost never pass the envelope's checksum, so most of the input is a *payload*
//! this target wraps in a valid envelope for the kind it picks: byte 0 picks the kind (or, as
//! 0xFF, says the rest is a whole envelope, checksum and all); byte 1's low bit says whether the
//! constructor parameters come from the input (count in byte 2, then f64 LE each) or are the
//! kind's parameters from its golden file, which lets the fuzzer reach the payload decoders with
//! parameters they accept.
//!
//! Invariant besides "no panic": a synopsis that decodes re-encodes to bytes that decode.
#![no_main]

use libfuzzer_sys::fuzz_target;
use saams::Kind;
use saams::codec::{decode_envelope, encode_envelope};
use saams::registry::decode;

mod golden_envelopes;
use golden_envelopes::EMPTY as GOLDEN;

fn check(bytes: &[u8]) {
    if let Ok(s) = decode(bytes) {
        let again = s.encode();
        if let Err(e) = decode(&again) {
            panic!("{:?} decoded but its re-encoding does not: {e}", s.kind());
        }
        let _ = s.size_bytes();
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    if selector == 0xFF {
        check(rest);
        return;
    }
    let i = usize::from(selector) % Kind::ALL.len();
    let kind = Kind::ALL[i];
    let (golden, _) = decode_envelope(GOLDEN[i]).expect("golden envelopes decode");
    assert_eq!(golden.kind, kind, "GOLDEN is in Kind::ALL order");
    let Some((&flags, mut rest)) = rest.split_first() else { return };
    let mut params = golden.params.clone();
    if flags & 1 == 1 {
        let Some((&n, tail)) = rest.split_first() else { return };
        let n = usize::from(n % 8);
        if tail.len() < 8 * n {
            return;
        }
        let (p, payload) = tail.split_at(8 * n);
        params = p.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        rest = payload;
    }
    check(&encode_envelope(kind, golden.seed, &params, rest));
});
