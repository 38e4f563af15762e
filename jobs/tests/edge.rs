//! The continuum against a real Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`): `saams-edge`
//! devices ship their windows' partials (or raw values, when smaller) to a partials topic, and
//! `saams --partials-topic` merges them. Its answers must be those of one job reading the same
//! tuples from a file, byte for byte (sorted); a device killed and restarted is merged exactly
//! once; a device that never comes back stops holding windows after `--device-timeout`; forged
//! and replayed records are refused with a dead letter. Where the variable was unset at build
//! time the tests show as ignored.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use saams_jobs::edge::shipment::{Body, Shipment};
use saams_jobs::kafka::KafkaOptions;

mod edge_common;
mod http_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{EDGE, Edge, SAAMS, answers_and_devices, figure, sorted, stream_of, without_devices};
use kafka_common::{check, declared_broker, read_topic, unique};

/// The script and window of these tests.
fn edge() -> Edge {
    Edge::new("jobs/tests/edge_data/requests.json", "600s")
}

fn tmp(name: &str) -> PathBuf {
    edge_common::tmp("edge", name)
}

fn requests() -> String {
    edge().requests
}

/// Six generated streams: `all.json`, and one file per device holding the streams `split` gives
/// it.
fn data(dir: &Path, split: &[&[&str]]) -> Vec<PathBuf> {
    edge_common::data(dir, split.len(), |d, l| split[d].contains(&stream_of(l)))
}

fn window_of(line: &str) -> u64 {
    edge().window_of(line)
}

fn raw_run(dir: &Path) -> Vec<String> {
    edge().raw_run(dir)
}

/// Feed `lines` to a device on its standard input, then wait until `topic` holds `records`.
fn device_fed(brokers: &str, topic: &str, id: &str, lines: &[&str], records: usize) -> Child {
    edge().device_fed(brokers, topic, (id, &[]), lines, records)
}

/// Run device `id` over `data` to partition `partition` of `topic` until its input ends.
fn device(brokers: &str, topic: &str, id: &str, partition: usize, data: &Path) -> Output {
    edge().device(brokers, topic, (id, partition), data, &[])
}

/// [`device`] with more flags.
fn device_with(brokers: &str, topic: &str, at: (&str, usize), data: &Path, extra: &[&str]) -> Output {
    edge().device(brokers, topic, at, data, extra)
}

