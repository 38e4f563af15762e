//! A device running the sites of a monitored stream (`synopsisID` 14) with a state file
//! (`saams-edge --state`) killed with `kill -9` in the middle of its input and restarted over
//! the same input, against a real Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`): the restarted
//! device restores its sites as the window it resumes in opened, reads that window again and
//! ships its batch again under the same numbers. The cloud job's answers — the monitor's,
//! its `sent` messages and words included, and the Count-Min's beside it — are those of one job
//! over the file, byte for byte, and the only shipments refused are the copies sent again
//! (replays): the restart costs those messages, never one counted twice. Once shipping at each
//! window's close, once every 2 ms as well. Where the variable was unset at build time the tests
//! show as ignored.

use std::path::Path;

mod edge_common;
#[allow(dead_code)] // the devices produce the data (replay_into is not used)
mod kafka_common;
#[path = "edge_common/monitored.rs"]
mod monitored;
use edge_common::{Edge, figure, sorted_without_devices};
use kafka_common::{declared_broker, unique};
use monitored::{COUNT_MIN, STEP, TUPLES, WINDOW, monitor, write_data, write_requests};

/// Records on the topic before the kill: the hello and a few windows' shipments (the Count-Min's
/// and the sites' messages).
const RECORDS_BEFORE_KILL: usize = 12;

/// One device running the four sites of the monitor with `extra` flags and a state file, fed
/// the first 9½ of its 20 windows and killed once the topic holds [`RECORDS_BEFORE_KILL`], then
/// run again over its whole input; the cloud job after it.
fn killed_and_restarted_answers_as_the_job(name: &str, extra: &[&str]) {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = edge_common::tmp("edge-monitor-state", name);
    let all = dir.join("all.json");
    write_data(&all, i64::MIN);
    let requests = dir.join("requests.json");
    let mut script: Vec<String> = COUNT_MIN.iter().map(|s| s.to_string()).collect();
    script.extend(monitor(4));
    write_requests(&requests, &script);
    let edge = Edge::of_script(requests.to_str().expect("a UTF-8 path"), WINDOW);
    let expected = edge.raw_run_of(&all);
    let topic = unique("edge-monitor-state");
    let state = dir.join("dev0.state");
    let with_state: Vec<&str> = extra.iter().copied().chain(["--state", state.to_str().expect("a path")]).collect();
    let text = std::fs::read_to_string(&all).expect("the tuples");
    let lines: Vec<&str> = text.lines().collect();
    let per_window = (60_000 / STEP) as usize;
    let cut = per_window * 19 / 2;
    let mut killed = edge.device_fed(&brokers, &topic, ("dev0", &with_state), &lines[..cut], RECORDS_BEFORE_KILL);
    killed.kill().expect("kill -9 the device");
    killed.wait().expect("reap it");
    check_state_file(&state);
    let again = edge.device(&brokers, &topic, ("dev0", 0), &all, &with_state);
    let out = edge.cloud(&brokers, &topic, &dir, &[]);
    let answers = sorted_without_devices(&out.stdout);
    let monitor_lines = answers.iter().filter(|l| l.contains(r#""kind":"SlidingWindowMonitor""#)).count();
    assert!(monitor_lines > 3 * 10, "the monitor answered: {monitor_lines} lines");
    assert_eq!(answers, expected, "the answers of the job over the file, across the kill ({})", dir.display());
    let dead = std::fs::read_to_string(dir.join("dead.json")).unwrap_or_default();
    assert!(dead.lines().all(|l| l.contains("replayed")), "only copies were refused: {dead}");
    let items = figure(&again, "edge ", "monitor_items");
    assert!(items > 0 && items < (TUPLES as usize - per_window) as u64, "the restart skipped what it shipped: {items}");
    eprintln!(
        "{name}: the restart sent {} shipments again (refused as replays); the restarted device sent {} messages, {} words",
        dead.lines().count(),
        figure(&again, "edge ", "monitor_messages"),
        figure(&again, "edge ", "monitor_words")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The state file holds the sites' copies after its header line and kept states.
fn check_state_file(state: &Path) {
    let file = std::fs::read(state).expect("the device wrote its state");
    let header = file.iter().position(|&b| b == b'\n').expect("a header line");
    let header: serde_json::Value = serde_json::from_slice(&file[..header]).expect("JSON");
    assert!(header["window_from"].is_u64(), "the file records where the window starts: {header}");
    assert!(file.len() > 1000, "the file holds the sites' copies: {} bytes", file.len());
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_monitoring_device_killed_and_restarted_from_its_state_file_answers_as_the_job() {
    killed_and_restarted_answers_as_the_job("plain", &[]);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_monitoring_device_shipping_every_2ms_killed_and_restarted_answers_as_the_job() {
    killed_and_restarted_answers_as_the_job("every", &["--ship-every", "2ms"]);
}
