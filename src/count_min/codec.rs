//! Byte layout of a Count-Min sketch's payload (inside the envelope of [`crate::codec`]).
//!
//! The envelope's parameters are `[epsilon, confidence]` and its seed is the hash seed; they
//! fix `width` and `depth`, so the payload holds only the counts:
//!
//! | field | encoding | meaning |
//! |---|---|---|
//! | total | varint | N, the number of items summarized |
//! | counters | `depth·width` varints | the counters, row by row |
//!
//! Varints keep the mostly small counters of a sparse sketch to about one byte each, which is
//! what partials cost on the wire. Decoding checks that every row sums to N (each item adds
//! exactly one to one counter per row), so corrupted counters are refused.

use crate::codec::{Header, Reader, ToBytes, Writer, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

use super::sketch::{CountMin, geometry};

impl ToBytes for CountMin {
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(10 + self.width() * self.depth() * 2);
        w.varint(self.total());
        self.for_each_count(|c| w.varint(c));
        encode_envelope(Kind::CountMin, self.seed(), &[self.epsilon(), self.confidence()], &w.into_inner())
    }
}

fn err(reason: impl Into<String>) -> SynopsisError {
    SynopsisError::Codec(reason.into())
}

/// Rebuild a Count-Min sketch from its envelope header and payload.
///
/// # Errors
/// [`SynopsisError::Codec`] when the parameters are invalid, the payload is too short or too
/// long, or the counters are inconsistent (a row that does not sum to N).
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    Ok(Box::new(decode_payload(header, payload)?))
}

/// Rebuild a Count-Min sketch, concretely typed.
///
/// # Errors
/// As [`decode`].
pub(crate) fn decode_payload(header: &Header, payload: &[u8]) -> Result<CountMin, SynopsisError> {
    let [epsilon, confidence] = header.params[..] else {
        return Err(err(format!("CountMin needs 2 parameters, the header has {}", header.params.len())));
    };
    let (width, depth) = geometry(epsilon, confidence).map_err(|e| err(e.to_string()))?;
    let mut r = Reader::new(payload);
    let total = r.varint()?;
    if r.remaining() < width * depth {
        return Err(err(format!("{} payload bytes cannot hold {} counters", r.remaining(), width * depth)));
    }
    let mut counts = Vec::with_capacity(width * depth);
    for _ in 0..depth {
        let mut sum = 0u64;
        for _ in 0..width {
            let c = r.varint()?;
            sum = sum.checked_add(c).ok_or_else(|| err("row sum overflows"))?;
            counts.push(c);
        }
        if sum != total {
            return Err(err(format!("a row sums to {sum}, not to the total {total}")));
        }
    }
    r.finish()?;
    let mut cm = CountMin::with_accuracy(epsilon, confidence, header.seed).map_err(|e| err(e.to_string()))?;
    cm.set_state(total, counts);
    Ok(cm)
}
