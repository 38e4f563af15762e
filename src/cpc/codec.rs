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

use super::sketch::Cpc;
use crate::codec::{Header, ToBytes, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

impl ToBytes for Cpc {
    /// The synopsis as envelope + DataSketches payload.
    fn to_bytes(&self) -> Vec<u8> {
        encode_envelope(Kind::Cpc, self.seed, &[f64::from(self.lg_k())], &self.sketch.serialize())
    }
}

/// datasketches 0.6 accepts images whose coupon count C puts the sliding window's offset
/// (8C - 19K) / 8K past column 56, then panics serializing them (found by fuzzing: LOAD of such
/// bytes, then SAVE or a merge, killed the worker). Refuse them: 8C < 475K keeps the offset <= 56.
/// C is the u32 at offset 8 of the image when its flags (byte 5) say it has a table or a window.
fn check_window_offset(payload: &[u8], lg_k: u8) -> Result<(), SynopsisError> {
    const HAS_TABLE_OR_WINDOW: u8 = (1 << 3) | (1 << 4);
    let Some(&flags) = payload.get(5) else { return Ok(()) };
    if flags & HAS_TABLE_OR_WINDOW == 0 {
        return Ok(());
    }
    let Some(c) = payload.get(8..12) else { return Ok(()) };
    let coupons = u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    let k = 1u64 << lg_k;
    if 8 * coupons >= 475 * k {
        return Err(SynopsisError::Codec(format!(
            "CPC payload has {coupons} coupons, more than a sketch with lgK = {lg_k} can hold"
        )));
    }
    Ok(())
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
    check_window_offset(payload, lg_k)?;
    Ok(Box::new(Cpc { sketch, seed: header.seed }))
}
