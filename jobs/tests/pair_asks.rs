//! Pair queries while the job runs: the reference's own query file, every query turned ad-hoc and
//! POSTed over HTTP, is answered at once, query by query (pair queries too: DFT correlation, LSH
//! similarity, AMS inner product); the DFT pair answer is the one an exact computation gives over
//! the tuples before its `asOf`, and the same for 1 and 2 workers; a continuous pair query
//! registered in the script compares a synopsis constructed while the job runs from its fence on.

mod http_common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use saams::{Datum, PairQuery};
use serde_json::{Value, json};

/// The reply lines of a POST /requests (status 200 asserted).
fn post(addr: &str, body: &str) -> Vec<Value> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    write!(
        s,
        "POST /requests HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("read");
    assert!(reply.starts_with("HTTP/1.1 200"), "{body:?} -> {reply:?}");
    let body = reply.split("\r\n\r\n").nth(1).unwrap_or("");
    body.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("JSON line")).collect()
}

/// Start `saams` on stdin with `args` and `--http` on a free port: the child, its stdin, the address.
fn start(args: &[&str]) -> (Child, ChildStdin, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["--data", "-", "--format", "json", "--window", "10s", "--progress", "0", "--http", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("saams");
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    let stdin = child.stdin.take().expect("stdin");
    (child, stdin, addr)
}

/// Seconds of the reference streams fed: more than the reference DFT's sliding window (2000 s
/// at one value a second), so its correlation has something to compare.
const REFERENCE_SECONDS: u64 = 2600;

/// Event time (ms) of second `sec` of 2019-01-02.
fn time_of(sec: u64) -> i64 {
    1_546_387_200_000 + 1_000 * sec as i64
}

/// The price of `stream` at second `sec`: smooth curves, phase-shifted per stream, so DFT
/// correlations and LSH similarities are high but not all equal.
fn price(stream: &str, sec: u64) -> f64 {
    let phase = match stream {
        "GBPTRY" | "B" => 0.3,
        "C" => 0.05,
        _ => 0.0,
    };
    let p = 10.0 + (sec as f64 / 7.0 + phase).sin() + (sec % 5) as f64 * 0.01;
    (p * 10_000.0).round() / 10_000.0
}

/// Tuple lines of `streams` of dataset `dataset` for the seconds `secs`.
fn lines(dataset: &str, streams: &[&str], secs: std::ops::Range<u64>) -> String {
    let mut text = String::new();
    for sec in secs {
        for s in streams {
            text += &format!(
                r#"{{"streamID":"{s}","dataSetKey":"{dataset}","date":"2019-01-02","time":"{:02}:{:02}:{:02}","price":{},"volume":1}}"#,
                sec / 3600,
                sec / 60 % 60,
                sec % 60,
                price(s, sec)
            );
            text.push('\n');
        }
    }
    text
}

/// The reference's request file (this repository's copy): its constructs (the request script)
/// and its queries, each turned ad-hoc.
fn reference_requests() -> (String, Vec<Value>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/requests/reference-forex.json");
    let all: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).expect("reference requests")).expect("JSON");
    let (constructs, queries): (Vec<Value>, Vec<Value>) =
        all.into_iter().partition(|r| r["param"][2].as_str() == Some("NotQueryable"));
    let script = constructs.iter().map(|r| r.to_string() + "\n").collect();
    let adhoc = queries
        .into_iter()
        .map(|mut q| {
            q["param"][3] = json!("Ad-hoc");
            q
        })
        .collect();
    (script, adhoc)
}

/// A DFT over `stream`'s prices before `as_of`, fed as the job feeds it (in event-time order).
fn exact_dft(params: &[Value], stream: &str, as_of: i64) -> Box<dyn saams::Synopsis> {
    let mut dft = saams::registry::construct(4, params).expect("DFT");
    for sec in (0..REFERENCE_SECONDS).filter(|&s| time_of(s) < as_of) {
        dft.update_at(Datum::Num(price(stream, sec)), time_of(sec));
    }
    dft
}

