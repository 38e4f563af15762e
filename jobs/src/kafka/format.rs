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
        self.rest.is_some_and(|r| memchr::memchr(b'\n', r).is_some())
    }
}

/// The lines of a payload that is valid UTF-8 as a whole, as [`RecordLines`] splits them (one
/// for a record of one tuple, even empty; a final newline ends the last line).
///
/// Why: validating a batched record's payload once, as the file reader validates a block, and
/// splitting the text costs one pass, where validating each line on its own restarted the
/// validation a thousand times a record. A newline is ASCII, so every line of valid text is
/// valid text.
///
/// ```
/// use saams_jobs::kafka::{RecordLines, text_lines};
/// for payload in ["{}", "", "a\nb\n", "a\n\nb", "\n"] {
///     let text: Vec<&[u8]> = text_lines(payload).map(str::as_bytes).collect();
///     assert_eq!(text, RecordLines::new(payload.as_bytes()).collect::<Vec<_>>(), "{payload:?}");
/// }
/// ```
pub fn text_lines(payload: &str) -> impl Iterator<Item = &str> {
    let text = payload.strip_suffix('\n').unwrap_or(payload);
    // The newlines found with the `memchr` crate's vector search (`str::split` took a slower
    // one); slicing at a newline, an ASCII byte, always falls on a character boundary.
    let ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len()));
    let mut start = 0;
    ends.map(move |end| {
        let line = &text[start..end];
        start = end + 1;
        line
    })
}

/// Hands each line of `payload` after the first `skip` to `f(line number, bytes, text)`, where
/// text is the line as UTF-8 or why it is not. The payload is validated once as a whole (see
/// [`text_lines`]); only a payload that is not UTF-8 is split and validated line by line, so the
/// line at fault alone is refused, with its reason.
///
/// ```
/// use saams_jobs::kafka::for_each_line;
/// let mut got = Vec::new();
/// for_each_line(b"a\n\xff\nc\n", 1, |i, bytes, text| got.push((i, bytes.to_vec(), text.is_ok())));
/// assert_eq!(got, [(1, b"\xff".to_vec(), false), (2, b"c".to_vec(), true)]);
/// ```
pub fn for_each_line(payload: &[u8], skip: usize, mut f: impl FnMut(usize, &[u8], Result<&str, std::str::Utf8Error>)) {
    // Validated with SIMD, as the file reader validates its blocks (`std::str::from_utf8` was
    // 3 % of a batched run's samples); only an invalid payload is looked at line by line.
    match simdutf8::basic::from_utf8(payload) {
        Ok(whole) => {
            for (line, text) in text_lines(whole).enumerate().skip(skip) {
                f(line, text.as_bytes(), Ok(text));
            }
        }
        Err(_) => {
            for (line, bytes) in RecordLines::new(payload).enumerate().skip(skip) {
                f(line, bytes, std::str::from_utf8(bytes));
            }
        }
    }
}

impl<'a> Iterator for RecordLines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match memchr::memchr(b'\n', rest) {
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
