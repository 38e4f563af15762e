//! Checkpoints, the operators' side: copies taken at a boundary hold exactly the values before
//! it, and operators started from them answer as an uninterrupted run does.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use saams_operators::window::Held;
use saams_operators::{FoldPartials, Out, Plan, Rec, UpdateSynopses, Val};
use timely::dataflow::operators::{Input, Inspect, Probe};

mod common;
use common::NoSnapshots;

/// An owned Count-Min (one stream) and a spread HyperLogLog (the whole dataset) on two
/// workers' worth of plan, one worker running.
const REQUESTS: &str = r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}
    {"streamID":"","synopsisID":2,"dataSetKey":"F","param":["HyperLogLog","price","NotQueryable",0.05]}
    {"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[1.0,"price","Queryable","Continues"],"requestID":9}"#;

/// A copy taken: synopsis, items, state bytes, the first window it covers and the end of the
/// newest it closed.
type Copied = (u32, u64, Vec<u8>, (Option<u64>, u64));

/// Feed values `0..n` (value i at second i) with a checkpoint at `boundary` (and start from
/// `restored`, if given, skipping values before its boundary); returns the copies taken (by
/// synopsis: items, state bytes) and the answer lines.
fn run(n: u64, boundary: u64, restored: Option<Vec<Copied>>) -> (Vec<Copied>, Vec<String>) {
    timely::execute_directly(move |worker| {
        let requests = saams::api::request::parse_requests(REQUESTS);
        let plan = Plan::build(&requests, 1, 60_000, Arc::new(NoSnapshots));
        plan.checkpoints.borrow_mut().boundaries.insert(boundary, 7);
        let skip_before = restored.as_ref().map_or(0, |_| boundary);
        if let Some(states) = restored {
            for (syn, items, bytes, since) in states {
                let state = saams::registry::decode(&bytes).expect("decode");
                plan.checkpoints.borrow_mut().restored.insert(syn, (Held::restored(state, items, since), 0));
            }
        }
        let plan = Rc::new(RefCell::new(plan));
        let out = Rc::new(RefCell::new(Vec::new()));
        let sink = out.clone();
        let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
            let (input, stream) = scope.new_input::<Vec<Rec>>();
            let (probe, _) = stream
                .update_synopses(plan.clone())
                .fold_partials(plan.clone())
                .inspect(move |o: &Out| {
                    if let Out::Line(l) = o {
                        sink.borrow_mut().push(l.clone())
                    }
                })
                .probe();
            (input, probe)
        });
        let (per_stream, wide) = {
            let p = plan.borrow();
            let r = p.routes("F", "A");
            (r.0.to_vec(), r.1.to_vec())
        };
        for i in 0..n {
            let time = 1_000 * i as i64;
            if (time as u64) < skip_before {
                continue;
            }
            for &g in per_stream.iter().chain(&wide) {
                input.send(Rec { group: g, time, seq: i, val: Val::Num((i % 17) as f64) });
            }
            input.advance_to(time as u64);
            worker.step();
        }
        drop(input);
        while !probe.done() {
            worker.step();
        }
        // The pairs and monitoring operators are not in this dataflow: hand in for them.
        for _ in 0..3 {
            plan.borrow().checkpoints.borrow_mut().hand_in(boundary, Vec::new(), Vec::new());
        }
        let taken = plan.borrow().checkpoints.borrow_mut().take_complete();
        let copies = match taken {
            Some((b, id, taken)) => {
                assert_eq!((b, id), (boundary, 7));
                let mut v: Vec<_> =
                    taken.states.iter().map(|h| (h.syn, h.items, h.state.encode(), (h.since, h.until))).collect();
                v.sort_by_key(|c| c.0);
                v
            }
            None => Vec::new(),
        };
        let lines = out.borrow().clone();
        (copies, lines)
    })
}

#[test]
fn copies_at_a_boundary_hold_exactly_the_values_before_it_and_resume_to_the_same_answers() {
    // 600 values, one a second: ten one-minute windows; the checkpoint at minute 4.
    let boundary = 240_000;
    let (copies, lines) = run(600, boundary, None);
    assert_eq!(copies.len(), 2, "the Count-Min (owned) and the HyperLogLog (spread)");
    for (syn, items, _, since) in &copies {
        assert_eq!(*items, 240, "synopsis {syn}: the values of the first four windows");
        assert_eq!(*since, (Some(0), 240_000), "synopsis {syn}: landmark, from the first window to the boundary");
    }
    // Started from the copies, fed only the values from the boundary on: the answers of the
    // windows from the boundary on are exactly those of the uninterrupted run.
    let (_, mut resumed) = run(600, boundary, Some(copies));
    // Landmark answers start at the first window; they end after the window that closed.
    let minute = |l: &String| l.split(r#""end":"1970-01-01T00:"#).nth(1).and_then(|r| r[..2].parse::<u32>().ok());
    let mut later: Vec<String> = lines.iter().filter(|l| minute(l).is_some_and(|m| m >= 5)).cloned().collect();
    assert_eq!(later.len(), 6, "windows 4..10 of the Count-Min's continuous query: {lines:?}");
    later.sort();
    resumed.sort();
    assert_eq!(resumed, later);
    assert!(resumed.iter().any(|l| l.contains(r#""tuples":600"#)), "the counts go on from the checkpoint's");
}
