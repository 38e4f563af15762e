//! The on-disk format of checkpoints: one binary part per worker and one JSON manifest per
//! process. The directory they live in (`saams-jobs`' `checkpoint::store`) is not this crate's
//! concern: this module only turns them into bytes and back, and refuses bytes that are not
//! what it wrote.
//!
//! A checkpoint is taken at a window boundary. Each worker writes a [`CheckpointPart`]: its
//! synopses (each an encoded synopsis envelope of [`crate::codec`], kept opaque here), the
//! last answered members of its continuous set-valued queries, and the positions of the inputs
//! it reads. Each process then writes a [`Manifest`] naming its parts with their lengths and
//! CRCs, the output files' lengths at the boundary and the request log; written last, it makes
//! the process' share of the checkpoint complete.
//!
//! # Part layout (format version [`PART_FORMAT_VERSION`])
//!
//! All integers little-endian. A string is a u32 byte length followed by that many bytes of
//! UTF-8; a vector is a u32 count followed by its items.
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 4 | magic `SAMC` |
//! | 4 | 2 | format version, u16 |
//! | 6 | 8 | `id`, u64 |
//! | 14 | 8 | `boundary_ms`, u64 |
//! | 22 | 4 | `process`, u32 |
//! | 26 | 4 | `worker`, u32 |
//! | 30 | 4 | `processes`, u32 |
//! | 34 | 4 | `workers`, u32 |
//! | 38 | 4 | `synopses` count `s`, u32 |
//! | 42 | … | `s` synopsis states (below) |
//! | … | 4 | `previous_sets` count `q`, u32 |
//! | … | … | `q` previous sets (below) |
//! | … | 4 | `sources` count `k`, u32 |
//! | … | … | `k` source positions (below) |
//! | … | 4 | `monitors` count `m`, u32 (not in versions 1 and 2) |
//! | … | … | `m` monitor states (below) |
//! | … | 4 + n | `device_replies`: u32 length `n`, then the bytes of the process' table of asks waiting for devices' answers (the operators' encoding, opaque here; not in versions 1 to 3) |
//! | … | 8 | `tuples`, u64 |
//! | end − 4 | 4 | CRC-32 (IEEE) of every byte before it |
//!
//! A synopsis state ([`SynopsisState`]), at least 37 bytes (21 in version 1, which had no `since` and `until`):
//!
//! | bytes | field |
//! |---|---|
//! | 4 | `syn`, u32 |
//! | 1 | `role`: 0 owned, 1 spread, 2 latest, 3 pane (a closed pane of a sliding synopsis) |
//! | 8 | `items`, u64 |
//! | 4 | `loads_merged`, u32 |
//! | 8 | `since`, u64: the first event time the state covers, `u64::MAX` for none (not in version 1) |
//! | 8 | `until`, u64: the end of the newest window the state closed (not in version 1) |
//! | 4 + n | `bytes`: u32 length `n`, then the synopsis envelope |
//!
//! A previous set, at least 8 bytes: `query` u32, then its members as a vector of strings.
//!
//! A source position ([`SourcePosition`]), at least 22 bytes:
//!
//! | bytes | field |
//! |---|---|
//! | 4 + n | `source`, string |
//! | 8 | `offset`, u64 |
//! | 8 | `line`, u64 |
//! | 1 (+ 8) | `max_time`: 0 = none; 1 = some, followed by an i64 |
//! | 1 | `done`: 0 or 1 |
//!
//! A monitor state ([`MonitorState`]: one site or coordinator of the monitoring kind), at least
//! 12 bytes: `group` u32 (the monitored stream), `site` u32 (`u32::MAX` for the coordinator),
//! then a u32 length `n` and the `n` bytes of its state (the operators' encoding, opaque here).
//!
//! The encoding is canonical (a flag is 0 or 1, nothing else), so bytes that decode re-encode
//! to the same bytes. Decoding never panics and never allocates from a length it has not
//! checked against the bytes left: truncated input, a wrong magic, an unknown version, a count
//! larger than the rest could hold, bad UTF-8, an unknown role or flag byte, trailing bytes and
//! a checksum mismatch are each a [`CheckpointError`] that says what and at which byte.
//!
//! # Manifest
//!
//! [`Manifest::to_json`] writes pretty-printed JSON so a person can read a checkpoint's
//! manifest; [`Manifest::from_json`] refuses a `format` other than [`MANIFEST_FORMAT`].
//!
//! ```
//! use saams::checkpoint::{CheckpointPart, SourcePosition};
//! let part = CheckpointPart {
//!     id: 3,
//!     boundary_ms: 60_000,
//!     sources: vec![SourcePosition { source: "unit:0".into(), offset: 4096, line: 88, max_time: Some(59_990), done: false }],
//!     tuples: 87,
//!     ..CheckpointPart::default()
//! };
//! let bytes = part.encode();
//! assert_eq!(&bytes[..4], b"SAMC");
//! assert_eq!(CheckpointPart::decode(&bytes).unwrap(), part);
//! ```

mod manifest;
mod part;

pub use manifest::{LoggedRequest, MANIFEST_FORMAT, Manifest, OutputMark, PartEntry, PartitionOffset, TopicOffsets};
pub use part::{
    CheckpointPart, MAGIC, MIN_PART_BYTES, MonitorState, PART_FORMAT_VERSION, SourcePosition, StateRole, SynopsisState,
};

use std::fmt;

/// The CRC-32 (IEEE) a [`PartEntry`] records for a part file: the whole file, trailer included.
///
/// ```
/// use saams::checkpoint::{CheckpointPart, file_crc32};
/// let bytes = CheckpointPart::default().encode();
/// assert_eq!(file_crc32(&bytes), file_crc32(&bytes.clone()));
/// assert_ne!(file_crc32(&bytes), file_crc32(&bytes[1..]));
/// ```
pub fn file_crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Why bytes or JSON are not a valid checkpoint part or manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointError {
    /// What is wrong, naming the field.
    pub what: String,
    /// The byte offset in the part (or manifest text) where the problem was found, when known.
    pub offset: Option<u64>,
}

impl CheckpointError {
    /// An error at byte `offset`.
    pub fn at(offset: u64, what: impl Into<String>) -> Self {
        CheckpointError { what: what.into(), offset: Some(offset) }
    }
    /// An error about the whole input.
    pub fn whole(what: impl Into<String>) -> Self {
        CheckpointError { what: what.into(), offset: None }
    }
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(at) => write!(f, "{} (at byte {at})", self.what),
            None => f.write_str(&self.what),
        }
    }
}

impl std::error::Error for CheckpointError {}
