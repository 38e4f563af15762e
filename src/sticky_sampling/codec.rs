//! Sticky Sampling payload layout (inside the [`crate::codec`] envelope; header parameters
//! `[support, ε, δ]`, header seed = the sampling seed).
//!
//! | field | bytes | meaning |
//! |---|---|---|
//! | `n` | 8 | items summarized, u64 LE (the next rate change follows from it) |
//! | `rate` | 1 | log₂ of the sampling divisor, at most the schedule's for `n` |
//! | `parts` | varint | number of partials merged, ≥ 1 |
//! | `rng` | 8 | SplitMix64 state, u64 LE |
//! | `m` | varint | number of tracked items |
//! | per item, by increasing id: `id` | 8 | number bits, or string hash, u64 LE |
//! | `count` | varint | ≥ 1 |
//! | `tag` | 1 | 0 = number, 1 = string followed by varint length + UTF-8 text |

use super::sketch::StickySampling;
use crate::codec::{Header, MAX_ITEMS, Reader, ToBytes, Writer, encode_envelope};
use crate::counting_table::{Table, read_slots, write_slots};
use crate::{Kind, Synopsis, SynopsisError};

impl ToBytes for StickySampling {
    /// The synopsis as enveloped bytes.
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.n);
        w.u8(self.rate.trailing_zeros() as u8);
        w.varint(self.parts);
        w.u64(self.rng.state());
        write_slots(&mut w, &self.table);
        encode_envelope(Kind::StickySampling, self.seed, &[self.support, self.epsilon, self.delta], &w.into_inner())
    }
}

/// Decode a payload whose envelope was already checked; never panics.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let [support, epsilon, delta] = header.params[..] else {
        return Err(SynopsisError::Codec("StickySampling expects parameters [support, epsilon, delta]".into()));
    };
    let mut r = Reader::new(payload);
    let n = r.u64()?;
    if n > MAX_ITEMS {
        return Err(SynopsisError::Codec(format!("{n} items is more than a synopsis can have summarized")));
    }
    let rate_log2 = r.u8()?;
    let parts = r.varint()?;
    let rng = r.u64()?;
    let table = read_slots(&mut r, Table::with_capacity)?;
    r.finish()?;
    Ok(Box::new(StickySampling::from_parts((support, epsilon, delta), header.seed, (n, rate_log2, parts, rng), table)?))
}
