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

use super::FrequentItems;
use super::sketch::{Inner, Item, MAX_LG_MAX_MAP_SIZE};
use crate::codec::{Header, ToBytes, encode_envelope};
use crate::hash::canonical_bits;
use crate::{Kind, Synopsis, SynopsisError};

/// Bytes of the non-empty DataSketches preamble (4 longs).
const PREAMBLE_BYTES: usize = 32;

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

/// A `u64` sketch's image as the `Item` sketch with the same items writes it: each 8-byte item
/// gets the number tag 0 in front (the preamble and counts do not depend on the item type).
pub(crate) fn nums_to_items(raw: &[u8]) -> Vec<u8> {
    let Some(m) = active_items(raw) else {
        return raw.to_vec();
    };
    let counts_end = PREAMBLE_BYTES + 8 * m;
    let mut out = Vec::with_capacity(raw.len() + m);
    out.extend_from_slice(&raw[..counts_end]);
    for item in raw[counts_end..].chunks_exact(8) {
        out.push(0);
        out.extend_from_slice(item);
    }
    out
}

/// An `Item` image whose items are all (canonical) numbers, as the `u64` sketch writes it;
/// `None` when it holds a string or is not such an image (the `Item` decoder then judges it).
fn items_to_nums(raw: &[u8]) -> Option<Vec<u8>> {
    let Some(m) = active_items(raw) else {
        return Some(raw.to_vec());
    };
    let counts_end = PREAMBLE_BYTES.checked_add(m.checked_mul(8)?)?;
    let items = raw.get(counts_end..)?;
    if items.len() != m.checked_mul(9)? {
        return None;
    }
    let mut out = Vec::with_capacity(counts_end + 8 * m);
    out.extend_from_slice(&raw[..counts_end]);
    for item in items.chunks_exact(9) {
        let bits = u64::from_le_bytes(item[1..].try_into().ok()?);
        if item[0] != 0 || canonical_bits(f64::from_bits(bits)) != bits {
            return None;
        }
        out.extend_from_slice(&item[1..]);
    }
    Some(out)
}

/// The number of active items of a non-empty image; `None` for an empty (short) image.
fn active_items(raw: &[u8]) -> Option<usize> {
    if raw.len() < PREAMBLE_BYTES || raw[0] & 0x3f != 4 {
        return None;
    }
    Some(u32::from_le_bytes(raw.get(8..12)?.try_into().ok()?) as usize)
}

/// (sort key, encoded item, encoded count) of one active item.
type Entry<'a> = ((u8, u64, &'a [u8]), &'a [u8], &'a [u8]);

/// The library's image with its (count, item) pairs sorted by item bytes; `None` for an empty
/// image (nothing to sort) or bytes this module did not write.
fn canonical(raw: &[u8]) -> Option<Vec<u8>> {
    if raw.len() < PREAMBLE_BYTES || raw[0] & 0x3f != 4 {
        return None;
    }
    let m = u32::from_le_bytes(raw.get(8..12)?.try_into().ok()?) as usize;
    let counts_end = PREAMBLE_BYTES.checked_add(m.checked_mul(8)?)?;
    let counts = raw.get(PREAMBLE_BYTES..counts_end)?;
    let mut items = raw.get(counts_end..)?;
    let mut pairs: Vec<Entry> = Vec::with_capacity(m);
    for c in counts.chunks_exact(8) {
        // The key orders items exactly as their encoded bytes compare, but numbers compare as
        // one integer (their 8 LE bytes read big-endian) instead of byte by byte.
        let (key, len) = match *items.first()? {
            0 => ((0, u64::from_be_bytes(items.get(1..9)?.try_into().ok()?), &[][..]), 9),
            1 => {
                let len = 5 + u32::from_le_bytes(items.get(1..5)?.try_into().ok()?) as usize;
                ((1, 0, items.get(..len)?), len)
            }
            _ => return None,
        };
        let (item, rest) = items.split_at_checked(len)?;
        pairs.push((key, item, c));
        items = rest;
    }
    if !items.is_empty() {
        return None;
    }
    pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(raw.len());
    out.extend_from_slice(&raw[..PREAMBLE_BYTES]);
    for (_, _, c) in &pairs {
        out.extend_from_slice(c);
    }
    for (_, item, _) in &pairs {
        out.extend_from_slice(item);
    }
    Some(out)
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
