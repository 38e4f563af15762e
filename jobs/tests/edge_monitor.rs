//! Monitoring sites on devices (`synopsisID` 14 with `saams-edge`): a device reading a
//! monitored stream runs the monitor's sites and ships only their messages; the cloud job's
//! coordinator answers. Its answers — `sent` words and bytes included — must be those of one job
//! reading the same tuples from a file with the sites in the job, byte for byte (sorted, the
//! answers' `devices` field aside): one device running all four sites, two devices running one
//! site each (each device's lines are those the job gives its site), and a monitor constructed
//! live while two devices `--follow` the job. Against a real Kafka-protocol broker
//! (`SAAMS_KAFKA_BROKERS`); where the variable was unset at build time the tests show as ignored.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod http_common;
#[allow(dead_code)] // the devices produce the data (replay_into, read_topic are not used)
mod kafka_common;
use kafka_common::{check, declared_broker, unique};

const SAAMS: &str = env!("CARGO_BIN_EXE_saams");
const EDGE: &str = env!("CARGO_BIN_EXE_saams-edge");
const WINDOW: &str = "1m";
const START_MS: i64 = 1_600_000_000_000;
const TUPLES: i64 = 120_000;
/// Event-time ms between two tuples.
const STEP: i64 = 10;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-edge-monitor-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// A hundred tuples a second of stream `S` (before `renamed_before`: of stream `X`, so a monitor of
/// `S` in a request file starts there), prices from a small skewed set.
fn write_data(path: &Path, renamed_before: i64) {
    let mut text = String::new();
    let mut x: u64 = 11;
    for i in 0..TUPLES {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let t = START_MS + i * STEP;
        let price = [10, 10, 10, 10, 11, 12, 13, 14, 20, 25][(x >> 33) as usize % 10] + (x >> 20) % 3;
        let stream = if t < renamed_before { "X" } else { "S" };
        let ts = saams::api::time::format_timestamp(t);
        text.push_str(&format!(
            "{{\"streamID\":\"{stream}\",\"dataSetKey\":\"D\",\"timestamp\":\"{ts}\",\"price\":{price}}}\n"
        ));
    }
    std::fs::write(path, text).expect("write the tuples");
}

/// A Count-Min of `S` and its query: the devices ship its partials beside the sites' messages.
const COUNT_MIN: [&str; 2] = [
    r#"{"dataSetKey":"D","streamID":"S","synopsisID":1,"param":["CountMin","price","NotQueryable",0.01,0.9,7],"requestID":"cm"}"#,
    r#"{"dataSetKey":"D","streamID":"S","synopsisID":1,"param":[10,"price","Queryable","Continues"],"requestID":"cmq"}"#,
];

