//! Requests that cannot reach the device holding their synopsis' state are refused the same way
//! on every path a request comes in by, against a real Kafka-protocol broker
//! (`SAAMS_KAFKA_BROKERS`): a cloud job reading its requests from standard input and from the
//! request topic (whose records at its start are its script: the paper workload on four
//! streams) and serving HTTP, two resident devices (`saams-edge --resident`), each the only
//! reader of two streams:
//! - dev0 does not follow the control topic: an ad-hoc query of its Count-Min is 409 over HTTP;
//! - dev1 follows it (`--follow`) and has left: an ad-hoc query of its Count-Min is 503.
//!
//! The same queries over standard input and over the request topic get an error line each,
//! `not applied: ` and the message HTTP answers with, and each refusal is counted
//! (`GET /devices`' `refusedRequests`); nothing else is lost: the job's other answers are
//! those of one job over the raw tuples.
//!
//! Where the variable was unset at build time the tests show as ignored.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod edge_common;
mod http_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Edge, SAAMS, stream_of};
use kafka_common::{declared_broker, produce_raw, unique};

/// EURTRY and XAUUSD on device 0, IBM and SPY on device 1.
fn by_share(d: usize, line: &str) -> bool {
    ["EURTRY", "XAUUSD"].contains(&stream_of(line)) == (d == 0)
}

/// An ad-hoc query of the Count-Min (synopsis 1) of `stream` (dataset `dataset`) as request `id`.
fn ad_hoc(dataset: &str, stream: &str, id: u32) -> String {
    format!(
        r#"{{"dataSetKey":"{dataset}","streamID":"{stream}","synopsisID":1,"param":[13.5,"price","Queryable","Ad-hoc"],"requestID":{id}}}"#
    )
}

/// `GET /devices` of the job at `addr`, once `ready` holds of it (up to a minute).
fn devices_when(addr: &str, what: &str, ready: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = http_common::call(addr, "GET", "/devices", "");
        let table: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        if ready(&table) {
            return table;
        }
        assert!(Instant::now() < deadline, "GET /devices never showed {what}: {table}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn requests_that_cannot_reach_their_device_are_refused_alike_over_http_stdin_and_the_request_topic() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = Edge::new("jobs/tests/edge_whole_data/requests.json", "60s");
    let dir = edge_common::tmp("edge-refusals", "paths");
    let files = edge_common::data(&dir, 2, by_share);
    let expected = e.raw_run(&dir);
    let (topic, request_topic) = (unique("edge-refusals"), unique("edge-refusals-requests"));
    // The script as one record, one array (records of several partitions would be read in any
    // order).
    let script = std::fs::read_to_string(&e.requests).expect("the script");
    let array = format!("[{}]", script.lines().filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join(","));
    produce_raw(&brokers, &request_topic, &[array.into_bytes()]);
    // dev0 ships its whole input before the job starts, without following it.
    e.device(&brokers, &topic, ("dev0", 0), &files[0], &["--resident"]);
    let mut cloud = edge_common::Cloud::start(
        Command::new(SAAMS)
            .args(["--requests", "-", "--request-topic", &request_topic, "--window", e.window, "-w", "2"])
            .args(["--progress", "0", "--brokers", &brokers, "--partials-topic", &topic, "--from", "earliest"])
            .args(["--partitions", "4", "--http", "127.0.0.1:0", "--exit-when-idle", "20s"])
            .args(["--device-timeout", "60s", "--idle-timeout", "60s"])
            .stdin(Stdio::piped()),
    );
    let addr = cloud.address();
    // dev1 follows the job to its input's end, and says goodbye.
    e.device(&brokers, &topic, ("dev1", 1), &files[1], &["--resident", "--follow"]);
    let left = |t: &serde_json::Value| {
        let rows = t["devices"].as_array().cloned().unwrap_or_default();
        rows.iter().any(|r| r["device"] == "dev1" && r["state"] == "left")
            && t["resident"].as_array().is_some_and(|r| r.len() == 12)
    };
    devices_when(&addr, "dev1 left and the 12 resident synopses", left);
    let asks = [(ad_hoc("Forex", "EURTRY", 90), 409, "dev0"), (ad_hoc("Equity", "IBM", 91), 503, "dev1")];
    let mut messages = Vec::new();
    let mut stdin = cloud.child.stdin.take().expect("the job's stdin");
    for (ask, status, device) in &asks {
        let (got, body) = http_common::call(&addr, "POST", "/requests", ask);
        assert_eq!(got, *status, "{body}");
        let reply: serde_json::Value = serde_json::from_str(&body).expect("a JSON error");
        let message = reply["error"].as_str().expect("an error message").to_string();
        assert!(message.contains(&format!("resident on device {device}")), "{message}");
        messages.push(message);
        writeln!(stdin, "{ask}").expect("the request on stdin");
        stdin.flush().expect("flush");
        produce_raw(&brokers, &request_topic, &[ask.as_bytes().to_vec()]);
    }
    let counted = devices_when(&addr, "six refusals", |t| t["refusedRequests"] == 6);
    drop(stdin);
    let out = cloud.finish("saams --requests - --request-topic");
    let lines = edge_common::sorted(&out.stdout);
    for ((ask, _, _), message) in asks.iter().zip(&messages) {
        let id: serde_json::Value = serde_json::from_str(ask).expect("JSON");
        let refused: Vec<&String> =
            lines.iter().filter(|l| l.starts_with(&format!("{{\"requestID\":{},", id["requestID"]))).collect();
        assert_eq!(refused.len(), 2, "one error line per path (stdin, the request topic): {refused:?}");
        for line in refused {
            let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
            assert_eq!(v["error"], format!("not applied: {message}"), "the message HTTP answered with: {line}");
        }
    }
    let mut answers: Vec<String> = lines
        .iter()
        .filter(|l| !l.starts_with("{\"requestID\":90,") && !l.starts_with("{\"requestID\":91,"))
        .map(|l| edge_common::without_devices(l).0)
        .collect();
    answers.sort();
    assert_eq!(answers, expected, "every other answer, as the raw run's ({counted})");
}
