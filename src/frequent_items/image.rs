//! The DataSketches frequent-items image (what the library serializes), rewritten: between the
//! `u64` and `Item` sketches' forms, and into a canonical item order. The sketch converts with
//! it (a numbers-only sketch meeting a string) and the codec writes and reads with it.

use crate::hash::canonical_bits;

/// Bytes of the non-empty DataSketches preamble (4 longs).
const PREAMBLE_BYTES: usize = 32;

/// A `u64` sketch's image as the `Item` sketch with the same items writes it: each 8-byte item
/// gets the number tag 0 in front (the preamble and counts do not depend on the item type).
pub(super) fn nums_to_items(raw: &[u8]) -> Vec<u8> {
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
pub(super) fn items_to_nums(raw: &[u8]) -> Option<Vec<u8>> {
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
pub(super) fn canonical(raw: &[u8]) -> Option<Vec<u8>> {
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
