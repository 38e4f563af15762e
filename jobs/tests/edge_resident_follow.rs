//! Resident groups (`saams-edge --resident`) where the job changes or fails, against a real
//! Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`), with the paper workload on four streams and
//! the DFT pair correlations (two devices, each the only reader of two streams):
//! - devices following the job (`--follow`) take a continuous query constructed live, and a
//!   DELETE, at their fences: the answers are those of one job over the raw tuples with the
//!   same requests at the same fences, byte for byte;
//! - a cloud job with `--checkpoints` whose groups are resident views, killed with `kill -9`
//!   and restarted, while a device is killed and restarted too (over its whole input: a
//!   resident device keeps no state file), gives every answer once, the raw run's;
//! - every answer names exactly the devices whose views of its window it merged.
//!
//! Where the variable was unset at build time the tests show as ignored.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

mod edge_common;
mod http_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Edge, Fed, sorted, stream_of, without_devices};
use kafka_common::{check, declared_broker, unique};

/// The streams each device is the only reader of.
const SHARES: [[&str; 2]; 2] = [["EURTRY", "XAUUSD"], ["IBM", "SPY"]];

/// The paper workload on four streams with the pair correlations, job windows of `window`.
fn edge(window: &'static str) -> Edge {
    Edge::new("jobs/tests/edge_whole_data/requests.json", window)
}

fn by_share(d: usize, line: &str) -> bool {
    SHARES[d].contains(&stream_of(line))
}

/// The job window (start, ms of the day) an answer line answers: its window's end less a
/// job window.
fn window_answered(e: &Edge, line: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(line).expect("an answer");
    let end = saams::api::time::parse_timestamp(v["window"]["end"].as_str().unwrap_or_default()).expect("an end");
    (end - 1_546_387_200_000) as u64 - e.window_ms
}

/// Every answer of `lines` names the devices that had tuples in its window (`texts`: each
/// device's tuples), and only those.
fn check_devices_named(e: &Edge, lines: &[String], texts: &[String]) {
    let windows: Vec<BTreeSet<u64>> = texts.iter().map(|t| t.lines().map(|l| e.window_of(l)).collect()).collect();
    for line in lines {
        let w = window_answered(e, line);
        let want: Vec<String> =
            (0..texts.len()).filter(|&d| windows[d].contains(&w)).map(|d| format!("dev{d}")).collect();
        assert_eq!(without_devices(line).1, want, "the devices of window {w}: {line}");
    }
}

/// The live requests: a Count-Min of IBM's volume (a group of its own, resident on device 1)
/// over tumbling windows of the job window (so a window's answer is the same whenever it was
/// constructed) with its continuous query; then the delete of EURTRY's Count-Min (in device
/// 0's resident group with its HyperLogLog and DFT; answered by request 4).
const LIVE_CONSTRUCT: &str = r#"[{"dataSetKey":"Equity","streamID":"IBM","synopsisID":1,"param":["CountMin","volume","NotQueryable",0.01,0.9,7],"window":{"type":"tumbling","size":"10s"},"requestID":101},
{"dataSetKey":"Equity","streamID":"IBM","synopsisID":1,"param":[100,"volume","Queryable","Continues"],"requestID":102}]"#;
const LIVE_DELETE: &str = r#"{"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":1,"param":["CountMin","price","Delete"],"requestID":103}"#;

/// `POST /requests` of `body`: the fence (`effectiveFrom`) of the first acknowledgement.
fn post_fence(addr: &str, body: &str) -> String {
    let (status, reply) = http_common::call(addr, "POST", "/requests", body);
    assert_eq!(status, 200, "{body} -> {reply}");
    let first: serde_json::Value = serde_json::from_str(reply.lines().next().expect("an ack")).expect("JSON");
    first["effectiveFrom"].as_str().unwrap_or_else(|| panic!("no fence in {reply}")).to_string()
}

