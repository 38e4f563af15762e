//! A resident device (`saams-edge --resident`) with a state file (`--state`) killed with
//! `kill -9` in the middle of its input and restarted over the same input, against a real
//! Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`), with the paper workload on four streams
//! (landmark Count-Min, HyperLogLog and DFT per stream) and the DFT pair correlations, two
//! devices each the only reader of two streams:
//! - the restarted device resumes the states it keeps (which never left it: the cloud holds
//!   only their views) from its state file, skips the windows it shipped, and ships the batch
//!   it was producing again: the answers are the raw run's, byte for byte, and only copies are
//!   refused (as replays);
//! - the same while following the cloud job (`--follow`), the job running throughout.
//!
//! Where the variable was unset at build time the tests show as ignored.

use std::path::Path;
use std::process::Output;

mod edge_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Edge, answers_and_devices, stream_of};
use kafka_common::{declared_broker, unique};

/// The paper workload on four streams with the pair correlations, job windows of 60 s.
fn edge() -> Edge {
    Edge::new("jobs/tests/edge_whole_data/requests.json", "60s")
}

/// EURTRY and XAUUSD on device 0, IBM and SPY on device 1.
fn by_share(d: usize, line: &str) -> bool {
    ["EURTRY", "XAUUSD"].contains(&stream_of(line)) == (d == 0)
}

/// Device 0 (`extra` flags, `--state` in `dir`) fed its tuples up to the middle of its fifth
/// window, killed with `kill -9` once `records` are on the topic (as it starts its fourth
/// window: its first three shipped, its state file holding their states), then run again over
/// its whole input;
/// device 1 (`extra` flags but the state) over its input. Returns the restarted device's output
/// and its number of tuples.
fn kill_and_restart(
    e: &Edge,
    (brokers, topic, records): (&str, &str, usize),
    dir: &Path,
    files: &[std::path::PathBuf],
    extra: &[&str],
) -> (Output, usize) {
    let text = std::fs::read_to_string(&files[0]).expect("device 0 tuples");
    let lines: Vec<&str> = text.lines().collect();
    let state = dir.join("dev0.state");
    let with_state: Vec<&str> = extra.iter().copied().chain(["--state", state.to_str().expect("a path")]).collect();
    let mut starts = vec![0];
    for (i, l) in lines.iter().enumerate().skip(1) {
        if e.window_of(l) != e.window_of(lines[i - 1]) {
            starts.push(i);
        }
    }
    assert!(starts.len() > 6, "enough windows: {}", starts.len());
    let cut = (starts[4] + starts[5]) / 2;
    let mut killed = e.device_fed(brokers, topic, ("dev0", &with_state), &lines[..cut], records);
    killed.kill().expect("kill -9 the device");
    killed.wait().expect("reap it");
    let file = std::fs::read(&state).expect("the device wrote its state");
    assert!(file.len() > 1000, "the state file holds the resident states: {} bytes", file.len());
    let again = e.device(brokers, topic, ("dev0", 0), &files[0], &with_state);
    e.device(brokers, topic, ("dev1", 1), &files[1], extra);
    (again, lines.len())
}

/// What both tests check: the answers are the raw run's, only replays were refused, the
/// restarted device skipped windows and shipped views, never a state.
fn check_resumed(expected: &[String], (out, dir): (&Output, &Path), (again, lines): (&Output, usize)) {
    assert!(expected.iter().any(|l| l.starts_with("{\"requestID\":26,")), "the correlations answered");
    assert_eq!(answers_and_devices(out).0, expected, "the raw run's answers across the kill ({})", dir.display());
    let dead = std::fs::read_to_string(dir.join("dead.json")).unwrap_or_default();
    assert!(dead.lines().all(|l| l.contains("replayed")), "only the batch being produced is sent again: {dead}");
    let tuples = edge_common::figure(again, "edge ", "tuples");
    assert!(tuples < lines as u64 / 2, "the restarted device skipped the windows it had shipped: {tuples} of {lines}");
    assert!(edge_common::figure(again, "edge ", "view_groups") > 0, "the restarted device shipped views");
    assert_eq!(edge_common::figure(again, "edge ", "whole_groups"), 0, "no state left the device");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_resident_device_killed_and_restarted_from_its_state_file_answers_as_the_raw_run() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge();
    let dir = edge_common::tmp("edge-resident-state", "plain");
    let files = edge_common::data(&dir, 2, by_share);
    let expected = e.raw_run(&dir);
    let topic = unique("edge-resident-state");
    // Shipping every 2 ms too: a resident group ships nothing before its window's close. Hello
    // and three windows' views.
    let restarted = kill_and_restart(&e, (&brokers, &topic, 4), &dir, &files, &["--resident", "--ship-every", "2ms"]);
    let out = e.cloud(&brokers, &topic, &dir, &[]);
    check_resumed(&expected, (&out, &dir), (&restarted.0, restarted.1));
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_resident_device_following_the_job_killed_and_restarted_from_its_state_file_answers_as_the_raw_run() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge();
    let dir = edge_common::tmp("edge-resident-state", "follow");
    let files = edge_common::data(&dir, 2, by_share);
    let expected = e.raw_run(&dir);
    let topic = unique("edge-resident-state-follow");
    // Device 1 ships once device 0 is done.
    let cloud = e.cloud_throughout(&brokers, &topic, &dir);
    // Hello, then per window its position and the views of the one before: up to the fourth's
    // position.
    let restarted = kill_and_restart(&e, (&brokers, &topic, 8), &dir, &files, &["--resident", "--follow"]);
    let out = cloud.finish("saams --partials-topic");
    check_resumed(&expected, (&out, &dir), (&restarted.0, restarted.1));
    assert!(edge_common::figure(&restarted.0, "edge ", "positions") > 0, "the restarted device followed the job");
}