/// The monitor of `S` over `sites` sites (W 1 min, ε 0.3, φ 0.5: at this rate its sites run the
/// protocol, not only forwarding) and its queries.
fn monitor(sites: usize) -> Vec<String> {
    let construct = format!(
        r#"{{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["SlidingWindowMonitor","price","NotQueryable","1m",0.3,0.5,{sites}],"requestID":"m"}}"#
    );
    let query = |args: &str, id: &str| {
        format!(
            r#"{{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":[{args},"price","Queryable","Continuous"],"requestID":"{id}"}}"#
        )
    };
    vec![construct, query(r#""count""#, "q1"), query(r#""frequentItems""#, "q2"), query(r#""quantile",0.5"#, "q3")]
}

fn write_requests(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write the requests");
}

/// Device `i` of `n`'s tuples: lines `l` of `all` with `l ≡ i + 1 (mod n)` (1-based), which the
/// job gives site `(i + 1) mod n` of `n` (`l mod n`).
fn split(dir: &Path, all: &Path, n: usize) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(all).expect("read the tuples");
    (0..n)
        .map(|i| {
            let path = dir.join(format!("device{i}.json"));
            let mine: String = text.lines().skip(i).step_by(n).map(|l| format!("{l}\n")).collect();
            std::fs::write(&path, mine).expect("write device tuples");
            path
        })
        .collect()
}

fn sorted(out: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(out).lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// An answer of the cloud job without its `devices` field.
fn without_devices(line: &str) -> String {
    match line.rfind(",\"devices\":[") {
        Some(at) => format!("{}}}", &line[..at]),
        None => line.to_string(),
    }
}

/// The answers of one job reading `data` with the sites in the job.
fn cloud_only(requests: &Path, data: &Path) -> Vec<String> {
    let out = Command::new(SAAMS)
        .args(["--window", WINDOW, "-w", "1", "--progress", "0", "--requests"])
        .arg(requests)
        .arg("--data")
        .arg(data)
        .output()
        .expect("run saams");
    sorted(&check(out, "saams over the file").stdout)
}

/// Run device `id` over `data` to partition `partition`, running monitor sites `sites`.
fn device(
    brokers: &str,
    topic: &str,
    (id, partition): (&str, usize),
    (requests, data): (&Path, &Path),
    sites: &[usize],
) -> Output {
    let mut cmd = Command::new(EDGE);
    cmd.args(["--device", id, "--brokers", brokers, "--partials-topic", topic, "--window", WINDOW])
        .args(["--partition", &partition.to_string(), "--requests"])
        .arg(requests)
        .arg("--data")
        .arg(data);
    for s in sites {
        cmd.args(["--monitor-site", &s.to_string()]);
    }
    check(cmd.output().expect("run saams-edge"), "saams-edge")
}

/// The cloud job over `topic`, to the end of what the devices shipped.
fn cloud(brokers: &str, topic: &str, requests: &Path) -> Output {
    let out = Command::new(SAAMS)
        .args(["--window", WINDOW, "-w", "2", "--progress", "0", "--requests"])
        .arg(requests)
        .args(["--brokers", brokers, "--partials-topic", topic, "--from", "earliest"])
        .args(["--exit-when-idle", "3s", "--device-timeout", "2s", "--partitions", "4"])
        .output()
        .expect("run saams");
    check(out, "saams --partials-topic")
}

/// A figure of a `key=value` summary line on stderr starting with `prefix`.
fn figure(out: &Output, prefix: &str, key: &str) -> u64 {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no `{prefix}` line in {err}"));
    let field = line.split(' ').find_map(|kv| kv.strip_prefix(&format!("{key}="))).expect("the figure");
    field.parse().expect("a number")
}

/// What the sites sent, as the newest continuous count answer says: messages and words.
fn sent(answers: &[String]) -> (u64, u64) {
    let counts = answers.iter().map(|l| serde_json::from_str::<Value>(l).expect("JSON"));
    let newest = counts
        .filter(|v| v["requestID"] == "q1")
        .max_by_key(|v| v["sent"]["messages"].as_u64())
        .expect("a count answer");
    (newest["sent"]["messages"].as_u64().expect("messages"), newest["sent"]["words"].as_u64().expect("words"))
}

/// The devices' summaries added up: (items, messages, words).
fn shipped(outs: &[Output]) -> (u64, u64, u64) {
    let sum = |key: &str| outs.iter().map(|o| figure(o, "edge ", key)).sum::<u64>();
    (sum("monitor_items"), sum("monitor_messages"), sum("monitor_words"))
}

/// The monitor's answers agree with the cloud-only run's and with what the devices sent, and
/// the protocol (not only forwarding) ran: fewer words than items.
fn check_monitor(answers: &[String], expected: &[String], devices: &[Output]) {
    let monitor: Vec<&String> = answers.iter().filter(|l| l.contains(r#""kind":"SlidingWindowMonitor""#)).collect();
    assert!(monitor.len() > 3 * 10, "the monitor answered: {} lines", monitor.len());
    assert_eq!(answers, expected, "the answers of the run with the sites in the job");
    let (items, messages, words) = shipped(devices);
    assert_eq!(sent(answers), (messages, words), "the coordinator counted what the devices sent");
    assert!(words < items, "the protocol ran: {words} words for {items} items");
    for d in devices {
        let (bytes, raw) = (figure(d, "edge ", "monitor_shipped_bytes"), figure(d, "edge ", "monitor_raw_bytes"));
        assert!(bytes > 0 && raw > 0, "bytes shipped and raw counted: {bytes} {raw}");
    }
}

/// `n` devices, each running site `(i + 1) mod sites` (all sites with one device), over the
/// monitor constructed at the start: the cloud job answers as the job over the file.
fn devices_answer_as_the_job(n: usize, sites: usize) {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp(&format!("start{n}"));
    let all = dir.join("all.json");
    write_data(&all, i64::MIN);
    let requests = dir.join("requests.json");
    let mut lines: Vec<String> = COUNT_MIN.iter().map(|s| s.to_string()).collect();
    lines.extend(monitor(sites));
    write_requests(&requests, &lines);
    let expected = cloud_only(&requests, &all);
    let topic = unique("edge-monitor");
    let files = if n == 1 { vec![all.clone()] } else { split(&dir, &all, n) };
    let outs: Vec<Output> = files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let mine: Vec<usize> = if n == 1 { Vec::new() } else { vec![(i + 1) % sites] };
            device(&brokers, &topic, (&format!("dev{i}"), i), (&requests, file), &mine)
        })
        .collect();
    let out = cloud(&brokers, &topic, &requests);
    assert_eq!(figure(&out, "summary ", "dead_letters"), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let answers: Vec<String> = {
        let mut a: Vec<String> = sorted(&out.stdout).iter().map(|l| without_devices(l)).collect();
        a.sort();
        a
    };
    check_monitor(&answers, &expected, &outs);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn one_device_running_every_site_answers_as_the_job() {
    devices_answer_as_the_job(1, 4);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn two_devices_one_site_each_answer_as_the_job() {
    devices_answer_as_the_job(2, 2);
}

/// How far the cloud job at `addr` has merged each device of `devices`.
fn wait_merged(addr: &str, devices: &[&str], from: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, body) = http_common::call(addr, "GET", "/devices", "");
        let table: Value = serde_json::from_str(&body).expect("JSON");
        let rows = table["devices"].as_array().cloned().unwrap_or_default();
        let window = |d: &str| rows.iter().find(|r| r["device"] == d).and_then(|r| r["lastWindow"].as_u64());
        if devices.iter().all(|d| window(d).is_some_and(|w| w >= from)) {
            return;
        }
        assert!(Instant::now() < deadline, "the devices' windows were not merged: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_monitor_constructed_live_reaches_following_devices_at_its_fence() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("live");
    let all = dir.join("all.json");
    write_data(&all, i64::MIN);
    let files = split(&dir, &all, 2);
    let requests = dir.join("requests.json");
    write_requests(&requests, &COUNT_MIN.map(str::to_string));
    let topic = unique("edge-monitor-live");
    let mut cloud = Command::new(SAAMS)
        .args(["--window", WINDOW, "-w", "2", "--progress", "0", "--requests"])
        .arg(&requests)
        .args(["--brokers", &brokers, "--partials-topic", &topic, "--from", "earliest", "--partitions", "4"])
        .args(["--exit-when-idle", "10s", "--device-timeout", "60s", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start saams");
    let addr = http_common::http_address(&mut cloud, Duration::from_secs(60));
    let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).expect("device tuples")).collect();
    let mut devices: Vec<(Child, ChildStdin, Vec<&str>)> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut child = Command::new(EDGE)
                .args(["--device", &format!("dev{i}"), "--brokers", &brokers, "--partials-topic", &topic, "--follow"])
                .args(["--window", WINDOW, "--partition", &i.to_string(), "--data", "-"])
                .args(["--monitor-site", &((i + 1) % 2).to_string()])
                .stdin(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start saams-edge");
            let stdin = child.stdin.take().expect("its stdin");
            (child, stdin, text.lines().collect())
        })
        .collect();
    let mut feed = |part: usize| {
        for (_, stdin, lines) in &mut devices {
            let third = lines.len() / 3;
            let end = if part == 1 { lines.len() } else { third };
            for line in &lines[part * third..end] {
                writeln!(stdin, "{line}").expect("feed the device");
            }
            stdin.flush().expect("flush");
        }
    };
    feed(0);
    // Mid-stream: both devices have shipped windows, and their inputs go on after the request.
    wait_merged(&addr, &["dev0", "dev1"], START_MS as u64);
    let (status, text) = http_common::call(&addr, "POST", "/requests", &format!("[{}]", monitor(2).join(",")));
    assert_eq!(status, 200, "{text}");
    let ack: Value = serde_json::from_str(text.lines().next().expect("an ack")).expect("JSON");
    let fence = saams::api::time::parse_timestamp(ack["effectiveFrom"].as_str().expect("a fence")).expect("a time");
    feed(1);
    let mut outs = Vec::new();
    for (child, stdin, _) in devices {
        drop(stdin);
        let out = check(child.wait_with_output().expect("the device ends"), "saams-edge --follow");
        assert_eq!(
            figure(&out, "edge ", "live_requests"),
            1,
            "the construct and its queries (one POST) applied on the device"
        );
        outs.push(out);
    }
    let out = check(cloud.wait_with_output().expect("the job ends"), "saams --partials-topic --http");
    let monitor_answers = |lines: Vec<String>| -> Vec<String> {
        let mut a: Vec<String> = lines
            .iter()
            .filter(|l| l.contains(r#""kind":"SlidingWindowMonitor""#) && !l.contains("\"accepted\""))
            .map(|l| without_devices(l))
            .collect();
        a.sort();
        a
    };
    let answers = monitor_answers(sorted(&out.stdout));
    // One job over the file with the monitor in its script, whose stream `S` starts at the
    // fence (the lines, and so each value's site, are the same).
    let from_fence = dir.join("from-fence.json");
    write_data(&from_fence, fence);
    let with_monitor = dir.join("with-monitor.json");
    let mut lines: Vec<String> = COUNT_MIN.iter().map(|s| s.to_string()).collect();
    lines.extend(monitor(2));
    write_requests(&with_monitor, &lines);
    let expected = monitor_answers(cloud_only(&with_monitor, &from_fence));
    assert!(fence > START_MS && fence < START_MS + TUPLES * STEP / 2, "the fence is mid-stream: {fence}");
    check_monitor(&answers, &expected, &outs);
    let _ = std::fs::remove_dir_all(&dir);
}
