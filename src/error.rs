//! Errors of the synopses library: every one says what was wrong with which input.

use std::fmt;

use crate::Kind;

/// What went wrong when constructing, merging, querying or decoding a synopsis.
#[derive(Clone, Debug, PartialEq)]
pub enum SynopsisError {
    /// No synopsis kind has this `synopsisID`.
    UnknownKind(u64),
    /// A construct parameter is missing, non-numeric or out of range.
    BadParameter {
        /// The kind being constructed.
        kind: Kind,
        /// What is wrong, naming the parameter.
        reason: String,
    },
    /// Two synopses differ in kind, parameters or seed and cannot be merged or compared.
    Incompatible {
        /// The receiving kind.
        kind: Kind,
        /// What differs.
        reason: String,
    },
    /// The kind cannot answer this query.
    UnsupportedQuery {
        /// The kind asked.
        kind: Kind,
        /// The query, as text.
        query: String,
    },
    /// The query's argument is out of range (e.g. a quantile outside [0, 1]).
    BadQuery {
        /// The kind asked.
        kind: Kind,
        /// What is wrong.
        reason: String,
    },
    /// The synopsis cannot answer yet: it has not seen enough values (an empty quantile sketch,
    /// a DFT before its first complete basic window). Not an error of the request: answers say
    /// `"estimate":null` with the reason, and a later window answers.
    NotYet {
        /// The kind asked.
        kind: Kind,
        /// What it still needs.
        reason: String,
    },
    /// Bytes that are not a valid encoding (truncated, corrupted, unknown version).
    Codec(String),
}

impl fmt::Display for SynopsisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SynopsisError::UnknownKind(id) => write!(f, "unknown synopsisID {id}"),
            SynopsisError::BadParameter { kind, reason } => write!(f, "bad parameter for {kind}: {reason}"),
            SynopsisError::Incompatible { kind, reason } => write!(f, "incompatible {kind} synopses: {reason}"),
            SynopsisError::UnsupportedQuery { kind, query } => write!(f, "{kind} cannot answer {query}"),
            SynopsisError::BadQuery { kind, reason } => write!(f, "bad query for {kind}: {reason}"),
            SynopsisError::NotYet { kind, reason } => write!(f, "{kind} cannot answer yet: {reason}"),
            SynopsisError::Codec(reason) => write!(f, "cannot decode synopsis: {reason}"),
        }
    }
}

impl std::error::Error for SynopsisError {}

impl SynopsisError {
    /// `Ok` when two synopses of `kind` agree in what a merge needs alike (`same`), else
    /// [`SynopsisError::Incompatible`] with `differs()` (formatted only then, off the merge's
    /// hot path): the check every fixed-shape kind makes before merging.
    pub(crate) fn unless_compatible(
        kind: Kind,
        same: bool,
        differs: impl FnOnce() -> String,
    ) -> Result<(), SynopsisError> {
        if same { Ok(()) } else { Err(SynopsisError::Incompatible { kind, reason: differs() }) }
    }

    /// `Ok` when `x` lies in (0, 1), else [`SynopsisError::BadParameter`] saying that `name`
    /// must: the range of every accuracy target a constructor takes (ε, δ, confidence, rsd, fpp).
    pub(crate) fn unless_fraction(kind: Kind, name: &str, x: f64) -> Result<(), SynopsisError> {
        if x > 0.0 && x < 1.0 {
            Ok(())
        } else {
            Err(SynopsisError::BadParameter { kind, reason: format!("{name} must be in (0, 1), got {x}") })
        }
    }
}
