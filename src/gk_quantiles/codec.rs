//! GK quantiles payload layout (inside the [`crate::codec`] envelope; header parameters `[ε]`,
//! seed 0).
//!
//! | field | bytes | meaning |
//! |---|---|---|
//! | `n` | 8 | values summarized (summary + buffer), u64 LE |
//! | `b` | varint | number of buffered values (< buffer size) |
//! | per buffered value | 8 | f64 LE, in arrival order |
//! | `m` | varint | number of tuples |
//! | per tuple: `v` | 8 | value, f64 LE, non-decreasing, not NaN |
//! | `rmin` | 8 | lower bound on its position, u64 LE |
//! | `rmax` | 8 | upper bound on its position, u64 LE |
//!
//! Decoding checks what the guarantee rests on: first and last tuple exact, `rmin ≤ rmax`, and
//! the gap condition `rmax(i+1) − rmin(i) ≤ max(1, ⌊2ε(n − b)⌋)`.

use super::sketch::{BUFFER, GkQuantiles, Tuple, budget, key, unkey};
use crate::codec::{Header, MAX_ITEMS, Reader, ToBytes, Writer, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

impl ToBytes for GkQuantiles {
    /// The synopsis as enveloped bytes.
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(16 + self.tuples.len() * 24 + self.buf.len() * 8);
        w.u64(self.n);
        w.varint(self.buf.len() as u64);
        for k in &self.buf {
            w.f64(unkey(*k));
        }
        write_tuples(&mut w, &self.tuples);
        encode_envelope(Kind::GkQuantiles, 0, &[self.epsilon], &w.into_inner())
    }
}

/// Write a tuple list (count, then value/rmin/rmax each).
pub(crate) fn write_tuples(w: &mut Writer, t: &[Tuple]) {
    w.varint(t.len() as u64);
    for x in t {
        w.f64(x.v);
        w.u64(x.rmin);
        w.u64(x.rmax);
    }
}

fn err(m: &str) -> SynopsisError {
    SynopsisError::Codec(m.to_string())
}

/// Read a tuple list summarizing `ns` items and check the invariants of an ε-summary.
pub(crate) fn read_tuples(r: &mut Reader<'_>, epsilon: f64, ns: u64) -> Result<Vec<Tuple>, SynopsisError> {
    let m = r.count(24)?;
    let mut t = Vec::with_capacity(m);
    for _ in 0..m {
        let v = r.f64()?;
        let (rmin, rmax) = (r.u64()?, r.u64()?);
        if v.is_nan() || (v == 0.0 && v.is_sign_negative()) {
            return Err(err("a stored value is NaN or -0"));
        }
        if rmin == 0 || rmin > rmax || rmax > ns {
            return Err(err("a tuple's rank bounds are out of range"));
        }
        if let Some(p) = t.last().copied() {
            let p: Tuple = p;
            if p.v > v {
                return Err(err("stored values are not sorted"));
            }
            if rmax.saturating_sub(p.rmin) > budget(epsilon, ns) {
                return Err(err("the summary breaks the gap condition"));
            }
        }
        t.push(Tuple { v, rmin, rmax });
    }
    match (t.first(), t.last()) {
        (Some(f), Some(l)) if f.rmin != 1 || f.rmax != 1 || l.rmin != ns || l.rmax != ns => {
            Err(err("first and last tuples must be exact"))
        }
        (None, _) if ns > 0 => Err(err("a non-empty summary has no tuples")),
        _ => Ok(t),
    }
}

/// Decode a payload whose envelope was already checked; never panics.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    if header.params.len() != 1 || header.seed != 0 {
        return Err(err("GKQuantiles expects parameters [epsilon] and seed 0"));
    }
    let mut gk = GkQuantiles::with_epsilon(header.params[0]).map_err(|e| SynopsisError::Codec(e.to_string()))?;
    let mut r = Reader::new(payload);
    let n = r.u64()?;
    if n > MAX_ITEMS {
        return Err(SynopsisError::Codec(format!("{n} items is more than a synopsis can have summarized")));
    }
    let b = r.count(8)?;
    if b >= BUFFER {
        return Err(err("buffer longer than its capacity"));
    }
    let ns = n.checked_sub(b as u64).ok_or_else(|| err("buffer longer than the stream"))?;
    for _ in 0..b {
        let x = r.f64()?;
        if x.is_nan() || (x == 0.0 && x.is_sign_negative()) {
            return Err(err("a buffered value is NaN or -0"));
        }
        gk.buf.push(key(x));
    }
    gk.tuples = read_tuples(&mut r, gk.epsilon, ns)?;
    r.finish()?;
    gk.n = n;
    Ok(Box::new(gk))
}
