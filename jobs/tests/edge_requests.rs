//! Requests that need a device's state reach the device (`saams-edge --follow`), against a real
//! Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`): the paper workload on four streams (Count-Min,
//! HyperLogLog and DFT on `price`, one group per stream), two devices each the only reader of
//! two streams, keeping their groups whole (`--sole-reader`) or resident (`--resident`).
//!
//! - A LOAD posted while they run reaches them at its fence with the snapshot's bytes: the
//!   answers equal those of one job over the raw tuples in which the same snapshot was merged at
//!   the same fence (before it: the run without the LOAD; from it on: the run with the LOAD in
//!   its script, whose landmark Count-Min holds the snapshot from its start).
//! - An ad-hoc query and a SAVE of a resident synopsis are answered by its device from its state
//!   at their fence: the reply equals the end-of-input answer of one job over the raw tuples
//!   before the fence (with `asOf`, the fence, added), and the snapshot file has the same bytes.
//!   Once the devices have left, the same query is 503 naming the device.
//!
//! Where the variable was unset at build time the tests show as ignored.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use kafka_common::{check, declared_broker, unique};
mod edge_common;
use edge_common::{Edge, SAAMS, sorted, sorted_without_devices};
mod http_common;

/// The streams each device is the only reader of.
const SHARES: [[&str; 2]; 2] = [["EURTRY", "XAUUSD"], ["IBM", "SPY"]];

