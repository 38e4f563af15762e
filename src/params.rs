//! Reading a request's construct parameters (JSON values, exactly as the reference request
//! files carry them) with a clear error for each way they can be wrong.

use serde_json::Value as Json;

use crate::{Kind, SynopsisError};

/// The construct parameters of one request: `param[3..]` of the reference form.
///
/// ```
/// use saams::{params::Params, Kind};
/// let raw = serde_json::json!([0.002, "0.99", 12345]);
/// let p = Params::new(Kind::CountMin, raw.as_array().unwrap());
/// assert_eq!(p.fraction(0, "epsilon").unwrap(), 0.002);
/// assert_eq!(p.fraction(1, "confidence").unwrap(), 0.99);
/// assert_eq!(p.u64(2, "seed").unwrap(), 12345);
/// assert!(p.fraction(3, "missing").is_err());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Params<'a> {
    kind: Kind,
    values: &'a [Json],
}

impl<'a> Params<'a> {
    /// Parameters for constructing a `kind`.
    pub fn new(kind: Kind, values: &'a [Json]) -> Self {
        Params { kind, values }
    }

    /// The kind being constructed.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Number of parameters given.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when no parameter was given.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// An error about parameter `name`.
    pub fn error(&self, reason: impl Into<String>) -> SynopsisError {
        SynopsisError::BadParameter { kind: self.kind, reason: reason.into() }
    }

    /// Require between `min` and `max` parameters.
    ///
    /// # Errors
    /// When the count is outside that range.
    pub fn arity(&self, min: usize, max: usize) -> Result<(), SynopsisError> {
        let n = self.values.len();
        if n < min || n > max {
            let want = if min == max { format!("{min}") } else { format!("{min} to {max}") };
            return Err(self.error(format!("expected {want} parameters, got {n}")));
        }
        Ok(())
    }

    /// True when parameter `i` is present.
    pub fn has(&self, i: usize) -> bool {
        i < self.values.len()
    }

    /// Parameter `i` as a finite number (JSON numbers and numeric strings are accepted).
    ///
    /// # Errors
    /// When it is missing, not numeric, or not finite.
    pub fn number(&self, i: usize, name: &str) -> Result<f64, SynopsisError> {
        let v = self.values.get(i).ok_or_else(|| self.error(format!("{name} (parameter {}) is missing", i + 1)))?;
        let x = match v {
            Json::Number(n) => n.as_f64(),
            Json::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match x {
            Some(x) if x.is_finite() => Ok(x),
            _ => Err(self.error(format!("{name} must be a number, got {v}"))),
        }
    }

    /// Parameter `i` as a number strictly between 0 and 1 (ε, δ, confidence, fpp, rsd).
    ///
    /// # Errors
    /// When it is missing, not numeric, or outside (0, 1).
    pub fn fraction(&self, i: usize, name: &str) -> Result<f64, SynopsisError> {
        let x = self.number(i, name)?;
        if x <= 0.0 || x >= 1.0 {
            return Err(self.error(format!("{name} must be in (0, 1), got {x}")));
        }
        Ok(x)
    }

    /// Parameter `i` as a whole number ≥ `min`.
    ///
    /// # Errors
    /// When it is missing, not numeric, fractional, or below `min`.
    pub fn integer(&self, i: usize, name: &str, min: u64) -> Result<u64, SynopsisError> {
        let x = self.number(i, name)?;
        if x.fract() != 0.0 || !(0.0..=9.007_199_254_740_992e15).contains(&x) {
            return Err(self.error(format!("{name} must be a whole number, got {x}")));
        }
        let n = x as u64;
        if n < min {
            return Err(self.error(format!("{name} must be at least {min}, got {n}")));
        }
        Ok(n)
    }

    /// Parameter `i` as a seed (any whole number ≥ 0).
    ///
    /// # Errors
    /// When it is missing, not numeric, negative or fractional.
    pub fn u64(&self, i: usize, name: &str) -> Result<u64, SynopsisError> {
        self.integer(i, name, 0)
    }
}
