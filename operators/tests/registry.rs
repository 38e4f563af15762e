//! The registry collection drives what the update operator maintains: registry changes take
//! effect at their timestamps (windows), on every worker alike.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use differential_dataflow::input::Input as _;
use saams::api::request::parse_requests;
use saams_operators::registry::Entry;
use saams_operators::{AnswerPairs, FoldPartials, JoinRegistry, MergeTree, Plan, Rec, SetChanges, UpdateSynopses, Val};
use timely::dataflow::operators::{Input, Inspect};

mod common;
use common::NoSnapshots;

const SCRIPT: &str = r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}
{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[1,"price","Queryable","Continues"],"requestID":"a"}
{"streamID":"B","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1],"noOfP":2}
{"streamID":"B","synopsisID":1,"dataSetKey":"F","param":[1,"price","Queryable","Continues"],"requestID":"b"}"#;

/// (requestID, window start, tuples) of every answer line, sorted.
fn run(workers: usize, registry: Vec<(Entry, u64, isize)>) -> Vec<(String, u64, u64)> {
    let registry_from_minute_1 = registry.iter().any(|&(_, at, diff)| at == 60_000 && diff > 0);
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let requests = parse_requests(SCRIPT);
    timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let plan = Rc::new(RefCell::new(Plan::build(&requests, peers, 60_000, Arc::new(NoSnapshots))));
        let sink = sink.clone();
        let (mut input, mut entries) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, values) = scope.new_input::<Vec<Rec>>();
            let (entries, collection) = scope.new_collection::<Entry, isize>();
            let mut stream = values.join_registry(collection, plan.clone()).update_synopses(plan.clone());
            for k in 1..=saams_operators::merge_stages(peers) {
                stream = stream.merge_stage(plan.clone(), k);
            }
            stream
                .fold_partials(plan.clone())
                .answer_pairs(plan.clone())
                .set_changes(plan.clone())
                .inspect(move |l: &String| sink.lock().expect("sink").push(l.clone()));
            (input, entries)
        });
        if me == 0 {
            for (entry, time, diff) in &registry {
                entries.update_at(entry.clone(), *time, *diff);
            }
            // Four minutes of A and B, one value every 10 s, read by worker 0.
            for (seq, sec) in (0..240).step_by(10).enumerate() {
                for stream in ["A", "B"] {
                    let group = plan.borrow().routes("F", stream).0[0];
                    let time = 1_000 * i64::from(sec);
                    input.send(Rec { group, time, seq: seq as u64, val: Val::Num(1.0) });
                }
            }
        }
        entries.close();
        drop(input);
        while worker.step() {}
    })
    .expect("timely");
    let mut out: Vec<(String, u64, u64)> = lines
        .lock()
        .expect("lines")
        .iter()
        .map(|l| {
            let j: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            // Landmark answers: from the synopsis' first window to the end of the one closed.
            let end = j["window"]["end"].as_str().expect("a continuous answer");
            let minute: u64 = end[14..16].parse::<u64>().expect("minute") - 1;
            let first = match j["requestID"].as_str() {
                Some("b") if registry_from_minute_1 => "01",
                _ => "00",
            };
            assert_eq!(&j["window"]["start"].as_str().expect("start")[14..16], first, "{l}");
            (j["requestID"].as_str().expect("id").to_string(), minute, j["tuples"].as_u64().expect("tuples"))
        })
        .collect();
    out.sort();
    out
}

fn key(stream: &str) -> (String, String) {
    ("F".to_string(), stream.to_string())
}

#[test]
fn the_script_registry_maintains_every_synopsis_from_the_first_window() {
    let requests = parse_requests(SCRIPT);
    let plan = Plan::build(&requests, 2, 60_000, Arc::new(NoSnapshots));
    for workers in [1, 2, 3] {
        let got = run(workers, plan.registry_updates());
        let expect: Vec<_> =
            ["a", "b"].iter().flat_map(|id| (0..4).map(move |m| (id.to_string(), m, 6 * (m + 1)))).collect();
        assert_eq!(got, expect, "{workers} workers");
    }
}

#[test]
fn registry_changes_take_effect_at_their_window_on_every_worker() {
    // A is deleted from minute 2 on; B (spread over two workers) is registered from minute 1 on.
    let registry = vec![((key("A"), 0), 0, 1), ((key("A"), 0), 120_000, -1), ((key("B"), 1), 60_000, 1)];
    for workers in [1, 2, 3] {
        let got = run(workers, registry.clone());
        let expect = vec![
            ("a".to_string(), 0, 6),
            ("a".to_string(), 1, 12),
            ("b".to_string(), 1, 6),
            ("b".to_string(), 2, 12),
            ("b".to_string(), 3, 18),
        ];
        assert_eq!(got, expect, "{workers} workers");
    }
}
