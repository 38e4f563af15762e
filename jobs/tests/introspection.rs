//! Live introspection: a synopsis constructed while the job runs shows, at `GET /synopses/{id}`,
//! the values its merged state summarizes at the last window it answered (exactly the tuples of
//! its stream from its fence to that window's end), its size and the worker holding it, and has
//! its per-synopsis series in `/metrics`; deleted, its row is 404 and its series are gone.

mod http_common;

use http_common::call;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn json(addr: &str, method: &str, path: &str, body: &str) -> Value {
    let (status, text) = call(addr, method, path, body);
    assert_eq!(status, 200, "{method} {path}: {text}");
    serde_json::from_str(text.lines().next().unwrap_or("")).expect("JSON")
}

fn line(stream: &str, sec: u64) -> String {
    format!(
        r#"{{"streamID":"{stream}","dataSetKey":"D","date":"2019-01-02","time":"{:02}:{:02}:{:02}","price":{},"volume":1}}"#,
        sec / 3600,
        sec / 60 % 60,
        sec % 60,
        sec % 7
    ) + "\n"
}

fn time_of(sec: u64) -> i64 {
    1_546_387_200_000 + 1_000 * sec as i64
}

fn ms_of(iso: &Value) -> i64 {
    saams::api::time::parse_timestamp(iso.as_str().expect("timestamp")).expect("ISO timestamp")
}

/// `/metrics` lines of the per-synopsis series of synopsis `id`.
fn series_of(addr: &str, id: u64) -> Vec<String> {
    let (_, text) = call(addr, "GET", "/metrics", "");
    let label = format!("synopsis=\"{id}\"");
    text.lines().filter(|l| l.contains(&label)).map(str::to_string).collect()
}

#[test]
fn a_live_synopsis_shows_its_exact_tuples_size_and_series_and_a_deleted_one_is_gone() {
    let dir = std::env::temp_dir().join(format!("saams-introspection-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let requests = dir.join("none.json");
    std::fs::write(&requests, "").expect("requests");
    let mut child = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["-w", "2", "--data", "-", "--format", "json", "--window", "10s", "--progress", "0"])
        .args(["--requests", &requests.display().to_string(), "--http", "127.0.0.1:0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("saams");
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    let mut stdin = child.stdin.take().expect("stdin");
    let mut feed = |secs: std::ops::Range<u64>| {
        let text: String = secs.flat_map(|s| [line("A", s), line("B", s)]).collect();
        stdin.write_all(text.as_bytes()).expect("feed");
        stdin.flush().expect("flush");
    };
    feed(0..200);
    std::thread::sleep(Duration::from_millis(300));
    let construct = r#"{"streamID":"A","synopsisID":2,"dataSetKey":"D","param":["HLL","price","NotQueryable",0.05],"requestID":"c"}"#;
    let ack = json(&addr, "POST", "/requests", construct);
    let fence = ms_of(&ack["effectiveFrom"]);
    let rows = json(&addr, "GET", "/synopses", "");
    let id = rows.as_array().expect("rows").iter().find(|r| r["requestID"] == "c").expect("the row")["id"]
        .as_u64()
        .expect("id");
    feed(200..500);
    std::thread::sleep(Duration::from_millis(500));
    let row = json(&addr, "GET", &format!("/synopses/{id}"), "");
    let end = ms_of(&row["lastWindow"]["end"]);
    let exact = (0..500).filter(|&s| time_of(s) >= fence && time_of(s) < end).count() as u64;
    assert!(exact > 0 && row["tuples"].as_u64() == Some(exact), "{exact} tuples of A from {fence} to {end}: {row}");
    assert!(row["bytes"].as_u64().is_some_and(|b| b > 0) && row["worker"].is_u64(), "{row}");
    assert!(!series_of(&addr, id).is_empty(), "a live synopsis has its series");
    let (status, _) = call(&addr, "GET", "/synopses/4242", "");
    assert_eq!(status, 404);
    let delete =
        r#"{"streamID":"A","synopsisID":2,"dataSetKey":"D","param":["DELETE_REQUEST","price"],"requestID":"d"}"#;
    json(&addr, "POST", "/requests", delete);
    feed(500..520);
    let (status, body) = call(&addr, "GET", &format!("/synopses/{id}"), "");
    assert_eq!(status, 404, "{body}");
    // Every worker drops the series when it applies the delete.
    let since = Instant::now();
    while !series_of(&addr, id).is_empty() && since.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(series_of(&addr, id), Vec::<String>::new(), "a deleted synopsis' series are gone");
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    let _ = std::fs::remove_dir_all(&dir);
}