/// The cloud job over `topic`, to the end of what the devices shipped.
fn cloud(brokers: &str, topic: &str, dir: &Path, extra: &[&str]) -> Output {
    edge().cloud(brokers, topic, dir, extra)
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn two_and_three_devices_answer_as_one_job_over_the_raw_tuples() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    for split in [
        &[&["EURTRY", "XAUUSD", "BTCUSD"][..], &["IBM", "SPY", "ETHUSD"][..]][..],
        &[&["EURTRY", "XAUUSD"][..], &["IBM", "SPY", "BTCUSD"][..], &["ETHUSD"][..]][..],
    ] {
        let dir = tmp(&format!("devices{}", split.len()));
        let files = data(&dir, split);
        let expected = raw_run(&dir);
        assert!(expected.len() > 20, "the raw run answers: {expected:?}");
        let topic = unique("edge-partials");
        let mut chose_partials = 0;
        for (i, file) in files.iter().enumerate() {
            // The last device also ships its open window every few milliseconds: several
            // shipments (sequence numbers) per window, merged as one.
            let every: &[&str] = if i + 1 == files.len() { &["--ship-every", "2ms"] } else { &[] };
            let out = device_with(&brokers, &topic, (&format!("dev{i}"), i), file, every);
            let (shipped, raw) = (figure(&out, "edge ", "shipped_bytes"), figure(&out, "edge ", "raw_bytes"));
            assert!(shipped > 0 && shipped <= raw, "device {i} shipped {shipped} bytes of {raw} raw");
            chose_partials += figure(&out, "edge ", "partial_windows");
        }
        assert!(chose_partials > 0, "some window was cheaper as partials");
        let out = cloud(&brokers, &topic, &dir, &[]);
        let (answers, named) = answers_and_devices(&out);
        assert_eq!(answers, expected, "{} devices: the answers of the raw run", split.len());
        assert_eq!(figure(&out, "summary ", "dead_letters"), 0);
        // Each answer names the devices that shipped its window: some, and all of them together.
        let all: BTreeSet<String> = (0..split.len()).map(|i| format!("dev{i}")).collect();
        assert!(named.iter().all(|(_, d)| !d.is_empty() && d.iter().all(|x| all.contains(x))), "{named:?}");
        assert_eq!(named.iter().flat_map(|(_, d)| d.iter().cloned()).collect::<BTreeSet<_>>(), all);
    }
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_device_shipping_everything_again_is_merged_once() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("again");
    let files = data(&dir, &[&["EURTRY", "XAUUSD", "BTCUSD"], &["IBM", "SPY", "ETHUSD"]]);
    let expected = raw_run(&dir);
    let topic = unique("edge-again");
    let first = device(&brokers, &topic, "dev0", 0, &files[0]);
    device(&brokers, &topic, "dev1", 1, &files[1]);
    // dev0 restarted from the start of its input: every shipment again.
    device(&brokers, &topic, "dev0", 0, &files[0]);
    let out = cloud(&brokers, &topic, &dir, &[]);
    assert_eq!(answers_and_devices(&out).0, expected, "each shipment merged once");
    let replays = figure(&first, "edge ", "windows");
    assert_eq!(figure(&out, "summary ", "dead_letters"), replays, "every shipment of the second run refused");
    let dead = std::fs::read_to_string(dir.join("dead.json")).expect("dead letters");
    let reasons: BTreeSet<&str> =
        dead.lines().map(|l| if l.contains("replayed") { "replayed" } else { "other" }).collect();
    assert_eq!(reasons, BTreeSet::from(["replayed"]), "{dead}");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_device_killed_and_restarted_is_merged_exactly_once() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("kill");
    let files = data(&dir, &[&["EURTRY", "XAUUSD", "BTCUSD"], &["IBM", "SPY", "ETHUSD"]]);
    let expected = raw_run(&dir);
    let topic = unique("edge-kill");
    let text = std::fs::read_to_string(&files[0]).expect("device 0 tuples");
    let lines: Vec<&str> = text.lines().collect();
    let first = window_of(lines[0]);
    // Two windows and the first tuple of the third: the device ships two windows (hello + 2).
    let third = lines.iter().position(|l| window_of(l) >= first + 2 * 600_000).expect("a third window");
    let mut killed = device_fed(&brokers, &topic, "dev0", &lines[..=third], 3);
    killed.kill().expect("kill -9 the device");
    killed.wait().expect("reap it");
    device(&brokers, &topic, "dev0", 0, &files[0]);
    device(&brokers, &topic, "dev1", 1, &files[1]);
    let out = cloud(&brokers, &topic, &dir, &[]);
    assert_eq!(answers_and_devices(&out).0, expected, "the windows shipped before the kill merged once");
    let dead = std::fs::read_to_string(dir.join("dead.json")).expect("dead letters");
    assert_eq!(dead.lines().filter(|l| l.contains("replayed")).count(), 2, "{dead}");
    assert_eq!(figure(&out, "summary ", "dead_letters"), 2);
}

/// `GET path` of the job at `addr`: the body.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the job");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("send");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read the reply");
    text.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
}