/// The raw run of `dir/all.json` with the script and the live construct, keeping of the live
/// Count-Min the windows from its fence on and of the deleted one those before its fence.
fn raw_with_live(e: &Edge, dir: &Path, (constructed, deleted): (&str, &str)) -> Vec<String> {
    edge_common::script_with(&e.requests, LIVE_CONSTRUCT, &dir.join("with-live.json"));
    let with_live = Edge::of_script(dir.join("with-live.json").to_str().expect("a path"), e.window);
    let span = |l: &str| {
        let v: serde_json::Value = serde_json::from_str(l).expect("an answer");
        let text = |k: &str| v["window"][k].as_str().unwrap_or_default().to_string();
        (text("start"), text("end"))
    };
    with_live
        .raw_run(dir)
        .into_iter()
        .filter(|l| {
            let (start, end) = span(l);
            if l.starts_with("{\"requestID\":102,") {
                start.as_str() >= constructed
            } else if l.starts_with("{\"requestID\":4,") {
                end.as_str() <= deleted
            } else {
                true
            }
        })
        .collect()
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn resident_devices_following_the_job_take_a_live_construct_and_delete_at_their_fences() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    // Windows of 10 s: each third of a device's tuples spans several.
    let e = edge("10s");
    let dir = edge_common::tmp("edge-resident-follow", "live");
    let files = edge_common::data(&dir, 2, by_share);
    let topic = unique("edge-resident-live");
    let (cloud, texts) = edge_common::spawn_with_texts(
        e.cloud_base(&brokers, &topic)
            .args(["--partitions", "4", "--exit-when-idle", "10s", "--http", "127.0.0.1:0"])
            // The devices start after the job: their partitions wait for them as for a device.
            .args(["--device-timeout", "60s", "--idle-timeout", "60s"]),
        &files,
    );
    let addr = cloud.address();
    let mut devices: Vec<Fed> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut child = e.device_on_stdin(&brokers, &topic, (&format!("dev{i}"), i), &["--follow", "--resident"]);
            let stdin = child.stdin.take().expect("its stdin");
            (child, stdin, text.lines().collect())
        })
        .collect();
    let table = || http_common::call(&addr, "GET", "/devices", "").1;
    edge_common::feed_third(&mut devices, 0, 2);
    edge_common::wait_merged(table, &["dev0", "dev1"], 0);
    let constructed = post_fence(&addr, LIVE_CONSTRUCT);
    edge_common::feed_third(&mut devices, 1, 2);
    let from = saams::api::time::parse_timestamp(&constructed).expect("a timestamp") as u64;
    edge_common::wait_merged(table, &["dev0", "dev1"], from);
    let deleted = post_fence(&addr, LIVE_DELETE);
    edge_common::feed_third(&mut devices, 2, 2);
    for (child, stdin, _) in devices {
        drop(stdin);
        let out = check(child.wait_with_output().expect("the device ends"), "saams-edge --follow --resident");
        assert_eq!(edge_common::figure(&out, "edge ", "live_requests"), 2, "both live requests applied on the device");
        assert!(edge_common::figure(&out, "edge ", "view_groups") > 0, "the device shipped views");
        // At 10 s windows the slow streams' first windows may go raw or whole on the device's
        // byte budget (`edge::budget`) before their views pay: whole states may leave it.
        let (raw, whole) =
            (edge_common::figure(&out, "edge ", "raw_bytes"), edge_common::figure(&out, "edge ", "whole_groups"));
        assert!(raw > 0 && whole <= 2, "at most a switch back per stream: {whole} whole states");
    }
    let out = cloud.finish("saams --partials-topic --http");
    let lines: Vec<String> = sorted(&out.stdout).into_iter().filter(|l| !l.contains("\"accepted\"")).collect();
    let mut answers: Vec<String> = lines.iter().map(|l| without_devices(l).0).collect();
    answers.sort();
    let expected = raw_with_live(&e, &dir, (&constructed, &deleted));
    assert!(expected.iter().any(|l| l.starts_with("{\"requestID\":102,")), "the live construct answered");
    assert!(expected.iter().any(|l| l.starts_with("{\"requestID\":26,")), "the correlations answered");
    assert!(constructed < deleted, "the delete came later: {constructed} {deleted}");
    std::fs::write(dir.join("answers.txt"), answers.join("\n")).expect("write the answers");
    std::fs::write(dir.join("expected.txt"), expected.join("\n")).expect("write the expected answers");
    let missing: Vec<&String> = expected.iter().filter(|l| !answers.contains(l)).take(3).collect();
    let extra: Vec<&String> = answers.iter().filter(|l| !expected.contains(l)).take(3).collect();
    assert!(
        answers == expected,
        "answers of the raw run with the same requests at the same fences ({} vs {}; in {}): missing {missing:?}, extra {extra:?}",
        answers.len(),
        expected.len(),
        dir.display()
    );
    check_devices_named(&e, &lines, &texts);
}

/// The cloud job of the restart test: checkpoints every 150 ms, answers to `dir/out.json`,
/// devices never timed out (they pause while the job is down).
fn checkpointed_cloud(brokers: &str, topic: &str, dir: &Path, e: &Edge) -> Child {
    e.cloud_base(brokers, topic)
        .args(["--partitions", "2", "--exit-when-idle", "5s", "--device-timeout", "120s"])
        .args(["--checkpoint-interval", "150ms", "--checkpoints"])
        .arg(dir.join("checkpoints"))
        .arg("--out")
        .arg(dir.join("out.json"))
        .arg("--dead-letter")
        .arg(dir.join("dead.json"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("stderr-{}", unique("run")))).expect("stderr file"))
        .spawn()
        .expect("start saams")
}

