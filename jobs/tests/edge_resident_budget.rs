//! Resident devices (`saams-edge --resident`) on a byte budget ([`saams_jobs::edge::budget`]),
//! against a real Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`), with the paper workload on
//! four streams (landmark Count-Min, HyperLogLog and DFT per stream, their continuous queries,
//! the DFT pair correlations), one device the only reader of all four:
//! - at a few tuples per stream and window (2 s windows) the device ships no more than the raw
//!   values (views cost more there: it ships raw values), and the cloud's answers are the raw
//!   run's, byte for byte (sorted);
//! - over a stream whose rate drops (dense for its first 20 s, a sixth of it after) its groups
//!   switch between views, whole states and raw values, and the answers are still the raw
//!   run's;
//! - a device killed with `kill -9` while the cloud holds its views, and restarted from its
//!   state file (`--state`): the budgets resume with the states, so the batch shipped again is
//!   the same (only replays are refused) and the answers are the raw run's.
//!
//! Where the variable was unset at build time the tests show as ignored.

use std::path::{Path, PathBuf};
use std::process::Output;

mod edge_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Edge, answers_and_devices, figure, second_of_day};
use kafka_common::{declared_broker, unique};

/// The paper workload on four streams with the pair correlations, job windows of `window`.
fn edge(window: &'static str) -> Edge {
    Edge::new("jobs/tests/edge_whole_data/requests.json", window)
}

/// The generated tuples (`dir/all.json`, one device reading them all) thinned after their
/// first 20 s to every sixth line: a rate that drops. Returns its path.
fn dropping_rate(dir: &Path) -> PathBuf {
    let all = &edge_common::data(dir, 1, |_, _| true)[0];
    let text = std::fs::read_to_string(all).expect("the generated tuples");
    let kept: String = text
        .lines()
        .enumerate()
        .filter(|(i, l)| second_of_day(l) < 20 || i % 6 == 0)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let path = dir.join("dropping.json");
    std::fs::write(&path, kept).expect("write the thinned tuples");
    path
}

/// The device's figures `key`s, in order.
fn figures<const N: usize>(out: &Output, keys: [&str; N]) -> [u64; N] {
    keys.map(|k| figure(out, "edge ", k))
}

/// The cloud's answers are `expected`, and no dead letter but replays.
fn answers_as_raw(out: &Output, dir: &Path, expected: &[String]) {
    assert!(expected.iter().any(|l| l.starts_with("{\"requestID\":26,")), "the correlations answered");
    assert_eq!(answers_and_devices(out).0, expected, "the raw run's answers ({})", dir.display());
    let dead = std::fs::read_to_string(dir.join("dead.json")).unwrap_or_default();
    assert!(dead.lines().all(|l| l.contains("replayed")), "nothing refused but replays: {dead}");
}

/// Device `dev0 --resident` over `data` to a fresh topic, then the cloud job: the device shipped
/// no more than raw, and the answers are `expected`. Returns how often the device chose each
/// form: views, whole states, raw values.
fn budgeted_run(e: &Edge, dir: &Path, data: &Path, expected: &[String]) -> [u64; 3] {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let topic = unique("budget-edge-resident");
    let device = e.device(&brokers, &topic, ("dev0", 0), data, &["--resident"]);
    let [shipped, raw] = figures(&device, ["shipped_bytes", "raw_bytes"]);
    assert!(shipped <= raw, "shipped {shipped} bytes, more than the {raw} raw");
    let out = e.cloud(&brokers, &topic, dir, &[]);
    answers_as_raw(&out, dir, expected);
    figures(&device, ["view_groups", "whole_groups", "resident_raw_groups"])
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_resident_device_at_a_few_tuples_per_window_ships_no_more_than_raw_and_answers_as_the_raw_run() {
    let e = edge("2s");
    let dir = edge_common::tmp("edge-resident-budget", "low");
    let files = edge_common::data(&dir, 1, |_, _| true);
    let [_, _, raws] = budgeted_run(&e, &dir, &files[0], &e.raw_run(&dir));
    assert!(raws > 0, "groups went raw where views cost more");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_resident_device_whose_rate_drops_switches_forms_and_answers_as_the_raw_run() {
    let e = edge("20s");
    let dir = edge_common::tmp("edge-resident-budget", "switch");
    let data = dropping_rate(&dir);
    let [views, wholes, raws] = budgeted_run(&e, &dir, &data, &e.raw_run_of(&data));
    assert!(views > 0 && wholes > 0 && raws > 0, "every form chosen: views {views}, whole {wholes}, raw {raws}");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_budgeted_resident_device_killed_and_restarted_from_its_state_file_answers_as_the_raw_run() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge("20s");
    let dir = edge_common::tmp("edge-resident-budget", "state");
    // At the generator's rates every group ships views from its first windows (the fast
    // stream's savings pay for the slow ones' switch back): killed while the cloud holds views,
    // a device restarted with fresh budgets would ship raw values the cloud cannot feed.
    let data = edge_common::data(&dir, 1, |_, _| true).remove(0);
    let expected = e.raw_run_of(&data);
    let topic = unique("budget-edge-resident-state");
    let text = std::fs::read_to_string(&data).expect("the tuples");
    let lines: Vec<&str> = text.lines().collect();
    let state = dir.join("dev0.state");
    let flags = ["--resident", "--state", state.to_str().expect("a path")];
    // Killed in the middle of its input once the hello and five windows are on the topic.
    let mut killed = e.device_fed(&brokers, &topic, ("dev0", &flags), &lines[..lines.len() / 2], 6);
    killed.kill().expect("kill -9 the device");
    killed.wait().expect("reap it");
    let file = std::fs::read(&state).expect("the device wrote its state");
    let header = String::from_utf8_lossy(file.split(|&b| b == b'\n').next().unwrap_or_default()).to_string();
    assert!(header.contains("\"budgets\""), "the state file records the budgets: {header}");
    let again = e.device(&brokers, &topic, ("dev0", 0), &data, &flags);
    let [tuples] = figures(&again, ["tuples"]);
    assert!(tuples < lines.len() as u64, "the restarted device skipped the windows it had shipped: {tuples}");
    let out = e.cloud(&brokers, &topic, &dir, &[]);
    answers_as_raw(&out, &dir, &expected);
}
