//! Reading whole files and directories: an iterator of tuples that reports malformed rows (with
//! file and line) as `Err` items, counts them, and goes on.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use saams::api::Tuple;

use crate::error::ParseError;
use crate::format::{Format, LineContext};
use crate::lines::{Ahead, Line, LineReader};

/// File extensions a directory walk picks up.
const DATA_EXTENSIONS: [&str; 6] = ["csv", "txt", "json", "jsonl", "ndjson", "ais"];

enum Input {
    Path(PathBuf),
    Reader(String, Box<dyn BufRead + Send>),
    /// Share `index` of `peers` of a file's lines (split by bytes at line starts).
    Share(PathBuf, usize, usize),
}

/// Tuples of one or more files (or a stream such as stdin), in file order then line order.
///
/// Yields `Err` for each malformed row or unreadable file and continues; [`Self::malformed`] counts
/// them.
pub struct TupleReader {
    pending: std::vec::IntoIter<Input>,
    format: Option<Format>,
    dataset_key: Option<String>,
    current: Option<(LineContext, LineReader<Box<dyn Read + Send>>)>,
    /// `buf` holds the current input's first line, not parsed yet.
    first_pending: bool,
    line_no: u64,
    buf: Vec<u8>,
    lines: u64,
    tuples: u64,
    malformed: u64,
    bytes: u64,
    files: Vec<PathBuf>,
}

/// A reader over `path`: a file, or a directory whose data files (`.csv`, `.txt`, `.json`,
/// `.jsonl`, `.ndjson`, recursively, hidden files skipped) are read in sorted path order. With
/// `format = None` each file's format is detected from its name and first line.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("saams-doc-read-path-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("b.jsonl"), r#"{"streamID":"IBM","dataSetKey":"NYSE","price":1}"#).unwrap();
/// std::fs::write(dir.join("a.jsonl"), r#"{"streamID":"BTCEUR","dataSetKey":"crypto","price":2}"#).unwrap();
/// let mut r = saams_datasets::read_path(&dir, None).unwrap();
/// let first = r.next().unwrap().unwrap(); // files in sorted path order
/// assert_eq!((first.dataset_key.as_str(), first.stream_id.as_str()), ("crypto", "BTCEUR"));
/// assert_eq!(r.count(), 1);
/// assert!(saams_datasets::read_path("/no/such/path".as_ref(), None).is_err());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
///
/// # Errors
/// When `path` does not exist, cannot be listed, or is a directory without data files.
pub fn read_path(path: &Path, format: Option<Format>) -> Result<TupleReader, ParseError> {
    let meta = std::fs::metadata(path).map_err(|e| ParseError::new(path.display().to_string(), 0, e.to_string()))?;
    let files = if meta.is_dir() {
        let mut files = Vec::new();
        walk(path, &mut files)?;
        files.sort();
        if files.is_empty() {
            return Err(ParseError::new(path.display().to_string(), 0, "directory holds no data files"));
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    Ok(TupleReader::from_inputs(files.iter().cloned().map(Input::Path).collect(), format, files))
}

/// Worker `index` of `peers`'s share of `path` (a file, or every file of a directory): the lines
/// starting in the `index`-th of `peers` equal byte ranges of each file. The shares of all workers
/// partition the lines exactly; each worker reads only its own bytes (plus one newline count of the
/// bytes before, so errors keep their true line numbers). Headers are read from each file's first
/// line, and skipped wherever they fall.
///
/// ```
/// let file = std::env::temp_dir().join(format!("saams-doc-read-share-{}.jsonl", std::process::id()));
/// let lines: String = (0..1044).map(|i| format!("{{\"streamID\":\"ES\",\"dataSetKey\":\"cme\",\"price\":{i}}}\n")).collect();
/// std::fs::write(&file, lines).unwrap();
/// let counts: Vec<usize> = (0..3).map(|w| saams_datasets::read_share(&file, None, w, 3).unwrap().count()).collect();
/// assert_eq!(counts.iter().sum::<usize>(), 1_044);
/// assert!(counts.iter().all(|&c| c > 300));
/// assert!(saams_datasets::read_share(&file, None, 3, 3).is_err());
/// # std::fs::remove_file(&file).unwrap();
/// ```
///
/// # Errors
/// As [`read_path`], and when `index ≥ peers`.
pub fn read_share(path: &Path, format: Option<Format>, index: usize, peers: usize) -> Result<TupleReader, ParseError> {
    if index >= peers {
        return Err(ParseError::new(
            path.display().to_string(),
            0,
            format!("worker {index} of {peers} does not exist"),
        ));
    }
    let reader = read_path(path, format)?;
    let files = reader.files.clone();
    Ok(TupleReader::from_inputs(files.iter().map(|f| Input::Share(f.clone(), index, peers)).collect(), format, files))
}

/// The first byte of share `k` of `peers` of a file of `len` bytes: the start of the first line
/// starting at or after `k·len/peers`.
fn share_start(file: &mut File, len: u64, k: usize, peers: usize) -> std::io::Result<u64> {
    if k == 0 {
        return Ok(0);
    }
    if k >= peers {
        return Ok(len);
    }
    let b = (len as u128 * k as u128 / peers as u128) as u64;
    if b == 0 {
        return Ok(0);
    }
    file.seek(SeekFrom::Start(b - 1))?;
    let mut skipped = Vec::new();
    let n = BufReader::new(&mut *file).read_until(b'\n', &mut skipped)?;
    Ok((b - 1 + n as u64).min(len))
}

/// Number of line ends in the first `end` bytes of a file.
fn count_lines(file: &mut File, end: u64) -> std::io::Result<u64> {
    file.seek(SeekFrom::Start(0))?;
    let mut buf = vec![0u8; 1 << 16];
    let (mut left, mut lines) = (end, 0u64);
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        left -= n as u64;
    }
    Ok(lines)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ParseError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ParseError::new(dir.display().to_string(), 0, e.to_string()))?;
    for entry in entries {
        let entry = entry.map_err(|e| ParseError::new(dir.display().to_string(), 0, e.to_string()))?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(&path, out)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| DATA_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        {
            out.push(path);
        }
    }
    Ok(())
}

