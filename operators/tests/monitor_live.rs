//! The sliding-window monitoring kind run live, on timely workers: the words and bytes its
//! sites send and its answers equal the simulator's (`monitor-sim`) on the same input order,
//! for 1 and 3 workers, and values it cannot track are refused and counted.

use std::rc::Rc;
use std::sync::{Arc, Mutex};

use saams::api::request::parse_requests;
use saams_monitoring::live::site_of;
use saams_monitoring::sim::{Arrival, SimOptions, adversary, simulate};
use saams_operators::monitor::{MonitorCoordinator, MonitorPlan, MonitorSites};
use saams_operators::{Rec, Val};
use serde_json::Value as Json;
use timely::dataflow::InputHandle;
use timely::dataflow::operators::Input;
use timely::dataflow::operators::core::Inspect;

const JOB_WINDOW: i64 = 100;

/// The plan's snapshot store: the monitoring kind saves no snapshots.
struct NoFiles;

impl saams_operators::SnapshotStore for NoFiles {
    fn load(&self, f: &str) -> Result<Vec<u8>, String> {
        Err(f.into())
    }
    fn save(&self, f: &str, _: &[u8]) -> Result<(), String> {
        Err(f.into())
    }
    fn check(&self, f: &str) -> Result<(), String> {
        Err(f.into())
    }
}

