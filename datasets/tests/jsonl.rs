//! The fast JSON tuple parser agrees with `Tuple::from_json` (same tuples up to field order, same
//! errors) on real converted rows, generated rows, edge cases and seeded random corruptions; the
//! block parse agrees with parsing each line alone.

use std::path::PathBuf;

use saams::api::Tuple;
use saams::hash::SplitMix64;
use saams_datasets::generator::GeneratorSpec;
use saams_datasets::jsonl::{parse_json_tuple, recycle, write_reference_json};
use saams_datasets::lines::{Ahead, Line, LineReader};
use saams_datasets::{Format, LineContext, read_path};

fn normalized(mut t: Tuple) -> Tuple {
    t.fields.sort_by(|a, b| a.0.cmp(&b.0));
    t
}

fn agree(line: &str) {
    let fast = parse_json_tuple(line).map(normalized);
    let slow = Tuple::from_json(line).map(normalized);
    assert_eq!(fast, slow, "line {line:?}");
}

fn corpus() -> Vec<String> {
    let root = PathBuf::from(env!("SAAMS_DATASETS_DIR"));
    let mut lines = Vec::new();
    for rel in ["stocks/tick/equity_usa_IBM_tick_trade.csv", "ais/noaa_marinecadastre_AIS_2022-01-03_sample.csv"] {
        for t in read_path(&root.join(rel), None).unwrap().take(3000) {
            let mut s = String::new();
            write_reference_json(&t.unwrap(), &mut s);
            lines.push(s);
        }
    }
    for t in GeneratorSpec::parse("ais:5:50").unwrap().interleaved(0, 1) {
        lines.push(t.to_json());
    }
    lines
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn agrees_on_real_and_generated_rows() {
    let lines = corpus();
    assert!(lines.len() > 6000);
    for l in &lines {
        agree(l);
        assert!(parse_json_tuple(l).is_ok());
    }
}

#[test]
fn agrees_on_edge_cases() {
    for line in [
        r#"{"streamID":"A","dataSetKey":"D","price":1}"#,
        r#"  { "streamID" : "A" , "dataSetKey" : "D" , "price" : -0.5e-3 }  "#,
        r#"{"streamID":"A","dataSetKey":"D","timestamp":"2019-01-02T00:00:01.5Z","price":1}"#,
        r#"{"streamID":"A","dataSetKey":"D","timestamp":"2019-01-02T00:00:01+02:00"}"#,
        r#"{"streamID":"A","dataSetKey":"D","timestamp":7,"date":"2019-01-02","time":"00:00:01"}"#,
        r#"{"streamID":"A","dataSetKey":"D","date":"2019-01-02"}"#,
        r#"{"streamID":"A","dataSetKey":"D","date":"2019-02-30","time":"00:00:00"}"#,
        r#"{"streamID":"A","dataSetKey":"D","time":"24:00:00","date":"2019-01-02"}"#,
        r#"{"streamID":"A","dataSetKey":"D","values":{"price":2.5},"volume":3}"#,
        r#"{"streamID":"A\"B","dataSetKey":"D","name":"x\ny"}"#,
        r#"{"streamID":7,"dataSetKey":"D"}"#,
        r#"{"streamID":"A","dataSetKey":"D","price":1,"price":2}"#,
        r#"{"streamID":"A","dataSetKey":"D","flag":true}"#,
        r#"{"streamID":"A","dataSetKey":"D","p":01}"#,
        r#"{"streamID":"A","dataSetKey":"D","p":1.}"#,
        r#"{"streamID":"A","dataSetKey":"D","p":1e999}"#,
        r#"{"streamID":"A","dataSetKey":"D","p":12345678901234567890123}"#,
        r#"{"streamID":"A","dataSetKey":"D","p":null,"objectID":null}"#,
        r#"{"streamID":"A","dataSetKey":"D"} trailing"#,
        r#"{"streamID":"A","dataSetKey":"D",}"#,
        r#"{}"#,
        r#"[]"#,
        "",
        r#"{"streamID":"Å","dataSetKey":"Δ","price":1}"#,
    ] {
        agree(line);
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn agrees_on_random_corruptions() {
    let lines = corpus();
    let mut rng = SplitMix64::new(2024);
    let alphabet = b"{}[]\":,.-+eE0123456789 nultrAZaz\\";
    for _ in 0..20_000 {
        let mut bytes = lines[(rng.next_u64() % lines.len() as u64) as usize].clone().into_bytes();
        for _ in 0..1 + rng.next_u64() % 3 {
            let pos = (rng.next_u64() % bytes.len() as u64) as usize;
            match rng.next_u64() % 3 {
                0 => {
                    bytes.remove(pos);
                }
                1 => bytes[pos] = alphabet[(rng.next_u64() % alphabet.len() as u64) as usize],
                _ => bytes.insert(pos, alphabet[(rng.next_u64() % alphabet.len() as u64) as usize]),
            }
            if bytes.is_empty() {
                break;
            }
        }
        if let Ok(line) = String::from_utf8(bytes) {
            agree(&line);
        }
    }
}

/// Lines in the reference writer's exact layout take the literal-matching fast path; these vary
/// it at each step (reserved keys among the values, duplicates, nulls, whitespace, escapes).
#[test]
fn agrees_on_variants_of_the_reference_layout() {
    let head = r#"{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01.250""#;
    for tail in [
        r#","price":6.0654,"volume":1}"#,
        r#"}"#,
        r#","price":6.0654,"volume":1}  "#,
        r#","price":6.0654,"volume":1} x"#,
        r#","price":6.0654,"price":1}"#,
        r#","price":6.0654,"streamID":"X"}"#,
        r#","price":6.0654,"timestamp":"2019-01-02T00:00:00"}"#,
        r#","price":6.0654,"values":{"a":1}}"#,
        r#","price":null,"note":"a b"}"#,
        // A name repeated where one value is null: the general parser keeps the last value.
        r#","price":null,"price":1}"#,
        r#","price":1,"price":null}"#,
        r#","price":null,"price":null}"#,
        r#","price":null,"volume":1,"price":"x"}"#,
        r#","volume":1,"price":null,"volume":null}"#,
        r#","price":-0.0,"volume":1e3}"#,
        r#","price":1e400}"#,
        r#","price":6.0654,"volume":1,}"#,
        r#","price" : 6.0654}"#,
        r#","name":"x\"y"}"#,
        r#","price":6.0654"#,
        r#","price":true}"#,
    ] {
        agree(&format!("{head}{tail}"));
    }
    for line in [
        r#"{"streamID":"A","objectID":7,"dataSetKey":"D","date":"01/02/2019","time":"00:00:01","p":1}"#,
        r#"{"streamID":"A","objectID":null,"dataSetKey":"D","date":"02/30/2019","time":"00:00:01","p":1}"#,
        r#"{"streamID":"A","objectID":null,"dataSetKey":"D","date":"01/02/2019","time":"25:00:01","p":1}"#,
        r#"{"streamID":"A","objectID":null,"dataSetKey":"D","date":" 2019-01-02 ","time":"00:00:01","p":1}"#,
        r#"{"streamID":"A","objectID":null,"dataSetKey":7,"date":"01/02/2019","time":"00:00:01"}"#,
    ] {
        agree(line);
    }
}

/// Found by the `tuple_jsonl` fuzz target: with more than 17 significant digits serde_json's
/// default float parsing was one unit in the last place off the correctly rounded value the fast
/// path gives; the workspace enables serde_json's `float_roundtrip`, so both round correctly.
#[test]
fn agrees_on_numbers_with_more_than_seventeen_digits() {
    for price in [
        "46387232232222222222201000",
        "0.100000000000000005551115123125782702118158340454101562",
        "9007199254740993.0001",
    ] {
        agree(&format!(r#"{{"streamID":"A","dataSetKey":"D","price":{price}}}"#));
        let t = parse_json_tuple(&format!(r#"{{"streamID":"A","dataSetKey":"D","price":{price}}}"#)).unwrap();
        assert_eq!(t.field("price"), Some(saams::Datum::Num(price.parse::<f64>().unwrap())), "{price}");
    }
}

/// A recycled tuple (`recycle`) lends its buffers to the next parse: with every parsed tuple
/// given back, and tuples of other shapes given back in between (more fields, text values, other
/// names), each line parses to the same tuple, in the same field order, as on a fresh thread.
#[test]
fn recycled_tuples_change_nothing() {
    let head = r#"{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01.250""#;
    let tails = [
        r#","price":6.0654,"volume":1}"#,
        r#","note":"a b","price":2,"extra":"x","more":3}"#,
        r#"}"#,
        r#","price":null,"note":"c"}"#,
        r#","volume":1,"price":6.0654}"#,
        r#","price":6.0654,"price":1}"#,
        r#","note":"x\"y"}"#,
        r#","note":"longer text than before, to grow the buffer"}"#,
        r#","price":true}"#,
    ];
    let lines: Vec<String> = tails.iter().map(|t| format!("{head}{t}")).collect();
    let fresh: Vec<_> =
        std::thread::scope(|s| s.spawn(|| lines.iter().map(|l| parse_json_tuple(l)).collect()).join().unwrap());
    for round in 0..3 {
        for (i, l) in lines.iter().enumerate().rev().chain(lines.iter().enumerate()) {
            let got = parse_json_tuple(l);
            assert_eq!(got, fresh[i], "round {round}, line {l:?}");
            if let Ok(t) = got {
                recycle(t);
            }
            if round == 1 {
                recycle(Tuple::from_json(&lines[1]).unwrap());
            }
        }
    }
}

/// Reads of at most `step` bytes, so the line reader's blocks end anywhere in a line.
struct Steps<'a> {
    rest: &'a [u8],
    step: usize,
}

impl std::io::Read for Steps<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let (now, later) = self.rest.split_at(self.rest.len().min(self.step).min(out.len()));
        out[..now.len()].copy_from_slice(now);
        self.rest = later;
        Ok(now.len())
    }
}

/// The file sources' block parse (a reference line parsed inside the reader's block, its end
/// found by the parse) gives, line for line, the length and tuple of parsing the line alone, and
/// hands every other line out whole: generated lines, the reference layout's variants, seeded
/// corruptions (line ends, carriage returns, spaces and control bytes among them), `\n` and
/// `\r\n` line ends, a last line without one, blocks cut anywhere.
#[test]
fn block_parse_agrees_with_parsing_each_line() {
    let mut lines: Vec<String> = GeneratorSpec::parse("stocks:20:40")
        .unwrap()
        .interleaved(0, 1)
        .chain(GeneratorSpec::parse("ais:5:40").unwrap().interleaved(0, 1))
        .map(|t| {
            let mut s = String::new();
            write_reference_json(&t, &mut s);
            s
        })
        .collect();
    let reference = lines.len();
    let mut rng = SplitMix64::new(36);
    let alphabet = b"{}\":,.-0123456789 \n\r\t\x01nulAz\\";
    for k in 0..6000 {
        let mut bytes = lines[k % reference].clone().into_bytes();
        for _ in 0..1 + rng.next_u64() % 2 {
            let pos = (rng.next_u64() % bytes.len() as u64) as usize;
            let c = alphabet[(rng.next_u64() % alphabet.len() as u64) as usize];
            if rng.next_u64().is_multiple_of(2) { bytes[pos] = c } else { bytes.insert(pos, c) }
        }
        lines.push(String::from_utf8(bytes).unwrap());
    }
    let mut text = String::new();
    for (k, line) in lines.iter().enumerate() {
        text.push_str(line);
        text.push_str(if k % 7 == 3 { "\r\n" } else { "\n" });
    }
    text.push_str(&lines[0]);
    let ctx = LineContext::new(Format::JsonLines, "block.jsonl", None).unwrap();
    for step in [usize::MAX, 4093, 200] {
        let mut reader = LineReader::new(Steps { rest: text.as_bytes(), step });
        let (mut in_block, mut alone, mut parsed) = (Tuple::default(), Tuple::default(), 0);
        for (n, expected) in text.split_inclusive('\n').enumerate() {
            let (ahead, len) =
                reader.next_parsed_or_line(|text| ctx.parse_block_line_into(text, &mut in_block)).unwrap().unwrap();
            assert_eq!(len, expected.len(), "step {step}, line {n}");
            match ahead {
                Ahead::Parsed => {
                    assert!(ctx.parse_line_into(n as u64 + 1, expected, &mut alone).unwrap(), "{expected:?}");
                    assert_eq!(in_block, alone, "step {step}, line {n}: {expected:?}");
                    parsed += 1;
                }
                Ahead::Line(line) => assert_eq!(line, Line::Text(expected), "step {step}, line {n}"),
            }
        }
        assert!(reader.next_line().unwrap().is_none());
        // Every generated line and the unchanged last one; corrupted lines only where they stay
        // in the reference form.
        assert!(
            parsed > reference && parsed < lines.len(),
            "step {step}: {parsed} of {} parsed in the block",
            lines.len()
        );
    }
}
