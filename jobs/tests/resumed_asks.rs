//! The ad-hoc queries of live requests fenced after the newest checkpoint's boundary, answered
//! and then lost to a `kill -9`, are answered once by the resumed job.
//!
//! In a job with checkpoints an ad-hoc query is sequenced, whether posted alone or in one body
//! with a construct: applied at the body's fence, logged in the request log, and answered from
//! the state when its ask reaches the synopsis' owner. Its answer line goes at the input time
//! the ask was sent at. When that is after the newest checkpoint's boundary, a `kill -9` before
//! the next checkpoint leaves the line after the output's cut; the resumed job applies the
//! logged body again and sends the ask again, so the line is written once. (The resumed job
//! once dropped the asks it made, so a query with a construct was acknowledged and never
//! answered; a query posted alone was answered at once and logged nowhere, so its line was lost.)

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)] // kill_after and the comparisons are not used here
mod checkpoint_common;
mod http_common;
use checkpoint_common::{fresh_dir, newest_id};

const BIN: &str = env!("CARGO_BIN_EXE_saams");

/// Two generated streams; the script keeps a Count-Min of the first.
const GENERATOR: &str = "stocks:2:600000";

/// The job over [`GENERATOR`], two workers, checkpoints every 2 s (so none is written between
/// the post and the kill), paced at `rate` tuples a second when given.
fn start(dir: &Path, rate: Option<&str>) -> (Child, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["-w", "2", "--generate", GENERATOR, "--window", "1m", "--progress", "0", "--requests"])
        .arg(dir.join("requests.json"))
        .arg("--out")
        .arg(dir.join("out.jsonl"))
        .args(["--http", "127.0.0.1:0", "--checkpoint-interval", "2s", "--checkpoints"])
        .arg(dir.join("checkpoints"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(r) = rate {
        cmd.args(["--rate", r]);
    }
    let mut child = cmd.spawn().expect("start saams");
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    (child, addr)
}

/// The boundary (ms) of checkpoint `id` in `dir`.
fn boundary(dir: &Path, id: u64) -> u64 {
    let manifest = dir.join(format!("{id:010}")).join("manifest-p0.json");
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let v: serde_json::Value = serde_json::from_str(&text).expect("a manifest");
    v["boundary_ms"].as_u64().expect("boundary_ms")
}

fn tmp(name: &str) -> PathBuf {
    fresh_dir("resumed-asks", name)
}

/// The script: a Count-Min of the first generated stream. Returns (its stream, the second
/// stream, the dataset).
fn script(dir: &Path) -> (String, String, String) {
    let spec = saams_datasets::GeneratorSpec::parse(GENERATOR).expect("spec");
    let (s0, s1, dataset) = (spec.stream_id(0), spec.stream_id(1), spec.dataset_key(0).to_string());
    std::fs::write(
        dir.join("requests.json"),
        format!(
            r#"{{"streamID":"{s0}","synopsisID":1,"dataSetKey":"{dataset}","param":["CountMin","price","NotQueryable",0.01,0.99,7],"requestID":"cm"}}"#
        ),
    )
    .expect("requests");
    (s0, s1, dataset)
}

/// Start the job, wait for its first checkpoint, post `body`, and kill the job (`kill -9`) once
/// it answered, before the next checkpoint. Returns the reply and the newest checkpoint.
fn post_and_kill(dir: &Path, body: &str) -> (String, u64) {
    let (mut child, addr) = start(dir, Some("100000"));
    let checkpoints = dir.join("checkpoints");
    let deadline = Instant::now() + Duration::from_secs(60);
    while newest_id(&checkpoints, 1) == 0 {
        assert!(Instant::now() < deadline, "no checkpoint within a minute");
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = newest_id(&checkpoints, 1);
    let (status, reply) = http_common::call(&addr, "POST", "/requests", body);
    assert_eq!(status, 200, "{reply}");
    assert!(reply.contains(r#""requestID":"adhoc""#), "the query answered before the kill: {reply}");
    child.kill().expect("kill -9");
    let _ = child.wait();
    assert_eq!(newest_id(&checkpoints, 1), before, "a checkpoint was written between the post and the kill");
    (reply, before)
}

/// Resume the killed job to the end of its input; the lines of request `id` in the output.
fn resume_and_count(dir: &Path) -> impl Fn(&str) -> usize {
    let (mut child, _) = start(dir, None);
    assert!(child.wait().expect("wait").success(), "the resumed job");
    let text = std::fs::read_to_string(dir.join("out.jsonl")).expect("output");
    move |id: &str| text.lines().filter(|l| l.contains(&format!(r#""requestID":"{id}""#))).count()
}

#[test]
fn an_ad_hoc_query_fenced_after_the_last_checkpoint_is_answered_once_after_a_kill() {
    let dir = tmp("fenced");
    let (s0, s1, dataset) = script(&dir);
    let body = format!(
        r#"[{{"streamID":"{s1}","synopsisID":1,"dataSetKey":"{dataset}","param":["CountMin","price","NotQueryable",0.01,0.99,7],"requestID":"c1"}},
            {{"streamID":"{s0}","synopsisID":1,"dataSetKey":"{dataset}","param":[1.5,"price","Queryable","Ad-hoc"],"requestID":"adhoc"}}]"#
    );
    let (reply, before) = post_and_kill(&dir, &body);
    let ack: serde_json::Value =
        serde_json::from_str(reply.lines().find(|l| l.contains("effectiveFrom")).expect("the construct's ack"))
            .expect("ack JSON");
    let fence = saams::api::time::parse_timestamp(ack["effectiveFrom"].as_str().expect("effectiveFrom")).expect("time");
    assert!(
        boundary(&dir.join("checkpoints"), before) < fence as u64,
        "the body is fenced after the newest checkpoint"
    );
    let count = resume_and_count(&dir);
    assert_eq!(count("c1"), 1, "the construct acknowledged once");
    assert_eq!(count("adhoc"), 1, "the query answered once");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An ad-hoc query posted on its own, in a job with checkpoints, is sequenced and logged as a
/// body with a construct is: its answer line, after the newest checkpoint's boundary and lost
/// with the kill, is written once by the resumed job. (Answered at once and logged nowhere, it
/// was lost.)
#[test]
fn an_ad_hoc_query_posted_alone_after_the_last_checkpoint_is_answered_once_after_a_kill() {
    let dir = tmp("alone");
    let (s0, _, dataset) = script(&dir);
    let body = format!(
        r#"{{"streamID":"{s0}","synopsisID":1,"dataSetKey":"{dataset}","param":[1.5,"price","Queryable","Ad-hoc"],"requestID":"adhoc"}}"#
    );
    let (_, before) = post_and_kill(&dir, &body);
    let count = resume_and_count(&dir);
    assert_eq!(count("adhoc"), 1, "the query answered once");
    // Its request log line: fenced after the newest checkpoint's boundary.
    let log = std::fs::read_to_string(dir.join("checkpoints").join("requests-p0.log")).expect("the request log");
    let logged: serde_json::Value =
        serde_json::from_str(log.lines().find(|l| l.contains("adhoc")).expect("the query logged")).expect("JSON");
    let fence = logged["fence_ms"].as_u64().expect("fence_ms");
    assert!(boundary(&dir.join("checkpoints"), before) < fence, "fenced after the newest checkpoint");
    let _ = std::fs::remove_dir_all(&dir);
}
