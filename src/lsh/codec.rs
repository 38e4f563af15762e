//! LSH byte layout. Envelope parameters: `[window, dimensions, bands]`; envelope seed: the
//! hyperplane seed (the hyperplanes are regenerated from it, never stored).
//!
//! | field | encoding |
//! |---|---|
//! | values added `n` | u64 LE |
//! | window values `k` (= min(n, window)) | varint, then k × f64 LE, oldest first |

use std::collections::VecDeque;

use super::sketch::{Lsh, MAX_MATRIX};
use crate::codec::{Header, Reader, ToBytes, Writer, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

fn codec_err(reason: impl Into<String>) -> SynopsisError {
    SynopsisError::Codec(reason.into())
}

impl ToBytes for Lsh {
    /// The synopsis as envelope + window payload.
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(16 + 8 * self.buf.len());
        w.u64(self.n);
        w.varint(self.buf.len() as u64);
        for x in &self.buf {
            w.f64(*x);
        }
        encode_envelope(
            Kind::Lsh,
            self.seed,
            &[self.window as f64, self.dims as f64, self.bands as f64],
            &w.into_inner(),
        )
    }
}

fn whole(x: f64, what: &str) -> Result<usize, SynopsisError> {
    if x.fract() == 0.0 && (1.0..=MAX_MATRIX as f64).contains(&x) {
        Ok(x as usize)
    } else {
        Err(codec_err(format!("LSH {what} {x} out of range")))
    }
}

/// Rebuild an [`Lsh`] from a checked envelope; never panics.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let [window, dims, bands] = header.params.as_slice() else {
        return Err(codec_err("LSH expects 3 parameters"));
    };
    let mut s = Lsh::new(whole(*window, "window")?, whole(*dims, "dimensions")?, whole(*bands, "bands")?, header.seed)
        .map_err(|e| codec_err(format!("LSH parameters: {e}")))?;
    let mut r = Reader::new(payload);
    let n = r.u64()?;
    let k = r.count(8)?;
    if k as u64 != n.min(s.window as u64) {
        return Err(codec_err(format!("LSH keeps {k} values, expected min({n}, window)")));
    }
    let mut buf = VecDeque::with_capacity(k);
    for _ in 0..k {
        let x = r.f64()?;
        if !x.is_finite() {
            return Err(codec_err("LSH value is not finite"));
        }
        buf.push_back(x);
    }
    r.finish()?;
    s.n = n;
    s.buf = buf;
    Ok(Box::new(s))
}
