//! Users migrating from the reference system bring its request files and its tuples unchanged.
//!
//! `datasets/requests/reference-forex.json` is in the reference's exact shape: one pretty-printed
//! JSON array, `partition` on every request, its typo'd and alternative kind names (`BloomFitler`,
//! `AMSSketch`, `LSHsynopsis`, `GKQuantiles`, `WindowSketchQuantiles`), constructs of all ten
//! reference kinds on one stream (plus the second stream the pair queries need), and a `Continues`
//! query for every query form of `docs/api.md` — the nested `[[arg, "Keyword"], field, …]` form of
//! kinds 5–7 included. The tuples are in the reference's shape too: `"objectID":null`, `MM/dd/yyyy`
//! dates, and one stray older tick in the middle of the file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value as Json;

const BIN: &str = env!("CARGO_BIN_EXE_saams");

fn requests_file() -> String {
    format!("{}/../datasets/requests/reference-forex.json", env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-compat-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// One hour of ticks, one a second, for EURTRY and GBPTRY (a scaled, slightly noisy copy, so the
/// pair queries have a correlated, similar pair), prices on a 0.0001 grid (so frequent items
/// exist), in the reference's tuple shape, with a stray tick of the previous day in the middle.
fn reference_ticks() -> String {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut eur_ticks, mut lines) = (0i64, String::new());
    for s in 0..3600u32 {
        eur_ticks = (eur_ticks + (next() % 3) as i64 - 1).clamp(-40, 40);
        let eur = 6.0654 + eur_ticks as f64 * 1e-4;
        let gbp = ((eur * 1.1 + ((next() % 3) as f64 - 1.0) * 1e-4) * 1e4).round() / 1e4;
        let time = format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
        for (stream, price) in [("EURTRY", eur), ("GBPTRY", gbp)] {
            lines.push_str(&format!(
                "{{\"streamID\":\"{stream}\",\"objectID\":null,\"dataSetKey\":\"Forex\",\"date\":\"01/02/2019\",\
                 \"time\":\"{time}\",\"price\":{price:.4},\"volume\":{}}}\n",
                1 + next() % 5
            ));
        }
        if s == 1800 {
            lines.push_str(
                "{\"streamID\":\"EURTRY\",\"objectID\":null,\"dataSetKey\":\"Forex\",\"date\":\"12/31/2018\",\
                 \"time\":\"23:59:59\",\"price\":6.0611,\"volume\":1}\n",
            );
        }
    }
    lines
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).args(["--progress", "0"]).output().expect("run saams")
}

fn summary_field(out: &Output, key: &str) -> u64 {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.starts_with("summary ")).expect("summary line");
    let value = line.split(' ').find_map(|kv| kv.strip_prefix(&format!("{key}="))).expect("summary field");
    value.parse().expect("a number")
}

#[test]
fn the_reference_request_file_runs_verbatim_and_every_query_is_answered() {
    let dir = tmp("verbatim");
    let data = dir.join("ticks.jsonl");
    std::fs::write(&data, reference_ticks()).expect("write ticks");
    let requests = requests_file();
    let out = run(&["-w", "2", "--requests", &requests, "--data", data.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "saams failed: {stderr}");

    let wanted: Vec<u64> = {
        let text = std::fs::read_to_string(&requests).expect("read requests");
        let all: Json = serde_json::from_str(&text).expect("the file is one JSON array");
        let all = all.as_array().expect("an array");
        assert!(all.iter().all(|r| r["partition"] == 0), "every request carries the reference's `partition`");
        all.iter().filter_map(|r| r["requestID"].as_u64()).collect()
    };
    assert_eq!(wanted.len(), 17, "a Continues query for every query form");

    let mut answered: BTreeMap<u64, usize> = BTreeMap::new();
    let mut waiting = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let e: Json = serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}"));
        assert!(e.get("error").is_none(), "an error estimation: {line}");
        if e["estimate"].is_null() && e.get("change").is_none() {
            let reason = e["reason"].as_str().unwrap_or_else(|| panic!("a null estimate without a reason: {line}"));
            waiting.push((e["requestID"].clone(), reason.to_string()));
            continue;
        }
        if let Some(id) = e["requestID"].as_u64() {
            *answered.entry(id).or_default() += 1;
        }
    }
    for id in &wanted {
        assert!(answered.contains_key(id), "query {id} was never answered; answered: {answered:?}\n{stderr}");
    }
    // The DFT (basic window 500 one-second intervals) says it cannot answer yet in the first
    // windows, instead of staying silent, then answers.
    assert!(
        waiting.iter().any(|(id, reason)| *id == 104 && reason.contains("basic window")),
        "the DFT's first windows answer null with the reason: {waiting:?}"
    );
    assert!(waiting.iter().all(|(id, _)| *id == 104), "only the DFT waits: {waiting:?}");
    // The stray older tick is late (lateness 0 s) and counted; no request field was unknown.
    assert_eq!(summary_field(&out, "late"), 1, "{stderr}");
    assert_eq!(summary_field(&out, "request_warnings"), 0, "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unknown_request_fields_are_warned_once_and_counted_or_refused_when_strict() {
    let dir = tmp("unknown");
    let requests = dir.join("requests.json");
    std::fs::write(
        &requests,
        r#"[{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["HLL","price","NotQueryable",0.02],"tenant":"a","partition":0},
{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["x","price","Queryable","Continues"],"requestID":5,"tenant":"b"}]"#,
    )
    .expect("write requests");
    let requests = requests.to_str().unwrap();
    let lenient = run(&["--requests", requests, "--generate", "stocks:4:100"]);
    let stderr = String::from_utf8_lossy(&lenient.stderr);
    assert!(lenient.status.success(), "{stderr}");
    assert_eq!(stderr.matches("request field `tenant`").count(), 1, "named once: {stderr}");
    assert_eq!(summary_field(&lenient, "request_warnings"), 2, "{stderr}");
    let lenient_out = String::from_utf8_lossy(&lenient.stdout);
    assert!(lenient_out.lines().any(|l| l.contains(r#""requestID":5"#) && l.contains(r#""estimate":"#)));
    assert!(!lenient_out.contains(r#""error""#), "{lenient_out}");

    let strict = run(&["--requests", requests, "--generate", "stocks:4:100", "--strict-requests"]);
    assert!(strict.status.success(), "a refused request never stops the job");
    let strict_out = String::from_utf8_lossy(&strict.stdout);
    assert!(
        strict_out.lines().filter(|l| l.contains(r#""error":"unknown request field `tenant`"#)).count() == 2,
        "{strict_out}"
    );
    assert!(!strict_out.contains(r#""estimate":"#), "nothing was constructed: {strict_out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unknown_fields_of_live_requests_are_counted_like_the_request_files() {
    // Requests on stdin are live: vetted once by the job's request hub as they arrive, and their
    // unknown fields count in the summary as a request file's do.
    let mut child = Command::new(BIN)
        .args(["--requests", "-", "--generate", "stocks:2:20000", "--rate", "200000", "--progress", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run saams");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(
            br#"{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["HLL","price","NotQueryable",0.02],"tenant":"a","region":"b"}
"#,
        )
        .expect("write a request");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("request field `tenant`").count(), 1, "named once: {stderr}");
    assert_eq!(summary_field(&out, "request_warnings"), 2, "{stderr}");
    let acks = String::from_utf8_lossy(&out.stdout);
    assert!(acks.contains(r#""accepted":"construct""#), "the live construct was carried out: {acks}");
}
