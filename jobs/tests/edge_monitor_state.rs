//! A device running the sites of a monitored stream (`synopsisID` 14) with a state file
//! (`saams-edge --state`) killed with `kill -9` in the middle of its input and restarted over
//! the same input, against a real Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`): the restarted
//! device restores its sites as the window it resumes in opened, reads that window again and
//! ships its batch again under the same numbers. The cloud job's answers — the monitor's,
//! its `sent` messages and words included, and the Count-Min's beside it — are those of one job
//! over the file, byte for byte, and the only shipments refused are the copies sent again
//! (replays): the restart costs those messages, never one counted twice. Once shipping at each
//! window's close, once every 2 ms as well, and once following the job (`--follow`) with the
//! monitor constructed live: the restarted device installs its sites' copies when it applies
//! the construct again. Where the variable was unset at build time the tests show as ignored.

use std::path::Path;

mod edge_common;
mod http_common;
#[allow(dead_code)] // the devices produce the data (replay_into is not used)
mod kafka_common;
#[path = "edge_common/monitored.rs"]
mod monitored;
#[path = "edge_common/restarted.rs"]
mod restarted;
use edge_common::{Edge, figure, sorted_without_devices};
use kafka_common::{check, declared_broker, unique};
use monitored::{COUNT_MIN, START_MS, STEP, TUPLES, WINDOW, monitor, write_data, write_requests};
use restarted::{Cloud, feed};

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

/// The monitor's answers among `lines` (its construct's acknowledgement aside).
fn monitor_answers(lines: Vec<String>) -> Vec<String> {
    let monitor = |l: &String| l.contains(r#""kind":"SlidingWindowMonitor""#) && !l.contains("\"accepted\"");
    lines.into_iter().filter(monitor).collect()
}

/// The device (`--follow`, all four sites, `--state`) on its standard input.
fn following(e: &Edge, at: (&str, &str), state: &Path) -> (std::process::Child, std::process::ChildStdin) {
    restarted::device(e, at, &["--follow", "--state", state.to_str().expect("a path")])
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_following_device_killed_after_a_live_monitor_restores_its_sites_when_it_applies_it_again() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = edge_common::tmp("edge-monitor-state", "live");
    let all = dir.join("all.json");
    write_data(&all, i64::MIN);
    let requests = dir.join("requests.json");
    write_requests(&requests, &COUNT_MIN.map(str::to_string));
    let e = Edge::of_script(requests.to_str().expect("a UTF-8 path"), WINDOW);
    let topic = unique("edge-monitor-state-live");
    let cloud = Cloud::start(&e, (&brokers, &topic), &dir, "120s");
    let text = std::fs::read_to_string(&all).expect("the tuples");
    let lines: Vec<&str> = text.lines().collect();
    let state = dir.join("dev0.state");
    let (mut killed, mut stdin) = following(&e, (&brokers, &topic), &state);
    let per_window = (60_000 / STEP) as usize;
    feed(&mut stdin, &lines[..per_window * 4]);
    edge_common::wait_merged(|| cloud.devices(), &["dev0"], START_MS as u64);
    let (status, reply) = http_common::call(&cloud.addr, "POST", "/requests", &format!("[{}]", monitor(4).join(",")));
    assert_eq!(status, 200, "{reply}");
    let ack: serde_json::Value = serde_json::from_str(reply.lines().next().expect("an ack")).expect("JSON");
    let fence = saams::api::time::parse_timestamp(ack["effectiveFrom"].as_str().expect("a fence")).expect("a time");
    // Windows after the fence merged: the sites ran and the state file holds their copies.
    let cut = per_window * 19 / 2;
    feed(&mut stdin, &lines[per_window * 4..cut]);
    edge_common::wait_merged(|| cloud.devices(), &["dev0"], (fence + 2 * 60_000) as u64);
    killed.kill().expect("kill -9 the device");
    killed.wait().expect("reap it");
    check_state_file(&state);
    let (again, mut stdin) = following(&e, (&brokers, &topic), &state);
    feed(&mut stdin, &lines);
    drop(stdin);
    let again = check(again.wait_with_output().expect("the device ends"), "saams-edge --follow");
    let out = cloud.end();
    // One job over the file with the monitor in its script, whose stream starts at the fence.
    let from_fence = dir.join("from-fence.json");
    write_data(&from_fence, fence);
    let with_monitor = dir.join("with-monitor.json");
    let mut script: Vec<String> = COUNT_MIN.iter().map(|s| s.to_string()).collect();
    script.extend(monitor(4));
    write_requests(&with_monitor, &script);
    let expected =
        monitor_answers(Edge::of_script(with_monitor.to_str().expect("a path"), WINDOW).raw_run_of(&from_fence));
    let answers = monitor_answers(sorted_without_devices(&out.stdout));
    assert!(answers.len() > 3 * 10, "the monitor answered: {} lines", answers.len());
    assert_eq!(
        answers,
        expected,
        "the monitor's answers of the job over the file, across the kill ({})",
        dir.display()
    );
    let dead = std::fs::read_to_string(dir.join("dead.json")).unwrap_or_default();
    assert!(dead.lines().all(|l| l.contains("replayed")), "only copies were refused: {dead}");
    let items = figure(&again, "edge ", "monitor_items");
    assert!(
        items > 0 && items < (TUPLES as usize - 2 * per_window) as u64,
        "the restart skipped what it shipped: {items}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
