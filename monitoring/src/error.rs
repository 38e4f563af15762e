//! What goes wrong in the monitoring library, and the window check every sliding-window
//! structure shares.

use std::fmt;

/// What went wrong in the monitoring library.
#[derive(Clone, Debug, PartialEq)]
pub enum MonitorError {
    /// A parameter out of range, naming it.
    BadParameter(String),
    /// Input that breaks the model (time running backwards, an item later than the tardiness).
    BadInput(String),
    /// Bytes that are not a valid message.
    Codec(String),
}

impl fmt::Display for MonitorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MonitorError::BadParameter(r) => write!(f, "bad monitoring parameter: {r}"),
            MonitorError::BadInput(r) => write!(f, "bad monitoring input: {r}"),
            MonitorError::Codec(r) => write!(f, "cannot decode message: {r}"),
        }
    }
}

impl std::error::Error for MonitorError {}

/// The window and tardiness every sliding-window structure here is built for: `window > 0`,
/// `0 ≤ tardiness < window`.
pub(crate) fn check_window(window: i64, tardiness: i64) -> Result<(), MonitorError> {
    if window <= 0 {
        return Err(MonitorError::BadParameter(format!("window must be positive, got {window}")));
    }
    if !(0..window).contains(&tardiness) {
        return Err(MonitorError::BadParameter(format!("tardiness must be in 0..window ({window}), got {tardiness}")));
    }
    Ok(())
}

impl From<saams::SynopsisError> for MonitorError {
    fn from(e: saams::SynopsisError) -> Self {
        MonitorError::Codec(e.to_string())
    }
}
