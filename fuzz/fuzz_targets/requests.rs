//! The request parser (`saams::api::request::parse_requests`), the query arguments of every
//! kind (`query_spec`), and what a parsed request leads to: constructing the synopsis it names,
//! or asking an empty synopsis of its kind the question it parses to.
#![no_main]

use libfuzzer_sys::fuzz_target;
use saams::api::request::{Action, QuerySpec, parse_requests, query_spec};
use saams::registry::{construct, decode};
use saams::{Kind, Synopsis};

mod golden_envelopes;
use golden_envelopes::EMPTY;

fn ask(kind: Kind, args: &[serde_json::Value]) {
    if let Ok(QuerySpec::Single(q)) = query_spec(kind, args) {
        let i = Kind::ALL.iter().position(|k| *k == kind).expect("every kind is in ALL");
        let s: Box<dyn Synopsis> = decode(EMPTY[i]).expect("golden envelopes decode");
        let _ = s.estimate(&q);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for r in parse_requests(text).into_iter().flatten() {
        match &r.action {
            Action::Construct { params, .. } => {
                let _ = construct(r.synopsis_id, params);
            }
            Action::Query { args, .. } => {
                if let Some(kind) = Kind::from_id(r.synopsis_id) {
                    ask(kind, args);
                }
            }
            _ => {}
        }
    }
    // The query arguments of every kind, from the input read as one JSON array.
    if let Ok(serde_json::Value::Array(args)) = serde_json::from_str::<serde_json::Value>(text) {
        for kind in Kind::ALL {
            ask(kind, &args);
        }
    }
});
