//! Groups resident on their device (`saams-edge --resident`), against a real Kafka-protocol
//! broker (`SAAMS_KAFKA_BROKERS`): four streams with the paper workload (Count-Min, HyperLogLog
//! and DFT on `price`, a continuous query on each) and continuous DFT pair correlations, two
//! devices each the only reader of two streams. The devices keep the states and ship per
//! window only their query views; the cloud job's answers must be those of one job reading the
//! same tuples from a file, byte for byte (sorted), correlations included, for far fewer bytes
//! than the raw values. An ad-hoc query of a resident synopsis is refused with 409 naming its
//! device. Where the variable was unset at build time the tests show as ignored.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use kafka_common::{check, declared_broker, repo, unique};
mod http_common;

const SAAMS: &str = env!("CARGO_BIN_EXE_saams");
const EDGE: &str = env!("CARGO_BIN_EXE_saams-edge");
const REPLAY: &str = env!("CARGO_BIN_EXE_replay");
const WINDOW: &str = "120s";
/// The streams each device is the only reader of.
const SHARES: [[&str; 2]; 2] = [["EURTRY", "XAUUSD"], ["IBM", "SPY"]];

/// The paper workload on four streams, with the pair correlations (the sole-reader test's).
fn requests() -> String {
    repo("jobs/tests/edge_whole_data/requests.json")
}

