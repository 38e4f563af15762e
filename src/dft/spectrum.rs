//! What the DFT's queries read of its state ([`Spectrum`]): the committed window's length, the
//! normalized coefficients and whether the window is constant. `Vector`, `Total` and the
//! pair `Correlation` are computed from it alone, so a holder of only the spectrum — a cloud
//! job answering continuous queries from the query view an edge device ships while it keeps
//! the DFT itself (`saams-edge --resident`) — answers them bit for bit as the DFT would.

use crate::{Estimate, EstimateValue, Kind, SynopsisError};

/// The part of a DFT's state its queries read.
#[derive(Clone, Debug, PartialEq)]
pub struct Spectrum {
    /// Points pushed in total (`Total`).
    pub n: u64,
    /// Committed window length (0: no complete basic window yet).
    pub m: usize,
    /// False for an empty or constant window (no correlation, coefficients all zero).
    pub centered: bool,
    /// The normalized coefficients `X_1..X_c` as (re, im).
    pub coefficients: Vec<(f64, f64)>,
}

impl Spectrum {
    /// Energy fraction of the normalized window outside the kept coefficients (and their
    /// conjugates): `1 − 2 Σ |X_f|²`, clamped at 0.
    pub fn dropped_energy(&self) -> f64 {
        let kept: f64 = self.coefficients.iter().map(|(r, i)| r * r + i * i).sum();
        (1.0 - 2.0 * kept).max(0.0)
    }

    /// The `Vector` query's answer: the coefficients (re, im pairs), the dropped energy as the
    /// upper bound (1 for a constant window).
    ///
    /// # Errors
    /// [`SynopsisError::NotYet`] before the first complete basic window.
    pub fn vector(&self) -> Result<Estimate, SynopsisError> {
        if self.m == 0 {
            return Err(SynopsisError::NotYet { kind: Kind::Dft, reason: "no complete basic window yet".into() });
        }
        let v = self.coefficients.iter().flat_map(|(r, i)| [*r, *i]).collect();
        let dropped = if self.centered { self.dropped_energy() } else { 1.0 };
        Ok(Estimate { value: EstimateValue::Vector(v), lower: 0.0, upper: dropped, confidence: 1.0 })
    }

    /// The `Total` query's answer.
    pub fn total(&self) -> Estimate {
        let n = self.n as f64;
        Estimate::number(n, n, n, 1.0)
    }

    /// The Pearson correlation of two windows of DFTs with the same parameters (the caller
    /// checks them): see [`crate::Dft`]'s guarantees.
    ///
    /// # Errors
    /// [`SynopsisError::NotYet`] for windows of different lengths or too short,
    /// [`SynopsisError::BadQuery`] for a constant window.
    pub fn correlation(&self, other: &Spectrum) -> Result<Estimate, SynopsisError> {
        let m = self.m;
        if m != other.m || 2 * self.coefficients.len() >= m {
            return Err(SynopsisError::NotYet {
                kind: Kind::Dft,
                reason: format!(
                    "windows of {m} and {} points: correlation needs equal windows longer than 2·#coefficients",
                    other.m
                ),
            });
        }
        if !self.centered || !other.centered {
            return Err(SynopsisError::BadQuery {
                kind: Kind::Dft,
                reason: "a constant window has no correlation".into(),
            });
        }
        let (x, y) = (&self.coefficients, &other.coefficients);
        let kept: f64 = 2.0 * x.iter().zip(y).map(|(a, b)| a.0 * b.0 + a.1 * b.1).sum::<f64>();
        let (ex, ey) = (self.dropped_energy(), other.dropped_energy());
        let slack = (ex * ey).sqrt() + 1e-9;
        let (lower, upper) = ((kept - slack).max(-1.0), (kept + slack).min(1.0));
        // The correlation of the low-pass (kept) parts, as StatStream reports it (identical
        // windows → 1), clamped into the guaranteed interval.
        let low_pass = kept / ((1.0 - ex) * (1.0 - ey)).sqrt().max(f64::MIN_POSITIVE);
        Ok(Estimate::number(low_pass.clamp(lower, upper), lower, upper, 1.0))
    }
}
