//! A following device whose input went quiet took an ask's fence as its watermark
//! (`saams-edge --idle-after`), then was killed with `kill -9` and restarted from its state
//! file (`--state`) over the same input, against a real Kafka-protocol broker
//! (`SAAMS_KAFKA_BROKERS`): the fence is in the state file, so the restarted device holds below
//! it from the same tuple on — the values older than the fence read after it are late, as
//! without the kill — and the cloud job's answers are those of one job over the tuples the
//! device took, byte for byte, with no window held for the device (its `--device-timeout` is
//! 10 min, and the job ends 10 s after its input went idle: a window held would be missing).
//! Where the variable was unset at build time the tests show as ignored.

use std::path::Path;
use std::time::Duration;

mod edge_common;
mod http_common;
#[allow(dead_code)] // the devices produce the data (replay_into is not used)
mod kafka_common;
#[path = "edge_common/restarted.rs"]
mod restarted;
use edge_common::{Edge, figure, second_of_day, sorted_without_devices, stream_of};
use kafka_common::{check, declared_broker, unique};
use restarted::{Cloud, feed};

/// The paper workload on four streams, windows of 20 s; the device reads two of them.
fn edge() -> Edge {
    Edge::new("jobs/tests/edge_whole_data/requests.json", "20s")
}

/// The device reads its lines before this second of the day, then its input is quiet (the
/// middle of a window, which stays open until the device takes the fence).
const QUIET_FROM: u64 = 110;

/// The ask: EURTRY's Count-Min (resident on the device) for the frequency of 13.5.
const ASK: &str = r#"{"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":1,"param":[13.5,"price","Queryable","Ad-hoc"],"requestID":221}"#;

/// The generated tuples are of 2 January 2019.
fn day() -> u64 {
    saams::api::time::parse_timestamp("2019-01-02T00:00:00Z").expect("a time") as u64
}

/// Start the device (`--follow --resident --idle-after 3s --state`) on its standard input.
fn device(e: &Edge, at: (&str, &str), state: &Path) -> (std::process::Child, std::process::ChildStdin) {
    let flags = ["--follow", "--resident", "--idle-after", "3s", "--state", state.to_str().expect("a path")];
    restarted::device(e, at, &flags)
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn an_idle_device_killed_and_restarted_holds_below_its_fence_and_answers_as_the_raw_run() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge();
    let dir = edge_common::tmp("edge-idle-state", "fence");
    let files = edge_common::data(&dir, 1, |_, l| ["EURTRY", "XAUUSD"].contains(&stream_of(l)));
    let text = std::fs::read_to_string(&files[0]).expect("the device's tuples");
    let lines: Vec<&str> = text.lines().collect();
    let topic = unique("edge-idle-state");
    let cloud = Cloud::start(&e, (&brokers, &topic), &dir, "600s");
    let state = dir.join("dev0.state");
    let (mut killed, mut stdin) = device(&e, (&brokers, &topic), &state);
    let before: Vec<&str> = lines.iter().copied().filter(|l| second_of_day(l) < QUIET_FROM).collect();
    feed(&mut stdin, &before);
    // The window before the open one merged (the device read into the open one and shipped its
    // position there), and a second for the cloud to route that position: the ask's fence is
    // after the open window, which the device has not reached.
    let before_open = (QUIET_FROM * 1000 / e.window_ms - 1) * e.window_ms;
    edge_common::wait_merged(|| cloud.devices(), &["dev0"], day() + before_open);
    std::thread::sleep(Duration::from_secs(1));
    // Quiet: 3 s after its last line the device takes the ask's fence as its watermark.
    let (status, reply) = http_common::call(&cloud.addr, "POST", "/requests", ASK);
    assert_eq!(status, 200, "{reply}");
    let reply: serde_json::Value = serde_json::from_str(reply.lines().next().expect("an answer")).expect("JSON");
    let fence = saams::api::time::parse_timestamp(reply["asOf"].as_str().expect("asOf")).expect("a time") as u64;
    assert!(fence >= day() + QUIET_FROM * 1000, "the fence {fence} is after every line the device read");
    killed.kill().expect("kill -9 the device");
    killed.wait().expect("reap it");
    let header = std::fs::read(&state).expect("the device wrote its state");
    let header: serde_json::Value =
        serde_json::from_slice(header.split(|&b| b == b'\n').next().expect("a header")).expect("JSON");
    assert_eq!(header["hold_below"]["window"], fence, "the state file holds the fence: {header}");
    // Restarted over its whole input: what it shipped it skips; from where it took the fence
    // on, the lines of windows before it are late.
    let (again, mut stdin) = device(&e, (&brokers, &topic), &state);
    feed(&mut stdin, &lines);
    drop(stdin);
    let again = check(again.wait_with_output().expect("the device ends"), "saams-edge --follow");
    let out = cloud.end();
    let of_day = |l: &str| e.window_of(l) + day() >= fence;
    let taken: Vec<&str> = lines.iter().copied().filter(|l| second_of_day(l) < QUIET_FROM || of_day(l)).collect();
    let late = lines.len() - taken.len();
    assert!(late > 0, "lines older than the fence come after it");
    assert_eq!(figure(&again, "edge ", "late"), late as u64, "the restarted device refused them as late");
    let data = dir.join("taken.json");
    std::fs::write(&data, taken.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write the tuples");
    let expected = e.raw_run_of(&data);
    let answers: Vec<String> =
        sorted_without_devices(&out.stdout).into_iter().filter(|l| !l.starts_with("{\"requestID\":221,")).collect();
    assert_eq!(answers, expected, "the answers of one job over the tuples the device took ({})", dir.display());
    let dead = std::fs::read_to_string(dir.join("dead.json")).unwrap_or_default();
    assert!(dead.lines().all(|l| l.contains("replayed")), "only copies were refused: {dead}");
    let _ = std::fs::remove_dir_all(&dir);
}