/// A resident device `d` on its partition of `topic`, reading its standard input.
fn resident_device(e: &Edge, brokers: &str, topic: &str, d: usize) -> (Child, std::process::ChildStdin) {
    let mut child = e.device_on_stdin(brokers, topic, (&format!("dev{d}"), d), &["--partitions", "2", "--resident"]);
    let stdin = child.stdin.take().expect("its stdin");
    (child, stdin)
}

/// Feed `stdin` the lines of windows `range` of `windows`.
fn feed(stdin: &mut std::process::ChildStdin, windows: &[Vec<&str>], range: std::ops::Range<usize>) {
    for line in windows[range.start.min(windows.len())..range.end.min(windows.len())].iter().flatten() {
        writeln!(stdin, "{line}").expect("feed the device");
    }
    stdin.flush().expect("flush");
}

/// A device's lines by window, in order.
fn by_window<'a>(e: &Edge, text: &'a str) -> Vec<Vec<&'a str>> {
    let mut windows: Vec<Vec<&str>> = Vec::new();
    for line in text.lines() {
        if windows.last().and_then(|w| w.last()).is_none_or(|l| e.window_of(l) != e.window_of(line)) {
            windows.push(Vec::new());
        }
        windows.last_mut().expect("a window").push(line);
    }
    windows
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_cloud_of_resident_views_and_a_resident_device_killed_and_restarted_answer_once_as_the_raw_run() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge("60s");
    let dir = edge_common::tmp("edge-resident-follow", "restart");
    let files = edge_common::data(&dir, 2, by_share);
    let expected = e.raw_run(&dir);
    let topic = unique("edge-resident-restart");
    let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).expect("device tuples")).collect();
    let windows: Vec<Vec<Vec<&str>>> = texts.iter().map(|t| by_window(&e, t)).collect();
    let mut devices: Vec<(Child, std::process::ChildStdin)> =
        (0..2).map(|d| resident_device(&e, &brokers, &topic, d)).collect();
    // A window at a time (each ships the one before), until the job has written two
    // checkpoints; then kill -9 the job and device 0.
    let mut cloud = checkpointed_cloud(&brokers, &topic, &dir, &e);
    let mut next = 0;
    while kafka_common::newest_checkpoint(&dir.join("checkpoints")) < 2 {
        assert!(next + 4 < windows[0].len(), "no two checkpoints before the last windows");
        for (d, (_, stdin)) in devices.iter_mut().enumerate() {
            feed(stdin, &windows[d], next..next + 1);
        }
        next += 1;
        std::thread::sleep(Duration::from_millis(400));
    }
    cloud.kill().expect("kill -9 the cloud job");
    cloud.wait().expect("reap it");
    let (mut killed, _) = devices.remove(0);
    killed.kill().expect("kill -9 device 0");
    killed.wait().expect("reap it");
    let written = std::fs::read_to_string(dir.join("out.json")).unwrap_or_default().lines().count();
    // While the job is down: device 0 again over its whole input (it ships the windows it
    // shipped before again, the same), device 1 on to its end.
    let (again, mut stdin0) = resident_device(&e, &brokers, &topic, 0);
    feed(&mut stdin0, &windows[0], 0..windows[0].len());
    let (device1, mut stdin1) = devices.remove(0);
    feed(&mut stdin1, &windows[1], next..windows[1].len());
    drop((stdin0, stdin1));
    let again = check(again.wait_with_output().expect("device 0 ends"), "saams-edge --resident");
    check(device1.wait_with_output().expect("device 1 ends"), "saams-edge --resident");
    assert!(edge_common::figure(&again, "edge ", "view_groups") > 0, "the restarted device shipped views");
    let status = checkpointed_cloud(&brokers, &topic, &dir, &e).wait().expect("the restarted job ends");
    let lines = edge_common::resumed_answers(&dir, status);
    let mut answers: Vec<String> = lines.iter().map(|l| without_devices(l).0).collect();
    answers.sort();
    assert!(written > 0 && written < expected.len(), "killed mid-stream: {written} of {} answers", expected.len());
    assert_eq!(answers, expected, "each answer once, as the raw run's, across both kills");
    let dead = std::fs::read_to_string(dir.join("dead.json")).unwrap_or_default();
    assert!(dead.lines().count() > 0, "the restarted device's first windows were refused");
    assert!(dead.lines().all(|l| l.contains("replayed") || l.contains("late")), "only copies refused: {dead}");
    check_devices_named(&e, &lines, &texts);
}