/// [`cloud`] with `--http`: once the job has read every shipment, `GET /devices` shows the
/// killed device `gone` (after `--device-timeout`) and the other `left` (its goodbye), and
/// `/metrics` their bytes.
fn cloud_watched(brokers: &str, topic: &str, dir: &Path) -> Output {
    let child = edge_common::Cloud::start(edge().cloud_command(brokers, topic, dir).args([
        "--http",
        "127.0.0.1:0",
        "--metrics-linger",
        "10s",
    ]));
    let addr = child.address();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let devices: serde_json::Value = serde_json::from_str(&http_get(&addr, "/devices")).expect("JSON");
        let state = |d: &str| {
            let rows = devices["devices"].as_array().cloned().unwrap_or_default();
            rows.iter().find(|r| r["device"] == d).map(|r| r["state"].as_str().unwrap_or("").to_string())
        };
        if state("dev0").as_deref() == Some("gone") && state("dev1").as_deref() == Some("left") {
            break;
        }
        assert!(Instant::now() < deadline, "devices never showed gone and left: {devices}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let metrics = http_get(&addr, "/metrics");
    assert!(metrics.contains("saams_device_bytes{device=\"dev1\",form=\"shipped\"}"), "{metrics}");
    child.finish("saams --partials-topic --http")
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_device_that_never_comes_back_stops_holding_windows_after_the_timeout() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("gone");
    let files = data(&dir, &[&["EURTRY", "XAUUSD", "BTCUSD"], &["IBM", "SPY", "ETHUSD"]]);
    let text = std::fs::read_to_string(&files[0]).expect("device 0 tuples");
    let lines: Vec<&str> = text.lines().collect();
    let first = window_of(lines[0]);
    let second = lines.iter().position(|l| window_of(l) > first).expect("a second window");
    let topic = unique("edge-gone");
    let mut gone = device_fed(&brokers, &topic, "dev0", &lines[..=second], 2);
    gone.kill().expect("kill -9 the device");
    gone.wait().expect("reap it");
    device(&brokers, &topic, "dev1", 1, &files[1]);
    // What was merged: device 0's first window, device 1's every tuple.
    let merged: String = lines[..second].iter().map(|l| format!("{l}\n")).collect::<String>()
        + &std::fs::read_to_string(&files[1]).expect("device 1 tuples");
    let mut merged_lines: Vec<&str> = merged.lines().collect();
    // In event-time order, as the generator writes them (a stream's tuples keep their order).
    merged_lines.sort_by_key(|l| {
        let at = l.find("\"time\":\"").expect("a time") + 8;
        l[at..].split('"').next().map(str::to_string)
    });
    std::fs::write(dir.join("all.json"), merged_lines.join("\n") + "\n").expect("write the merged tuples");
    let expected = raw_run(&dir);
    let out = cloud_watched(&brokers, &topic, &dir);
    let (answers, named) = answers_and_devices(&out);
    assert_eq!(answers, expected, "exact for the tuples of the devices the answers name");
    let end_of_first =
        format!("\"end\":\"{}", saams::api::time::format_timestamp(1_546_387_200_000 + first as i64 + 600_000));
    for (answer, devices) in &named {
        let want: &[&str] = if answer.contains(&end_of_first) { &["dev0", "dev1"] } else { &["dev1"] };
        assert_eq!(devices, want, "{answer}");
    }
    assert!(named.iter().any(|(_, d)| d.len() == 1), "windows after the timeout closed without dev0");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn forged_replayed_and_late_shipments_are_refused_and_nothing_else_is_lost() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("forged");
    let files = data(&dir, &[&["EURTRY", "XAUUSD", "BTCUSD"], &["IBM", "SPY", "ETHUSD"]]);
    let expected = raw_run(&dir);
    let topic = unique("edge-forged");
    device(&brokers, &topic, "dev0", 0, &files[0]);
    device(&brokers, &topic, "dev1", 1, &files[1]);
    let shipped: Vec<Shipment> = read_topic(&brokers, &topic).iter().filter_map(|r| Shipment::decode(r).ok()).collect();
    let data = |s: &&Shipment| s.device == "dev0" && matches!(s.body, Body::Data { .. });
    let (first, last) = (shipped.iter().find(data).expect("a shipment"), shipped.iter().rfind(data).expect("another"));
    let mut bad_crc = first.encode();
    let n = bad_crc.len();
    bad_crc[n - 3] ^= 0x40;
    let late = Shipment { device: "forger".into(), ..first.clone() }.encode();
    let mut unknown = Shipment { device: "forger".into(), ..last.clone() };
    if let Body::Data { groups, .. } = &mut unknown.body {
        groups[0].synopses[0].params = "[0.5,0.5,99]".into();
    }
    let producer: BaseProducer =
        KafkaOptions::new(brokers.clone(), "forger").client_config().create().expect("producer");
    for payload in [bad_crc, b"{\"streamID\":\"EURTRY\"}".to_vec(), first.encode(), late, unknown.encode()] {
        producer.send(BaseRecord::<(), _>::to(&topic).partition(0).payload(&payload)).expect("send");
    }
    producer.flush(Duration::from_secs(30)).expect("flush");
    let out = cloud(&brokers, &topic, &dir, &[]);
    assert_eq!(answers_and_devices(&out).0, expected, "nothing else lost");
    let dead = std::fs::read_to_string(dir.join("dead.json")).expect("dead letters");
    for why in ["bad CRC", "not a device shipment", "replayed", "late", "unknown synopsis"] {
        assert_eq!(dead.lines().filter(|l| l.contains(why)).count(), 1, "{why}: {dead}");
    }
    assert_eq!(figure(&out, "summary ", "dead_letters"), 5);
    assert_eq!(figure(&out, "summary ", "late"), 1);
}

/// `POST /requests` of `body` to the job at `addr`: its reply lines (the acknowledgements).
fn http_post(addr: &str, body: &str) -> Vec<serde_json::Value> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the job");
    write!(
        stream,
        "POST /requests HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read the reply");
    assert!(text.starts_with("HTTP/1.1 200"), "{body} -> {text}");
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
    body.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

/// The live requests of the test below: a dataset-wide Count-Min over both devices' Crypto
/// streams (tumbling, so a window's answer is the same whenever it was constructed) with its
/// continuous query, and the delete of the script's Count-Min of EURTRY (answered by request 3).
const LIVE_CONSTRUCT: &str = r#"[{"dataSetKey":"Crypto","streamID":"","synopsisID":1,"param":["CountMin","price","NotQueryable",0.01,0.9,7],"window":{"type":"tumbling","size":"10s"},"requestID":101},
{"dataSetKey":"Crypto","streamID":"","synopsisID":1,"param":[1,"price","Queryable","Continues"],"requestID":102}]"#;
const LIVE_DELETE: &str = r#"{"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":1,"param":["CountMin","price","Delete"],"requestID":103}"#;

