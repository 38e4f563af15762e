//! The reference JSON tuple form, written and parsed fast, and the CSV → JSON-lines converter.
//!
//! The reference system (`TransformTxtFilesIntoJsons.java`) writes
//! `{"streamID","objectID":null,"dataSetKey","date","time","price","volume"}` with `MM/dd/yyyy`
//! dates; [`write_reference_json`] writes that key order and date form, times as `HH:mm:ss` (with
//! `.fff` when the milliseconds are not zero), then every value field in the tuple's order.

use std::fmt::Write as _;
use std::io::{self, Write};

use saams::Value;
use saams::api::Tuple;
use saams::api::time::civil_from_days;

use crate::error::ParseError;

mod flat;
mod parse;
mod reference;
mod values;

pub use crate::tuple_pool::recycle;
pub use parse::{parse_json_tuple, parse_json_tuple_into};
pub use reference::parse_reference_line;

/// Append the reference JSON object of `t` (no line end) to `out`.
///
/// ```
/// use saams::api::Tuple;
/// let t = Tuple::from_json(r#"{"streamID":"EURTRY","dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654,"volume":1}"#).unwrap();
/// let mut s = String::new();
/// saams_datasets::jsonl::write_reference_json(&t, &mut s);
/// assert_eq!(s, r#"{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654,"volume":1}"#);
/// assert_eq!(Tuple::from_json(&s).unwrap(), t);
/// ```
pub fn write_reference_json(t: &Tuple, out: &mut String) {
    out.push_str("{\"streamID\":");
    push_json_string(&t.stream_id, out);
    out.push_str(",\"objectID\":null,\"dataSetKey\":");
    push_json_string(&t.dataset_key, out);
    if let Some(ms) = t.time_ms {
        let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
        let (y, m, d) = civil_from_days(days);
        let (h, mi, s, f) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
        // Writing into a String cannot fail.
        let _ = write!(out, ",\"date\":\"{m:02}/{d:02}/{y:04}\",\"time\":\"{h:02}:{mi:02}:{s:02}");
        if f != 0 {
            let _ = write!(out, ".{f:03}");
        }
        out.push('"');
    }
    for (k, v) in &t.fields {
        out.push(',');
        push_json_string(k, out);
        out.push(':');
        match v {
            // Rust prints the shortest decimal that reads back to the same double.
            Value::Num(x) if x.is_finite() => {
                let _ = write!(out, "{x}");
            }
            Value::Num(_) => out.push_str("null"),
            Value::Str(s) => push_json_string(s, out),
        }
    }
    out.push('}');
}

/// A JSON string literal of `s` (quotes, backslashes and control characters escaped).
fn push_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// What a conversion did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertSummary {
    /// Tuples written.
    pub tuples: u64,
    /// Malformed rows skipped.
    pub malformed: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Write every tuple of `reader` (a `TupleReader`, or any iterator of parsed rows) as a
/// reference JSON line to `out`; each malformed row goes to `on_error` and is skipped.
///
/// ```
/// use saams_datasets::{Format, TupleReader, jsonl::convert_to_json_lines};
/// let csv = "Date,Time,Price,Volume\n2013-10-07,04:00:00.464,167.41,100\n2013-10-07,bad,1,1\n";
/// let r = TupleReader::from_reader("equity_usa_SPY_tick_trade.csv", Box::new(csv.as_bytes()), None);
/// let (mut out, mut errors) = (Vec::new(), Vec::new());
/// let s = convert_to_json_lines(r, &mut out, |e| errors.push(e.to_string())).unwrap();
/// assert_eq!((s.tuples, s.malformed), (1, 1));
/// assert_eq!(String::from_utf8(out).unwrap(),
///     "{\"streamID\":\"SPY\",\"objectID\":null,\"dataSetKey\":\"equity_usa\",\"date\":\"10/07/2013\",\"time\":\"04:00:00.464\",\"price\":167.41,\"volume\":100}\n");
/// assert_eq!(errors, ["equity_usa_SPY_tick_trade.csv:3: Time: bad time \"bad\""]);
/// ```
///
/// # Errors
/// Only when writing to `out` fails.
pub fn convert_to_json_lines(
    reader: impl IntoIterator<Item = Result<Tuple, ParseError>>,
    out: &mut impl Write,
    mut on_error: impl FnMut(&ParseError),
) -> io::Result<ConvertSummary> {
    let mut summary = ConvertSummary::default();
    let mut line = String::with_capacity(256);
    for item in reader {
        match item {
            Ok(t) => {
                line.clear();
                write_reference_json(&t, &mut line);
                line.push('\n');
                out.write_all(line.as_bytes())?;
                summary.tuples += 1;
                summary.bytes += line.len() as u64;
            }
            Err(e) => {
                summary.malformed += 1;
                on_error(&e);
            }
        }
    }
    out.flush()?;
    Ok(summary)
}
