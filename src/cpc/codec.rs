//! CPC byte layout: the envelope's parameters are `[lgK]`, its seed is the hash seed, and the
//! payload is the DataSketches CPC serialization, unchanged (readable by the other DataSketches
//! libraries, which check the seed through the image's 16-bit seed hash):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | n | `CpcSketch::serialize()` (preamble, HIP state, compressed window and surprises) |
//!
//! Decoding validates `lgK` from the header, lets the library check the image under the
//! header's seed (it returns errors for truncated, malformed or foreign-seed images), and
//! then checks that the image's `lgK` matches the header.

use datasketches::cpc::CpcSketch;

use super::Cpc;
use crate::codec::{Header, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

/// The synopsis as envelope + DataSketches payload.
pub(crate) fn encode(s: &Cpc) -> Vec<u8> {
    encode_envelope(Kind::Cpc, s.seed, &[f64::from(s.lg_k())], &s.sketch.serialize())
}

/// Rebuild a [`Cpc`] from a checked envelope; never panics.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let lg_k = match header.params.as_slice() {
        [k] if k.fract() == 0.0 && (4.0..=26.0).contains(k) => *k as u8,
        p => return Err(SynopsisError::Codec(format!("CPC expects one parameter lgK in 4..=26, got {p:?}"))),
    };
    let sketch = CpcSketch::deserialize_with_seed(payload, header.seed)
        .map_err(|e| SynopsisError::Codec(format!("CPC payload: {e}")))?;
    if sketch.lg_k() != lg_k {
        return Err(SynopsisError::Codec(format!("CPC payload has lgK = {}, header says {lg_k}", sketch.lg_k())));
    }
    Ok(Box::new(Cpc { sketch, seed: header.seed }))
}