/// The window `{start, end}` of an answer line.
fn span(line: &str) -> (String, String) {
    let v: serde_json::Value = serde_json::from_str(line).expect("an answer");
    let text = |k: &str| v["window"][k].as_str().unwrap_or_default().to_string();
    (text("start"), text("end"))
}

/// Wait until the cloud job at `addr` has merged a window of every device at or after `from`.
fn wait_merged(addr: &str, from: u64) {
    edge_common::wait_merged(|| http_get(addr, "/devices"), &["dev0", "dev1"], from);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn live_requests_reach_running_devices_at_their_fences() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("live");
    let files = data(&dir, &[&["EURTRY", "XAUUSD", "BTCUSD"], &["IBM", "SPY", "ETHUSD"]]);
    let topic = unique("edge-live");
    let (cloud, texts) = edge_common::spawn_with_texts(
        Command::new(SAAMS)
            .args(["--requests", &requests(), "--window", "10s", "-w", "2", "--progress", "0"])
            .args(["--brokers", &brokers, "--partials-topic", &topic, "--from", "earliest", "--partitions", "4"])
            .args(["--exit-when-idle", "10s", "--device-timeout", "60s", "--http", "127.0.0.1:0"])
            // The devices start after the job: their partitions wait for them as for a device.
            .args(["--idle-timeout", "60s"]),
        &files,
    );
    let addr = cloud.address();
    let mut devices: Vec<edge_common::Fed> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut child = Command::new(EDGE)
                .args(["--device", &format!("dev{i}"), "--brokers", &brokers, "--partials-topic", &topic, "--follow"])
                .args(["--window", "10s", "--partition", &i.to_string(), "--data", "-"])
                .stdin(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start saams-edge");
            let stdin = child.stdin.take().expect("its stdin");
            (child, stdin, text.lines().collect())
        })
        .collect();
    let mut feed = |part: usize| edge_common::feed_third(&mut devices, part, 2);
    feed(0);
    // Mid-stream: both devices have shipped windows, and their inputs go on after the request.
    wait_merged(&addr, 0);
    let acks = http_post(&addr, LIVE_CONSTRUCT);
    let constructed = acks[0]["effectiveFrom"].as_str().expect("a fence").to_string();
    feed(1);
    // The delete comes once both devices have shipped windows after the construct's fence.
    wait_merged(&addr, saams::api::time::parse_timestamp(&constructed).expect("a timestamp") as u64);
    let acks = http_post(&addr, LIVE_DELETE);
    let deleted = acks[0]["effectiveFrom"].as_str().expect("a fence").to_string();
    feed(2);
    for (child, stdin, _) in devices {
        drop(stdin);
        let out = check(child.wait_with_output().expect("the device ends"), "saams-edge --follow");
        assert_eq!(figure(&out, "edge ", "live_requests"), 2, "both live requests applied on the device");
    }
    let out = cloud.finish("saams --partials-topic --http");
    let answers: Vec<String> =
        sorted(&out.stdout).iter().filter(|l| !l.contains("\"accepted\"")).map(|l| without_devices(l).0).collect();
    // One job over the raw tuples with the construct in its script, and what the fences keep
    // of it: the live Count-Min's windows from its fence on, the deleted one's before its fence.
    edge_common::script_with(&requests(), LIVE_CONSTRUCT, &dir.join("with-live.json"));
    let raw = Command::new(SAAMS)
        .args(["--window", "10s", "-w", "1", "--progress", "0", "--requests"])
        .arg(dir.join("with-live.json"))
        .arg("--data")
        .arg(dir.join("all.json"))
        .output()
        .expect("run saams");
    let expected: Vec<String> = sorted(&check(raw, "saams over the file").stdout)
        .into_iter()
        .filter(|l| {
            let (start, end) = span(l);
            if l.starts_with("{\"requestID\":102,") {
                start >= constructed
            } else if l.starts_with("{\"requestID\":3,") {
                end <= deleted
            } else {
                true
            }
        })
        .collect();
    assert!(expected.iter().any(|l| l.starts_with("{\"requestID\":102,")), "the live construct answered");
    assert!(constructed < deleted, "the delete came later: {constructed} {deleted}");
    assert_eq!(answers, expected, "answers of the raw run with the same requests at the same fences");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_device_shipping_every_few_ms_killed_and_restarted_from_its_state_is_merged_exactly_once() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("state");
    let files = data(&dir, &[&["EURTRY", "XAUUSD", "BTCUSD"], &["IBM", "SPY", "ETHUSD"]]);
    let expected = raw_run(&dir);
    let topic = unique("edge-state");
    let text = std::fs::read_to_string(&files[0]).expect("device 0 tuples");
    let lines: Vec<&str> = text.lines().collect();
    let state = dir.join("dev0.state");
    let state_arg = state.to_str().expect("a path");
    // Shipping its open window every 2 ms (wall clock: a restart would cut its windows
    // elsewhere), the device is killed while it ships, in the middle of its second window.
    let second = lines.iter().position(|l| window_of(l) > window_of(lines[0])).expect("a second window");
    let extra = ["--ship-every", "2ms", "--state", state_arg];
    let mut killed = edge().device_fed(&brokers, &topic, ("dev0", &extra), &lines[..second + 200], 3);
    killed.kill().expect("kill -9 the device");
    killed.wait().expect("reap it");
    assert!(state.exists(), "the device wrote its state");
    let again = device_with(&brokers, &topic, ("dev0", 0), &files[0], &extra);
    device(&brokers, &topic, "dev1", 1, &files[1]);
    let out = cloud(&brokers, &topic, &dir, &[]);
    assert_eq!(answers_and_devices(&out).0, expected, "every tuple merged once across the kill");
    let dead = std::fs::read_to_string(dir.join("dead.json")).unwrap_or_default();
    assert!(dead.lines().all(|l| l.contains("replayed")), "only the batch being produced is sent again: {dead}");
    assert!(figure(&again, "edge ", "tuples") < lines.len() as u64, "the restarted device skipped what it had shipped");
}
