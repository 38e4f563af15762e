//! File sources: input files, directories and stdin, split into units that workers read whole.
//!
//! A unit is one file, one fixed-size byte range of a large file (so several workers parse it),
//! or stdin. Unit `u` is read by worker `u mod W`; a tuple's arrival sequence is (unit, line), so
//! it does not depend on the number of workers, and neither does the lateness decision (made per
//! unit, in the unit's own order). Lines are parsed by `saams_datasets` (JSON lines, stock text,
//! stock CSV, AIS CSV).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use saams::api::Tuple;
use saams_datasets::lines::{Ahead, Line, LineReader};
use saams_datasets::{Format, LineContext};

use super::stripes::{STRIPE_BYTES, StripeFile, Stripes, TAIL_READ, open_shared};

/// One input unit.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// A file; the format is detected from name and first line unless given.
    File(PathBuf, Option<Format>),
    /// The lines of a file that start in the byte range `[start, end)`.
    Range(PathBuf, Option<Format>, u64, u64),
    /// The lines of a file that start in one unit's stripes ([`Stripes`]).
    Stripes(PathBuf, Option<Format>, Stripes),
    /// Standard input (JSON lines unless a format is given).
    Stdin(Option<Format>),
}

/// How a file longer than `--chunk-bytes` is cut into byte ranges, each read by one worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeLayout {
    /// The fewest ranges of at most `chunk_bytes`, all of one length but the last, which may be
    /// a few bytes shorter (fewer than there are ranges). Workers read every `W`-th unit, so
    /// with ranges of `chunk_bytes` and a short last one, two workers split a 608 MB file
    /// 5 : 4.5 chunks (52.6 % of the lines on one); equal ranges split it evenly when `W`
    /// divides their number.
    Equal,
    /// Ranges of exactly `chunk_bytes` and a last one of what is left: how files were cut before
    /// [`RangeLayout::Equal`]. A job resumes in it from a checkpoint that names such ranges.
    Fixed,
    /// As many units as [`RangeLayout::Equal`] has ranges, each reading every `U`-th stripe of
    /// at most [`STRIPE_BYTES`] ([`super::stripes`]: why), so the workers of a time-ordered file
    /// read side by side in event time. Where the equal ranges are no longer than
    /// [`STRIPE_BYTES`], the units are those ranges.
    Striped,
}

