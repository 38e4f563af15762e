//! The sliding-window monitoring kind (`synopsisID` 14) as a live request: a monitor
//! constructed over HTTP in the middle of a paced input answers, from its fence on, exactly
//! what a run whose request file constructs it at the start answers when the monitored stream
//! starts at that window (the tuples before it belong to another stream, so the arrival
//! sequence, and so each value's site, is the same), for 1 and 2 workers; `GET /synopses`
//! lists it; an ad-hoc query is answered at the close of its fence's window with its
//! guarantee; bad parameters are 400. And `--generate` feeds a monitor.

mod http_common;

use http_common::call as http;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const START_MS: i64 = 1_600_000_000_000;
const TUPLES: i64 = 20_000;
const MINUTE: i64 = 60_000;

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("JSON line")).collect()
}

fn ms_of(iso: &Value) -> i64 {
    saams::api::time::parse_timestamp(iso.as_str().expect("timestamp")).expect("ISO timestamp")
}

/// One tuple every 100 ms of stream `S` (or, before `renamed_before`, of stream `X`), prices
/// from a small skewed set: the line for tuple `i` has the same length either way.
fn write_data(path: &Path, renamed_before: i64) {
    let mut text = String::new();
    let mut x: u64 = 7;
    for i in 0..TUPLES {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let t = START_MS + i * 100;
        let price = [10, 10, 10, 11, 12, 13, 14, 15, 20, 25][(x >> 33) as usize % 10] + (x >> 20) % 4;
        let stream = if t < renamed_before { "X" } else { "S" };
        let ts = saams::api::time::format_timestamp(t);
        text.push_str(&format!(
            "{{\"streamID\":\"{stream}\",\"dataSetKey\":\"D\",\"timestamp\":\"{ts}\",\"price\":{price}}}\n"
        ));
    }
    std::fs::write(path, text).expect("data");
}

const CONSTRUCT: &str = r#"{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["SlidingWindowMonitor","price","NotQueryable","5m",0.1,0.2,4],"requestID":"c"}"#;
const QUERIES: [&str; 3] = [
    r#"{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["count","price","Queryable","Continuous"],"requestID":"q1"}"#,
    r#"{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["quantile",0.5,"price","Queryable","Continuous"],"requestID":"q2"}"#,
    r#"{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["frequentItems","price","Queryable","Continuous"],"requestID":"q3"}"#,
];