/// Run the reference queries ad-hoc over HTTP against `workers` workers: every reply line.
fn reference_queries_ad_hoc(workers: &str) -> Vec<Value> {
    let dir = std::env::temp_dir().join(format!("saams-pair-asks-{}-{workers}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (script, queries) = reference_requests();
    let requests = dir.join("constructs.json");
    std::fs::write(&requests, script).expect("requests");
    let (mut child, mut stdin, addr) = start(&["-w", workers, "--requests", &requests.display().to_string()]);
    stdin.write_all(lines("Forex", &["EURTRY", "GBPTRY"], 0..REFERENCE_SECONDS).as_bytes()).expect("feed");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(800));
    let replies = post(&addr, &Value::Array(queries.clone()).to_string());
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(replies.len(), queries.len(), "one reply per query: {replies:#?}");
    for q in &queries {
        let r = replies.iter().find(|r| r["requestID"] == q["requestID"]).expect("the query's reply");
        assert!(r.get("error").is_none() && r["asOf"].is_string() && r["tuples"].is_u64(), "{q} -> {r}");
    }
    replies
}

/// The end-of-input answer of reference query `id` (ad-hoc, in the script) over the tuples
/// before `as_of`.
fn at_end(id: u64, as_of: i64) -> Value {
    let dir = std::env::temp_dir().join(format!("saams-pair-end-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (script, queries) = reference_requests();
    let query = queries.into_iter().find(|q| q["requestID"] == id).expect("the query");
    let (requests, data, out) = (dir.join("script.json"), dir.join("data.jsonl"), dir.join("out.jsonl"));
    std::fs::write(&requests, script + &query.to_string() + "\n").expect("script");
    let before = (0..REFERENCE_SECONDS).take_while(|&s| time_of(s) < as_of).count() as u64;
    std::fs::write(&data, lines("Forex", &["EURTRY", "GBPTRY"], 0..before)).expect("data");
    let status = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["--format", "json", "--window", "10s", "--progress", "0"])
        .args(["--requests", &requests.display().to_string(), "--data", &data.display().to_string()])
        .args(["--out", &out.display().to_string()])
        .status()
        .expect("saams");
    assert!(status.success());
    let text = std::fs::read_to_string(&out).expect("output");
    let _ = std::fs::remove_dir_all(&dir);
    let answer = text.lines().map(|l| serde_json::from_str::<Value>(l).expect("JSON")).find(|v| v["requestID"] == id);
    answer.expect("the end-of-input answer")["estimate"].clone()
}

#[test]
fn the_reference_queries_ad_hoc_are_all_answered_at_once_and_the_dft_pair_is_exact_for_1_and_2_workers() {
    let one = reference_queries_ad_hoc("1");
    let dft = one.iter().find(|r| r["requestID"] == 105).expect("the DFT correlation query's answer");
    let as_of = saams::api::time::parse_timestamp(dft["asOf"].as_str().expect("asOf")).expect("timestamp");
    assert!(as_of > time_of(0), "{dft}");
    assert_eq!(
        dft["tuples"].as_u64(),
        Some((0..REFERENCE_SECONDS).filter(|&s| time_of(s) < as_of).count() as u64),
        "{dft}"
    );
    let params = [json!(1), json!(500), json!(2000), json!(8)];
    let (a, b) = (exact_dft(&params, "EURTRY", as_of), exact_dft(&params, "GBPTRY", as_of));
    let exact = a.estimate_pair(b.as_ref(), &PairQuery::Correlation).expect("a complete sliding window");
    let x = exact.as_f64().expect("a correlation");
    assert!(x >= 0.9, "the streams are correlated: {x}");
    // The job builds each window of a `noOfP` 4 DFT apart and merges them: the same up to the
    // rounding of those merges.
    let live = dft["estimate"][0][2].as_f64().expect("the pair's correlation");
    assert!((live - x).abs() < 1e-9, "{dft} vs exact {x}");
    assert_eq!((&dft["estimate"][0][0], &dft["estimate"][0][1]), (&json!("EURTRY"), &json!("GBPTRY")), "{dft}");
    // The end-of-input answer over the same tuples (those before `asOf`) is the same, bit for bit.
    assert_eq!(dft["estimate"], at_end(105, as_of), "{dft}");
    // Pair answers are taken at one point of event time: the same for any number of workers.
    let two = reference_queries_ad_hoc("2");
    for id in [105, 113, 116] {
        let pick = |replies: &[Value]| replies.iter().find(|r| r["requestID"] == id).cloned();
        let (x, y) = (pick(&one), pick(&two));
        assert_eq!(x.as_ref().map(|v| &v["asOf"]), y.as_ref().map(|v| &v["asOf"]), "{x:?} {y:?}");
        assert_eq!(x, y, "query {id} at 1 and 2 workers");
    }
}

/// True when a set change's member (a pair, as JSON or as its text) names stream C.
fn names_c(member: &Value) -> bool {
    let text = member.as_str().map(str::to_string).unwrap_or_else(|| member.to_string());
    text.contains(r#""C""#)
}

#[test]
fn a_continuous_pair_query_compares_a_synopsis_constructed_later_from_its_fence_on() {
    let dir = std::env::temp_dir().join(format!("saams-pair-later-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (requests, out) = (dir.join("script.json"), dir.join("out.jsonl"));
    let dft = |s: &str, id: u32| {
        format!(
            r#"{{"streamID":"{s}","synopsisID":4,"dataSetKey":"D","param":["DFT","price","NotQueryable",1,5,20,4],"requestID":{id}}}"#
        )
    };
    let query = r#"{"streamID":"A","synopsisID":4,"dataSetKey":"D","param":[0.5,"price","Queryable","Continues"],"requestID":"cq"}"#;
    std::fs::write(&requests, format!("{}\n{}\n{query}\n", dft("A", 1), dft("B", 2))).expect("script");
    let (requests, out) = (requests.display().to_string(), out.display().to_string());
    let (mut child, mut stdin, addr) = start(&["-w", "2", "--requests", &requests, "--out", &out]);
    stdin.write_all(lines("D", &["A", "B", "C"], 0..300).as_bytes()).expect("feed");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(500));
    let ack = post(&addr, &dft("C", 3));
    let fence = saams::api::time::parse_timestamp(ack[0]["effectiveFrom"].as_str().expect("fence")).expect("timestamp");
    stdin.write_all(lines("D", &["A", "B", "C"], 300..600).as_bytes()).expect("feed");
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    let text = std::fs::read_to_string(&out).expect("output");
    let _ = std::fs::remove_dir_all(&dir);
    let with_c: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
        .filter(|v| v["requestID"] == "cq" && names_c(&v["member"]))
        .collect();
    assert!(!with_c.is_empty(), "the later synopsis joins the query: {text}");
    for v in &with_c {
        // A landmark answer's window starts at the query's first window; the job window whose
        // close answered it is the one ending at `end` (the 10 s windows of `start`).
        let end = saams::api::time::parse_timestamp(v["window"]["end"].as_str().expect("window")).expect("end");
        assert!(end - 10_000 >= fence, "compared only from its fence on (fence {fence}): {v}");
    }
}
