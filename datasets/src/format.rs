//! Input formats, their detection, and the line-oriented parser every source uses.
//!
//! A worker that reads only its share of a file's lines builds one [`LineContext`] per file (from
//! the file name and its first line) and calls [`LineContext::parse_line`] on each of its lines;
//! [`crate::read_path`] does the same for a whole file or directory.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::str::FromStr;

use saams::api::Tuple;

use crate::ais::AisColumns;
use crate::error::ParseError;
use crate::stock;

/// The input formats saams reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// One reference JSON tuple per line (`{"streamID":…,"dataSetKey":…,"date":…,"time":…,"price":…}`).
    JsonLines,
    /// The reference system's `<DataSetKey>·<StreamID>·<Suffix>.txt`: `MM/dd/yyyy,HH:mm:ss,price,volume`,
    /// no header.
    StockTxt,
    /// The shared stock CSVs: header `Date,Time,Price,Volume,…`, ISO dates, millisecond times, one
    /// instrument per file named `<assetclass>_<market>_<SYMBOL>[_<contract>]_<tick|minute>_<trade|quote>.csv`.
    StockCsv,
    /// NOAA MarineCadastre AIS CSV (`MMSI,BaseDateTime,LAT,LON,SOG,COG,Heading,…,VesselType,…`).
    AisCsv,
    /// Piraeus-style AIS CSV (`t,shipid,lon,lat,heading,course,speed,shiptype,destination`, `t` in ms
    /// since the epoch).
    PiraeusCsv,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 5] =
        [Format::JsonLines, Format::StockTxt, Format::StockCsv, Format::AisCsv, Format::PiraeusCsv];

    /// The format's name on command lines (`jsonl`, `stock-txt`, `stock-csv`, `ais-csv`, `piraeus-csv`).
    pub fn name(self) -> &'static str {
        match self {
            Format::JsonLines => "jsonl",
            Format::StockTxt => "stock-txt",
            Format::StockCsv => "stock-csv",
            Format::AisCsv => "ais-csv",
            Format::PiraeusCsv => "piraeus-csv",
        }
    }

    /// True if files of this format start with a header row.
    pub fn has_header(self) -> bool {
        matches!(self, Format::StockCsv | Format::AisCsv | Format::PiraeusCsv)
    }

    /// The format of a file from its name and first line: `.json`/`.jsonl`/`.ndjson` (or a first
    /// line starting with `{`) → JSON lines; `.txt` → stock text; a CSV header naming
    /// `Date,Time,Price,Volume` → stock CSV, `MMSI` and `BaseDateTime` → NOAA AIS, a `t` column with
    /// `shipid`/`vessel_id` → Piraeus AIS; a headerless `MM/dd/yyyy,…` line → stock text.
    ///
    /// ```
    /// use saams_datasets::Format;
    /// assert_eq!(Format::detect_from("a.csv", "Date,Time,Price,Volume,Bid,Ask"), Some(Format::StockCsv));
    /// assert_eq!(Format::detect_from("x.csv", "MMSI,BaseDateTime,LAT,LON,SOG"), Some(Format::AisCsv));
    /// assert_eq!(Format::detect_from("p.csv", "t,shipid,lon,lat,heading,course,speed"), Some(Format::PiraeusCsv));
    /// assert_eq!(Format::detect_from("Forex·EURTRY·NoExpiry.txt", "01/02/2019,00:00:01,6.0654,1"), Some(Format::StockTxt));
    /// assert_eq!(Format::detect_from("-", r#"{"streamID":"A"}"#), Some(Format::JsonLines));
    /// assert_eq!(Format::detect_from("notes.csv", "hello,world"), None);
    /// ```
    pub fn detect_from(name: &str, first_line: &str) -> Option<Format> {
        let lower = name.to_ascii_lowercase();
        let first = first_line.trim_start_matches('\u{feff}').trim();
        if [".json", ".jsonl", ".ndjson"].iter().any(|e| lower.ends_with(e)) || first.starts_with('{') {
            return Some(Format::JsonLines);
        }
        if lower.ends_with(".txt") {
            return Some(Format::StockTxt);
        }
        let cols: Vec<String> = first.split(',').map(|c| c.trim().trim_matches('"').to_ascii_lowercase()).collect();
        let has = |n: &str| cols.iter().any(|c| c == n);
        if cols.len() >= 4 && cols[..4] == ["date", "time", "price", "volume"] {
            Some(Format::StockCsv)
        } else if has("mmsi") && has("basedatetime") {
            Some(Format::AisCsv)
        } else if has("t") && (has("shipid") || has("vessel_id") || has("ship_id")) && has("lat") && has("lon") {
            Some(Format::PiraeusCsv)
        } else if cols.len() >= 4 && crate::fields::date_days(&cols[0]).is_some() {
            Some(Format::StockTxt)
        } else {
            None
        }
    }

    /// The format of a file on disk (reads its first line).
    ///
    /// # Errors
    /// When the file cannot be read or its format is not recognized.
    pub fn detect(path: &Path) -> Result<Format, ParseError> {
        let first = first_line(path)?;
        Format::detect_from(&path.to_string_lossy(), &first).ok_or_else(|| {
            ParseError::new(
                path.display().to_string(),
                0,
                format!("unknown format (first line {:?}); name it with --format", truncate(&first, 80)),
            )
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    /// Parse a command-line format name (case-insensitive; `json`, `txt`, `noaa`, `piraeus` accepted).
    fn from_str(s: &str) -> Result<Format, String> {
        match s.to_ascii_lowercase().as_str() {
            "jsonl" | "json" | "json-lines" | "ndjson" => Ok(Format::JsonLines),
            "stock-txt" | "txt" => Ok(Format::StockTxt),
            "stock-csv" | "stocks" | "csv" => Ok(Format::StockCsv),
            "ais-csv" | "ais" | "noaa" => Ok(Format::AisCsv),
            "piraeus-csv" | "piraeus" => Ok(Format::PiraeusCsv),
            _ => {
                Err(format!("unknown format {s:?}; expected one of jsonl, stock-txt, stock-csv, ais-csv, piraeus-csv"))
            }
        }
    }
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The first line of a file (without the line end), empty for an empty file.
pub(crate) fn first_line(path: &Path) -> Result<String, ParseError> {
    let file =
        File::open(path).map_err(|e| ParseError::new(path.display().to_string(), 0, format!("cannot open: {e}")))?;
    let mut buf = Vec::new();
    BufReader::new(file)
        .read_until(b'\n', &mut buf)
        .map_err(|e| ParseError::new(path.display().to_string(), 0, format!("cannot read: {e}")))?;
    Ok(String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_string())
}

/// Per-file state of the line parser: format, names derived from the file, header columns.
///
/// Cheap to clone; build one per file and share it between the workers that read that file.
#[derive(Clone, Debug)]
pub struct LineContext {
    format: Format,
    file: String,
    stream_id: String,
    dataset_key: String,
    header_first: Option<String>,
    ais: Option<AisColumns>,
}

impl LineContext {
    /// The context of a file named `name` (a path or a bare file name) whose first line is
    /// `first_line` (needed for the AIS formats' columns; for the others it may be `None`).
    ///
    /// Names: stock text → dataset key and stream id from `<DataSetKey>·<StreamID>·<Suffix>.txt`;
    /// stock CSV → stream id `SYMBOL[_contract]`, dataset key `<assetclass>_<market>` (see
    /// [`crate::stock::names_from_csv_file`]); NOAA AIS → dataset key `US`; Piraeus AIS →
    /// `SaronicGulf`. File names that do not follow the pattern fall back to stream id = file stem,
    /// dataset key `Stocks`. [`Self::with_dataset_key`]/[`Self::with_stream_id`] override them.
    ///
    /// ```
    /// use saams_datasets::{Format, LineContext};
    /// let ctx = LineContext::new(Format::StockTxt, "data/Forex·EURTRY·NoExpiry.txt", None).unwrap();
    /// let t = ctx.parse_line(1, "01/02/2019,00:00:01,6.0654,1").unwrap().unwrap();
    /// assert_eq!((t.stream_id.as_str(), t.dataset_key.as_str()), ("EURTRY", "Forex"));
    /// assert!(LineContext::new(Format::AisCsv, "x.csv", None).is_err());
    /// ```
    ///
    /// # Errors
    /// For an AIS format without a header, or a header lacking a vessel, time, `lat` or `lon` column.
    pub fn new(format: Format, name: &str, first_line: Option<&str>) -> Result<LineContext, ParseError> {
        let file_name = Path::new(name).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let first_line = first_line.map(|l| l.trim_start_matches('\u{feff}'));
        let (dataset_key, stream_id) = match format {
            Format::JsonLines => (String::new(), String::new()),
            Format::StockTxt => stock::names_from_txt_file(&file_name),
            Format::StockCsv => stock::names_from_csv_file(&file_name),
            Format::AisCsv => ("US".to_string(), String::new()),
            Format::PiraeusCsv => ("SaronicGulf".to_string(), String::new()),
        };
        let ais = match format {
            Format::AisCsv | Format::PiraeusCsv => {
                let header = first_line.ok_or_else(|| ParseError::new(name, 0, "an AIS CSV needs its header row"))?;
                Some(AisColumns::from_header(header).map_err(|m| ParseError::new(name, 1, m))?)
            }
            _ => None,
        };
        let header_first = if format.has_header() {
            Some(first_line.and_then(|l| l.split(',').next()).unwrap_or("Date").trim().to_ascii_lowercase())
        } else {
            None
        };
        Ok(LineContext { format, file: name.to_string(), stream_id, dataset_key, header_first, ais })
    }

    /// The context of a file on disk: detects the format when `format` is `None` and reads the
    /// first line for the header.
    ///
    /// # Errors
    /// When the file cannot be read, its format is unknown, or its header is unusable.
    pub fn open(path: &Path, format: Option<Format>) -> Result<LineContext, ParseError> {
        let first = first_line(path)?;
        let name = path.display().to_string();
        let format = match format {
            Some(f) => f,
            None => Format::detect_from(&name, &first).ok_or_else(|| {
                ParseError::new(&name, 0, format!("unknown format (first line {:?})", truncate(&first, 80)))
            })?,
        };
        LineContext::new(format, &name, Some(&first))
    }

    /// The same context with another dataset key (for stock and AIS formats; JSON lines carry
    /// their own).
    pub fn with_dataset_key(mut self, key: &str) -> LineContext {
        self.dataset_key = key.to_string();
        self
    }

    /// The same context with another stream id (stock formats: one file is one stream).
    pub fn with_stream_id(mut self, id: &str) -> LineContext {
        self.stream_id = id.to_string();
        self
    }

    /// The format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The file name used in errors.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The stream id a stock file's tuples get (empty for the formats that carry it per row).
    pub fn stream_id(&self) -> &str {
        &self.stream_id
    }

    /// The dataset key the tuples get (empty for JSON lines, which carry their own).
    pub fn dataset_key(&self) -> &str {
        &self.dataset_key
    }

    /// True if `line` is this file's header row (which [`Self::parse_line`] skips).
    #[inline]
    pub fn is_header(&self, line: &str) -> bool {
        match &self.header_first {
            None => false,
            Some(first) => {
                let line = strip_boms(line);
                let f = &line[..memchr::memchr(b',', line.as_bytes()).unwrap_or(line.len())];
                // Most lines are rows, not the header: their first cell needs no Unicode trim
                // and has no quotes to strip.
                let f = crate::fields::trim(f);
                let f = if f.starts_with('"') || f.ends_with('"') { f.trim_matches('"') } else { f };
                f.eq_ignore_ascii_case(first)
            }
        }
    }

    /// Parse one line (without its line end) of this file; `line_no` (1-based) only locates errors.
    /// Blank lines and the header row give `Ok(None)`.
    ///
    /// ```
    /// use saams_datasets::{Format, LineContext};
    /// let ctx = LineContext::new(Format::StockCsv, "equity_usa_SPY_tick_trade.csv", Some("Date,Time,Price,Volume")).unwrap();
    /// assert!(ctx.parse_line(1, "Date,Time,Price,Volume").unwrap().is_none());
    /// let t = ctx.parse_line(2, "2013-10-07,04:00:00.464,167.41,100,P,20002000,0").unwrap().unwrap();
    /// assert_eq!(t.field("price"), Some(saams::Datum::Num(167.41)));
    /// let e = ctx.parse_line(3, "2013-10-07,04:00:00.464,abc,100").unwrap_err();
    /// assert_eq!(e.to_string(), "equity_usa_SPY_tick_trade.csv:3: Price: not a number: \"abc\"");
    /// ```
    ///
    /// # Errors
    /// A [`ParseError`] at `file:line_no` naming the bad column or value.
    pub fn parse_line(&self, line_no: u64, line: &str) -> Result<Option<Tuple>, ParseError> {
        let mut t = crate::tuple_pool::take_spare();
        match self.parse_line_into(line_no, line, &mut t) {
            Ok(true) => Ok(Some(t)),
            other => {
                crate::tuple_pool::recycle(t);
                other.map(|_| None)
            }
        }
    }

    /// [`LineContext::parse_line`] into `t`: true if the line was a tuple (now in `t`), false for
    /// a blank line or the header row (`t` unchanged). The parsers overwrite `t`'s strings and
    /// fields in place, so a reader that keeps one tuple allocates nothing per line and moves no
    /// tuple around (handing ~90-byte tuples from parser to reader to router by value, and
    /// through a thread-local spare, was ~5 % of a JSON-lines ingest).
    ///
    /// ```
    /// use saams::api::Tuple;
    /// use saams_datasets::{Format, LineContext};
    /// let ctx = LineContext::new(Format::StockCsv, "equity_usa_SPY_tick_trade.csv", Some("Date,Time,Price,Volume")).unwrap();
    /// let mut t = Tuple::from_json(r#"{"streamID":"A","dataSetKey":"D"}"#).unwrap();
    /// assert!(!ctx.parse_line_into(1, "Date,Time,Price,Volume", &mut t).unwrap());
    /// assert!(ctx.parse_line_into(2, "2013-10-07,04:00:00.464,167.41,100", &mut t).unwrap());
    /// assert_eq!(Some(t), ctx.parse_line(2, "2013-10-07,04:00:00.464,167.41,100").unwrap());
    /// ```
    ///
    /// # Errors
    /// As [`LineContext::parse_line`]; `t` is then left in any state.
    #[inline]
    pub fn parse_line_into(&self, line_no: u64, line: &str, t: &mut Tuple) -> Result<bool, ParseError> {
        let mut end = line.len();
        while end > 0 && matches!(line.as_bytes()[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        let line = strip_boms(&line[..end]);
        // Blank (whitespace only)? A first byte that is a letter, digit or ASCII punctuation says
        // no without the Unicode-aware trim.
        let plain = |c: &u8| c.is_ascii_alphanumeric() || c.is_ascii_punctuation();
        let blank = !line.as_bytes().first().is_some_and(plain) && line.trim().is_empty();
        if blank || self.is_header(line) {
            return Ok(false);
        }
        let result = match self.format {
            Format::JsonLines => crate::jsonl::parse_json_tuple_into(line, t).map_err(|e| e.0),
            Format::StockTxt | Format::StockCsv => {
                stock::parse_stock_line(line).map(|row| row.write_into(&self.stream_id, &self.dataset_key, t))
            }
            Format::AisCsv | Format::PiraeusCsv => match &self.ais {
                Some(cols) => cols.parse_into(line, &self.dataset_key, t),
                None => Err("no AIS header".to_string()),
            },
        };
        result.map(|()| true).map_err(|m| ParseError::new(&self.file, line_no, m))
    }

    /// The line at the start of `text` (a block's unread lines, as
    /// [`crate::lines::LineReader::next_parsed_or_line`] offers them) parsed into `t`, when this
    /// format's parser finds a line's end as it parses: JSON lines in the reference form
    /// ([`crate::jsonl::parse_reference_line`]). The line's length with its line end, or `None`
    /// (another format, or a line that is not in that form: `t` is then in any state), and the
    /// line is for [`Self::parse_line_into`], which gives the same tuple for every line this
    /// takes.
    ///
    /// ```
    /// use saams::api::Tuple;
    /// use saams_datasets::{Format, LineContext};
    /// let ctx = LineContext::new(Format::JsonLines, "ticks.jsonl", None).unwrap();
    /// let line = r#"{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654}"#;
    /// let (mut t, mut u) = (Tuple::default(), Tuple::default());
    /// assert_eq!(ctx.parse_block_line_into(&format!("{line}\n{line}"), &mut t), Some(line.len() + 1));
    /// assert!(ctx.parse_line_into(1, line, &mut u).unwrap());
    /// assert_eq!(t, u);
    /// assert_eq!(ctx.parse_block_line_into("\n", &mut t), None);
    /// ```
    #[inline]
    pub fn parse_block_line_into(&self, text: &str, t: &mut Tuple) -> Option<usize> {
        match self.format {
            Format::JsonLines => crate::jsonl::parse_reference_line(text, t),
            _ => None,
        }
    }
}

/// `line` without leading byte-order marks (U+FEFF); looks at the first byte before comparing
/// three (this runs on every line).
#[inline]
fn strip_boms(mut line: &str) -> &str {
    while line.as_bytes().first() == Some(&0xEF)
        && let Some(rest) = line.strip_prefix('\u{feff}')
    {
        line = rest;
    }
    line
}

/// Parse one line with a context: the same as [`LineContext::parse_line`].
///
/// # Errors
/// As [`LineContext::parse_line`].
pub fn parse_line(ctx: &LineContext, line_no: u64, line: &str) -> Result<Option<Tuple>, ParseError> {
    ctx.parse_line(line_no, line)
}
