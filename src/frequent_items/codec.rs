//! Frequent-items byte layout: the envelope's parameters are `[lgMaxMapSize]`, its seed is 0,
//! and the payload is the DataSketches frequent-items serialization with our item encoding:
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 or 32 | DataSketches preamble (byte 3 = lgMaxMapSize, byte 4 = lgCurMapSize; then active item count, stream weight, offset) |
//! | … | 8·m | the m active items' counts, u64 LE |
//! | … | … | the m items: tag 0 + 8 bytes (number, canonical bits LE) or tag 1 + u32 LE length + UTF-8 |
//!
//! The library writes items in its hash map's slot order, which depends on insertion history,
//! so a decoded-and-re-encoded sketch would list them differently. We rewrite the image with
//! the (count, item) pairs sorted by the item's encoded bytes: still a valid DataSketches image
//! (order carries no meaning there), and equal sketches now give equal bytes.
//!
//! Decoding checks the preamble's map sizes against the header *before* handing the bytes to
//! the library (a forged lgCurMapSize would otherwise make it allocate up to 2^30 slots), then
//! lets the library check the rest (truncation, counts exceeding the stream weight, bad items).

use datasketches::frequencies::FrequentItemsSketch;

use super::image::{canonical, items_to_nums, nums_to_items};
use super::sketch::{FrequentItems, Inner, Item, MAX_LG_MAX_MAP_SIZE};
use crate::codec::{Header, ToBytes, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

impl ToBytes for FrequentItems {
    /// The synopsis as envelope + DataSketches payload in canonical item order.
    fn to_bytes(&self) -> Vec<u8> {
        let raw = match &self.inner {
            Inner::Nums(sketch) => nums_to_items(&sketch.serialize()),
            Inner::Mixed(sketch) => sketch.serialize(),
        };
        let payload = canonical(&raw).unwrap_or(raw);
        encode_envelope(Kind::FrequentItems, 0, &[f64::from(self.lg_max_map_size())], &payload)
    }
}

/// Rebuild a [`FrequentItems`] from a checked envelope; never panics.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let lg = match header.params.as_slice() {
        [k] if k.fract() == 0.0 && (3.0..=MAX_LG_MAX_MAP_SIZE as f64).contains(k) => *k as u8,
        p => {
            return Err(SynopsisError::Codec(format!(
                "FrequentItems expects one parameter lgMaxMapSize in 3..={MAX_LG_MAX_MAP_SIZE}, got {p:?}"
            )));
        }
    };
    if header.seed != 0 {
        return Err(SynopsisError::Codec("FrequentItems has no seed: header seed must be 0".into()));
    }
    match payload {
        [_, _, _, lg_max, lg_cur, ..] if *lg_max == lg && *lg_cur <= lg => {}
        _ => return Err(SynopsisError::Codec("FrequentItems payload map sizes do not match the header".into())),
    }
    let bad = |e: datasketches::error::Error| SynopsisError::Codec(format!("FrequentItems payload: {e}"));
    // Numbers only: back into the fast u64 form (see `FrequentItems`).
    let inner = match items_to_nums(payload) {
        Some(nums) => Inner::Nums(FrequentItemsSketch::<u64>::deserialize(&nums).map_err(bad)?),
        None => Inner::Mixed(FrequentItemsSketch::<Item>::deserialize(payload).map_err(bad)?),
    };
    let s = FrequentItems { inner };
    if s.lg_max_map_size() != lg {
        return Err(SynopsisError::Codec("FrequentItems payload lgMaxMapSize differs from the header".into()));
    }
    Ok(Box::new(s))
}
