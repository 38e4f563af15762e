//! Requests while the job runs: a construct posted over HTTP in the middle of the input, to a job
//! started with no `--requests` (an empty registry), takes effect at the fence its acknowledgement
//! names, and from then on its answers count exactly the tuples from that window on (checked
//! against the tuples the test wrote), for 1, 2 and 3 workers; an ad-hoc query answers now, within
//! its bounds for the tuples it says it covers.

mod http_common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// The status and body of a POST /requests.
fn try_post(addr: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(
        s,
        "POST /requests HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("read");
    let status = reply.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, reply.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}

fn post(addr: &str, body: &str) -> Vec<Value> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(
        s,
        "POST /requests HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("read");
    assert!(reply.starts_with("HTTP/1.1 200"), "{addr}: {body:?} -> {reply:?}");
    let body = reply.split("\r\n\r\n").nth(1).unwrap_or("");
    body.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("JSON line")).collect()
}

fn ms_of(iso: &Value) -> i64 {
    saams::api::time::parse_timestamp(iso.as_str().expect("timestamp")).expect("ISO timestamp")
}

/// Start `saams` with `args` and `--http` on a free port: the child and the address.
fn start(args: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(args)
        .args(["--http", "127.0.0.1:0", "--progress", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("saams");
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    (child, addr)
}

/// Event times (ms) of the generated stream from `fence` on, in order.
fn times_from(spec: &saams_datasets::GeneratorSpec, fence: i64) -> Vec<i64> {
    let mut g = saams_jobs::source::generated::Generated::open(spec, 0);
    let mut values = [0.0; 6];
    let mut times = Vec::new();
    while let Some((_, time)) = g.next_values(&mut values) {
        if time >= fence {
            times.push(time);
        }
    }
    times
}

fn run(workers: usize) {
    let dir = std::env::temp_dir().join(format!("saams-live-{}-{workers}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let out = dir.join("out.jsonl").display().to_string();
    let generator = "stocks:1:8000000";
    let spec = saams_datasets::GeneratorSpec::parse(generator).expect("spec");
    let (stream, dataset) = (spec.stream_id(0), spec.dataset_key(0).to_string());
    let w = workers.to_string();
    let (mut child, addr) =
        start(&["-w", &w, "--generate", generator, "--rate", "4000000", "--window", "1h", "--out", &out]);
    std::thread::sleep(Duration::from_millis(100));
    let acks = post(
        &addr,
        &format!(
            r#"[{{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":["CountMin","price","NotQueryable",0.01,0.99,7],"requestID":"c","noOfP":{workers}}},
                {{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":[1.5,"price","Queryable","Continuous"],"requestID":"q"}}]"#
        ),
    );
    assert_eq!(acks.len(), 2, "{acks:?}");
    assert_eq!(acks[0]["accepted"], "construct", "{acks:?}");
    let fence = ms_of(&acks[0]["effectiveFrom"]);
    assert_eq!(fence, ms_of(&acks[1]["effectiveFrom"]), "one fence for one body");
    assert_eq!(fence % 3_600_000, 0, "a fence is a window boundary");
    drop(child.stdin.take());
    assert!(child.wait().expect("wait").success());
    let times = times_from(&spec, fence);
    assert!(!times.is_empty(), "the construct came after the input's end: make the input longer");
    let text = std::fs::read_to_string(&out).expect("output");
    let mut checked = 0;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("JSON line");
        if v["requestID"] != "q" || v["accepted"].is_string() {
            continue;
        }
        let start = ms_of(&v["window"]["start"]);
        assert!(start >= fence, "an answer before the fence: {line}");
        let end = ms_of(&v["window"]["end"]);
        let covered = times.iter().take_while(|&&t| t < end).count();
        assert_eq!(v["tuples"].as_u64(), Some(covered as u64), "{line}");
        checked += 1;
    }
    let windows: std::collections::BTreeSet<i64> = times.iter().map(|t| t - t % 3_600_000).collect();
    assert_eq!(checked, windows.len(), "one answer per window with values from the fence on");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_construct_mid_stream_counts_exactly_from_its_fence_on_for_1_worker() {
    run(1);
}

#[test]
fn a_construct_mid_stream_counts_exactly_from_its_fence_on_for_2_workers() {
    run(2);
}

#[test]
fn a_construct_mid_stream_counts_exactly_from_its_fence_on_for_3_workers() {
    run(3);
}

#[test]
fn an_ad_hoc_query_mid_stream_answers_now_within_its_bounds_for_what_it_covers() {
    use saams_datasets::GeneratorSpec;
    use saams_jobs::source::generated::Generated;
    let dir = std::env::temp_dir().join(format!("saams-live-adhoc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let requests = dir.join("none.json");
    std::fs::write(&requests, "").expect("requests");
    let requests = requests.display().to_string();
    let generator = "stocks:1:50000000";
    let (mut child, addr) = start(&["-w", "2", "--generate", generator, "--window", "1s", "--requests", &requests]);
    let spec = GeneratorSpec::parse(generator).expect("spec");
    let (stream, dataset) = (spec.stream_id(0), spec.dataset_key(0).to_string());
    let construct = format!(
        r#"{{"streamID":"{stream}","synopsisID":2,"dataSetKey":"{dataset}","param":["HyperLogLog","price","NotQueryable",0.02],"requestID":"c","noOfP":2}}"#
    );
    let acks = post(&addr, &construct);
    if acks[0]["error"].is_string() {
        panic!("{acks:?}");
    }
    let fence = ms_of(&acks[0]["effectiveFrom"]);
    std::thread::sleep(Duration::from_millis(300));
    let ask = format!(
        r#"{{"streamID":"{stream}","synopsisID":2,"dataSetKey":"{dataset}","param":["distinct","price","Queryable","AdHoc"],"requestID":"h"}}"#
    );
    let answer = post(&addr, &ask);
    let _ = child.kill();
    let _ = child.wait();
    let a = &answer[0];
    assert!(a["asOf"].is_string(), "{answer:?}");
    let covered = a["tuples"].as_u64().expect("tuples") as usize;
    // The values it covers: the stream's values from the fence on (one stream: in time order).
    let mut g = Generated::open(&spec, 0);
    let mut values = [0.0; 6];
    let mut distinct = std::collections::HashSet::new();
    let mut taken = 0;
    while taken < covered {
        let Some((_, time)) = g.next_values(&mut values) else { break };
        if time >= fence {
            distinct.insert(values[0].to_bits());
            taken += 1;
        }
    }
    assert_eq!(taken, covered, "{answer:?}");
    let exact = distinct.len() as f64;
    let (lower, upper) = (a["lower"].as_f64().expect("lower"), a["upper"].as_f64().expect("upper"));
    assert!(lower <= exact && exact <= upper, "exact {exact} outside [{lower}, {upper}]: {answer:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn stock_line(sec: u64) -> String {
    format!(
        r#"{{"streamID":"A","dataSetKey":"D","date":"2019-01-02","time":"{:02}:{:02}:{:02}","price":{},"volume":1}}"#,
        sec / 3600,
        sec / 60 % 60,
        sec % 60,
        sec % 7
    ) + "\n"
}

/// Event time (ms) of second `sec` of 2019-01-02.
fn stock_time(sec: u64) -> i64 {
    1_546_387_200_000 + 1_000 * sec as i64
}

#[test]
fn stdin_stays_live_a_construct_counts_from_its_fence_and_an_ad_hoc_count_min_is_exact_for_what_it_covers() {
    let dir = std::env::temp_dir().join(format!("saams-live-stdin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (requests, out) = (dir.join("none.json"), dir.join("out.jsonl"));
    std::fs::write(&requests, "").expect("requests");
    let (requests, out) = (requests.display().to_string(), out.display().to_string());
    let (mut child, addr) = start(&[
        "-w",
        "2",
        "--data",
        "-",
        "--format",
        "json",
        "--window",
        "10s",
        "--requests",
        &requests,
        "--out",
        &out,
    ]);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut feed = |secs: std::ops::Range<u64>| {
        stdin.write_all(secs.map(stock_line).collect::<String>().as_bytes()).expect("feed");
        stdin.flush().expect("flush");
    };
    feed(0..300);
    std::thread::sleep(Duration::from_millis(200));
    let acks = post(
        &addr,
        r#"[{"streamID":"A","synopsisID":1,"dataSetKey":"D","param":["CountMin","price","NotQueryable",0.0005,0.999,7],"requestID":"c"},
            {"streamID":"A","synopsisID":1,"dataSetKey":"D","param":[3,"price","Queryable","Continuous"],"requestID":"q"}]"#,
    );
    assert_eq!(acks[0]["accepted"], "construct", "{acks:?}");
    let fence = ms_of(&acks[0]["effectiveFrom"]);
    feed(300..400);
    std::thread::sleep(Duration::from_millis(300));
    let adhoc = post(
        &addr,
        r#"{"streamID":"A","synopsisID":1,"dataSetKey":"D","param":[3,"price","Queryable","AdHoc"],"requestID":"h"}"#,
    );
    let covered = adhoc[0]["tuples"].as_u64().expect("tuples") as usize;
    let after: Vec<u64> = (0..400).filter(|&s| stock_time(s) >= fence).collect();
    assert!(covered > 0 && covered <= after.len(), "{adhoc:?}");
    let threes = after[..covered].iter().filter(|&&s| s % 7 == 3).count() as u64;
    assert_eq!(adhoc[0]["estimate"].as_u64(), Some(threes), "covering {covered}: {adhoc:?}");
    feed(400..600);
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    let text = std::fs::read_to_string(&out).expect("output");
    let mut checked = 0;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("JSON line");
        if v["requestID"] != "q" || v["accepted"].is_string() {
            continue;
        }
        let end = ms_of(&v["window"]["end"]);
        let covered: Vec<u64> = (0..600).filter(|&s| stock_time(s) >= fence && stock_time(s) < end).collect();
        assert_eq!(v["tuples"].as_u64(), Some(covered.len() as u64), "{line}");
        assert_eq!(v["estimate"].as_u64(), Some(covered.iter().filter(|&&s| s % 7 == 3).count() as u64), "{line}");
        checked += 1;
    }
    assert_eq!(checked as i64, (stock_time(599) - fence) / 10_000 + 1, "one answer per window from the fence on");
    let _ = std::fs::remove_dir_all(&dir);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port()
}

#[test]
fn two_processes_each_take_requests_and_agree_on_the_fence() {
    let dir = std::env::temp_dir().join(format!("saams-live-two-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let requests = dir.join("none.json");
    std::fs::write(&requests, "").expect("requests");
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port())).expect("hostfile");
    let (requests, hosts) = (requests.display().to_string(), hostfile.display().to_string());
    let generator = "stocks:2:6000000";
    let outs: Vec<String> = (0..2).map(|p| dir.join(format!("out{p}.jsonl")).display().to_string()).collect();
    let started: Vec<(std::process::Child, String)> = (0..2)
        .map(|p| {
            let p = p.to_string();
            start(&[
                "-w",
                "1",
                "-n",
                "2",
                "-p",
                &p,
                "-h",
                &hosts,
                "--generate",
                generator,
                "--rate",
                "2000000",
                "--window",
                "1h",
                "--requests",
                &requests,
                "--out",
                &outs[p.parse::<usize>().expect("p")],
            ])
        })
        .collect();
    let spec = saams_datasets::GeneratorSpec::parse(generator).expect("spec");
    let (stream, dataset) = (spec.stream_id(1), spec.dataset_key(1).to_string());
    std::thread::sleep(Duration::from_millis(100));
    // Process 1 takes the construct, process 0 a query on it (after the construct's reply).
    let acks = post(
        &started[1].1,
        &format!(
            r#"[{{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":["CountMin","price","NotQueryable",0.01,0.99,7],"requestID":"c","noOfP":2}},
                {{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":[1.5,"price","Queryable","Continuous"],"requestID":"q"}}]"#
        ),
    );
    assert_eq!(acks[0]["accepted"], "construct", "{acks:?}");
    let fence = ms_of(&acks[0]["effectiveFrom"]);
    // Process 0 learns of the synopsis when it applies the fence (milliseconds later): until
    // then its HTTP check answers 404.
    let ask = format!(
        r#"{{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":[1.5,"price","Queryable","AdHoc"],"requestID":"h"}}"#
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let adhoc = loop {
        let (status, body) = try_post(&started[0].1, &ask);
        if status == 200 {
            break body.lines().map(|l| serde_json::from_str::<Value>(l).expect("JSON line")).collect::<Vec<_>>();
        }
        assert!(status == 404 && std::time::Instant::now() < deadline, "{status}: {body}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(adhoc[0]["tuples"].is_u64() && adhoc[0]["asOf"].is_string(), "{adhoc:?}");
    for (mut child, _) in started {
        drop(child.stdin.take());
        assert!(child.wait().expect("wait").success());
    }
    // The continuous answers (written by the synopsis' home, in either process) count exactly
    // the stream's tuples from the fence on.
    let mut g = saams_jobs::source::generated::Generated::open(&spec, 1);
    let mut values = [0.0; 6];
    let mut times = Vec::new();
    while let Some((_, time)) = g.next_values(&mut values) {
        if time >= fence {
            times.push(time);
        }
    }
    let mut checked = 0;
    for out in &outs {
        for line in std::fs::read_to_string(out).expect("output").lines() {
            let v: Value = serde_json::from_str(line).expect("JSON line");
            if v["requestID"] != "q" || !v["window"].is_object() {
                continue;
            }
            let end = ms_of(&v["window"]["end"]);
            assert_eq!(v["tuples"].as_u64(), Some(times.iter().take_while(|&&t| t < end).count() as u64), "{line}");
            checked += 1;
        }
    }
    assert!(checked > 0 || times.is_empty(), "no answers for the live query");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A line of stream `stream` at second `sec` with price `sec % 7`.
fn line_of(stream: &str, sec: u64) -> String {
    stock_line(sec).replacen(r#""streamID":"A""#, &format!(r#""streamID":"{stream}""#), 1)
}

#[test]
fn a_live_delete_stops_its_answers_at_its_fence_and_a_live_load_merges_from_its_fence_on() {
    let dir = std::env::temp_dir().join(format!("saams-live-delete-{}", std::process::id()));
    let snaps = dir.join("snapshots");
    std::fs::create_dir_all(&snaps).expect("dir");
    let (requests, out) = (dir.join("none.json"), dir.join("out.jsonl"));
    std::fs::write(&requests, "").expect("requests");
    let (requests, out, snaps_arg) =
        (requests.display().to_string(), out.display().to_string(), snaps.display().to_string());
    let (mut child, addr) = start(&[
        "-w",
        "2",
        "--data",
        "-",
        "--format",
        "json",
        "--window",
        "10s",
        "--requests",
        &requests,
        "--out",
        &out,
        "--snapshots",
        &snaps_arg,
    ]);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut feed = |secs: std::ops::Range<u64>| {
        let text: String = secs.flat_map(|s| [line_of("A", s), line_of("B", s)]).collect();
        stdin.write_all(text.as_bytes()).expect("feed");
        stdin.flush().expect("flush");
    };
    let cm = |stream: &str, id: &str| {
        format!(
            r#"{{"streamID":"{stream}","synopsisID":1,"dataSetKey":"D","param":["CountMin","price","NotQueryable",0.0005,0.999,7],"requestID":"{id}"}}"#
        )
    };
    let query = |stream: &str, id: &str, mode: &str| {
        format!(
            r#"{{"streamID":"{stream}","synopsisID":1,"dataSetKey":"D","param":[3,"price","Queryable","{mode}"],"requestID":"{id}"}}"#
        )
    };
    feed(0..100);
    std::thread::sleep(Duration::from_millis(200));
    let acks = post(
        &addr,
        &format!(
            "[{},{},{},{}]",
            cm("A", "ca"),
            query("A", "qa", "Continuous"),
            cm("B", "cb"),
            query("B", "qb", "Continuous")
        ),
    );
    let fence_a = ms_of(&acks[0]["effectiveFrom"]);
    feed(100..200);
    std::thread::sleep(Duration::from_millis(300));
    // SAVE A now, then LOAD it into B, then delete A.
    let saved = post(
        &addr,
        r#"{"streamID":"A","synopsisID":1,"dataSetKey":"D","param":["SAVE_REQUEST","a.bin"],"requestID":"s"}"#,
    );
    assert_eq!(saved[0]["saved"], "a.bin", "{saved:?}");
    let saved_tuples = saved[0]["tuples"].as_u64().expect("tuples") as usize;
    let loaded = post(
        &addr,
        r#"{"streamID":"B","synopsisID":1,"dataSetKey":"D","param":["LOAD_REQUEST","a.bin"],"requestID":"l"}"#,
    );
    assert_eq!(loaded[0]["accepted"], "load", "{loaded:?}");
    let fence_load = ms_of(&loaded[0]["effectiveFrom"]);
    let deleted = post(
        &addr,
        r#"{"streamID":"A","synopsisID":1,"dataSetKey":"D","param":["DELETE_REQUEST","price"],"requestID":"d"}"#,
    );
    assert_eq!(deleted[0]["accepted"], "delete", "{deleted:?}");
    let fence_delete = ms_of(&deleted[0]["effectiveFrom"]);
    feed(200..400);
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    let threes = |from: i64, to: i64| {
        (0..400u64).filter(|&s| stock_time(s) >= from && stock_time(s) < to && s % 7 == 3).count() as u64
    };
    // What the snapshot held: A's first `saved_tuples` values from its fence on.
    let in_snapshot =
        (0..400u64).filter(|&s| stock_time(s) >= fence_a).take(saved_tuples).filter(|s| s % 7 == 3).count() as u64;
    let text = std::fs::read_to_string(&out).expect("output");
    let (mut a_windows, mut b_loaded) = (0, 0);
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("JSON line");
        if !v["window"].is_object() {
            continue;
        }
        // Landmark answers: `start` is the synopsis' first window; the window closed ends at `end`.
        let (end, first) = (ms_of(&v["window"]["end"]), ms_of(&v["window"]["start"]));
        let start = end - 10_000;
        assert!(first <= start && first >= fence_a, "{line}");
        if v["requestID"] == "qa" {
            assert!(start < fence_delete, "an answer of A after its delete took effect: {line}");
            assert_eq!(v["estimate"].as_u64(), Some(threes(fence_a, end)), "{line}");
            a_windows += 1;
        } else if v["requestID"] == "qb" {
            let loaded = if start >= fence_load { in_snapshot } else { 0 };
            assert_eq!(v["estimate"].as_u64(), Some(threes(fence_a, end) + loaded), "{line}");
            b_loaded += usize::from(start >= fence_load);
        }
    }
    assert_eq!(a_windows as i64, (fence_delete - fence_a) / 10_000, "A answers every window up to its delete");
    assert!(b_loaded > 0, "B answered no window after the LOAD");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn requests_on_stdin_take_effect_while_the_job_runs() {
    let dir = std::env::temp_dir().join(format!("saams-live-stdin-requests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let out = dir.join("out.jsonl").display().to_string();
    let generator = "stocks:1:8000000";
    let spec = saams_datasets::GeneratorSpec::parse(generator).expect("spec");
    let (stream, dataset) = (spec.stream_id(0), spec.dataset_key(0).to_string());
    let (mut child, _) =
        start(&["--generate", generator, "--rate", "4000000", "--window", "1h", "--requests", "-", "--out", &out]);
    std::thread::sleep(Duration::from_millis(100));
    let mut stdin = child.stdin.take().expect("stdin");
    // A pretty-printed array: values are read as they complete, not by lines.
    let body = format!(
        "[\n{{\"streamID\":\"{stream}\",\"synopsisID\":1,\"dataSetKey\":\"{dataset}\",\n \"param\":[\"CountMin\",\"price\",\"NotQueryable\",0.01,0.99,7],\"requestID\":\"c\"}},\n{{\"streamID\":\"{stream}\",\"synopsisID\":1,\"dataSetKey\":\"{dataset}\",\"param\":[1.5,\"price\",\"Queryable\",\"Continuous\"],\"requestID\":\"q\"}}]\n"
    );
    stdin.write_all(body.as_bytes()).expect("write");
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    let text = std::fs::read_to_string(&out).expect("output");
    let values: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    let ack = values.iter().find(|v| v["requestID"] == "c").expect("the construct is acknowledged");
    let fence = ms_of(&ack["effectiveFrom"]);
    let times = times_from(&spec, fence);
    let answers: Vec<&Value> = values.iter().filter(|v| v["requestID"] == "q" && v["window"].is_object()).collect();
    assert!(!answers.is_empty() || times.is_empty(), "no answers for the query from stdin");
    for v in answers {
        let end = ms_of(&v["window"]["end"]);
        assert_eq!(v["tuples"].as_u64(), Some(times.iter().take_while(|&&t| t < end).count() as u64), "{v}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