/// A fresh directory with the generated tuples (`all.json`) and each device's share.
fn workspace(name: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = std::env::temp_dir().join(format!("saams-edge-resident-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    let all = dir.join("all.json");
    let mut generate = Command::new(REPLAY);
    generate.args(["--generate", "stocks:6:1500", "--progress", "none", "-o"]).arg(&all);
    check(generate.output().expect("run replay"), "replay --generate");
    let text = std::fs::read_to_string(&all).expect("the generated tuples");
    let shares = SHARES
        .iter()
        .enumerate()
        .map(|(d, streams)| {
            let mine: Vec<&str> =
                text.lines().filter(|l| streams.iter().any(|s| l.contains(&format!("\"streamID\":\"{s}\"")))).collect();
            let path = dir.join(format!("device{d}.json"));
            std::fs::write(&path, mine.join("\n") + "\n").expect("a device's tuples");
            path
        })
        .collect();
    (dir, shares)
}

/// Sorted answer lines, each without the `devices` the cloud names in it.
fn sorted_answers(stdout: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| match l.rfind(",\"devices\":[") {
            Some(at) => format!("{}}}", &l[..at]),
            None => l.to_string(),
        })
        .collect();
    lines.sort();
    lines
}

/// A `key=value` figure of the stderr line starting with `prefix`.
fn figure_of(out: &Output, prefix: &str, key: &str) -> u64 {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no `{prefix}` in {err}"));
    let value = line.split(' ').find_map(|kv| kv.strip_prefix(&format!("{key}="))).expect("the figure");
    value.parse().expect("a number")
}

/// Each device of `shares` run `--resident` (the second also shipping every 2 ms of wall-clock
/// time) to its own partition of `topic`, to the end of its input.
fn resident_devices(brokers: &str, topic: &str, shares: &[PathBuf]) -> Vec<Output> {
    shares
        .iter()
        .enumerate()
        .map(|(i, share)| {
            let mut cmd = Command::new(EDGE);
            cmd.args(["--device", &format!("dev{i}"), "--brokers", brokers, "--partials-topic", topic]).args([
                "--requests",
                &requests(),
                "--window",
                WINDOW,
                "--partition",
                &i.to_string(),
                "--resident",
            ]);
            if i == 1 {
                cmd.args(["--ship-every", "2ms"]);
            }
            check(cmd.arg("--data").arg(share).output().expect("run saams-edge"), "saams-edge --resident")
        })
        .collect()
}

/// `saams` with the requests, the window and `extra`.
fn saams(extra: &[&str]) -> Command {
    let mut cmd = Command::new(SAAMS);
    cmd.args(["--requests", &requests(), "--window", WINDOW, "--progress", "0"]).args(extra);
    cmd
}

/// The cloud job's command over `topic` (to the end of what the devices shipped).
fn cloud_command(brokers: &str, topic: &str, dir: &Path) -> Command {
    let mut cmd = saams(&["-w", "2", "--brokers", brokers, "--partials-topic", topic, "--from", "earliest"]);
    cmd.args(["--partitions", "4", "--exit-when-idle", "3s", "--device-timeout", "2s", "--dead-letter"])
        .arg(dir.join("dead.json"));
    cmd
}

/// One job reading every tuple from the file: the answers to match.
fn raw_answers(dir: &Path) -> Vec<String> {
    let out = saams(&["-w", "1", "--data"]).arg(dir.join("all.json")).output().expect("run saams");
    sorted_answers(&check(out, "saams over the file").stdout)
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn resident_devices_ship_query_views_and_the_cloud_answers_as_the_raw_run() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, shares) = workspace("views");
    let expected = raw_answers(&dir);
    assert!(expected.iter().any(|l| l.contains("\"requestID\":26")), "the raw run answers the correlations");
    let topic = unique("edge-resident");
    for (i, out) in resident_devices(&brokers, &topic, &shares).iter().enumerate() {
        let (shipped, raw) = (figure_of(out, "edge ", "shipped_bytes"), figure_of(out, "edge ", "raw_bytes"));
        assert!(shipped > 0 && shipped * 2 < raw, "device {i} shipped {shipped} bytes of {raw} raw");
        assert!(figure_of(out, "edge ", "view_groups") > 0, "device {i} shipped query views");
        assert_eq!(figure_of(out, "edge ", "whole_groups"), 0, "device {i}: no state left the device");
    }
    let out = check(cloud_command(&brokers, &topic, &dir).output().expect("run saams"), "saams --partials-topic");
    assert_eq!(sorted_answers(&out.stdout), expected, "the answers of the raw run, correlations included");
    assert_eq!(figure_of(&out, "summary ", "dead_letters"), 0);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn an_ad_hoc_query_of_a_resident_synopsis_is_409_naming_its_device() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, shares) = workspace("adhoc");
    let topic = unique("edge-resident-adhoc");
    resident_devices(&brokers, &topic, &shares);
    let mut cloud = cloud_command(&brokers, &topic, &dir);
    cloud.args(["--http", "127.0.0.1:0", "--metrics-linger", "10s"]).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cloud.spawn().expect("start saams");
    let addr = http_common::http_address(&mut child, Duration::from_secs(60));
    let deadline = Instant::now() + Duration::from_secs(60);
    let (resident, devices) = loop {
        let (_, body) = http_common::call(&addr, "GET", "/devices", "");
        let devices: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        let rows = devices["resident"].as_array().cloned().unwrap_or_default();
        if rows.len() == 12 {
            break (rows, devices);
        }
        assert!(Instant::now() < deadline, "GET /devices never listed the 12 resident synopses: {devices}");
        std::thread::sleep(Duration::from_millis(200));
    };
    // Each device's row has its hello's flag (`saams-edge --resident`).
    let rows = devices["devices"].as_array().cloned().unwrap_or_default();
    assert!(!rows.is_empty() && rows.iter().all(|r| r["resident"] == true), "every device is resident: {devices}");
    let ibm = resident.iter().find(|r| r["streamID"] == "IBM" && r["synopsisID"] == 1).expect("IBM's Count-Min");
    assert_eq!(ibm["device"], "dev1");
    let ask = r#"{"dataSetKey":"Equity","streamID":"IBM","synopsisID":1,"param":[13.5,"price","Queryable","Ad-hoc"],"requestID":90}"#;
    let (status, body) = http_common::call(&addr, "POST", "/requests", ask);
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("resident on device dev1"), "{body}");
    // A construct is not the state's: it is taken as before.
    let cm = r#"{"dataSetKey":"Equity","streamID":"IBM","synopsisID":1,"param":["CountMin","volume","NotQueryable",0.01,0.9,7],"requestID":91}"#;
    let (status, body) = http_common::call(&addr, "POST", "/requests", cm);
    assert_ne!(status, 409, "{body}");
    let out = child.wait_with_output().expect("the job ends");
    assert!(out.status.success(), "the cloud job failed");
}
