//! Reading whole files and directories: an iterator of tuples that reports malformed rows (with
//! file and line) as `Err` items, counts them, and goes on.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use saams::api::Tuple;

use crate::ParseError;
use crate::format::{Format, LineContext};

/// File extensions a directory walk picks up.
const DATA_EXTENSIONS: [&str; 6] = ["csv", "txt", "json", "jsonl", "ndjson", "ais"];

enum Input {
    Path(PathBuf),
    Reader(String, Box<dyn BufRead + Send>),
}

/// Tuples of one or more files (or a stream such as stdin), in file order then line order.
///
/// Yields `Err` for each malformed row or unreadable file and continues; [`Self::malformed`] counts
/// them.
pub struct TupleReader {
    pending: std::vec::IntoIter<Input>,
    format: Option<Format>,
    dataset_key: Option<String>,
    current: Option<(LineContext, Box<dyn BufRead + Send>)>,
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
/// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/datasets/stocks/minute");
/// let mut r = saams_datasets::read_path(dir.as_ref(), None).unwrap();
/// let first = r.next().unwrap().unwrap();
/// assert_eq!((first.dataset_key.as_str(), first.stream_id.as_str()), ("crypto_coinbase", "BTCEUR"));
/// assert!(saams_datasets::read_path("/no/such/path".as_ref(), None).is_err());
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

    /// Read the next line of the current input into `buf`; false at its end.
    fn read_line(&mut self) -> Result<bool, ParseError> {
        self.buf.clear();
        let Some((ctx, reader)) = self.current.as_mut() else { return Ok(false) };
        let n = reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| ParseError::new(ctx.file(), self.line_no + 1, format!("read error: {e}")))?;
        self.bytes += n as u64;
        Ok(n > 0)
    }

    /// Open the next input: read its first line, build its context. The first line stays in `buf`.
    fn open_next(&mut self, input: Input) -> Result<bool, ParseError> {
        let (name, mut reader): (String, Box<dyn BufRead + Send>) = match input {
            Input::Path(p) => {
                let name = p.display().to_string();
                let f = File::open(&p).map_err(|e| ParseError::new(&name, 0, format!("cannot open: {e}")))?;
                (name, Box::new(BufReader::with_capacity(1 << 16, f)))
            }
            Input::Reader(name, r) => (name, r),
        };
        self.buf.clear();
        let n = reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| ParseError::new(&name, 1, format!("read error: {e}")))?;
        if n == 0 {
            return Ok(false);
        }
        self.bytes += n as u64;
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
        self.current = Some((ctx, reader));
        self.line_no = 0;
        Ok(true)
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
            let have_line = if self.current.is_none() {
                let input = self.pending.next()?;
                match self.open_next(input) {
                    Ok(true) => true,
                    Ok(false) => continue,
                    Err(e) => {
                        self.current = None;
                        return self.fail(e);
                    }
                }
            } else {
                match self.read_line() {
                    Ok(true) => true,
                    Ok(false) => false,
                    Err(e) => {
                        self.current = None;
                        return self.fail(e);
                    }
                }
            };
            if !have_line {
                self.current = None;
                continue;
            }
            self.line_no += 1;
            self.lines += 1;
            let Some((ctx, _)) = self.current.as_ref() else { continue };
            let result = match std::str::from_utf8(&self.buf) {
                Ok(line) => ctx.parse_line(self.line_no, line),
                Err(_) => Err(ParseError::new(ctx.file(), self.line_no, "not valid UTF-8")),
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
