//! The JSON-lines tuple parser: the line parser's fast path for flat objects
//! (`saams_datasets::jsonl::parse_json_tuple`) must agree with the general parser
//! (`saams::api::Tuple::from_json`) on every line the general parser accepts (fields compared by
//! name: `from_json` may reorder them, as `parse_json_tuple`'s docs say).
#![no_main]

use libfuzzer_sys::fuzz_target;
use saams::api::Tuple;
use saams_datasets::jsonl::parse_json_tuple;
use saams_datasets::{Format, LineContext};

fn by_name(mut t: Tuple) -> Tuple {
    t.fields.sort_by(|a, b| a.0.cmp(&b.0));
    t
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let ctx = LineContext::new(Format::JsonLines, "fuzz.jsonl", None).expect("JSON lines need no header");
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
