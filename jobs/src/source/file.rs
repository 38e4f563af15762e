//! File sources: input files, directories and stdin, split into units that workers read whole.
//!
//! A unit is one file (or stdin). Unit `u` is read by worker `u mod W`; a tuple's arrival
//! sequence is (unit, line), so it does not depend on the number of workers, and neither does the
//! lateness decision (made per unit, in the unit's own order). Lines are parsed by
//! `saams_datasets` (JSON lines, stock text, stock CSV, AIS CSV).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use saams::api::Tuple;
use saams_datasets::{Format, LineContext};

/// One input unit.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// A file; the format is detected from name and first line unless given.
    File(PathBuf, Option<Format>),
    /// Standard input (JSON lines unless a format is given).
    Stdin(Option<Format>),
}

/// Expand `--data` arguments into units: directories to their files (sorted, recursively;
/// README and other unrecognized files are skipped), `-` to stdin.
///
/// # Errors
/// For a path that does not exist.
pub fn expand_inputs(data: &[String], forced: Option<Format>) -> Result<Vec<Input>, String> {
    let mut out = Vec::new();
    for d in data {
        if d == "-" {
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
pub type Parsed = Result<Tuple, (String, String)>;

/// Reads one unit's tuples.
pub struct UnitReader {
    ctx: LineContext,
    lines: Box<dyn BufRead>,
    buf: String,
    line_no: u64,
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
                Ok(UnitReader::new(ctx, Box::new(BufReader::with_capacity(1 << 20, file))))
            }
            Input::Stdin(f) => {
                let mut reader = BufReader::with_capacity(1 << 20, std::io::stdin());
                let format = f.unwrap_or(Format::JsonLines);
                let first = if format.has_header() {
                    let mut s = String::new();
                    reader.read_line(&mut s).map_err(|e| format!("stdin: {e}"))?;
                    Some(s)
                } else {
                    None
                };
                let ctx = LineContext::new(format, "stdin", first.as_deref()).map_err(|e| e.to_string())?;
                // The header line was consumed: count it so line numbers stay those of the input.
                let mut r = UnitReader::new(ctx, Box::new(reader));
                r.line_no = u64::from(first.is_some());
                Ok(r)
            }
        }
    }

    fn new(ctx: LineContext, lines: Box<dyn BufRead>) -> UnitReader {
        UnitReader { ctx, lines, buf: String::new(), line_no: 0 }
    }

    /// A reader over in-memory text (for tests and `Read` sources).
    ///
    /// # Errors
    /// As [`LineContext::new`].
    pub fn from_reader(
        format: Format,
        name: &str,
        first_line: Option<&str>,
        r: Box<dyn Read>,
    ) -> Result<UnitReader, String> {
        let ctx = LineContext::new(format, name, first_line).map_err(|e| e.to_string())?;
        Ok(UnitReader::new(ctx, Box::new(BufReader::new(r))))
    }

    /// The unit's name (for dead letters).
    pub fn name(&self) -> &str {
        self.ctx.file()
    }

    /// The next tuple (or bad line) with its line number (1-based), or `None` at the end.
    /// Blank lines and header rows are skipped.
    pub fn next_tuple(&mut self) -> Option<(u64, Parsed)> {
        loop {
            self.buf.clear();
            self.line_no += 1;
            match self.lines.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some((self.line_no, Err((String::new(), format!("read error: {e}"))))),
            }
            match self.ctx.parse_line(self.line_no, &self.buf) {
                Ok(None) => continue,
                Ok(Some(t)) => return Some((self.line_no, Ok(t))),
                Err(e) => return Some((self.line_no, Err((self.buf.trim_end().to_string(), e.message)))),
            }
        }
    }
}