/// The continuous answers of the monitor's queries in an output file, sorted.
fn continuous_answers(out: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(out).expect("output");
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains(r#""requestID":"q"#) && !l.contains(r#""accepted""#))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// Live over HTTP at `workers` workers: the fence and the answers.
fn live_run(dir: &Path, workers: usize) -> (i64, Vec<String>) {
    let data = dir.join("all.jsonl");
    write_data(&data, i64::MIN);
    let out = dir.join("live.jsonl");
    let w = workers.to_string();
    let (data_arg, out_arg) = (data.display().to_string(), out.display().to_string());
    let mut child = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["-w", &w, "--data", &data_arg, "--rate", "2000", "--window", "1m", "--out", &out_arg])
        .args(["--http", "127.0.0.1:0", "--progress", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("saams");
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(300));

    // Bad parameters: 400 naming the parameter, and nothing registered.
    let bad = CONSTRUCT.replace("0.2,4]", "0.01,4]");
    let (status, body) = http(&addr, "POST", "/requests", &bad);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("phi must be in"), "{body}");
    let (status, body) = http(&addr, "POST", "/requests", &QUERIES[1].replace("0.5", "2"));
    assert_eq!(status, 400, "{body}");

    let body = format!("[{CONSTRUCT},{}]", QUERIES.join(","));
    let (status, text) = http(&addr, "POST", "/requests", &body);
    assert_eq!(status, 200, "{text}");
    let acks = json_lines(&text);
    assert_eq!(acks.len(), 4, "{text}");
    assert_eq!(acks[0]["accepted"], "construct", "{text}");
    assert_eq!(acks[0]["kind"], "SlidingWindowMonitor", "{text}");
    let fence = ms_of(&acks[0]["effectiveFrom"]);
    assert!(acks.iter().all(|a| ms_of(&a["effectiveFrom"]) == fence), "one fence for one body: {text}");
    assert_eq!(fence % MINUTE, 0, "a fence is a window boundary");
    assert!(fence < START_MS + (TUPLES - 3000) * 100, "the construct came too late in the input: {fence}");

    let (status, rows) = http(&addr, "GET", "/synopses", "");
    assert_eq!(status, 200);
    let rows: Value = serde_json::from_str(&rows).expect("rows");
    let row = rows.as_array().expect("rows").iter().find(|r| r["synopsisID"] == 14).expect("the monitor's row");
    assert_eq!((row["kind"].as_str(), row["params"][3].as_u64()), (Some("SlidingWindowMonitor"), Some(4)), "{row}");

    // An ad-hoc query: answered at the close of its fence's window, with the guarantee.
    let adhoc = r#"{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["count","price","Queryable","Ad-hoc"],"requestID":"a"}"#;
    let (status, text) = http(&addr, "POST", "/requests", adhoc);
    assert_eq!(status, 200, "{text}");
    let answer = &json_lines(&text)[0];
    assert_eq!(answer["requestID"], "a", "{text}");
    assert_eq!(ms_of(&answer["window"]["end"]) % MINUTE, 0, "{text}");
    assert!(ms_of(&answer["window"]["end"]) > fence, "{text}");
    assert_eq!(answer["guarantee"]["epsilon"], 0.1, "{text}");
    let (estimate, lower, upper) =
        (answer["estimate"].as_f64().unwrap(), answer["lower"].as_f64().unwrap(), answer["upper"].as_f64().unwrap());
    assert!(estimate > 0.0 && lower <= estimate && estimate <= upper, "{text}");
    // The window holds at most its 5 minutes of tuples (one per 100 ms) since the fence.
    assert!(upper >= 1.0 && lower <= 3000.0, "{text}");

    drop(child.stdin.take());
    assert!(child.wait().expect("wait").success());
    (fence, continuous_answers(&out))
}

/// The request file constructs the monitor at the start; stream `S` starts at `fence`.
fn file_run(dir: &Path, workers: usize, fence: i64) -> Vec<String> {
    let data = dir.join("from-fence.jsonl");
    write_data(&data, fence);
    let requests = dir.join("requests.json");
    std::fs::write(&requests, format!("{CONSTRUCT}\n{}\n", QUERIES.join("\n"))).expect("requests");
    let out = dir.join("file.jsonl");
    let status = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["-w", &workers.to_string(), "--data", &data.display().to_string(), "--window", "1m"])
        .args(["--requests", &requests.display().to_string(), "--out", &out.display().to_string()])
        .args(["--progress", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("saams");
    assert!(status.success());
    continuous_answers(&out)
}

fn live_equals_file_at_start(workers: usize) {
    let dir = std::env::temp_dir().join(format!("saams-monitor-service-{}-{workers}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (fence, live) = live_run(&dir, workers);
    let file = file_run(&dir, workers, fence);
    assert!(live.len() > 3 * 10, "{} answers", live.len());
    assert!(live.iter().all(|l| ms_of(&serde_json::from_str::<Value>(l).unwrap()["window"]["end"]) > fence));
    assert_eq!(live, file, "{workers} workers: the live monitor's answers differ from the file-at-start run's");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_monitor_constructed_over_http_answers_as_one_in_the_request_file_from_its_fence_on() {
    live_equals_file_at_start(1);
}

#[test]
fn the_same_on_two_workers() {
    live_equals_file_at_start(2);
}

#[test]
fn generated_values_feed_a_monitor() {
    let generator = "stocks:1:20000";
    let spec = saams_datasets::GeneratorSpec::parse(generator).expect("spec");
    let (stream, dataset) = (spec.stream_id(0), spec.dataset_key(0).to_string());
    let requests = format!(
        "{}\n{}\n",
        CONSTRUCT.replace(r#""S""#, &format!("{stream:?}")).replace(r#""D""#, &format!("{dataset:?}")),
        QUERIES[0].replace(r#""S""#, &format!("{stream:?}")).replace(r#""D""#, &format!("{dataset:?}"))
    );
    let dir = std::env::temp_dir().join(format!("saams-monitor-generated-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("requests.json");
    std::fs::write(&path, requests).expect("requests");
    let output = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["--generate", generator, "--requests", &path.display().to_string(), "--window", "1m"])
        .args(["--progress", "0"])
        .stdin(Stdio::null())
        .output()
        .expect("saams");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let counts: Vec<f64> =
        json_lines(&text).iter().filter(|v| v["requestID"] == "q1").filter_map(|v| v["estimate"].as_f64()).collect();
    assert!(counts.iter().any(|&c| c > 0.0), "no count of the generated prices: {text:.2000}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The answer and error lines of queries `q…` in a run of `requests` on `data`, sorted.
fn script_run(dir: &Path, data: &Path, requests: &str) -> Vec<String> {
    let path = dir.join("script.json");
    std::fs::write(&path, requests).expect("requests");
    let output = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["-w", "2", "--data", &data.display().to_string(), "--window", "1m"])
        .args(["--requests", &path.display().to_string(), "--progress", "0"])
        .stdin(Stdio::null())
        .output()
        .expect("saams");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut lines: Vec<String> = String::from_utf8(output.stdout)
        .expect("UTF-8")
        .lines()
        .filter(|l| l.contains(r#""requestID":"q"#))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// A delete in a request file takes effect at its place in the script, as a synopsis' does: the
/// queries registered before it get an error line and no answer, a query after it finds
/// nothing to query, and a construct after it starts a new monitor, answered as if the deleted
/// one had never been there.
#[test]
fn a_delete_in_a_request_file_takes_effect_at_its_place() {
    let dir = std::env::temp_dir().join(format!("saams-monitor-delete-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let data = dir.join("data.jsonl");
    write_data(&data, i64::MIN);
    let delete =
        r#"{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["DELETE_REQUEST","price"],"requestID":"d"}"#;
    let again = CONSTRUCT.replace("0.2,4]", "0.2,2]").replace(r#""c""#, r#""c2""#);
    let after = QUERIES[0].replace("q1", "q9");
    let with_delete =
        format!("{CONSTRUCT}\n{}\n{}\n{delete}\n{}\n{again}\n{after}\n", QUERIES[0], QUERIES[1], QUERIES[2]);
    let got = script_run(&dir, &data, &with_delete);
    let errors: Vec<&String> = got.iter().filter(|l| l.contains(r#""error""#)).collect();
    assert_eq!(errors.len(), 3, "q1, q2 (deleted) and q3 (after the delete): {errors:#?}");
    for q in ["q1", "q2"] {
        let line = errors.iter().find(|l| l.contains(&format!(r#""requestID":"{q}""#))).expect("its error line");
        assert!(line.contains("deleted by request \\\"d\\\""), "{line}");
    }
    assert!(errors.iter().any(|l| l.contains(r#""requestID":"q3""#) && l.contains("no monitored D/S price")));
    let answers: Vec<String> = got.into_iter().filter(|l| !l.contains(r#""error""#)).collect();
    assert!(answers.len() > 10 && answers.iter().all(|l| l.contains(r#""requestID":"q9""#)), "{answers:#?}");
    assert!(answers.iter().all(|l| l.contains(r#""sites":2"#)), "the new monitor answers: {:.300}", answers[0]);
    let alone = script_run(&dir, &data, &format!("{again}\n{after}\n"));
    assert_eq!(answers, alone, "the new monitor answers as if the deleted one had never been there");
    let _ = std::fs::remove_dir_all(&dir);
}