impl TupleReader {
    fn from_inputs(inputs: Vec<Input>, format: Option<Format>, files: Vec<PathBuf>) -> TupleReader {
        TupleReader {
            pending: inputs.into_iter(),
            format,
            dataset_key: None,
            current: None,
            first_pending: false,
            line_no: 0,
            buf: Vec::with_capacity(256),
            lines: 0,
            tuples: 0,
            malformed: 0,
            bytes: 0,
            files,
        }
    }

    /// A reader over an already open stream (stdin, a socket) named `name` in errors; the format is
    /// detected from the first line when `None`.
    ///
    /// ```
    /// use saams_datasets::{Format, TupleReader};
    /// let text = "01/02/2019,00:00:01,6.0654,1\nbroken\n01/02/2019,00:00:02,6.0655,1\n";
    /// let mut r = TupleReader::from_reader("Forex·EURTRY·NoExpiry.txt", Box::new(text.as_bytes()), Some(Format::StockTxt));
    /// let items: Vec<_> = r.by_ref().collect();
    /// assert_eq!(items.len(), 3);
    /// assert_eq!(items[1].as_ref().unwrap_err().line, 2);
    /// assert_eq!((r.tuples(), r.malformed()), (2, 1));
    /// ```
    pub fn from_reader(name: &str, reader: Box<dyn BufRead + Send>, format: Option<Format>) -> TupleReader {
        TupleReader::from_inputs(vec![Input::Reader(name.to_string(), reader)], format, Vec::new())
    }

    /// Override the dataset key of every tuple from stock and AIS files (JSON lines keep theirs).
    pub fn with_dataset_key(mut self, key: &str) -> TupleReader {
        self.dataset_key = Some(key.to_string());
        self
    }

    /// The files this reader covers, in reading order (empty for a stream).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Lines read so far (all files).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Tuples yielded so far.
    pub fn tuples(&self) -> u64 {
        self.tuples
    }

