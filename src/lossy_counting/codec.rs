//! Lossy Counting payload layout (inside the [`crate::codec`] envelope; header parameters
//! `[ε]`, seed 0).
//!
//! | field | bytes | meaning |
//! |---|---|---|
//! | `n` | 8 | items summarized, u64 LE |
//! | `m` | varint | number of tracked items |
//! | per item, by increasing id: `id` | 8 | number bits, or string hash, u64 LE |
//! | `count` | varint | `f`, ≥ 1 |
//! | `delta` | varint | `Δ ≤ ⌊n/⌈1/ε⌉⌋`, with `f + Δ > ⌊n/⌈1/ε⌉⌋` |
//! | `tag` | 1 | 0 = number, 1 = string followed by varint length + UTF-8 text |

use super::sketch::LossyCounting;
use crate::codec::{Header, MAX_ITEMS, Reader, ToBytes, Writer, encode_envelope};
use crate::counting_table::{Table, read_slots, write_slots};
use crate::{Kind, Synopsis, SynopsisError};

impl ToBytes for LossyCounting {
    /// The synopsis as enveloped bytes.
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.n);
        write_slots(&mut w, &self.table);
        encode_envelope(Kind::LossyCounting, 0, &[self.epsilon], &w.into_inner())
    }
}

/// Decode a payload whose envelope was already checked; never panics.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    if header.params.len() != 1 || header.seed != 0 {
        return Err(SynopsisError::Codec("LossyCounting expects parameters [epsilon] and seed 0".into()));
    }
    let mut r = Reader::new(payload);
    let n = r.u64()?;
    if n > MAX_ITEMS {
        return Err(SynopsisError::Codec(format!("{n} items is more than a synopsis can have summarized")));
    }
    let table = read_slots(&mut r, |_| Table::new())?;
    r.finish()?;
    Ok(Box::new(LossyCounting::from_parts(header.params[0], n, table)?))
}