/// Expand `--data` arguments into units: directories to their files (sorted, recursively;
/// README and other unrecognized files are skipped), files longer than `chunk_bytes` to byte
/// ranges of at most that length (`layout` says which), `-` to stdin.
///
/// ```
/// use saams_jobs::source::file::{Input, RangeLayout, expand_inputs};
/// let path = std::env::temp_dir().join(format!("saams-expand-doc-{}.jsonl", std::process::id()));
/// std::fs::write(&path, vec![b'\n'; 950]).unwrap();
/// let ranges = |layout| -> Vec<(u64, u64)> {
///     let units = expand_inputs(&[path.display().to_string()], None, 200, layout).unwrap();
///     units.iter().map(|u| match u { Input::Range(_, _, a, b) => (*a, *b), _ => panic!("{u:?}") }).collect()
/// };
/// assert_eq!(ranges(RangeLayout::Equal), [(0, 190), (190, 380), (380, 570), (570, 760), (760, 950)]);
/// assert_eq!(ranges(RangeLayout::Fixed), [(0, 200), (200, 400), (400, 600), (600, 800), (800, 950)]);
/// std::fs::remove_file(&path).unwrap();
/// ```
///
/// # Errors
/// For a path that does not exist, or standard input (`-`) given more than once.
pub fn expand_inputs(
    data: &[String],
    forced: Option<Format>,
    chunk_bytes: u64,
    layout: RangeLayout,
) -> Result<Vec<Input>, String> {
    let files = expand_files(data, forced)?;
    let mut out = Vec::new();
    for input in files {
        match input {
            Input::File(path, f) => {
                let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                if chunk_bytes == 0 || len <= chunk_bytes {
                    out.push(Input::File(path, f));
                } else {
                    let units = len.div_ceil(chunk_bytes);
                    let step = match layout {
                        RangeLayout::Equal | RangeLayout::Striped => len.div_ceil(units),
                        RangeLayout::Fixed => chunk_bytes,
                    };
                    if layout == RangeLayout::Striped && step > STRIPE_BYTES {
                        out.extend(
                            Stripes::of_file(len, units).into_iter().map(|s| Input::Stripes(path.clone(), f, s)),
                        );
                        continue;
                    }
                    let mut start = 0;
                    while start < len {
                        let end = (start + step).min(len);
                        out.push(Input::Range(path.clone(), f, start, end));
                        start = end;
                    }
                }
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

fn expand_files(data: &[String], forced: Option<Format>) -> Result<Vec<Input>, String> {
    let mut out = Vec::new();
    for d in data {
        if d == "-" {
            if out.iter().any(|i| matches!(i, Input::Stdin(_))) {
                // Two readers of one stdin each buffer their own blocks: a line that crosses a
                // block boundary was split between them (7 of 20,000 lines lost as 8 malformed
                // ones in a test).
                return Err("--data -: standard input is given more than once".into());
            }
            out.push(Input::Stdin(forced));
            continue;
        }
        let path = PathBuf::from(d);
        let meta = std::fs::metadata(&path).map_err(|e| format!("--data {d}: {e}"))?;
        if meta.is_dir() {
            let mut files = Vec::new();
            collect_files(&path, &mut files).map_err(|e| format!("--data {d}: {e}"))?;
            files.sort();
            for f in files {
                if forced.is_some() || Format::detect(&f).is_ok() {
                    out.push(Input::File(f, forced));
                }
            }
        } else {
            out.push(Input::File(path, forced));
        }
    }
    Ok(out)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let p = entry?.path();
        if p.is_dir() {
            collect_files(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// A parsed line: the tuple, or the raw line and why it is not one.
pub type Parsed = Result<Tuple, BadLine>;

/// A line that is not a tuple: the line (trimmed; empty when it could not be read as text) and
/// the message.
pub type BadLine = (String, String);

/// What a line that is not UTF-8 is reported as (the words `BufRead::read_line` used).
const NOT_UTF8: &str = "read error: stream did not contain valid UTF-8";

/// Reads one unit's tuples.
///
/// Lines come from a [`LineReader`] (blocks of 1 MiB, UTF-8 checked once per block), so a line
/// costs its parse and no copy or validation of its own; JSON lines in the reference form are
/// parsed inside the block, the parse finding the line's end (no newline search a line).
pub struct UnitReader {
    ctx: LineContext,
    lines: LineReader<Box<dyn Read + Send>>,
    line_no: u64,
    /// Bytes of lines that may still start in this unit (byte ranges), else `u64::MAX`.
    budget: u64,
    name: String,
    /// The last read found no data yet (a live stdin): not the end, ask again later.
    waiting: bool,
    /// Byte offset (in the file) after the last line read.
    offset: u64,
    /// Byte offset and line number of the last line returned (where re-reading it starts).
    line_start: (u64, u64),
    /// A whole file's path (its length says how far the reader is behind its end).
    whole_file: Option<std::path::PathBuf>,
    /// A striped unit's file, stripes and the stripe being read (boxed: the reader of every
    /// other unit stays as small as it was).
    striped: Option<Box<Striped>>,
}

/// Where a striped unit ([`Input::Stripes`]) is.
struct Striped {
    path: PathBuf,
    /// The file, opened once for all the unit's stripes.
    file: Arc<File>,
    stripes: Stripes,
    /// The start of the stripe being read.
    start: u64,
}

/// The lines that start in `[start, end)` of `file` (at `path`), read by `lines` (restarted
/// there): past the line holding byte `start - 1` (the previous range's). Returns the bytes of
/// the range after it and where its first line starts.
fn range_lines(
    lines: &mut LineReader<Box<dyn Read + Send>>,
    (file, path): (&Arc<File>, &Path),
    start: u64,
    end: u64,
) -> Result<(u64, u64), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let block = (end.saturating_sub(start) as usize).saturating_add(2 * TAIL_READ);
    lines.restart(Box::new(StripeFile::at(file, start.saturating_sub(1), end)), block);
    let mut budget = end.saturating_sub(start);
    if start > 0 {
        let n = match lines.next_line().map_err(err)? {
            Some((_, n)) => n,
            None => 0,
        };
        budget = if n == 0 { 0 } else { budget.saturating_sub(n as u64 - 1) };
    }
    Ok((budget, start + (end.saturating_sub(start) - budget)))
}

/// Standard input for a job that runs as a service: a thread reads it and hands the chunks over,
/// so a worker never blocks in `read` (it keeps taking part in fences, asks and progress while
/// the producer is quiet); `read` says `WouldBlock` while nothing has arrived.
struct LiveStdin {
    chunks: std::sync::mpsc::Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
}

impl LiveStdin {
    fn start() -> LiveStdin {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(64);
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin();
            loop {
                let mut buf = vec![0u8; 1 << 16];
                match stdin.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        buf.truncate(n);
                        if tx.send(buf).is_err() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
        LiveStdin { chunks: rx, chunk: Vec::new(), pos: 0 }
    }
}

impl Read for LiveStdin {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.chunk.len() {
            match self.chunks.try_recv() {
                Ok(chunk) => (self.chunk, self.pos) = (chunk, 0),
                Err(std::sync::mpsc::TryRecvError::Empty) => return Err(std::io::ErrorKind::WouldBlock.into()),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len() - self.pos);
        out[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl UnitReader {
    /// Open a unit (reads a file's first line to detect its format and header).
    ///
    /// # Errors
    /// When the file cannot be opened, its format is unknown, or its header is unusable.
    pub fn open(input: &Input) -> Result<UnitReader, String> {
        match input {
            Input::File(p, f) => {
                let ctx = LineContext::open(p, *f).map_err(|e| e.to_string())?;
                let file = File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
                let mut r = UnitReader::new(ctx, Box::new(file));
                r.whole_file = Some(p.clone());
                Ok(r)
            }
            Input::Range(p, f, start, end) => {
                let ctx = LineContext::open(p, *f).map_err(|e| e.to_string())?;
                let mut r = UnitReader::new(ctx, Box::new(std::io::empty()));
                (r.budget, r.offset) = range_lines(&mut r.lines, (&open_shared(p)?, p), *start, *end)?;
                r.name = format!("{}@{start}", p.display());
                Ok(r)
            }
            Input::Stripes(p, f, stripes) => {
                let ctx = LineContext::open(p, *f).map_err(|e| e.to_string())?;
                let mut r = UnitReader::new(ctx, Box::new(std::io::empty()));
                let file = open_shared(p)?;
                let (first, end) = (stripes.first, stripes.end_of(stripes.first));
                (r.budget, r.offset) = range_lines(&mut r.lines, (&file, p), first, end)?;
                r.striped = Some(Box::new(Striped { path: p.clone(), file, stripes: *stripes, start: first }));
                r.name = format!("{}@byte", p.display());
                Ok(r)
            }
            Input::Stdin(f) => {
                let format = f.unwrap_or(Format::JsonLines);
                let first = if format.has_header() {
                    // The header, read before the reading thread starts (it may take a while).
                    let mut header = String::new();
                    std::io::BufRead::read_line(&mut std::io::stdin().lock(), &mut header)
                        .map_err(|e| format!("stdin: {e}"))?;
                    Some(header)
                } else {
                    None
                };
                let lines = LineReader::new(Box::new(LiveStdin::start()) as Box<dyn Read + Send>);
                let ctx = LineContext::new(format, "stdin", first.as_deref()).map_err(|e| e.to_string())?;
                // The header line was consumed: count it so line numbers stay those of the input.
                let name = ctx.file().to_string();
                let r = UnitReader {
                    ctx,
                    lines,
                    line_no: u64::from(first.is_some()),
                    budget: u64::MAX,
                    name,
                    waiting: false,
                    offset: 0,
                    line_start: (0, 0),
                    whole_file: None,
                    striped: None,
                };
                Ok(r)
            }
        }
    }

    fn new(ctx: LineContext, input: Box<dyn Read + Send>) -> UnitReader {
        let name = ctx.file().to_string();
        UnitReader {
            ctx,
            lines: LineReader::new(input),
            line_no: 0,
            budget: u64::MAX,
            name,
            waiting: false,
            offset: 0,
            line_start: (0, 0),
            whole_file: None,
            striped: None,
        }
    }

    /// Open a file unit to read on from a line that starts at byte `offset` (a position
    /// [`UnitReader::line_start`] gave), numbering lines on from `lines_before`.
    ///
    /// # Errors
    /// When the file cannot be opened or read, or the offset is past the unit (stdin cannot be
    /// read again: an error).
    pub fn open_at(input: &Input, offset: u64, lines_before: u64) -> Result<UnitReader, String> {
        let (p, f, start) = match input {
            Input::File(p, f) => (p, f, 0),
            Input::Range(p, f, start, _) => (p, f, *start),
            Input::Stripes(p, f, stripes) => (p, f, stripes.first),
            Input::Stdin(_) => return Err("stdin cannot be read again from a position".into()),
        };
        if offset < start {
            return Err(format!("{}: offset {offset} is before its range at {start}", p.display()));
        }
        let ctx = LineContext::open(p, *f).map_err(|e| e.to_string())?;
        let err = |e: std::io::Error| format!("{}: {e}", p.display());
        let len = std::fs::metadata(p).map_err(err)?.len();
        if offset > len {
            return Err(format!(
                "{}: offset {offset} is past its end ({len} bytes): not the file the checkpoint read",
                p.display()
            ));
        }
        let mut r = UnitReader::new(ctx, Box::new(std::io::empty()));
        let file = open_shared(p)?;
        let end = match input {
            Input::Range(_, _, start, end) => {
                r.name = format!("{}@{start}", p.display());
                *end
            }
            Input::Stripes(_, _, stripes) => {
                r.name = format!("{}@byte", p.display());
                let (start, end) = stripes.stripe_at(offset).unwrap_or((len, len));
                r.striped =
                    Some(Box::new(Striped { path: p.clone(), file: Arc::clone(&file), stripes: *stripes, start }));
                if offset < start {
                    // Past the end of the stripe it was in: the unit's next stripe, from its start.
                    (r.budget, r.offset) = range_lines(&mut r.lines, (&file, p), start, end)?;
                    (r.line_no, r.line_start) = (lines_before, (r.offset, lines_before));
                    return Ok(r);
                }
                end
            }
            _ => {
                r.whole_file = Some(p.clone());
                u64::MAX
            }
        };
        r.lines = LineReader::new(Box::new(StripeFile::at(&file, offset, end)));
        r.budget = if end == u64::MAX { u64::MAX } else { end.saturating_sub(offset) };
        r.offset = offset;
        r.line_no = lines_before;
        r.line_start = (offset, lines_before);
        Ok(r)
    }

    /// A striped unit at the end of a stripe: on to its next one (`false`: none is left).
    fn next_stripe(&mut self) -> Result<bool, String> {
        let Some(striped) = &mut self.striped else { return Ok(false) };
        let next = striped.start.saturating_add(striped.stripes.stride.max(1));
        if next >= striped.stripes.len {
            return Ok(false);
        }
        striped.start = next;
        let end = striped.stripes.end_of(next);
        (self.budget, self.offset) = range_lines(&mut self.lines, (&striped.file, &striped.path), next, end)?;
        Ok(true)
    }

    /// How many units of its file come before this one (a striped unit's tuples are numbered
    /// by their byte offset under the file's first unit, [`super::stripes`]); 0 for other units.
    pub fn units_before(&self) -> u64 {
        self.striped.as_ref().map_or(0, |s| s.stripes.units_before())
    }

    /// Bytes of the unit not read yet: the rest of a byte range, or of a whole file as long as
    /// it is now (it may grow); `None` for stdin (its end is not known).
    pub fn bytes_left(&self) -> Option<u64> {
        if let Some(s) = &self.striped {
            return Some(self.budget + s.stripes.bytes_after(s.start));
        }
        if self.budget != u64::MAX {
            return Some(self.budget);
        }
        let len = std::fs::metadata(self.whole_file.as_ref()?).ok()?.len();
        Some(len.saturating_sub(self.offset))
    }

    /// Where the next line starts: its byte offset and the number of lines before it.
    pub fn position(&self) -> (u64, u64) {
        (self.offset, self.line_no)
    }

    /// Where the last line returned starts: its byte offset and the number of lines before it
    /// (what [`UnitReader::open_at`] takes to read it again).
    pub fn line_start(&self) -> (u64, u64) {
        self.line_start
    }

    /// A reader over in-memory text (for tests and `Read` sources).
    ///
    /// # Errors
    /// As [`LineContext::new`].
    pub fn from_reader(
        format: Format,
        name: &str,
        first_line: Option<&str>,
        r: Box<dyn Read + Send>,
    ) -> Result<UnitReader, String> {
        let ctx = LineContext::new(format, name, first_line).map_err(|e| e.to_string())?;
        Ok(UnitReader::new(ctx, r))
    }

    /// The unit's name (for dead letters): the file, with `@offset` for a byte range (line
    /// numbers then count from the range's first line), or `@byte` for a striped unit (its
    /// lines are known by their byte offset in the file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True (once) if the last [`UnitReader::next_tuple`] returned `None` because nothing had
    /// arrived yet, not because the input ended.
    pub fn take_waiting(&mut self) -> bool {
        std::mem::take(&mut self.waiting)
    }

    /// The next tuple (or bad line) with its line number (1-based), or `None` at the end (or,
    /// see [`UnitReader::take_waiting`], for now).
    /// Blank lines and header rows are skipped.
    pub fn next_tuple(&mut self) -> Option<(u64, Parsed)> {
        let mut t = Tuple::default();
        let (line, parsed) = self.next_tuple_into(&mut t)?;
        Some((line, parsed.map(|()| t)))
    }

    /// [`UnitReader::next_tuple`] into `t` (its strings and fields reused): the line number, and
    /// `Ok` if the tuple is in `t` or the bad line (trimmed) and its message.
    pub fn next_tuple_into(&mut self, t: &mut Tuple) -> Option<(u64, Result<(), BadLine>)> {
        let mut number;
        loop {
            if self.budget == 0 {
                match self.next_stripe() {
                    Ok(true) => continue,
                    Ok(false) => return None,
                    Err(e) => {
                        self.striped = None;
                        return Some((self.line_no, Err((String::new(), format!("read error: {e}")))));
                    }
                }
            }
            self.line_no += 1;
            // A JSON line in the reference form is parsed inside the reader's block, its end
            // found by the parse (no newline search, no line slice); any other line is handed
            // out and parsed below.
            let ctx = &self.ctx;
            let line = match self.lines.next_parsed_or_line(|text| ctx.parse_block_line_into(text, t)) {
                Ok(None) => {
                    // The end: no line was read (`position` counts the lines there are).
                    self.line_no -= 1;
                    return None;
                }
                Ok(Some((ahead, n))) => {
                    if self.budget != u64::MAX {
                        self.budget = self.budget.saturating_sub(n as u64);
                    }
                    self.line_start = (self.offset, self.line_no - 1);
                    self.offset += n as u64;
                    // What the line is known by (dead letters, its arrival sequence): its line
                    // number, or in a striped unit its byte offset (`super::stripes`).
                    number = if self.striped.is_some() { self.line_start.0 } else { self.line_no };
                    match ahead {
                        Ahead::Parsed => return Some((number, Ok(()))),
                        Ahead::Line(line) => line,
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    // Nothing has arrived yet (a live stdin): not the end.
                    self.line_no -= 1;
                    self.waiting = true;
                    return None;
                }
                Err(e) => return Some((self.line_no, Err((String::new(), format!("read error: {e}"))))),
            };
            let line = match line {
                Line::Text(s) => s,
                Line::NotUtf8(_) => return Some((number, Err((String::new(), NOT_UTF8.to_string())))),
            };
            match self.ctx.parse_line_into(self.line_no, line, t) {
                Ok(false) => continue,
                Ok(true) => return Some((number, Ok(()))),
                Err(e) => return Some((number, Err((line.trim_end().to_string(), e.message)))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Line number and stream id (or the bad line and message) of each item.
    type Item = (u64, Result<String, (String, String)>);

    fn drain(r: &mut UnitReader) -> Vec<Item> {
        std::iter::from_fn(|| r.next_tuple()).map(|(n, p)| (n, p.map(|t| t.stream_id))).collect()
    }

    #[test]
    fn bad_lines_keep_their_numbers_and_messages() {
        let text: &[u8] = b"{\"streamID\":\"A\",\"dataSetKey\":\"D\",\"price\":1}\n\n\xff\xfe\n{\"streamID\":\"B\"}\r\n{\"streamID\":\"C\",\"dataSetKey\":\"D\"}";
        let mut r = UnitReader::from_reader(Format::JsonLines, "mem", None, Box::new(text)).unwrap();
        let got = drain(&mut r);
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], (1, Ok("A".to_string())));
        assert_eq!(got[1], (3, Err((String::new(), NOT_UTF8.to_string()))));
        assert_eq!(got[2], (4, Err((r#"{"streamID":"B"}"#.to_string(), "missing `dataSetKey`".to_string()))));
        assert_eq!(got[3], (5, Ok("C".to_string())));
    }

    /// Line `i` of a test file: every other one in the reference form, every fifth with `\r\n`.
    fn mixed_line(i: usize) -> String {
        let pad = "x".repeat(i % 37);
        let end = if i.is_multiple_of(5) { "\r\n" } else { "\n" };
        if i.is_multiple_of(2) {
            format!("{{\"streamID\":\"S{i}\",\"dataSetKey\":\"D{pad}\",\"price\":{i}}}{end}")
        } else {
            format!(
                "{{\"streamID\":\"S{i}\",\"objectID\":null,\"dataSetKey\":\"D{pad}\",\"date\":\"01/02/2019\",\"time\":\"00:00:01\",\"price\":{i}}}{end}"
            )
        }
    }

    /// Positions stay exact whichever way a line is parsed (inside the reader's block or by
    /// itself): every tuple's `line_start` is its line's first byte and number, and a reader
    /// opened there reads that tuple again; `position` after the last line is the file's end, and stays
    /// there once the reader has found the end.
    #[test]
    fn positions_are_exact_for_lines_parsed_in_the_block() {
        let path = std::env::temp_dir().join(format!("saams-file-positions-{}.jsonl", std::process::id()));
        let lines: Vec<String> = (0..3000).map(mixed_line).collect();
        std::fs::write(&path, lines.concat()).unwrap();
        let unit = Input::File(path.clone(), None);
        let mut r = UnitReader::open(&unit).unwrap();
        let mut offset = 0u64;
        for (k, line) in lines.iter().enumerate() {
            let (n, t) = r.next_tuple().unwrap();
            assert_eq!((n, t.unwrap().stream_id), (k as u64 + 1, format!("S{k}")));
            assert_eq!(r.line_start(), (offset, k as u64), "line {k}");
            if k % 97 == 0 {
                let mut again = UnitReader::open_at(&unit, offset, k as u64).unwrap();
                assert_eq!(again.next_tuple().map(|(n, t)| (n, t.unwrap().stream_id)), Some((n, format!("S{k}"))));
            }
            offset += line.len() as u64;
        }
        assert_eq!(r.position(), (offset, lines.len() as u64));
        assert!(r.next_tuple().is_none());
        // Asking past the end reads no line: the count stays (it counted one more).
        assert_eq!(r.position(), (offset, lines.len() as u64), "after the end");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn standard_input_given_twice_is_refused() {
        let twice = ["-".to_string(), "-".to_string()];
        let err = expand_inputs(&twice, None, 0, RangeLayout::Equal).unwrap_err();
        assert!(err.contains("standard input is given more than once"), "{err}");
        assert!(matches!(expand_inputs(&twice[..1], None, 0, RangeLayout::Equal).as_deref(), Ok([Input::Stdin(None)])));
    }

    #[test]
    fn byte_ranges_partition_the_lines() {
        let dir = std::env::temp_dir().join(format!("saams-file-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ticks.jsonl");
        let mut text = String::new();
        for i in 0..5000 {
            // Lines of varying length, so range ends fall everywhere in a line; every other one
            // in the reference form (parsed inside the reader's block), some ending in `\r\n`.
            text.push_str(&mixed_line(i));
        }
        std::fs::write(&path, &text).unwrap();
        let whole = expand_inputs(&[path.display().to_string()], None, 0, RangeLayout::Equal).unwrap();
        let expected: Vec<String> =
            drain(&mut UnitReader::open(&whole[0]).unwrap()).into_iter().map(|(_, t)| t.unwrap()).collect();
        assert_eq!(expected.len(), 5000);
        for (chunk, layout) in
            [61, 4096, 100_000].into_iter().flat_map(|c| [(c, RangeLayout::Equal), (c, RangeLayout::Fixed)])
        {
            let units = expand_inputs(&[path.display().to_string()], None, chunk, layout).unwrap();
            let mut got = Vec::new();
            for u in &units {
                got.extend(drain(&mut UnitReader::open(u).unwrap()).into_iter().map(|(_, t)| t.unwrap()));
            }
            assert_eq!(got, expected, "chunk {chunk} {layout:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The units of a striped file hold every line once; each numbers its lines by their byte
    /// offset (so sorting all by number gives the file's order), and a reader opened at any
    /// position it reported (`line_start`, or `position` between stripes) reads on as it did.
    #[test]
    fn stripes_partition_the_lines_and_resume_anywhere() {
        let path = std::env::temp_dir().join(format!("saams-file-stripes-{}.jsonl", std::process::id()));
        let lines: Vec<String> = (0..3000).map(mixed_line).collect();
        std::fs::write(&path, lines.concat()).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let mut offsets = Vec::new();
        let mut at = 0u64;
        for l in &lines {
            offsets.push(at);
            at += l.len() as u64;
        }
        for (size, units) in [(61u64, 3u64), (4096, 2), (20_000, 5), (1, 4)] {
            let mut got = Vec::new();
            for k in 0..units {
                let unit =
                    Input::Stripes(path.clone(), None, Stripes { first: k * size, size, stride: units * size, len });
                let mut r = UnitReader::open(&unit).unwrap();
                let mut mine = Vec::new();
                let mut resumes = Vec::new();
                while let Some((n, t)) = r.next_tuple() {
                    if mine.len() % 37 == 0 {
                        resumes.push((mine.len(), r.line_start()));
                    }
                    if mine.len() % 41 == 5 {
                        resumes.push((mine.len() + 1, r.position()));
                    }
                    mine.push((n, t.unwrap().stream_id));
                }
                assert!(mine.windows(2).all(|w| w[0].0 < w[1].0), "size {size} unit {k}: numbers rise");
                for (from, (offset, before)) in resumes {
                    let mut again = UnitReader::open_at(&unit, offset, before).unwrap();
                    let rest: Vec<_> =
                        std::iter::from_fn(|| again.next_tuple()).map(|(n, t)| (n, t.unwrap().stream_id)).collect();
                    assert_eq!(rest, mine[from..], "size {size} unit {k} from {from}");
                }
                assert_eq!(r.bytes_left(), Some(0));
                got.extend(mine);
            }
            got.sort();
            let expected: Vec<(u64, String)> = offsets.iter().enumerate().map(|(i, &o)| (o, format!("S{i}"))).collect();
            assert_eq!(got, expected, "size {size} units {units}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}