/// EURTRY's Count-Min (request 1 of the script; its continuous query is request 4).
fn request(param: &str, id: u32) -> String {
    format!(r#"{{"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":1,"param":{param},"requestID":{id}}}"#)
}

fn edge() -> Edge {
    Edge::new("jobs/tests/edge_whole_data/requests.json", "20s")
}

/// The generated tuples and each device's share, in a fresh directory with a `snapshots` one.
fn workspace(name: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = edge_common::tmp("edge-requests", name);
    let files = edge_common::data(&dir, 2, |d, l| SHARES[d].contains(&edge_common::stream_of(l)));
    std::fs::create_dir_all(dir.join("snapshots")).expect("the snapshot directory");
    (dir, files)
}

/// One job over `data` with the script and `more` requests after it, SAVE and LOAD in
/// `snapshots`: its sorted answers.
fn raw_with(dir: &Path, (more, snapshots): (&[String], &Path), data: &Path) -> Vec<String> {
    let e = edge();
    let script = std::fs::read_to_string(&e.requests).expect("the script") + &more.join("\n") + "\n";
    let requests = dir.join(format!("requests-{}.json", more.len()));
    std::fs::write(&requests, script).expect("write the script");
    let out = Command::new(SAAMS)
        .args(["--window", e.window, "-w", "1", "--progress", "0", "--requests"])
        .arg(&requests)
        .arg("--snapshots")
        .arg(snapshots)
        .arg("--data")
        .arg(data)
        .output()
        .expect("run saams");
    sorted(&check(out, "saams over the file").stdout)
}

/// The end (ms) of an answer's window.
fn window_end(line: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(line).expect("an answer");
    let end = v["window"]["end"].as_str().unwrap_or_else(|| panic!("no window in {line}"));
    saams::api::time::parse_timestamp(end).expect("a timestamp") as u64
}

/// The cloud job (`--http`, `--snapshots`) and the two devices (`--follow` and `mode`) fed on
/// their standard input.
struct Running {
    cloud: std::process::Child,
    addr: String,
    devices: Vec<edge_common::Fed<'static>>,
}

impl Running {
    fn start(brokers: &str, (dir, files): (&Path, &[PathBuf]), topic: &str, mode: &str) -> Running {
        let e = edge();
        let mut base = e.cloud_base(brokers, topic);
        base.args([
            "--partitions",
            "4",
            "--exit-when-idle",
            "10s",
            "--device-timeout",
            "60s",
            "--idle-timeout",
            "60s",
            "--http-timeout",
            "60",
        ])
        .args(["--http", "127.0.0.1:0", "--snapshots"])
        .arg(dir.join("snapshots"));
        let (mut cloud, texts) = edge_common::spawn_with_texts(&mut base, files);
        let addr = http_common::http_address(&mut cloud, Duration::from_secs(60));
        let devices = texts
            .into_iter()
            .enumerate()
            .map(|(i, text)| {
                let mut child = e.device_on_stdin(brokers, topic, (&format!("dev{i}"), i), &["--follow", mode]);
                let stdin = child.stdin.take().expect("its stdin");
                let text: &'static str = Box::leak(text.into_boxed_str());
                (child, stdin, text.lines().collect())
            })
            .collect();
        Running { cloud, addr, devices }
    }

    fn feed(&mut self, part: usize) {
        edge_common::feed_third(&mut self.devices, part, 2);
    }

    /// Wait until the cloud has merged a window of both devices.
    fn wait_merged(&self) {
        let addr = self.addr.clone();
        edge_common::wait_merged(move || http_common::call(&addr, "GET", "/devices", "").1, &["dev0", "dev1"], 0);
    }

    /// The devices' ends (their inputs closed), then `more` while the cloud runs, then its end.
    fn finish(self, more: impl FnOnce(&str)) -> (Vec<Output>, Output) {
        let outs = self
            .devices
            .into_iter()
            .map(|(child, stdin, _)| {
                drop(stdin);
                check(child.wait_with_output().expect("the device ends"), "saams-edge --follow")
            })
            .collect();
        more(&self.addr);
        (outs, check(self.cloud.wait_with_output().expect("the job ends"), "saams --partials-topic --http"))
    }
}

/// A LOAD into EURTRY's Count-Min (kept whole or resident on dev0) posted mid-stream: the
/// answers of the raw run with the snapshot merged at the LOAD's fence.
fn a_load_reaches_the_device_at_its_fence(mode: &str) {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, files) = workspace(mode.trim_start_matches('-'));
    // The snapshot: EURTRY's Count-Min over every tuple, saved by a job of its own.
    let save = request(r#"["SAVE_REQUEST","cm.bin"]"#, 100);
    raw_with(&dir, (&[save], &dir.join("snapshots")), &dir.join("all.json"));
    assert!(dir.join("snapshots/cm.bin").exists(), "the snapshot was saved");
    let topic = unique("edge-requests-load");
    let mut run = Running::start(&brokers, (&dir, &files), &topic, mode);
    run.feed(0);
    run.wait_merged();
    let load = request(r#"["LOAD_REQUEST","cm.bin"]"#, 101);
    let (status, body) = http_common::call(&run.addr, "POST", "/requests", &load);
    assert_eq!(status, 200, "{body}");
    let ack: serde_json::Value = serde_json::from_str(body.lines().next().expect("an ack")).expect("JSON");
    let fence = saams::api::time::parse_timestamp(ack["effectiveFrom"].as_str().expect("a fence")).expect("a time");
    run.feed(1);
    run.feed(2);
    let (outs, out) = run.finish(|_| {});
    for device in &outs {
        assert_eq!(edge_common::figure(device, "edge ", "live_requests"), 1, "the LOAD applied on each device");
    }
    let answers: Vec<String> =
        sorted_without_devices(&out.stdout).into_iter().filter(|l| !l.contains("\"accepted\"")).collect();
    let plain = edge().raw_run(&dir);
    let loaded = raw_with(&dir, (&[load], &dir.join("snapshots")), &dir.join("all.json"));
    let cm = |l: &String| l.starts_with("{\"requestID\":4,");
    let from_fence = |l: &String| cm(l) && window_end(l) > fence as u64;
    let mut expected: Vec<String> = plain.iter().filter(|l| !from_fence(l)).cloned().collect();
    expected.extend(loaded.iter().filter(|l| from_fence(l)).cloned());
    expected.sort();
    let first = plain.iter().filter(|l| cm(l)).map(|l| window_end(l)).min().expect("Count-Min answers");
    // Mid-stream: at least the first window is answered before the fence.
    assert!(fence as u64 >= first, "the fence is mid-stream: {fence}");
    assert_ne!(expected, plain, "the snapshot changes the answers from the fence on");
    assert_eq!(answers, expected, "the answers of the raw run with the snapshot merged at the fence");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_load_into_a_synopsis_kept_whole_reaches_its_device_at_the_fence() {
    a_load_reaches_the_device_at_its_fence("--sole-reader");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_load_into_a_resident_synopsis_reaches_its_device_at_the_fence() {
    a_load_reaches_the_device_at_its_fence("--resident");
}

/// `line` without its `asOf` field, and that field's time (ms).
fn without_as_of(line: &str) -> (String, i64) {
    let at = line.rfind(",\"asOf\":\"").unwrap_or_else(|| panic!("no asOf in {line}"));
    let time = saams::api::time::parse_timestamp(&line[at + 9..line.len() - 2]).expect("a timestamp");
    (format!("{}}}", &line[..at]), time)
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn ad_hoc_queries_and_saves_of_a_resident_synopsis_are_answered_by_its_device() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, files) = workspace("asks");
    let topic = unique("edge-requests-asks");
    let mut run = Running::start(&brokers, (&dir, &files), &topic, "--resident");
    run.feed(0);
    run.wait_merged();
    let query = request(r#"[13.5,"price","Queryable","Ad-hoc"]"#, 201);
    let save = request(r#"["SAVE_REQUEST","saved.bin"]"#, 202);
    let body = format!("[{query},{save}]");
    let addr = run.addr.clone();
    // Answered once the device reads past the fence: the POST waits while it is fed.
    let post = std::thread::spawn(move || http_common::call(&addr, "POST", "/requests", &body));
    std::thread::sleep(Duration::from_secs(2));
    run.feed(1);
    let (status, reply) = post.join().expect("the POST");
    assert_eq!(status, 200, "{reply}");
    let lines: Vec<&str> = reply.lines().collect();
    assert_eq!(lines.len(), 2, "{reply}");
    run.feed(2);
    let ask_again = request(r#"[13.5,"price","Queryable","Ad-hoc"]"#, 203);
    let mut gone = (0, String::new());
    let (outs, out) = run.finish(|addr| gone = http_common::call(addr, "POST", "/requests", &ask_again));
    let answered: u64 = outs.iter().map(|o| edge_common::figure(o, "edge ", "answers")).sum();
    assert_eq!(answered, 2, "dev0 answered the query and the SAVE");
    let (answer, fence) = without_as_of(lines[0]);
    let (saved, saved_at) = without_as_of(lines[1]);
    assert_eq!(saved_at, fence, "one fence for the body");
    // One job over the tuples before the fence, asked at its end.
    let before = dir.join("before-fence.json");
    let all = std::fs::read_to_string(dir.join("all.json")).expect("the tuples");
    let e = edge();
    // The generated tuples are of one day: `window_of` reads the time of day.
    let of_day = fence % 86_400_000;
    let kept: String = all.lines().filter(|l| (e.window_of(l) as i64) < of_day).map(|l| format!("{l}\n")).collect();
    std::fs::write(&before, kept).expect("write the tuples before the fence");
    std::fs::create_dir_all(dir.join("raw-snapshots")).expect("a snapshot directory");
    let raw = raw_with(&dir, (&[query, save], &dir.join("raw-snapshots")), &before);
    let raw_line = |id: &str| raw.iter().find(|l| l.starts_with(id)).cloned().unwrap_or_else(|| panic!("no {id}"));
    assert_eq!(answer, raw_line("{\"requestID\":201,"), "the query answered from the state at the fence");
    assert!(answer.contains("\"tuples\":"), "{answer}");
    assert_eq!(saved, raw_line("{\"requestID\":202,"), "the SAVE answered as the raw run's");
    let bytes = |p: &Path| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert_eq!(bytes(&dir.join("snapshots/saved.bin")), bytes(&dir.join("raw-snapshots/saved.bin")), "the state saved");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("{\"requestID\":201,")), "the answer is in the job's output");
    assert_eq!(gone.0, 503, "{}", gone.1);
    assert!(gone.1.contains("resident on device dev0") && gone.1.contains("has left"), "{}", gone.1);
    let _ = std::fs::remove_dir_all(&dir);
}
