//! The data topic's record format, which the tuple producer (`replay`) writes and the data-topic
//! source reads: a record carries one JSON tuple, or many as newline-separated JSON lines (the
//! batched format, as log shippers send them; `replay --batch N`).
//!
//! Why its own file: both sides need it and, by this module's rule, neither uses the other.

/// The most lines (tuples) one record of the data topic may carry; lines past it are
/// dead-lettered (`replay --batch` writes at most this many). A power of two: a tuple's sequence
/// number keeps the line in its low bits.
pub const MAX_LINES_PER_RECORD: usize = 1 << 14;

/// The lines of a data record's payload: one for a record of one tuple (the payload itself, even
/// empty), one per newline-separated line for a batched record (a final newline ends the last
/// line, it does not start an empty one). Borrowed from the payload: nothing is copied.
///
/// ```
/// use saams_jobs::kafka::RecordLines;
/// assert_eq!(RecordLines::new(b"{}").count(), 1);
/// let lines: Vec<&[u8]> = RecordLines::new(b"a\nb\n").collect();
/// assert_eq!(lines, [&b"a"[..], b"b"]);
/// assert!(RecordLines::new(b"a\nb").is_batch() && !RecordLines::new(b"a\n").is_batch());
/// ```
#[derive(Debug, Clone)]
pub struct RecordLines<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> RecordLines<'a> {
    /// The lines of `payload`.
    pub fn new(payload: &'a [u8]) -> Self {
        let payload = payload.strip_suffix(b"\n").unwrap_or(payload);
        RecordLines { rest: Some(payload) }
    }

    /// Whether the record carries more than one line (its lines are then numbered in dead letters).
    pub fn is_batch(&self) -> bool {
        self.rest.is_some_and(|r| r.contains(&b'\n'))
    }
}

impl<'a> Iterator for RecordLines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match rest.iter().position(|&b| b == b'\n') {
            Some(i) => {
                self.rest = Some(&rest[i + 1..]);
                Some(&rest[..i])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}
