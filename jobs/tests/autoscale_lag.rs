//! The autoscaler reads input lag (`--autoscale`, `saams_jobs::control::autoscale`): a job
//! reading a Kafka topic that already holds far more than it reads in half a minute (paced by
//! `--rate`) falls behind by its consumer lag alone — its workers are not busy — and scales up,
//! its decision naming the lag; `GET /status` shows the lag every worker reported. Conditions
//! are waited for (no timing is asserted); a broker must be declared (`SAAMS_KAFKA_BROKERS`),
//! else the test shows as ignored.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[allow(dead_code)] // replay_into, declared_broker, repo and unique are what this file uses
mod kafka_common;

const BIN: &str = env!("CARGO_BIN_EXE_saams");
const REPLAY: &str = env!("CARGO_BIN_EXE_replay");

/// GET `path` at `addr`: the body (`None`: no answer).
fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    reply.split("\r\n\r\n").nth(1).map(str::to_string)
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_job_lagging_behind_its_kafka_topic_scales_up_and_says_it_was_the_lag() {
    let brokers = kafka_common::declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = std::env::temp_dir().join(format!("saams-autoscale-lag-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("snapshots")).expect("temp dir");
    let data = dir.join("ticks.jsonl");
    let out = Command::new(REPLAY).args(["--generate", "stocks:6:20000", "--output"]).arg(&data).output();
    assert!(out.expect("run replay").status.success(), "replay --generate failed");
    let topic = kafka_common::unique("autoscale-lag");
    kafka_common::replay_into(&brokers, &topic, &data, 2);
    // 120 000 records behind, read at 2 000 a second: a minute to drain (over the 30 s the
    // policy allows), while the one active worker idles between paced batches.
    let mut child = Command::new(BIN)
        .args(["--requests", &kafka_common::repo("datasets/requests/paper-workload.json"), "--progress", "0"])
        .arg("--snapshots")
        .arg(dir.join("snapshots"))
        .args(["--brokers", &brokers, "--data-topic", &topic, "--from", "earliest"])
        .args(["--group-id", &kafka_common::unique("autoscale-lag-group")])
        .args(["-w", "4", "--active-workers", "1", "--rate", "2000", "--out", "/dev/null"])
        .args(["--autoscale", "1..4", "--autoscale-interval", "1s", "--autoscale-cooldown", "1s"])
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start saams");
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let stderr = child.stderr.take().expect("stderr piped");
    let collected = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            collected.lock().expect("lines").push(line);
        }
    });
    let said = |what: &dyn Fn(&str) -> bool| lines.lock().expect("lines").iter().find(|l| what(l)).cloned();
    let all = || lines.lock().expect("lines").join("\n");
    let deadline = Instant::now() + Duration::from_secs(120);
    let addr = loop {
        assert!(Instant::now() < deadline, "no HTTP address: {}", all());
        if let Some(l) = said(&|l| l.starts_with("saams: http on http://")) {
            break l.trim_start_matches("saams: http on http://").to_string();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // GET /status shows the lag the workers report, and the decision names it.
    let mut lag_seen = None;
    let decision = loop {
        assert!(Instant::now() < deadline, "no scale-up naming the Kafka lag: {}", all());
        assert!(child.try_wait().expect("try_wait").is_none(), "the job ended: {}", all());
        if lag_seen.is_none()
            && let Some(body) = get(&addr, "/status")
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&body)
            && v["inputLag"]["kafkaRecords"].as_u64().is_some_and(|k| k > 10_000)
        {
            lag_seen = Some(v["inputLag"].clone());
        }
        if let Some(l) = said(&|l| l.starts_with("autoscale: up to ")) {
            break l;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(decision.contains("Kafka lag"), "{decision}");
    while lag_seen.is_none() {
        assert!(Instant::now() < deadline, "GET /status never showed the lag: {}", all());
        if let Some(v) = get(&addr, "/status").and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
            && v["inputLag"]["kafkaRecords"].as_u64().is_some()
        {
            lag_seen = Some(v["inputLag"].clone());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let lag = lag_seen.expect("seen");
    assert_eq!(lag["workersReporting"], 4, "{lag}");
    // The change went through: the status' autoscale board records it.
    let board = loop {
        assert!(Instant::now() < deadline, "the board shows no change: {}", all());
        let status = get(&addr, "/status").and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok());
        if let Some(v) = status.filter(|v| v["autoscale"]["lastDecision"] == "up") {
            break v["autoscale"].clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(board["reason"].as_str().is_some_and(|r| r.contains("Kafka lag")), "{board}");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
