//! The checkpoint reader: `saams::checkpoint::CheckpointPart::decode` and `Manifest::from_json`.
//!
//! Every input is tried three ways: as a whole part file; as a part *body* with a correct CRC-32
//! appended (random bytes almost never pass the checksum, so this is what lets the fuzzer reach
//! the field decoders: counts, strings, roles, flags); and, when it is UTF-8, as a manifest.
//!
//! Invariants besides "no panic": a part of the current format that decodes re-encodes to
//! exactly the bytes it came from (the encoding is canonical), a part of an older format that
//! decodes re-encodes in the current one, and either re-encoding decodes to the same part; a
//! manifest that parses writes JSON that parses to the same manifest.
#![no_main]

use libfuzzer_sys::fuzz_target;
use saams::checkpoint::{CheckpointPart, Manifest, PART_FORMAT_VERSION, file_crc32};

fn check_part(bytes: &[u8]) {
    if let Ok(part) = CheckpointPart::decode(bytes) {
        let again = part.encode();
        // The format version follows the 4-byte magic (little-endian u16).
        if bytes.get(4..6) == Some(&PART_FORMAT_VERSION.to_le_bytes()[..]) {
            assert_eq!(again, bytes, "a decoded part re-encodes to other bytes");
        }
        match CheckpointPart::decode(&again) {
            Ok(back) => assert_eq!(back, part, "a re-encoded part decodes to another part"),
            Err(e) => panic!("a decoded part's re-encoding does not decode: {e}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check_part(data);
    let mut body = data.to_vec();
    body.extend_from_slice(&file_crc32(data).to_le_bytes());
    check_part(&body);
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(m) = Manifest::from_json(text)
    {
        match Manifest::from_json(&m.to_json()) {
            Ok(back) => assert_eq!(back, m, "a manifest's JSON parses to another manifest"),
            Err(e) => panic!("a parsed manifest's JSON does not parse: {e}"),
        }
    }
});
