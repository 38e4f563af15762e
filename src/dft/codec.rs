//! DFT byte layout. Envelope parameters: `[interval s, basic window, sliding window,
//! #coefficients]`, seed 0. Only the raw state is stored; the coefficients are recomputed
//! exactly on decode (so the bytes do not depend on floating drift of the incremental update).
//!
//! | field | encoding |
//! |---|---|
//! | points added `n` | u64 LE |
//! | kept points `k` (= min(n, window + basic)) | varint, then k × f64 LE, oldest first |
//! | open interval flag | u8 (0 / 1); if 1: interval index i64 LE, last value f64 LE |
//! | first interval flag | u8 (0 / 1); if 1: interval index i64 LE |
//! | *optional* exact state ([`crate::Synopsis::encode_exact`], checkpoints) | u8 1, committed length varint, shift, sum, sum of squares f64 LE, slides varint, then #coefficients × (re, im) f64 LE |
//!
//! Without the optional section the coefficients are recomputed exactly on decode; with it the
//! decoded synopsis carries the incrementally updated ones, so it goes on bit for bit as the
//! encoded one would (their last digits depend on the updates since the last recomputation).

use std::collections::VecDeque;

use super::sketch::Dft;
use crate::codec::{Header, Reader, ToBytes, Writer, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

fn codec_err(reason: impl Into<String>) -> SynopsisError {
    SynopsisError::Codec(reason.into())
}

impl ToBytes for Dft {
    fn to_bytes(&self) -> Vec<u8> {
        encode(self, false)
    }

    /// With the incrementally updated coefficients and sums, which [`ToBytes::to_bytes`] leaves
    /// out (decoding recomputes them, exactly but not bit for bit as updates left them).
    fn to_exact_bytes(&self) -> Vec<u8> {
        encode(self, true)
    }
}

/// The synopsis as envelope + raw-state payload (`exact`: with its derived state too).
fn encode(s: &Dft, exact: bool) -> Vec<u8> {
    let mut w = Writer::with_capacity(32 + 8 * s.buf.len());
    w.u64(s.n);
    w.varint(s.buf.len() as u64);
    for x in &s.buf {
        w.f64(*x);
    }
    match s.open {
        Some((b, v)) => {
            w.u8(1);
            w.i64(b);
            w.f64(v);
        }
        None => w.u8(0),
    }
    match s.first_bucket {
        Some(b) => {
            w.u8(1);
            w.i64(b);
        }
        None => w.u8(0),
    }
    if exact {
        let (m, sums, slides, re, im) = s.derived();
        w.u8(1);
        w.varint(m as u64);
        sums.iter().for_each(|&x| w.f64(x));
        w.varint(slides as u64);
        for (r, i) in re.iter().zip(im) {
            w.f64(*r);
            w.f64(*i);
        }
    }
    let params = [s.interval_s, s.basic as f64, s.window as f64, s.coeffs as f64];
    encode_envelope(Kind::Dft, 0, &params, &w.into_inner())
}

fn whole(x: f64, what: &str) -> Result<usize, SynopsisError> {
    if x.fract() == 0.0 && (1.0..=super::sketch::MAX_WINDOW as f64).contains(&x) {
        Ok(x as usize)
    } else {
        Err(codec_err(format!("DFT {what} {x} out of range")))
    }
}

/// Rebuild a [`Dft`] from a checked envelope; never panics.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let [interval, basic, window, coeffs] = header.params.as_slice() else {
        return Err(codec_err("DFT expects 4 parameters"));
    };
    if header.seed != 0 {
        return Err(codec_err("DFT has no seed: header seed must be 0"));
    }
    let s =
        Dft::new(*interval, whole(*basic, "basic window")?, whole(*window, "window")?, whole(*coeffs, "coefficients")?)
            .map_err(|e| codec_err(format!("DFT parameters: {e}")))?;
    let mut r = Reader::new(payload);
    let n = r.u64()?;
    let k = r.count(8)?;
    if k as u64 != n.min((s.window + s.basic) as u64) {
        return Err(codec_err(format!("DFT keeps {k} points, expected min({n}, window + basic)")));
    }
    let mut buf = VecDeque::with_capacity(k);
    for _ in 0..k {
        let x = r.f64()?;
        if !x.is_finite() {
            return Err(codec_err("DFT point is not finite"));
        }
        buf.push_back(x);
    }
    let open = match r.u8()? {
        0 => None,
        1 => {
            let (b, v) = (r.i64()?, r.f64()?);
            if !v.is_finite() {
                return Err(codec_err("DFT open value is not finite"));
            }
            Some((b, v))
        }
        t => return Err(codec_err(format!("DFT open-interval flag {t}"))),
    };
    let first = match r.u8()? {
        0 => None,
        1 => Some(r.i64()?),
        t => return Err(codec_err(format!("DFT first-interval flag {t}"))),
    };
    if open.is_some() != first.is_some() {
        return Err(codec_err("DFT interval state is inconsistent"));
    }
    let s = s.with_raw_state(n, buf, open, first);
    if r.is_empty() {
        return Ok(Box::new(s));
    }
    // The exact state of a checkpoint.
    if r.u8()? != 1 {
        return Err(codec_err("DFT exact-state flag must be 1"));
    }
    let m = r.varint()?;
    if m > s.window as u64 {
        return Err(codec_err(format!("DFT committed length {m} exceeds the window {}", s.window)));
    }
    let sums = [r.f64()?, r.f64()?, r.f64()?];
    let slides = r.varint()?;
    if slides > (super::sketch::RECOMPUTE_WINDOWS * s.window) as u64 {
        return Err(codec_err(format!("DFT slides {slides} beyond the recomputation period")));
    }
    let (mut re, mut im) = (Vec::with_capacity(s.coeffs), Vec::with_capacity(s.coeffs));
    for _ in 0..s.coeffs {
        re.push(r.f64()?);
        im.push(r.f64()?);
    }
    if sums.iter().chain(&re).chain(&im).any(|x| !x.is_finite()) {
        return Err(codec_err("DFT exact state is not finite"));
    }
    r.finish()?;
    Ok(Box::new(s.with_derived(m as usize, sums, slides as usize, re, im)))
}
