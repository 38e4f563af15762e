//! KLL byte layout: the envelope's parameters are `[k]`, its seed is 0, and the payload is the
//! DataSketches KLL compact serialization, unchanged (readable by the Java/C++/Python libraries
//! for `double` items):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | n | `KllSketch<KllFloat<f64>>::serialize()` (preamble, levels, min/max, items, LE) |
//!
//! Decoding validates the envelope's `k`, lets the library check the image (it returns errors
//! for truncated or malformed bytes), and then checks that the image's `k` matches the header.

use datasketches::kll::{KllFloat, KllSketch};

use super::sketch::Kll;
use crate::codec::{Header, ToBytes, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

impl ToBytes for Kll {
    /// The synopsis as envelope + DataSketches payload.
    fn to_bytes(&self) -> Vec<u8> {
        encode_envelope(Kind::Kll, 0, &[f64::from(self.k())], &self.sketch.serialize())
    }
}

/// Rebuild a [`Kll`] from a checked envelope; never panics.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let k = match header.params.as_slice() {
        [k] if k.fract() == 0.0 && (8.0..=65535.0).contains(k) => *k as u16,
        p => return Err(SynopsisError::Codec(format!("KLL expects one parameter k in 8..=65535, got {p:?}"))),
    };
    if header.seed != 0 {
        return Err(SynopsisError::Codec("KLL has no seed: header seed must be 0".into()));
    }
    let sketch = KllSketch::<KllFloat<f64>>::deserialize(payload)
        .map_err(|e| SynopsisError::Codec(format!("KLL payload: {e}")))?;
    if sketch.k() != k {
        return Err(SynopsisError::Codec(format!("KLL payload has k = {}, header says {k}", sketch.k())));
    }
    Ok(Box::new(Kll::decoded(sketch, payload)))
}
