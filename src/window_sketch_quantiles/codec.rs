//! Window quantiles payload layout (inside the [`crate::codec`] envelope; header parameters
//! `[ε, W]`, seed 0). Block size and spacing are recomputed from the parameters.
//!
//! | field | bytes | meaning |
//! |---|---|---|
//! | `n` | 8 | items seen, u64 LE |
//! | `c` | varint | items in the incomplete block (< block size) |
//! | per item | 8 | f64 LE, arrival order |
//! | `m` | varint | number of blocks, oldest first |
//! | per block: `n_i` | varint | items in the block (1 ..= block size) |
//! | `k_i` | varint | 1 (exact block) or the spacing (then `n_i` = block size) |
//! | values | 8 each | the kept values, sorted, f64 LE; their number follows from `n_i`, `k_i` |
//!
//! Decoding checks sizes, sortedness, and that the blocks cover the window with only the oldest
//! one partly expired.

use std::collections::VecDeque;

use super::sketch::{Block, WindowSketchQuantiles};
use crate::codec::{Header, MAX_ITEMS, Reader, ToBytes, Writer, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

impl ToBytes for WindowSketchQuantiles {
    /// The synopsis as enveloped bytes.
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Writer::new();
        out.u64(self.n);
        out.varint(self.cur.len() as u64);
        for x in &self.cur {
            out.f64(*x);
        }
        out.varint(self.blocks.len() as u64);
        for b in &self.blocks {
            out.varint(b.n);
            out.varint(b.k);
            for x in &b.vals {
                out.f64(*x);
            }
        }
        encode_envelope(Kind::WindowSketchQuantiles, 0, &[self.epsilon, self.window as f64], &out.into_inner())
    }
}

fn value(r: &mut Reader<'_>) -> Result<f64, SynopsisError> {
    let x = r.f64()?;
    if x.is_nan() || (x == 0.0 && x.is_sign_negative()) {
        return Err(SynopsisError::Codec("a stored value is NaN or -0".into()));
    }
    Ok(x)
}

/// Decode a payload whose envelope was already checked; never panics.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let err = |m: &str| SynopsisError::Codec(m.to_string());
    let [epsilon, window] = header.params[..] else {
        return Err(err("WindowSketchQuantiles expects parameters [epsilon, window size]"));
    };
    if header.seed != 0 || !(1.0..=281_474_976_710_656.0).contains(&window) || window.fract() != 0.0 {
        return Err(err("bad seed or window size"));
    }
    let mut r = Reader::new(payload);
    let n = r.u64()?;
    if n > MAX_ITEMS {
        return Err(SynopsisError::Codec(format!("{n} items is more than a synopsis can have summarized")));
    }
    let c = r.count(8)?;
    let mut cur = Vec::with_capacity(c);
    for _ in 0..c {
        cur.push(value(&mut r)?);
    }
    let m = r.count(10)?;
    let mut blocks = VecDeque::with_capacity(m);
    for _ in 0..m {
        let (bn, k) = (r.varint()?, r.varint()?);
        if k == 0 {
            return Err(err("block spacing 0"));
        }
        let kept = Block::kept(bn, k);
        if kept > (r.remaining() / 8) as u64 {
            return Err(err("block longer than the bytes left"));
        }
        let mut vals = Vec::with_capacity(kept as usize);
        for _ in 0..kept {
            let x = value(&mut r)?;
            if vals.last().is_some_and(|p: &f64| *p > x) {
                return Err(err("block values are not sorted"));
            }
            vals.push(x);
        }
        blocks.push_back(Block { n: bn, k, vals });
    }
    r.finish()?;
    Ok(Box::new(WindowSketchQuantiles::from_parts(epsilon, window as u64, n, blocks, cur)?))
}
