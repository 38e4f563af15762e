//! The fast JSON tuple parser agrees with `Tuple::from_json` (same tuples up to field order, same
//! errors) on real converted rows, generated rows, edge cases and seeded random corruptions.

use std::path::PathBuf;

use saams::api::Tuple;
use saams::hash::SplitMix64;
use saams_datasets::generator::GeneratorSpec;
use saams_datasets::jsonl::{parse_json_tuple, recycle, write_reference_json};
use saams_datasets::read_path;

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