    /// Malformed rows (and unreadable files) reported so far.
    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    /// Bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Open the next input: read its first line, build its context. The first line stays in `buf`
    /// (`first_pending`), to be parsed as the input's first line.
    fn open_next(&mut self, input: Input) -> Result<bool, ParseError> {
        let (name, reader): (String, Box<dyn Read + Send>) = match input {
            Input::Path(p) => {
                let name = p.display().to_string();
                let f = File::open(&p).map_err(|e| ParseError::new(&name, 0, format!("cannot open: {e}")))?;
                (name, Box::new(f))
            }
            Input::Reader(name, r) => (name, r),
            Input::Share(p, index, peers) => return self.open_share(&p, index, peers),
        };
        let mut lines = LineReader::new(reader);
        if !self.take_first(&mut lines).map_err(|e| ParseError::new(&name, 1, format!("read error: {e}")))? {
            return Ok(false);
        }
        let first = String::from_utf8_lossy(&self.buf).trim_end_matches(['\n', '\r']).to_string();
        let format = match self.format {
            Some(f) => f,
            None => Format::detect_from(&name, &first)
                .ok_or_else(|| ParseError::new(&name, 0, format!("unknown format (first line {first:?})")))?,
        };
        let mut ctx = LineContext::new(format, &name, Some(&first))?;
        if let Some(key) = &self.dataset_key {
            ctx = ctx.with_dataset_key(key);
        }
        self.current = Some((ctx, lines));
        self.line_no = 0;
        Ok(true)
    }

    /// Copy the first line of `lines` into `buf` (marking it pending); false at an empty input.
    fn take_first(&mut self, lines: &mut LineReader<Box<dyn Read + Send>>) -> std::io::Result<bool> {
        self.buf.clear();
        let Some((line, n)) = lines.next_line()? else { return Ok(false) };
        self.buf.extend_from_slice(match line {
            Line::Text(s) => s.as_bytes(),
            Line::NotUtf8(b) => b,
        });
        self.bytes += n as u64;
        self.first_pending = true;
        Ok(true)
    }

    /// Open a share of a file: context from the file's first line, reader over the share's bytes,
    /// line numbers continuing from the lines before it. The share's first line stays in `buf`.
    fn open_share(&mut self, path: &Path, index: usize, peers: usize) -> Result<bool, ParseError> {
        let name = path.display().to_string();
        let io_err = |e: std::io::Error| ParseError::new(&name, 0, format!("cannot read: {e}"));
        let mut ctx = LineContext::open(path, self.format)?;
        if let Some(key) = &self.dataset_key {
            ctx = ctx.with_dataset_key(key);
        }
        let mut file = File::open(path).map_err(io_err)?;
        let len = file.metadata().map_err(io_err)?.len();
        let start = share_start(&mut file, len, index, peers).map_err(io_err)?;
        let end = share_start(&mut file, len, index + 1, peers).map_err(io_err)?;
        if start >= end {
            return Ok(false);
        }
        let before = count_lines(&mut file, start).map_err(io_err)?;
        file.seek(SeekFrom::Start(start)).map_err(io_err)?;
        let mut lines = LineReader::new(Box::new(file.take(end - start)) as Box<dyn Read + Send>);
        let any = self.take_first(&mut lines).map_err(io_err)?;
        self.current = Some((ctx, lines));
        self.line_no = before;
        Ok(any)
    }

    fn fail(&mut self, e: ParseError) -> Option<Result<Tuple, ParseError>> {
        self.malformed += 1;
        Some(Err(e))
    }
}

