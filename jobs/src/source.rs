//! Sources: input files, directories and stdin, split into units that workers read whole.
//!
//! A unit is one file (or stdin, or one generated stream). Unit `u` is read by worker
//! `u mod W`; a tuple's arrival sequence is (unit, line), so it does not depend on the number of
//! workers, and neither does the lateness decision (made per unit, in the unit's own order).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use saams::api::Tuple;

use crate::cli::Format;

/// One input unit.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// A file in a format.
    File(PathBuf, Format),
    /// Standard input in a format.
    Stdin(Format),
}

fn format_of(path: &Path, forced: Option<Format>) -> Result<Format, String> {
    if let Some(f) = forced {
        return Ok(f);
    }
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("json" | "jsonl" | "ndjson") => Ok(Format::Json),
        Some("txt") => Ok(Format::StockTxt),
        Some("csv") => Ok(Format::StockCsv),
        _ => Err(format!("cannot tell the format of {} from its extension: pass --format", path.display())),
    }
}

/// Expand `--data` arguments into units: directories to their files (sorted, recursively),
/// `-` to stdin.
///
/// # Errors
/// For a path that does not exist, or a file whose format cannot be told.
pub fn expand_inputs(data: &[String], forced: Option<Format>) -> Result<Vec<Input>, String> {
    let mut out = Vec::new();
    for d in data {
        if d == "-" {
            out.push(Input::Stdin(forced.unwrap_or(Format::Json)));
            continue;
        }
        let path = PathBuf::from(d);
        let meta = std::fs::metadata(&path).map_err(|e| format!("--data {d}: {e}"))?;
        if meta.is_dir() {
            let mut files = Vec::new();
            collect_files(&path, &mut files).map_err(|e| format!("--data {d}: {e}"))?;
            files.sort();
            for f in files {
                // Files of unknown type in a directory are skipped (README, notes, …).
                if let Ok(fmt) = format_of(&f, forced) {
                    out.push(Input::File(f, fmt));
                }
            }
        } else {
            out.push(Input::File(path.clone(), format_of(&path, forced)?));
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
    name: String,
    lines: Box<dyn BufRead>,
    format: Format,
    buf: String,
    line_no: u64,
    header: Option<Vec<String>>,
}

impl UnitReader {
    /// Open a unit.
    ///
    /// # Errors
    /// When the file cannot be opened or the format has no parser in this build.
    pub fn open(input: &Input) -> Result<UnitReader, String> {
        let (name, reader, format): (String, Box<dyn Read>, Format) = match input {
            Input::File(p, f) => {
                let file = File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
                (p.display().to_string(), Box::new(file), *f)
            }
            Input::Stdin(f) => ("stdin".to_string(), Box::new(std::io::stdin()), *f),
        };
        if format != Format::Json {
            return Err(format!("{name}: format {format:?} is not supported by this build yet"));
        }
        Ok(UnitReader {
            name,
            lines: Box::new(BufReader::with_capacity(1 << 20, reader)),
            format,
            buf: String::new(),
            line_no: 0,
            header: None,
        })
    }

    /// The unit's name (for dead letters).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next non-empty line's tuple with its line number (1-based), or `None` at the end.
    pub fn next_tuple(&mut self) -> Option<(u64, Parsed)> {
        loop {
            self.buf.clear();
            match self.lines.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    self.line_no += 1;
                    return Some((self.line_no, Err((String::new(), format!("read error: {e}")))));
                }
            }
            self.line_no += 1;
            let line = self.buf.trim();
            if line.is_empty() {
                continue;
            }
            let _ = (&self.header, self.format);
            return Some((self.line_no, Tuple::from_json(line).map_err(|e| (line.to_string(), e.0))));
        }
    }
}
