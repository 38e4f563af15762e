//! The page to look at (`GET /`), `GET /status` and `GET /synopses/{id}/answers`, against a real
//! job (`saams` on the generator with `--http 127.0.0.1:0`): the page holds the request form and
//! loads nothing from elsewhere; a synopsis constructed over HTTP gets its continuous answers
//! kept, at most the ring's capacity of them, the newest, byte for byte the lines the job wrote;
//! once it is deleted its answers are 404.

mod http_common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A job on three unbounded generated streams with one-minute windows (about 24 a second at
/// 20000 tuples/s) and no synopsis.
struct Job {
    child: Child,
    addr: String,
    out: std::path::PathBuf,
    dir: std::path::PathBuf,
}

impl Job {
    fn start(name: &str) -> Job {
        let dir = std::env::temp_dir().join(format!("saams-page-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (requests, out) = (dir.join("none.json"), dir.join("out.jsonl"));
        std::fs::write(&requests, "").expect("requests");
        let mut child = Command::new(env!("CARGO_BIN_EXE_saams"))
            .args(["--generate", "stocks:3", "--rate", "20000", "--window", "1m", "--progress", "0"])
            .args(["--http", "127.0.0.1:0", "--requests"])
            .arg(&requests)
            .arg("--out")
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("saams");
        let addr = http_common::http_address(&mut child, Duration::from_secs(60));
        Job { child, addr, out, dir }
    }

    /// Status, headers and body of one request.
    fn call(&self, method: &str, path: &str, body: &str) -> (u16, String, String) {
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let mut raw = String::new();
        s.read_to_string(&mut raw).expect("read");
        let (head, body) = raw.split_once("\r\n\r\n").expect("a response");
        let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).expect("status");
        (status, head.to_ascii_lowercase(), body.to_string())
    }

    fn json(&self, path: &str) -> (u16, Value) {
        let (status, _, body) = self.call("GET", path, "");
        (status, serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}")))
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Poll `what` until it gives a value (the job's windows close as it reads; no timing is
/// asserted, the deadline only ends a hung test).
fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: not within 120 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_page_holds_the_form_and_loads_nothing_from_elsewhere() {
    let job = Job::start("html");
    let (status, head, page) = job.call("GET", "/", "");
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("content-type: text/html; charset=utf-8"), "{head}");
    assert!(head.contains("content-security-policy: default-src 'none';"), "{head}");
    for part in
        [r#"<form id="request-form""#, "<textarea", r#"fetch("/requests""#, "Authorization", "<table id=\"synopses\""]
    {
        assert!(page.contains(part), "the page has no {part:?}");
    }
    // Self-contained: no element or style loads anything, and the only absolute URL is the SVG
    // namespace's name (an identifier, never fetched).
    for asset in ["<link", "<img", "<iframe", " src=", " href=", "@import", "url("] {
        assert!(!page.contains(asset), "the page loads an asset: {asset:?}");
    }
    let urls: Vec<&str> = page
        .match_indices("://")
        .map(|(i, _)| {
            let start = page[..i].rfind(|c: char| !c.is_ascii_alphabetic()).map_or(0, |s| s + 1);
            let end = page[i..].find(|c: char| c.is_whitespace() || c == '"').map_or(page.len(), |e| i + e);
            &page[start..end]
        })
        .collect();
    assert_eq!(urls, vec!["http://www.w3.org/2000/svg"], "absolute URLs in the page");
    assert_eq!(job.call("POST", "/", "").0, 405);
}

#[test]
fn a_synopsis_keeps_its_newest_answers_bounded_and_loses_them_when_deleted() {
    let job = Job::start("answers");
    let construct = r#"[{"requestID":"hll","streamID":"EURTRY","synopsisID":2,"dataSetKey":"Forex","param":["HyperLogLog","price","NotQueryable",0.02]},
        {"requestID":"q","streamID":"EURTRY","synopsisID":2,"dataSetKey":"Forex","param":["distinct","price","Queryable","Continues"]}]"#;
    let (status, _, reply) = job.call("POST", "/requests", construct);
    assert_eq!(status, 200, "{reply}");
    // Listed once the job has applied it (its acknowledgement may come first).
    let id = until("the synopsis is listed", || {
        let (_, rows) = job.json("/synopses");
        rows.as_array().and_then(|r| r.iter().find(|s| s["requestID"] == "hll")).map(|s| s["id"].clone())
    });

    // Filled to its capacity, then rolling: never more, always the newest, in window order.
    let first_full = until("a full ring", || {
        let (status, a) = job.json(&format!("/synopses/{id}/answers"));
        assert_eq!(status, 200, "{a}");
        let answers = a["answers"].as_array().expect("answers").clone();
        assert!(answers.len() <= a["capacity"].as_u64().expect("capacity") as usize, "{}", answers.len());
        (answers.len() == 120).then(|| answers[0]["window"]["end"].clone())
    });
    let answers = until("the ring rolls on", || {
        let (_, a) = job.json(&format!("/synopses/{id}/answers"));
        let answers = a["answers"].as_array().expect("answers").clone();
        (answers.len() == 120 && answers[0]["window"]["end"] != first_full).then_some(answers)
    });
    let ends: Vec<i64> = answers
        .iter()
        .map(|a| saams::api::time::parse_timestamp(a["window"]["end"].as_str().expect("end")).expect("time"))
        .collect();
    assert!(ends.windows(2).all(|w| w[1] > w[0]), "one answer per window, in window order: {ends:?}");
    assert!(answers.iter().all(|a| a["requestID"] == "q" && a["estimate"].is_number()), "{:?}", answers[0]);

    // The answers the job wrote: the newest kept is a line of its output (flushed within 200 ms).
    let newest = answers.last().expect("one").clone();
    until("the output has the newest answer kept", || {
        let out = std::fs::read_to_string(&job.out).unwrap_or_default();
        out.lines().any(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v == newest)).then_some(())
    });

    let (status, status_json) = job.json("/status");
    assert_eq!(status, 200);
    assert!(status_json["tuples"].as_u64().expect("tuples") > 0, "{status_json}");
    assert!(status_json["answers"].as_u64().expect("answers") >= 120, "{status_json}");
    assert_eq!(status_json["synopses"], 1);

    let delete = r#"{"requestID":"del","streamID":"EURTRY","synopsisID":2,"dataSetKey":"Forex","param":["DELETE_REQUEST","price"]}"#;
    let (status, _, reply) = job.call("POST", "/requests", delete);
    assert_eq!(status, 200, "{reply}");
    let (status, gone) = job.json(&format!("/synopses/{id}/answers"));
    assert_eq!(status, 404, "{gone}");
    assert_eq!(gone["error"], format!("no live synopsis with id {id}"));
    assert_eq!(job.json("/synopses/seven/answers").0, 400);
}