fn script(extra: &str) -> MonitorPlan {
    let text = format!(
        r#"{{"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["SlidingWindowMonitor","v","NotQueryable","200ms",0.1,0.1,4]}}
{{"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["count","v","Queryable","Continuous"],"requestID":1}}
{{"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["frequentItems","v","Queryable","Continuous"],"requestID":2}}
{{"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["quantile",0.5,"v","Queryable","Continuous"],"requestID":3}}
{{"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["count","v","Queryable","Ad-hoc"],"requestID":4}}
{extra}"#
    );
    let plan = MonitorPlan::from_script(&parse_requests(&text));
    assert!(plan.errors.is_empty(), "{:?}", plan.errors);
    plan
}

/// Run the plan's sites and coordinator on `workers` timely workers over `input` (event time,
/// value), each worker reading the values of sequence `seq mod workers`; the answer lines with
/// their timestamps.
fn run(plan: MonitorPlan, workers: usize, input: Vec<(i64, Val)>) -> Vec<(u64, String)> {
    let out = Arc::new(Mutex::new(Vec::new()));
    let sink = out.clone();
    let plan = Arc::new(plan);
    timely::execute(timely::Config::process(workers), move |worker| {
        let (me, peers) = (worker.index(), worker.peers());
        let mut whole = saams_operators::Plan::build(&[], peers, JOB_WINDOW, Arc::new(NoFiles));
        whole.monitor = Rc::new((*plan).clone());
        let plan = Rc::new(std::cell::RefCell::new(whole));
        let sink = sink.clone();
        let mut handle: InputHandle<u64, _> = InputHandle::new();
        worker.dataflow::<u64, _, _>(|scope| {
            scope
                .input_from(&mut handle)
                .monitor_sites(plan.clone())
                .monitor_coordinator(plan.clone(), JOB_WINDOW)
                .inspect_core(move |event| {
                    if let Ok((stamp, lines)) = event {
                        let t = stamp.least().copied().unwrap_or(0);
                        sink.lock().unwrap().extend(lines.iter().map(|l: &String| (t, l.clone())));
                    }
                });
        });
        for (seq, (time, val)) in input.iter().enumerate() {
            if seq % peers != me {
                continue;
            }
            if (*time as u64) > *handle.time() {
                handle.advance_to(*time as u64);
                worker.step();
            }
            handle.send(Rec { group: 0, time: *time, seq: seq as u64, val: val.clone() });
        }
        drop(handle);
        while worker.step() {}
    })
    .unwrap();
    let mut lines = out.lock().unwrap().clone();
    lines.sort();
    lines
}

fn field(line: &str, key: &str) -> Json {
    serde_json::from_str::<Json>(line).unwrap()[key].clone()
}

#[test]
fn a_live_run_sends_and_answers_what_the_simulator_does() {
    let stream = adversary("mixed", 4, 200, 0, 2, 8, 11).unwrap();
    let input: Vec<(i64, Val)> = stream.iter().map(|a| (a.stamp, Val::Num(a.item as f64))).collect();
    // The simulator's arrivals: site `seq mod k`, in (time, sequence) order.
    let arrivals: Vec<Arrival> = input
        .iter()
        .enumerate()
        .map(|(seq, (t, v))| {
            let item = match v {
                Val::Num(x) => *x as u64,
                Val::Str(_) | Val::Part(_) => unreachable!(),
            };
            Arrival { site: site_of(seq as u64, 4), stamp: *t, arrival: *t, item }
        })
        .collect();
    let last = arrivals.last().unwrap().arrival;
    let times: Vec<i64> = (1..).map(|i| i * JOB_WINDOW - 1).take_while(|&t| t <= last + 1_000).collect();
    let plan = script("");
    let m = &plan.monitored[0];
    let opts = SimOptions {
        fallback: Some(m.policy()),
        extra_query_times: times,
        queries: 2,
        phi: m.spec.phi,
        quantile_phis: vec![0.5],
        record_answers: true,
        ..SimOptions::default()
    };
    let sim = simulate(m.config(), &arrivals, &opts).unwrap();
    assert_eq!(sim.violations, 0);
    // Both modes run: sites forward first, then switch to the protocol.
    assert!(sim.site_switches.to_protocol > 0 && sim.total().words > sim.forward.words + sim.switches.words);
    for workers in [1, 3] {
        let lines = run(script(""), workers, input.clone());
        let continuous: Vec<&(u64, String)> = lines.iter().filter(|(t, _)| *t != u64::MAX).collect();
        assert!(continuous.len() > 30, "{workers} workers: {} answers", continuous.len());
        for (t, line) in &continuous {
            let at = sim.answers.iter().find(|a| a.time == *t as i64).expect("the simulator answered then");
            let estimate = field(line, "estimate");
            match field(line, "requestID").as_u64().unwrap() {
                1 => assert_eq!(estimate.as_f64().unwrap() as u64, at.count, "{line}"),
                2 => {
                    let mut items: Vec<u64> =
                        estimate.as_array().unwrap().iter().map(|p| p[0].as_f64().unwrap() as u64).collect();
                    items.sort_unstable();
                    assert_eq!(items, at.frequent, "{line}");
                }
                3 => assert_eq!(estimate.as_f64().map(|x| x as u64), at.quantiles[0], "{line}"),
                other => panic!("request {other} answered continuously"),
            }
            assert_eq!(field(line, "kind"), "SlidingWindowMonitor");
            assert_eq!(field(line, "guarantee")["epsilon"], 0.1);
        }
        // The newest answer has seen every message: what the sites sent in all.
        let (_, newest) = continuous.last().unwrap();
        let sent = field(newest, "sent");
        assert_eq!(sent["words"].as_u64().unwrap(), sim.total().words, "{workers} workers: words");
        assert_eq!(sent["bytes"].as_u64().unwrap(), sim.total().bytes, "{workers} workers: bytes");
        assert_eq!(sent["messages"].as_u64().unwrap(), sim.total().messages, "{workers} workers: messages");
        // The ad-hoc count: at the end of the input, from the newest window close with items.
        let adhoc: Vec<&(u64, String)> = lines.iter().filter(|(t, _)| *t == u64::MAX).collect();
        assert_eq!(adhoc.len(), 1);
        assert!(field(&adhoc[0].1, "estimate").as_f64().unwrap() > 0.0);
    }
}

#[test]
fn values_it_cannot_track_are_refused_and_counted() {
    let mut input: Vec<(i64, Val)> = (0..50).map(|i| (i * 3, Val::Num((i % 5) as f64))).collect();
    input.push((151, Val::Num(-2.0)));
    input.push((152, Val::Str("abc".into())));
    input.push((153, Val::Str("4".into())));
    let lines = run(script(""), 2, input);
    let last_count = lines.iter().rfind(|(t, l)| *t != u64::MAX && field(l, "requestID") == 1).unwrap();
    assert_eq!(field(&last_count.1, "refused"), 2);
    let at_end = lines.iter().find(|(t, l)| *t == 199 && field(l, "requestID") == 1).unwrap();
    // Forwarded items are exact: 50 + the text "4" in the window (−1, 199].
    assert_eq!(field(&at_end.1, "estimate"), 51.0);
}

#[test]
fn bad_requests_are_refused_with_the_reason() {
    let plan = MonitorPlan::from_script(&parse_requests(
        r#"{"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["M","v","NotQueryable","10m",0.1,0.01,4]}
{"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["quantile",0.5,"v","Queryable","Continuous"]}
{"streamID":"A","synopsisID":1,"dataSetKey":"D","param":["CountMin","v","NotQueryable",0.01,0.99,1]}"#,
    ));
    assert!(plan.monitored.is_empty());
    let errors = &plan.errors;
    assert_eq!(errors.len(), 2);
    assert!(errors[1].contains(r#""requestID":"req-2""#), "{}", errors[1]);
    assert!(errors[0].contains("phi must be in"), "{}", errors[0]);
    assert!(errors[0].contains(r#""kind":"SlidingWindowMonitor""#), "{}", errors[0]);
    assert!(errors[1].contains("no monitored D/A v"), "{}", errors[1]);
}
