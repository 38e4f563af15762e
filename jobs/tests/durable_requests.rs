//! Acknowledged means durable (`--checkpoints`): a live request is synced to the request log
//! before its acknowledgement leaves, so a job killed with SIGKILL (`kill -9`) right after the
//! acknowledgement — before any checkpoint holds the request — has the synopsis after the
//! restart, answering from the fence it was acknowledged with exactly as a run without the
//! crash does; and a later restart, from a checkpoint that holds it, does not apply it twice.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod live_common;
use live_common::{Live, answers_from};

const BIN: &str = env!("CARGO_BIN_EXE_saams");
/// Two streams, so both workers read one whatever the construct's home (a worker without input
/// stops taking part in the fences).
const GENERATOR: &str = "stocks:2:300000";

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-durable-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// Start the job (`-w 2`, two generated streams, one-minute windows, an empty request script,
/// HTTP on an ephemeral port) with checkpoints every `interval`; returns it and its HTTP address.
fn start(dir: &Path, rate: Option<&str>, interval: &str) -> (Child, String) {
    let requests = dir.join("none.json");
    std::fs::write(&requests, "").expect("requests");
    let mut cmd = Command::new(BIN);
    cmd.args(["-w", "2", "--generate", GENERATOR, "--window", "1m", "--progress", "0", "--requests"])
        .arg(&requests)
        .arg("--out")
        .arg(dir.join("out.jsonl"))
        .args(["--http", "127.0.0.1:0", "--checkpoint-interval", interval, "--checkpoints"])
        .arg(dir.join("checkpoints"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(r) = rate {
        cmd.args(["--rate", r]);
    }
    let mut child = cmd.spawn().expect("saams");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("saams: http on http://") {
                let _ = tx.send(addr.to_string());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).expect("the job announces its HTTP address");
    (child, addr)
}

/// POST a Count-Min construct and a continuous query on it; returns the construct's fence (its
/// acknowledgement's `effectiveFrom`).
fn post_construct(addr: &str, stream: &str, dataset: &str) -> i64 {
    let body = format!(
        r#"[{{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":["CountMin","price","NotQueryable",0.01,0.99,7],"requestID":"c"}},
            {{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":[1.5,"price","Queryable","Continuous"],"requestID":"q"}}]"#
    );
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "POST /requests HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("post");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("reply");
    let line = reply.split("\r\n\r\n").nth(1).and_then(|b| b.lines().next()).expect("ack line");
    let ack: serde_json::Value = serde_json::from_str(line).expect("ack JSON");
    assert!(ack["accepted"].is_string(), "not accepted: {reply}");
    saams::api::time::parse_timestamp(ack["effectiveFrom"].as_str().expect("effectiveFrom")).expect("time")
}

/// Complete checkpoints in `dir` (one process).
fn checkpoints(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("checkpoints"))
        .map(|d| d.filter_map(Result::ok).filter(|e| e.path().join("manifest-p0.json").exists()).count())
        .unwrap_or(0)
}

fn kill(mut child: Child) {
    child.kill().expect("kill -9");
    let _ = child.wait();
}

/// The output holds the acknowledgement once and, from the fence on, every window's answer
/// once, each counting exactly the stream's values from the fence to the window's end — what a
/// run without the crash that applied the construct at that fence answers.
fn assert_answers_from(out: &Path, fence: i64) {
    let live = Live { generator: GENERATOR, stream: 0, window_ms: 60_000, construct: "c", query: "q" };
    let text = std::fs::read_to_string(out).expect("output");
    assert_eq!(answers_from(&text, &live, fence), 1, "the acknowledgement once");
}

#[test]
fn a_construct_killed_right_after_its_acknowledgement_is_there_after_the_restart() {
    // The second life reads past the fence before its second checkpoint (on an idle machine).
    killed_after_the_acknowledgement(Duration::from_millis(300), "ack-kill");
}

/// The second life's checkpoints are before the construct's fence (it was made two seconds of
/// input in, the checkpoints come every 150 ms): they must not cut the output with the
/// acknowledgement the second life wrote for the request it applied from the log — their request
/// logs lack the request, so the third life, resuming from one, applies and acknowledges it again.
#[test]
fn a_construct_logged_ahead_of_the_restarts_checkpoints_is_acknowledged_once() {
    killed_after_the_acknowledgement(Duration::from_secs(2), "ack-ahead");
}

/// Construct after `first_life`, kill -9 at once, restart with checkpoints every 150 ms and kill
/// after two, restart again and run to the end: the construct answers from its fence, and is
/// acknowledged once.
fn killed_after_the_acknowledgement(first_life: Duration, name: &str) {
    let dir = tmp(name);
    let spec = saams_datasets::GeneratorSpec::parse(GENERATOR).expect("spec");
    let (stream, dataset) = (spec.stream_id(0), spec.dataset_key(0).to_string());
    // No checkpoint in the first life (an hour apart): only the request log holds the request.
    let (child, addr) = start(&dir, Some("100000"), "1h");
    std::thread::sleep(first_life);
    let fence = post_construct(&addr, &stream, &dataset);
    kill(child);
    assert_eq!(checkpoints(&dir), 0, "a checkpoint was written before the kill");
    // The second life applies it from the request log; it is killed once two checkpoints are
    // written, so the third resumes from one of them: applied once, acknowledged once.
    let (child, _) = start(&dir, Some("100000"), "150ms");
    let deadline = Instant::now() + Duration::from_secs(60);
    while checkpoints(&dir) < 2 {
        assert!(Instant::now() < deadline, "no checkpoints in the second life");
        std::thread::sleep(Duration::from_millis(5));
    }
    kill(child);
    let (mut child, _) = start(&dir, None, "150ms");
    assert!(child.wait().expect("wait").success(), "the third life failed");
    assert_answers_from(&dir.join("out.jsonl"), fence);
    let _ = std::fs::remove_dir_all(&dir);
}
