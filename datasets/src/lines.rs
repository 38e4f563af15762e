//! Lines of a byte stream, read in large blocks, with UTF-8 validated once per block.
//!
//! Why: reading line by line through `BufRead::read_line` validates UTF-8 on every line and
//! scans for the newline byte by byte; on JSON lines that was ~20 % of an ingest profile. Here the
//! newline search is `memchr` (SIMD) and validation runs once over all the complete lines of a
//! block, with SIMD (`simdutf8`: `std::str::from_utf8` took 2.0-2.6x as long on ASCII lines), turning
//! the block into a `String` without copying it. A block with an invalid byte is
//! not rejected whole: the lines before the bad byte are valid text, and only the line holding it
//! is reported as [`Line::NotUtf8`].

use std::io::{self, Read};

/// One line, with its line end (`\n`, or none at the end of the input).
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A line of valid UTF-8.
    Text(&'a str),
    /// A line holding bytes that are not UTF-8.
    NotUtf8(&'a [u8]),
}

/// What [`LineReader::next_parsed_or_line`] gives: the line taken by the caller's parser, or the
/// line itself.
#[derive(Debug, PartialEq, Eq)]
pub enum Ahead<'a> {
    /// The caller's parser took the line (its result is the caller's).
    Parsed,
    /// The line, for the caller to parse.
    Line(Line<'a>),
}

/// True if the first `n` bytes of `text` (a block's unread lines) are whole lines: `n` is past a
/// line end, or the text's end (where the last line of the input lacks one).
#[inline(always)]
fn ends_line(text: &[u8], n: usize) -> bool {
    n > 0 && (n == text.len() || text.get(n - 1) == Some(&b'\n'))
}

/// Lines of a reader, in order; see the [module docs](self).
///
/// ```
/// use saams_datasets::lines::{Line, LineReader};
/// let input: &[u8] = b"a,1\n\xffb\nlast";
/// let mut r = LineReader::new(input);
/// assert_eq!(r.next_line().unwrap(), Some((Line::Text("a,1\n"), 4)));
/// assert_eq!(r.next_line().unwrap(), Some((Line::NotUtf8(b"\xffb\n"), 3)));
/// assert_eq!(r.next_line().unwrap(), Some((Line::Text("last"), 4)));
/// assert_eq!(r.next_line().unwrap(), None);
/// ```
pub struct LineReader<R> {
    inner: R,
    /// Validated complete lines of the current block (the last may lack its line end only at the
    /// end of the input); `text[pos..]` is unread. A `String`, so lines are sliced out of it
    /// without validating them again.
    text: String,
    pos: usize,
    /// Bytes read after `text`, not validated yet, are `raw[..filled]`; they start at a line
    /// start. The rest of `raw` is room for the next read.
    raw: Vec<u8>,
    filled: usize,
    /// The size `raw` is grown to: from [`FIRST_BLOCK`], doubling up to `most`.
    block: usize,
    /// The largest block: [`BLOCK`], or less for a reader of short parts ([`Self::restart`]).
    most: usize,
    /// The invalid line handed out last.
    bad: Vec<u8>,
    eof: bool,
}

/// The block size: large enough that the per-block work (a `read` call, moving a partial line to
/// the next block) vanishes next to the lines' parsing.
const BLOCK: usize = 1 << 20;

/// The first block's size.
const FIRST_BLOCK: usize = 1 << 16;

/// What [`LineReader::prepare`] found.
enum Next {
    Text,
    Bad,
}

impl<R: Read> LineReader<R> {
    /// Lines of `inner`, read in blocks growing from 64 KiB to 1 MiB (more for longer lines).
    pub fn new(inner: R) -> LineReader<R> {
        LineReader {
            inner,
            text: String::new(),
            pos: 0,
            raw: Vec::new(),
            filled: 0,
            block: FIRST_BLOCK,
            most: BLOCK,
            bad: Vec::new(),
            eof: false,
        }
    }

    /// Read on from `inner` instead, dropping what was read and not handed out yet, in blocks of
    /// `block` bytes (at least 64 KiB, at most 1 MiB): a part of a file of known length (a stripe
    /// and its last line) is then read in one block. The blocks' memory is kept: a reader moved
    /// from one part of a file to another (a striped unit moving to its next stripe) allocated
    /// and faulted in its blocks again each time when made anew (~25 % more CPU for a file in
    /// 1 MiB stripes), and a block larger than the part was zeroed again to its length before
    /// each read (as the short block of the part's end came round as the buffer read into).
    ///
    /// ```
    /// use saams_datasets::lines::{Line, LineReader};
    /// let mut r = LineReader::new(&b"a\nb\nc\n"[..]);
    /// assert_eq!(r.next_line().unwrap(), Some((Line::Text("a\n"), 2)));
    /// r.restart(&b"x\ny"[..], 100_000);
    /// assert_eq!(r.next_line().unwrap(), Some((Line::Text("x\n"), 2)));
    /// assert_eq!(r.next_line().unwrap(), Some((Line::Text("y"), 1)));
    /// assert_eq!(r.next_line().unwrap(), None);
    /// ```
    pub fn restart(&mut self, inner: R, block: usize) {
        self.inner = inner;
        // Nothing unread; the spent text keeps its length (room for the next read, not zeroed
        // again: see `prepare`).
        self.pos = self.text.len();
        self.filled = 0;
        self.bad.clear();
        self.eof = false;
        self.most = block.clamp(FIRST_BLOCK, BLOCK);
        self.block = self.most;
    }

    /// The next line and its length in bytes (line end included), or `None` at the end.
    ///
    /// # Errors
    /// When reading the underlying input fails (interrupted reads are retried).
    #[inline]
    pub fn next_line(&mut self) -> io::Result<Option<(Line<'_>, usize)>> {
        match self.prepare()? {
            None => Ok(None),
            Some(Next::Bad) => Ok(Some((Line::NotUtf8(&self.bad), self.bad.len()))),
            Some(Next::Text) => Ok(self.text_line()),
        }
    }

    /// The next line of `text` (after [`Self::prepare`] found one), found by a newline search.
    #[inline(always)]
    fn text_line(&mut self) -> Option<(Line<'_>, usize)> {
        let start = self.pos;
        let rest = &self.text.as_bytes()[start..];
        let n = memchr::memchr(b'\n', rest).map_or(rest.len(), |p| p + 1);
        self.pos += n;
        // `text` is a String and `start`, `start + n` are at line ends (ASCII) or its end.
        self.text.get(start..start + n).map(|line| (Line::Text(line), n))
    }

    /// The next line, offered first to `parse` inside its block: `parse` gets the unread text
    /// of the block (valid UTF-8, starting at the line and holding it whole, usually with many
    /// lines after it) and, when it takes the line, returns the line's length with its line end
    /// (so the text's next byte starts a line, or the text ends there). The line is then passed
    /// over ([`Ahead::Parsed`]); otherwise it is handed out as [`Self::next_line`] would. The
    /// length (line end included) comes with either.
    ///
    /// Why: a parser that finds the line's end as part of its parse (the JSON-lines reference
    /// form's closing brace and the newline after it, [`crate::jsonl::parse_reference_line`])
    /// saves the newline search a line (`memchr`, ~85 instructions on a 127-byte line) and the
    /// slicing and trimming of the line around the parse. A length that does not end a line
    /// (not after a `\n`, nor the text's end) is not taken: the line is handed out instead.
    ///
    /// ```
    /// use saams_datasets::lines::{Ahead, Line, LineReader};
    /// let input: &[u8] = b"take 5\nleave\ntake 9";
    /// let mut r = LineReader::new(input);
    /// let mut take = |text: &str| text.starts_with("take").then(|| text.find('\n').map_or(text.len(), |p| p + 1));
    /// assert!(matches!(r.next_parsed_or_line(&mut take).unwrap(), Some((Ahead::Parsed, 7))));
    /// assert!(matches!(r.next_parsed_or_line(&mut take).unwrap(), Some((Ahead::Line(Line::Text("leave\n")), 6))));
    /// assert!(matches!(r.next_parsed_or_line(&mut take).unwrap(), Some((Ahead::Parsed, 6))));
    /// assert!(r.next_parsed_or_line(&mut take).unwrap().is_none());
    /// ```
    ///
    /// # Errors
    /// As [`Self::next_line`].
    #[inline]
    pub fn next_parsed_or_line(
        &mut self,
        parse: impl FnOnce(&str) -> Option<usize>,
    ) -> io::Result<Option<(Ahead<'_>, usize)>> {
        // An unread line in the block (all but one line a block) is decided here, without the
        // call to `prepare` (~20 instructions a line for its prologue, epilogue and result).
        let next = if self.pos < self.text.len() { Some(Next::Text) } else { self.prepare()? };
        match next {
            None => Ok(None),
            Some(Next::Bad) => Ok(Some((Ahead::Line(Line::NotUtf8(&self.bad)), self.bad.len()))),
            Some(Next::Text) => {
                // `text` is a String and `pos` is at a line start (after an ASCII line end).
                if let Some(rest) = self.text.get(self.pos..)
                    && let Some(n) = parse(rest).filter(|&n| ends_line(rest.as_bytes(), n))
                {
                    self.pos += n;
                    return Ok(Some((Ahead::Parsed, n)));
                }
                Ok(self.text_line().map(|(line, n)| (Ahead::Line(line), n)))
            }
        }
    }

    /// Make sure `text` has an unread line (`Next::Text`), or put the next line, which is not
    /// UTF-8, in `bad` (`Next::Bad`); `None` at the end of the input.
    #[inline(never)]
    fn prepare(&mut self) -> io::Result<Option<Next>> {
        if self.pos < self.text.len() {
            return Ok(Some(Next::Text));
        }
        // The next block: what is read (a block of a file, what a pipe holds) up to its last
        // line end; the partial line after it stays in `raw` for the next block. Reads only when
        // `raw` holds no complete line, so a line from a pipe is handed on as soon as it arrives.
        let mut complete = memchr::memrchr(b'\n', &self.raw[..self.filled]).map_or(0, |p| p + 1);
        while complete == 0 && !self.eof {
            let old = self.filled;
            self.read_more()?;
            complete = memchr::memrchr(b'\n', &self.raw[old..self.filled]).map_or(0, |p| old + p + 1);
        }
        if self.eof {
            complete = self.filled;
        }
        if complete == 0 {
            return Ok(None);
        }
        // Reuse the spent text's allocation for the partial line; the complete lines become the
        // text. The spent text keeps its length (its bytes are initialized, and become room for
        // the next read): cleared, it was zero-filled again by `read_more` before every block
        // (a 1 MiB `memset` per MiB read, ~2 % of a JSON-lines ingest).
        let mut block = std::mem::take(&mut self.text).into_bytes();
        let partial = self.filled - complete;
        if block.len() < partial {
            block.resize(partial, 0);
        }
        block[..partial].copy_from_slice(&self.raw[complete..self.filled]);
        self.raw.truncate(complete);
        std::mem::swap(&mut block, &mut self.raw);
        self.filled = partial;
        self.pos = 0;
        // SIMD validation first (the standard library's takes 2.0-2.6x as long on ASCII lines);
        // only a block that fails it goes through `String::from_utf8`, for where it fails.
        if simdutf8::basic::from_utf8(&block).is_ok() {
            // SAFETY: `block` was just validated as UTF-8.
            self.text = unsafe { String::from_utf8_unchecked(block) };
            return Ok(Some(Next::Text));
        }
        match String::from_utf8(block) {
            Ok(text) => {
                self.text = text;
                Ok(Some(Next::Text))
            }
            Err(e) => {
                // The lines before the invalid byte are text; the line holding it is `bad`;
                // everything after goes back to `raw` to be validated with the next block.
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                let good = memchr::memrchr(b'\n', &bytes[..valid]).map_or(0, |p| p + 1);
                let cut = if good > 0 { good } else { memchr::memchr(b'\n', &bytes).map_or(bytes.len(), |p| p + 1) };
                let mut rest = bytes.split_off(cut);
                rest.extend_from_slice(&self.raw[..self.filled]);
                self.filled = rest.len();
                self.raw = rest;
                if good == 0 {
                    self.bad = bytes;
                    return Ok(Some(Next::Bad));
                }
                match String::from_utf8(bytes) {
                    Ok(text) => {
                        self.text = text;
                        Ok(Some(Next::Text))
                    }
                    // Not reached (the bytes end before the invalid one); hand them out as bad
                    // rather than lose them.
                    Err(e) => {
                        self.bad = e.into_bytes();
                        Ok(Some(Next::Bad))
                    }
                }
            }
        }
    }

    /// Read more input after `raw[..filled]` (growing `raw` when it is full; a read fills what a
    /// file or pipe has, never waiting for more); sets `eof` at the end of the input.
    fn read_more(&mut self) -> io::Result<()> {
        let want = self.block.max(2 * self.filled);
        if self.raw.len() < want {
            // Once per block (or per doubling for a long line), not per read.
            self.raw.resize(want, 0);
            // Small inputs (a short byte range, a few lines) never pay for a whole block.
            self.block = (2 * self.block).min(self.most);
        }
        loop {
            match self.inner.read(&mut self.raw[self.filled..]) {
                Ok(n) => {
                    self.filled += n;
                    self.eof |= n == 0;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader handing out at most `step` bytes per call, so lines straddle blocks.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn collect(input: &[u8], step: usize) -> Vec<(Result<String, Vec<u8>>, usize)> {
        let mut r = LineReader::new(Trickle(input, step));
        let mut out = Vec::new();
        while let Some((line, n)) = r.next_line().unwrap() {
            out.push((
                match line {
                    Line::Text(s) => Ok(s.to_string()),
                    Line::NotUtf8(b) => Err(b.to_vec()),
                },
                n,
            ));
        }
        out
    }

    #[test]
    fn agrees_with_read_until_and_per_line_validation() {
        let mut input = Vec::new();
        for i in 0..20_000u32 {
            match i % 997 {
                0 => input.extend_from_slice(b"bad \xc3\x28 bytes"),
                1 => input.extend_from_slice("Å café Δ".as_bytes()),
                2 => {}
                3 if i < 4000 => input.extend(std::iter::repeat_n(b'x', 2 * BLOCK + 5)),
                _ => input.extend_from_slice(format!("{{\"n\":{i}}}").as_bytes()),
            }
            input.push(b'\n');
        }
        input.extend_from_slice(b"no line end \xe2\x82");
        let mut expected = Vec::new();
        for chunk in input.split_inclusive(|&b| b == b'\n') {
            let text = std::str::from_utf8(chunk).map(str::to_string).map_err(|_| chunk.to_vec());
            expected.push((text, chunk.len()));
        }
        for step in [usize::MAX, 4093, 65_537] {
            assert_eq!(collect(&input, step), expected, "step {step}");
        }
        assert!(collect(b"", 3).is_empty());
    }
}
