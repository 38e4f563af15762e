//! The live metrics endpoint (`--metrics-addr`, `--metrics-linger`) and the communication figures
//! of the summary line: a short run is scraped with a plain `TcpStream` GET and its counters are
//! checked against the input; two processes on loopback report the bytes that crossed.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_saams");

fn repo(rel: &str) -> String {
    format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("free port").port()
}

fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text)
}

/// `name{labels} value` lines of a Prometheus text body, keyed by everything before the value.
fn samples(body: &str) -> HashMap<String, f64> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| v.parse().ok().map(|v| (k.to_string(), v))))
        .collect()
}

fn sum(s: &HashMap<String, f64>, prefix: &str) -> f64 {
    s.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v).sum()
}

fn summary_fields(out: &Output) -> HashMap<String, u64> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.starts_with("summary ")).expect("summary line");
    line.split_whitespace()
        .skip(1)
        .filter_map(|kv| kv.split_once('=').and_then(|(k, v)| v.parse().ok().map(|v| (k.to_string(), v))))
        .collect()
}

#[test]
fn metrics_endpoint_serves_the_counters_of_a_short_run() {
    let addr = format!("127.0.0.1:{}", free_port());
    let req = repo("datasets/requests/paper-workload.json");
    let child = Command::new(BIN)
        .args(["-w", "2", "--requests", &req, "--generate", "stocks:10:500", "--out", "-", "--progress", "0"])
        .args(["--metrics-addr", &addr, "--metrics-linger", "5s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run saams");
    // Scrape until every tuple is counted (the job keeps serving for 5 s after its input ends).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    let body = loop {
        assert!(Instant::now() < deadline, "metrics never reached 5000 tuples; last scrape:\n{last}");
        if let Some(resp) = get(&addr, "/metrics") {
            let tuples = sum(&samples(&resp), "saams_tuples_in_total{");
            if tuples >= 5000.0 {
                break resp;
            }
            last = resp;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    let s = samples(&body);
    assert_eq!(sum(&s, "saams_tuples_in_total{"), 5000.0);
    // Both workers read streams (10 streams round-robin over 2 workers).
    assert_eq!(s.keys().filter(|k| k.starts_with("saams_tuples_in_total{")).count(), 2, "{body}");
    // Each of the 10 streams feeds its CountMin, HyperLogLog and DFT 500 values.
    let updates: Vec<f64> =
        s.iter().filter(|(k, _)| k.starts_with("saams_synopsis_updates_total{")).map(|(_, v)| *v).collect();
    assert_eq!(updates.len(), 30, "{body}");
    assert!(updates.iter().all(|&v| v == 500.0), "{updates:?}");
    assert!(s.keys().any(|k| k.contains(r#"kind="CountMin""#) && k.contains("EURTRY")), "{body}");
    // One compact record of 32 bytes per tuple (one update group per stream, numeric values).
    assert_eq!(s.get("saams_raw_bytes_total"), Some(&(5000.0 * 32.0)));
    assert_eq!(s.get("saams_dead_letters_total"), Some(&0.0));
    assert_eq!(s.get("saams_late_tuples_total"), Some(&0.0));
    assert_eq!(s.get("saams_bytes_between_processes_total"), Some(&0.0));
    assert!(s.contains_key("saams_window_lag_ms"), "{body}");
    // Estimations may still be on their way to the sink: wait for the final count.
    let est = loop {
        let first = get(&addr, "/metrics").map(|b| sum(&samples(&b), "saams_estimations_out_total")).unwrap_or(0.0);
        std::thread::sleep(Duration::from_millis(300));
        let again = get(&addr, "/metrics").map(|b| sum(&samples(&b), "saams_estimations_out_total")).unwrap_or(0.0);
        if again == first && again > 0.0 {
            break again;
        }
        assert!(Instant::now() < deadline, "estimations never settled");
    };
    let missing = get(&addr, "/nothing").expect("answer");
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    let out = child.wait_with_output().expect("saams exits");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = String::from_utf8_lossy(&out.stdout).lines().count() as f64;
    assert_eq!(est, lines, "estimations_out differs from the lines written");
    let f = summary_fields(&out);
    assert_eq!(f["tuples"], 5000);
    assert_eq!(f["raw_bytes"], 5000 * 32);
}

#[test]
fn two_processes_report_bytes_between_them_and_partials_shipped() {
    // Dataset-wide CountMin: partition-based, so each process ships partials per window.
    let dir = std::env::temp_dir().join(format!("saams-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let req = dir.join("wide.json");
    std::fs::write(
        &req,
        r#"{"dataSetKey":"Forex","noOfP":1,"param":["CountMin","price","NotQueryable",0.01,0.9,7],"requestID":1,"streamID":"","synopsisID":1}
{"dataSetKey":"Forex","noOfP":1,"param":[1.0,"price","Queryable","Continues"],"requestID":2,"streamID":"","synopsisID":1}
"#,
    )
    .expect("write requests");
    let hostfile = dir.join("hosts.txt");
    std::fs::write(&hostfile, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port())).expect("hostfile");
    let req = req.display().to_string();
    let hosts = hostfile.display().to_string();
    let spawn = |p: &str| {
        Command::new(BIN)
            .args(["-n", "2", "-p", p, "-h", &hosts, "--requests", &req, "--generate", "stocks:6:300"])
            .args(["--out", "-", "--progress", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run saams")
    };
    let (p1, p0) = (spawn("1"), spawn("0"));
    let (o0, o1) = (p0.wait_with_output().expect("p0"), p1.wait_with_output().expect("p1"));
    assert!(o0.status.success() && o1.status.success(), "{}", String::from_utf8_lossy(&o1.stderr));
    let (f0, f1) = (summary_fields(&o0), summary_fields(&o1));
    assert_eq!(f0["tuples"] + f1["tuples"], 1800);
    for f in [&f0, &f1] {
        assert!(f["bytes_between_processes"] > 0, "{f:?}");
    }
    // Partials are counted where they are decoded, so only those that crossed: every one goes
    // to the synopsis' home, in one process, at most one per window (merge) from the other.
    let (receiver, other) = if f0["partials"] > 0 { (&f0, &f1) } else { (&f1, &f0) };
    assert_eq!(other["partials"], 0, "{other:?}");
    assert!(receiver["partials"] > 0, "{receiver:?}");
    assert!(receiver["partials"] <= receiver["estimations"], "one window answered per merge: {receiver:?}");
    assert!(receiver["partial_bytes"] > 28 * receiver["partials"], "{receiver:?}");
    assert!(receiver["partial_bytes"] < other["bytes_between_processes"], "they are part of what the other sent");
    // Only the Forex streams (0 and 3 of 6) feed a synopsis: one 32-byte record per tuple of theirs.
    assert_eq!(f0["raw_bytes"] + f1["raw_bytes"], 600 * 32);
    let _ = std::fs::remove_dir_all(&dir);
}
