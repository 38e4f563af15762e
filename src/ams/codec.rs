//! Byte layout of an AMS payload (inside the envelope of [`crate::codec`]).
//!
//! The envelope's parameters are `[depth, buckets]` and its seed is the hash seed; the
//! payload holds the counts:
//!
//! | field | encoding | meaning |
//! |---|---|---|
//! | total | varint | N, the number of items summarized |
//! | counters | `depth·buckets` zigzag varints | the signed counters, row by row |
//!
//! Decoding checks what every row of a real sketch satisfies (each item adds ±1 to one
//! counter per row): the absolute counters of a row sum to at most N, with the parity of N.

use crate::codec::{Header, Reader, ToBytes, Writer, encode_envelope, unzigzag, zigzag};
use crate::{Kind, Synopsis, SynopsisError};

use super::sketch::{Ams, check_shape};

impl ToBytes for Ams {
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(10 + self.counters().len() * 2);
        w.varint(self.total());
        for c in self.counters() {
            w.varint(zigzag(*c));
        }
        encode_envelope(Kind::Ams, self.seed(), &[self.depth() as f64, self.buckets() as f64], &w.into_inner())
    }
}

fn err(reason: impl Into<String>) -> SynopsisError {
    SynopsisError::Codec(reason.into())
}

/// Rebuild an AMS sketch from its envelope header and payload.
///
/// # Errors
/// [`SynopsisError::Codec`] when the parameters are invalid, the payload is too short or too
/// long, or a row's counters cannot come from N items.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    Ok(Box::new(decode_payload(header, payload)?))
}

/// Rebuild an AMS sketch, concretely typed.
///
/// # Errors
/// As [`decode`].
pub(crate) fn decode_payload(header: &Header, payload: &[u8]) -> Result<Ams, SynopsisError> {
    let [depth, buckets] = header.params[..] else {
        return Err(err(format!("AMS needs 2 parameters, the header has {}", header.params.len())));
    };
    let whole = |x: f64| x >= 0.0 && x.fract() == 0.0 && x <= 9.007_199_254_740_992e15;
    if !whole(depth) || !whole(buckets) {
        return Err(err(format!("depth {depth} and buckets {buckets} must be whole numbers")));
    }
    let (depth, buckets) = (depth as u64, buckets as u64);
    check_shape(depth, buckets).map_err(|e| err(e.to_string()))?;
    let (d, b) = (depth as usize, buckets as usize);
    let mut r = Reader::new(payload);
    let total = r.varint()?;
    if r.remaining() < d * b {
        return Err(err(format!("{} payload bytes cannot hold {} counters", r.remaining(), d * b)));
    }
    let mut counters = Vec::with_capacity(d * b);
    for _ in 0..d {
        let (mut abs, mut sum) = (0i128, 0i128);
        for _ in 0..b {
            let c = unzigzag(r.varint()?);
            abs += i128::from(c).abs();
            sum += i128::from(c);
            counters.push(c);
        }
        if abs > i128::from(total) || (sum - i128::from(total)) % 2 != 0 {
            return Err(err(format!("a row's counters cannot come from {total} items")));
        }
    }
    r.finish()?;
    let mut a = Ams::new(depth, buckets, header.seed).map_err(|e| err(e.to_string()))?;
    a.set_state(total, counters);
    Ok(a)
}
