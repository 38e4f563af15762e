//! The one error type of the parsers: what was wrong, in which file, at which line.

use std::fmt;

/// A malformed row (or an unreadable file), located by file and 1-based line number.
///
/// Readers report it and go on with the next line; it never stops a replay.
///
/// ```
/// use saams_datasets::ParseError;
/// let e = ParseError::new("ticks.csv", 7, "bad price \"x\"");
/// assert_eq!(e.to_string(), "ticks.csv:7: bad price \"x\"");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The file as given (or `<stdin>`, or `<line>` for a line parsed without a file).
    pub file: String,
    /// 1-based line number; 0 when the error concerns the whole file (missing, unreadable,
    /// unknown format).
    pub line: u64,
    /// What is wrong, naming the column or value.
    pub message: String,
}

impl ParseError {
    /// An error at `file:line`.
    pub fn new(file: impl Into<String>, line: u64, message: impl Into<String>) -> ParseError {
        ParseError { file: file.into(), line, message: message.into() }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for ParseError {}
