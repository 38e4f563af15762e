//! Monitoring sites on devices (`synopsisID` 14 with `saams-edge`): a device reading a
//! monitored stream runs the monitor's sites and ships only their messages; the cloud job's
//! coordinator answers. Its answers — `sent` words and bytes included — must be those of one job
//! reading the same tuples from a file with the sites in the job, byte for byte (sorted, the
//! answers' `devices` field aside): one device running all four sites, two devices running one
//! site each (each device's lines are those the job gives its site), and a monitor constructed
//! live while two devices `--follow` the job. Against a real Kafka-protocol broker
//! (`SAAMS_KAFKA_BROKERS`); where the variable was unset at build time the tests show as ignored.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

mod edge_common;
mod http_common;
#[allow(dead_code)] // the devices produce the data (replay_into is not used)
mod kafka_common;
#[path = "edge_common/monitored.rs"]
mod monitored;
use edge_common::{Edge, figure, sorted_without_devices};
use kafka_common::{check, declared_broker, unique};
use monitored::{COUNT_MIN, START_MS, STEP, TUPLES, WINDOW, monitor, write_data, write_requests};

/// A fresh temporary directory for the test `name`.
fn tmp(name: &str) -> PathBuf {
    edge_common::tmp("edge-monitor", name)
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

/// The setting of the script at `requests`.
fn setting_of(requests: &Path) -> Edge {
    Edge::of_script(requests.to_str().expect("a UTF-8 path"), WINDOW)
}

/// Run device `id` over `data` to partition `partition`, running monitor sites `sites`.
fn device(
    brokers: &str,
    topic: &str,
    (id, partition): (&str, usize),
    (edge, data): (&Edge, &Path),
    sites: &[usize],
) -> Output {
    let chosen: Vec<String> = sites.iter().flat_map(|s| ["--monitor-site".to_string(), s.to_string()]).collect();
    let extra: Vec<&str> = chosen.iter().map(String::as_str).collect();
    edge.device(brokers, topic, (id, partition), data, &extra)
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
    let refused = |l: &&String| serde_json::from_str::<Value>(l).expect("JSON")["refused"].as_u64();
    let counted = monitor.iter().filter_map(refused).max().unwrap_or(0);
    let by_devices: u64 = devices.iter().map(|d| figure(d, "edge ", "monitor_refused")).sum();
    assert!(counted > 0 && counted <= by_devices, "refusals counted: {counted} of the devices' {by_devices}");
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
    let edge = setting_of(&requests);
    let expected = edge.raw_run_of(&all);
    let topic = unique("edge-monitor");
    let files = if n == 1 { vec![all.clone()] } else { split(&dir, &all, n) };
    let outs: Vec<Output> = files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let mine: Vec<usize> = if n == 1 { Vec::new() } else { vec![(i + 1) % sites] };
            device(&brokers, &topic, (&format!("dev{i}"), i), (&edge, file), &mine)
        })
        .collect();
    let out = edge.cloud(&brokers, &topic, &dir, &[]);
    assert_eq!(figure(&out, "summary ", "dead_letters"), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let answers = sorted_without_devices(&out.stdout);
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
    let edge = setting_of(&requests);
    let mut base = edge.cloud_base(&brokers, &topic);
    // The devices start after the job: their partitions wait for them as for a device.
    let live = ["--partitions", "4", "--exit-when-idle", "10s", "--device-timeout", "60s", "--http", "127.0.0.1:0"];
    let (cloud, texts) = edge_common::spawn_with_texts(base.args(live).args(["--idle-timeout", "60s"]), &files);
    let addr = cloud.address();
    let mut devices: Vec<edge_common::Fed> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let site = ((i + 1) % 2).to_string();
            let extra = ["--follow", "--monitor-site", &site];
            let mut child = edge.device_on_stdin(&brokers, &topic, (&format!("dev{i}"), i), &extra);
            let stdin = child.stdin.take().expect("its stdin");
            (child, stdin, text.lines().collect())
        })
        .collect();
    let mut feed = |part: usize| edge_common::feed_third(&mut devices, part, 1);
    feed(0);
    // Mid-stream: both devices have shipped windows, and their inputs go on after the request.
    let devices_table = || http_common::call(&addr, "GET", "/devices", "").1;
    edge_common::wait_merged(devices_table, &["dev0", "dev1"], START_MS as u64);
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
    let out = cloud.finish("saams --partials-topic --http");
    let monitor_answers = |lines: Vec<String>| -> Vec<String> {
        let monitor = |l: &String| l.contains(r#""kind":"SlidingWindowMonitor""#) && !l.contains("\"accepted\"");
        lines.into_iter().filter(monitor).collect()
    };
    let answers = monitor_answers(sorted_without_devices(&out.stdout));
    // One job over the file with the monitor in its script, whose stream `S` starts at the
    // fence (the lines, and so each value's site, are the same).
    let from_fence = dir.join("from-fence.json");
    write_data(&from_fence, fence);
    let with_monitor = dir.join("with-monitor.json");
    let mut lines: Vec<String> = COUNT_MIN.iter().map(|s| s.to_string()).collect();
    lines.extend(monitor(2));
    write_requests(&with_monitor, &lines);
    let expected = monitor_answers(setting_of(&with_monitor).raw_run_of(&from_fence));
    assert!(fence > START_MS && fence < START_MS + TUPLES * STEP / 2, "the fence is mid-stream: {fence}");
    check_monitor(&answers, &expected, &outs);
    let _ = std::fs::remove_dir_all(&dir);
}
