//! The JSON-lines tuple parser: the line parser's fast path for flat objects
//! (`saams_datasets::jsonl::parse_json_tuple`) must agree with the general parser
//! (`saams::api::Tuple::from_json`) on every line the general parser accepts (fields compared by
//! name: `from_json` may reorder them, as `parse_json_tuple`'s docs say). The raw input also goes
//! through the file sources' line reader, whose blocks are validated with SIMD (`simdutf8`): it
//! must hand out exactly the lines that splitting at newlines and validating each line with
//! `std::str::from_utf8` gives, text or not. And the file sources' block parse (reference lines
//! parsed inside the reader's block, their ends found by the parse) must give, line for line,
//! the lengths and lines of the line reader and the tuples of parsing each line alone.
#![no_main]

use libfuzzer_sys::fuzz_target;
use saams::api::Tuple;
use saams_datasets::jsonl::parse_json_tuple;
use saams_datasets::lines::{Ahead, Line, LineReader};
use saams_datasets::{Format, LineContext};

fn by_name(mut t: Tuple) -> Tuple {
    t.fields.sort_by(|a, b| a.0.cmp(&b.0));
    t
}

/// The line reader (SIMD-validated blocks) against per-line standard validation, line by line.
fn line_reader_agrees(data: &[u8]) {
    let mut reader = LineReader::new(data);
    for (n, expected) in data.split_inclusive(|&b| b == b'\n').enumerate() {
        let (line, len) = reader.next_line().expect("reading a slice cannot fail").expect("a line per split");
        assert_eq!(len, expected.len(), "line {n}");
        match (line, std::str::from_utf8(expected)) {
            (Line::Text(got), Ok(want)) => assert_eq!(got, want, "line {n}"),
            (Line::NotUtf8(got), Err(_)) => assert_eq!(got, expected, "line {n}"),
            (got, want) => panic!("line {n}: the reader gives {got:?}, per-line validation {want:?}"),
        }
    }
    assert!(reader.next_line().expect("reading a slice cannot fail").is_none(), "lines after the input's end");
}

/// Lines parsed inside the block ([`LineReader::next_parsed_or_line`] with
/// [`LineContext::parse_block_line_into`]) against each line parsed alone.
fn block_parse_agrees(data: &[u8], ctx: &LineContext) {
    let mut reader = LineReader::new(data);
    let (mut in_block, mut alone) = (Tuple::default(), Tuple::default());
    for (n, expected) in data.split_inclusive(|&b| b == b'\n').enumerate() {
        let (ahead, len) = reader
            .next_parsed_or_line(|text| ctx.parse_block_line_into(text, &mut in_block))
            .expect("reading a slice cannot fail")
            .expect("a line per split");
        assert_eq!(len, expected.len(), "line {n}");
        match ahead {
            Ahead::Parsed => {
                let line = std::str::from_utf8(expected).expect("a line parsed in its block is text");
                match ctx.parse_line_into(n as u64 + 1, line, &mut alone) {
                    Ok(true) => assert_eq!(in_block, alone, "line {n}: {line:?}"),
                    other => panic!("line {n} {line:?} parses in its block, alone gives {other:?}"),
                }
            }
            Ahead::Line(Line::Text(got)) => assert_eq!(got.as_bytes(), expected, "line {n}"),
            Ahead::Line(Line::NotUtf8(got)) => assert_eq!(got, expected, "line {n}"),
        }
    }
    assert!(reader.next_line().expect("reading a slice cannot fail").is_none(), "lines after the input's end");
}

fuzz_target!(|data: &[u8]| {
    line_reader_agrees(data);
    let ctx = LineContext::new(Format::JsonLines, "fuzz.jsonl", None).expect("JSON lines need no header");
    block_parse_agrees(data, &ctx);
    let Ok(text) = std::str::from_utf8(data) else { return };
    for (n, line) in text.lines().enumerate() {
        let _ = ctx.parse_line(n as u64 + 1, line);
        let fast = parse_json_tuple(line);
        if let Ok(general) = Tuple::from_json(line) {
            match fast {
                Ok(fast) => {
                    assert_eq!(by_name(fast), by_name(general), "fast and general parsers disagree on {line:?}")
                }
                Err(e) => panic!("the fast path refuses {line:?} ({e}) which the general parser reads"),
            }
        }
    }
});
