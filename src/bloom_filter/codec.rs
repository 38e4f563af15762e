//! Byte layout of a Bloom filter payload (inside the envelope of [`crate::codec`]).
//!
//! The envelope's parameters are `[expected n, fpp]` and its seed is the hash seed. The
//! geometry chosen at construction is stored, not recomputed, so a decoded filter does not
//! depend on the floating-point library of the machine that reads it:
//!
//! | field | encoding | meaning |
//! |---|---|---|
//! | k | u8 | bit positions per value, 1..=24 |
//! | blocks | varint | number of 512-bit blocks, ≥ 1 |
//! | bits | `blocks · 8` u64 LE | the blocks, each as 8 words, bit `i` of a block = bit `i % 64` of word `i / 64` |

use crate::codec::{Header, Reader, ToBytes, Writer, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

use super::sketch::{Block, BloomFilter, MAX_BLOCKS, MAX_HASHES};

impl ToBytes for BloomFilter {
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(6 + self.num_blocks() * 64);
        w.u8(self.hashes() as u8);
        w.varint(self.num_blocks() as u64);
        for block in self.blocks() {
            for word in block.0 {
                w.u64(word);
            }
        }
        encode_envelope(Kind::BloomFilter, self.seed(), &[self.expected_items() as f64, self.fpp()], &w.into_inner())
    }
}

fn err(reason: impl Into<String>) -> SynopsisError {
    SynopsisError::Codec(reason.into())
}

/// Rebuild a Bloom filter from its envelope header and payload.
///
/// # Errors
/// [`SynopsisError::Codec`] when the parameters or the geometry are out of range or the
/// payload length does not match the block count.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    Ok(Box::new(decode_payload(header, payload)?))
}

/// Rebuild a Bloom filter, concretely typed.
///
/// # Errors
/// As [`decode`].
pub(crate) fn decode_payload(header: &Header, payload: &[u8]) -> Result<BloomFilter, SynopsisError> {
    let [n, fpp] = header.params[..] else {
        return Err(err(format!("BloomFilter needs 2 parameters, the header has {}", header.params.len())));
    };
    if !(n >= 1.0 && n.fract() == 0.0 && n <= 9.007_199_254_740_992e15) {
        return Err(err(format!("expected n must be a whole number ≥ 1, got {n}")));
    }
    if !(fpp > 0.0 && fpp < 1.0) {
        return Err(err(format!("fpp must be in (0, 1), got {fpp}")));
    }
    let mut r = Reader::new(payload);
    let k = u32::from(r.u8()?);
    if !(1..=MAX_HASHES).contains(&k) {
        return Err(err(format!("k = {k} is outside 1..={MAX_HASHES}")));
    }
    let count = r.count(64)?;
    if count == 0 || count > MAX_BLOCKS {
        return Err(err(format!("{count} blocks is outside 1..={MAX_BLOCKS}")));
    }
    let bytes = r.take(count * 64)?;
    let blocks: Vec<Block> = bytes
        .chunks_exact(64)
        .map(|chunk| {
            let mut b = Block::default();
            for (w, le) in b.0.iter_mut().zip(chunk.chunks_exact(8)) {
                let mut word = [0u8; 8];
                word.copy_from_slice(le);
                *w = u64::from_le_bytes(word);
            }
            b
        })
        .collect();
    r.finish()?;
    Ok(BloomFilter::from_parts(n as u64, fpp, header.seed, k, blocks))
}