impl Iterator for TupleReader {
    type Item = Result<Tuple, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.current.is_none() {
                let input = self.pending.next()?;
                match self.open_next(input) {
                    Ok(true) => {}
                    Ok(false) => {
                        self.current = None;
                        continue;
                    }
                    Err(e) => {
                        self.current = None;
                        return self.fail(e);
                    }
                }
            }
            let Some((ctx, lines)) = self.current.as_mut() else { continue };
            let result = if self.first_pending {
                self.first_pending = false;
                self.line_no += 1;
                self.lines += 1;
                match std::str::from_utf8(&self.buf) {
                    Ok(line) => ctx.parse_line(self.line_no, line),
                    Err(_) => Err(ParseError::new(ctx.file(), self.line_no, "not valid UTF-8")),
                }
            } else {
                // A JSON line in the reference form is parsed inside the reader's block (the
                // parse finds its end); any other line is handed out and parsed by itself.
                let mut spare = crate::tuple_pool::take_spare();
                match lines.next_parsed_or_line(|text| ctx.parse_block_line_into(text, &mut spare)) {
                    Ok(None) => {
                        crate::tuple_pool::recycle(spare);
                        self.current = None;
                        continue;
                    }
                    Ok(Some((ahead, n))) => {
                        self.bytes += n as u64;
                        self.line_no += 1;
                        self.lines += 1;
                        match ahead {
                            Ahead::Parsed => Ok(Some(spare)),
                            Ahead::Line(line) => {
                                crate::tuple_pool::recycle(spare);
                                match line {
                                    Line::Text(line) => ctx.parse_line(self.line_no, line),
                                    Line::NotUtf8(_) => {
                                        Err(ParseError::new(ctx.file(), self.line_no, "not valid UTF-8"))
                                    }
                                }
                            }
                        }
                    }
                    Err(e) => {
                        let e = ParseError::new(ctx.file(), self.line_no + 1, format!("read error: {e}"));
                        self.current = None;
                        return self.fail(e);
                    }
                }
            };
            match result {
                Ok(Some(t)) => {
                    self.tuples += 1;
                    return Some(Ok(t));
                }
                Ok(None) => continue,
                Err(e) => return self.fail(e),
            }
        }
    }
}

/// Tuples of several time-ordered inputs merged into one event-time order (ties by input
/// order): a replay of a directory as the streams happened, rather than file after file.
/// Malformed rows pass through as `Err` items as soon as they are read.
pub struct MergedReader {
    readers: Vec<TupleReader>,
    heads: Vec<Option<Tuple>>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(i64, usize)>>,
    errors: std::collections::VecDeque<ParseError>,
}

impl MergedReader {
    /// Merge `readers`, each assumed to be in event-time order (tuples without a time sort first).
    pub fn new(readers: Vec<TupleReader>) -> MergedReader {
        let n = readers.len();
        let mut m = MergedReader {
            readers,
            heads: vec![None; n],
            heap: std::collections::BinaryHeap::with_capacity(n),
            errors: std::collections::VecDeque::new(),
        };
        for k in 0..n {
            m.advance(k);
        }
        m
    }

    /// Pull the next tuple of input `k` into its head slot, queueing errors met on the way.
    fn advance(&mut self, k: usize) {
        for item in self.readers[k].by_ref() {
            match item {
                Ok(t) => {
                    self.heap.push(std::cmp::Reverse((t.time_ms.unwrap_or(i64::MIN), k)));
                    self.heads[k] = Some(t);
                    return;
                }
                Err(e) => self.errors.push_back(e),
            }
        }
    }

    /// Malformed rows seen so far, over all inputs.
    pub fn malformed(&self) -> u64 {
        self.readers.iter().map(TupleReader::malformed).sum()
    }
}

impl Iterator for MergedReader {
    type Item = Result<Tuple, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.errors.pop_front() {
            return Some(Err(e));
        }
        let std::cmp::Reverse((_, k)) = self.heap.pop()?;
        let t = self.heads[k].take();
        self.advance(k);
        t.map(Ok)
    }
}

/// [`read_path`], with every file of a directory read at once and merged by event time (each
/// file must be in event-time order, as the shared datasets are). Opens all files together.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("saams-doc-merged-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// for (name, seconds) in [("a.jsonl", [1, 4, 6]), ("b.jsonl", [2, 3, 5])] {
///     let lines: String = seconds.iter().map(|s| format!(
///         "{{\"streamID\":\"{name}\",\"dataSetKey\":\"d\",\"date\":\"01/02/2019\",\"time\":\"00:00:0{s}\",\"price\":1}}\n")).collect();
///     std::fs::write(dir.join(name), lines).unwrap();
/// }
/// let times: Vec<i64> = saams_datasets::read_path_merged(&dir, None).unwrap().map(|t| t.unwrap().time_ms.unwrap()).collect();
/// assert_eq!(times.len(), 6);
/// assert!(times.windows(2).all(|w| w[0] < w[1]));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
///
/// # Errors
/// As [`read_path`].
pub fn read_path_merged(path: &Path, format: Option<Format>) -> Result<MergedReader, ParseError> {
    let files = read_path(path, format)?.files;
    Ok(MergedReader::new(
        files.iter().map(|f| TupleReader::from_inputs(vec![Input::Path(f.clone())], format, vec![f.clone()])).collect(),
    ))
}
