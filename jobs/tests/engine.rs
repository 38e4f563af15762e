//! End-to-end tests of the `saams` binary: the same input gives the same estimations whatever the
//! number of workers or processes; every request type and kind runs through the job; SAVE then
//! LOAD reproduces answers; bad input is counted and dead-lettered without changing the answers
//! of the valid tuples.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_saams");

fn repo(rel: &str) -> String {
    format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-engine-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

fn run(args: &[&str]) -> Output {
    let out = Command::new(BIN).args(args).arg("--progress").arg("0").output().expect("run saams");
    assert!(out.status.success(), "saams {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Write a request script `text` to `req.json` in `dir`; its path, as the job's `--requests` takes it.
fn write_requests(dir: &Path, text: impl AsRef<[u8]>) -> String {
    let req = dir.join("req.json");
    std::fs::write(&req, text).expect("write requests");
    req.to_string_lossy().to_string()
}

fn sorted_lines(out: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(out).lines().map(str::to_string).collect();
    v.sort();
    v
}

fn summary(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).lines().find(|l| l.starts_with("summary ")).expect("summary line").to_string()
}

/// KLL (Apache DataSketches) compacts with an unseeded random generator, so its answers differ
/// between runs of the same input; every other kind is compared line for line.
fn without_kll(v: Vec<String>) -> Vec<String> {
    v.into_iter().filter(|l| !l.contains(r#""kind":"KLL""#)).collect()
}

#[test]
fn paper_workload_is_the_same_for_one_two_and_three_workers() {
    let req = repo("datasets/requests/paper-workload.json");
    let base = sorted_lines(&run(&["-w", "1", "--requests", &req, "--generate", "stocks:100:400"]).stdout);
    assert!(base.len() > 300, "expected continuous answers, got {}", base.len());
    assert!(base.iter().any(|l| l.contains(r#""kind":"CountMin""#) && l.contains(r#""estimate":"#)));
    assert!(base.iter().any(|l| l.contains(r#""kind":"HyperLogLog""#) && l.contains(r#""estimate":"#)));
    for w in ["2", "3"] {
        let other = sorted_lines(&run(&["-w", w, "--requests", &req, "--generate", "stocks:100:400"]).stdout);
        assert_eq!(base, other, "-w {w} differs from -w 1");
    }
}

#[test]
fn every_kind_and_request_type_is_the_same_for_one_two_and_three_workers() {
    let req = repo("datasets/requests/all-kinds.json");
    let mut outs = Vec::new();
    for w in ["1", "2", "3"] {
        let snaps = tmp(&format!("allkinds-{w}"));
        let s = snaps.to_string_lossy().to_string();
        let out = run(&["-w", w, "--requests", &req, "--generate", "stocks:6:3000", "--snapshots", &s]);
        assert!(snaps.join("cm-eurtry.bin").exists(), "SAVE wrote no file");
        // A field outside the request class is a warning, named once and counted, not an error.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.matches("request field `bogus`").count(), 1, "{stderr}");
        assert!(summary(&out).contains(" request_warnings=1 "), "{}", summary(&out));
        outs.push(without_kll(sorted_lines(&out.stdout)));
    }
    assert_eq!(outs[0], outs[1], "-w 2 differs from -w 1");
    assert_eq!(outs[0], outs[2], "-w 3 differs from -w 1");
    assert!(!outs[0].iter().any(|l| l.contains("kind not built")), "every kind is built");
    let lines = &outs[0];
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    // Errors are estimations: unknown id, bad parameter, unknown synopsis, a LOAD outside the
    // snapshot directory, queries on a deleted synopsis.
    assert!(has(r#""error":"unknown synopsisID 42""#));
    assert!(has("epsilon must be in (0, 1)"));
    assert!(!has("bogus"), "the request with an unknown field was carried out");
    assert!(has(r#""streamID":"NOSUCH""#));
    assert!(has("outside the snapshot directory"));
    assert!(has("deleted by request 35"));
    assert!(has(r#""saved":"cm-eurtry.bin""#));
    // The duplicate construct (request 2) produced nothing of its own.
    assert!(!has(r#""requestID":2,"#));
    // Continuous answers carry windows; the partition-based HLL answers with the dataset's tuples.
    assert!(has(r#""requestID":6,"synopsisID":2,"kind":"HyperLogLog","streamID":"","dataSetKey":"Forex""#));
    // Pair queries: correlated stream pairs of a dataset (DFT), inner product of two streams (AMS).
    assert!(has(r#""requestID":45,"synopsisID":4,"kind":"DFT""#) && has(r#""estimate":[["EURTRY","XAUUSD","#));
    // A continuous pair query answers with the changes of its set.
    assert!(has(r#""requestID":46,"synopsisID":4,"kind":"DFT","streamID":"XAUUSD""#));
    assert!(has(r#""change":"+","member":["EURTRY","XAUUSD"],"estimate":"#));
    assert!(has(r#""query":["NOSUCH","innerProduct"],"error":"no AMS with the same parameters"#));
    for (id, kind) in [
        (4, "CountMin"),
        (8, "BloomFilter"),
        (10, "DFT"),
        (12, "LossyCounting"),
        (18, "AMS"),
        (31, "FrequentItems"),
        (48, "AMS"),
        (15, "StickySampling"),
        (21, "GKQuantiles"),
        (23, "LSH"),
        (25, "WindowSketchQuantiles"),
        (29, "CPC"),
    ] {
        let needle = format!(r#""requestID":{id},"synopsisID""#);
        let line = lines.iter().find(|l| l.contains(&needle)).unwrap_or_else(|| panic!("no answer to request {id}"));
        assert!(line.contains(&format!(r#""kind":"{kind}""#)) && line.contains(r#""estimate":"#), "{line}");
    }
}

fn answer_of(lines: &[String], request_id: u64) -> serde_json::Value {
    let needle = format!(r#""requestID":{request_id},"#);
    let line = lines.iter().find(|l| l.contains(&needle)).unwrap_or_else(|| panic!("no answer to {request_id}"));
    serde_json::from_str(line).expect("estimation is JSON")
}

#[test]
fn save_then_load_in_a_second_run_reproduces_the_answers() {
    let dir = tmp("saveload");
    let snaps = dir.join("snaps");
    let first = dir.join("first.json");
    std::fs::write(
        &first,
        r#"[{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":["CountMin","price","NotQueryable",0.01,0.99,7],"noOfP":2},
{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":[3.2478,"price","Queryable","Ad-hoc"],"requestID":100},
{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["HyperLogLog","price","NotQueryable",0.05],"noOfP":2},
{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["x","price","Queryable","Ad-hoc"],"requestID":101},
{"streamID":"SPY","synopsisID":5,"dataSetKey":"Equity","param":["LossyCounting","volume","NotQueryable",0.01],"noOfP":3},
{"streamID":"SPY","synopsisID":5,"dataSetKey":"Equity","param":[0.05,"FrequentItems","volume","Queryable","Ad-hoc"],"requestID":102},
{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":["SAVE_REQUEST","cm.bin"]},
{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["SAVE_REQUEST","hll.bin"]},
{"streamID":"SPY","synopsisID":5,"dataSetKey":"Equity","param":["SAVE_REQUEST","lossy.bin"]}]"#,
    )
    .expect("write requests");
    let s = snaps.to_string_lossy().to_string();
    let a = sorted_lines(
        &run(&["-w", "2", "--requests", &first.to_string_lossy(), "--generate", "stocks:4:2000", "--snapshots", &s])
            .stdout,
    );
    // Second run: the same constructs, LOAD instead of data, the same queries.
    let second = dir.join("second.json");
    std::fs::write(
        &second,
        r#"{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":["CountMin","price","NotQueryable",0.01,0.99,7],"noOfP":2}
{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":["LOAD_REQUEST","cm.bin"],"requestID":"load-cm"}
{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":[3.2478,"price","Queryable","Ad-hoc"],"requestID":100}
{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["HyperLogLog","price","NotQueryable",0.05],"noOfP":2}
{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["LOAD_REQUEST","hll.bin"]}
{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["x","price","Queryable","Ad-hoc"],"requestID":101}
{"streamID":"SPY","synopsisID":5,"dataSetKey":"Equity","param":["LossyCounting","volume","NotQueryable",0.01],"noOfP":3}
{"streamID":"SPY","synopsisID":5,"dataSetKey":"Equity","param":["LOAD_REQUEST","lossy.bin"]}
{"streamID":"SPY","synopsisID":5,"dataSetKey":"Equity","param":[0.05,"FrequentItems","volume","Queryable","Ad-hoc"],"requestID":102}
{"streamID":"SPY","synopsisID":5,"dataSetKey":"Equity","param":["LOAD_REQUEST","missing.bin"],"requestID":"load-missing"}"#,
    )
    .expect("write requests");
    let empty = dir.join("empty.json");
    std::fs::write(&empty, "").expect("write empty data");
    let b = sorted_lines(
        &run(&[
            "-w",
            "3",
            "--requests",
            &second.to_string_lossy(),
            "--data",
            &empty.to_string_lossy(),
            "--snapshots",
            &s,
        ])
        .stdout,
    );
    for id in [100, 101, 102] {
        let (x, y) = (answer_of(&a, id), answer_of(&b, id));
        assert!(x.get("estimate").is_some(), "{x}");
        for k in ["estimate", "lower", "upper", "confidence"] {
            assert_eq!(x[k], y[k], "request {id}: {k} differs after LOAD");
        }
    }
    assert!(b.iter().any(|l| l.contains(r#""requestID":"load-cm""#) && l.contains(r#""loaded":"cm.bin""#)));
    assert!(b.iter().any(|l| l.contains(r#""requestID":"load-missing""#) && l.contains("cannot read snapshot")));
}

fn tuple(stream: &str, sec: u32, price: &str) -> String {
    format!(
        r#"{{"streamID":"{stream}","dataSetKey":"Forex","date":"01/02/2019","time":"00:{:02}:{:02}","price":{price},"volume":1}}"#,
        sec / 60,
        sec % 60
    )
}

#[test]
fn bad_input_is_counted_dead_lettered_and_leaves_valid_answers_unchanged() {
    let dir = tmp("badinput");
    let r = write_requests(
        &dir,
        r#"{"streamID":"A","synopsisID":1,"dataSetKey":"Forex","param":["CountMin","price","NotQueryable",0.01,0.99,1],"requestID":1}
{"streamID":"A","synopsisID":1,"dataSetKey":"Forex","param":[1.5,"price","Queryable","Continues"],"requestID":2}
{"streamID":"A","synopsisID":4,"dataSetKey":"Forex","param":["DFT","price","NotQueryable",1,4,8,2],"requestID":3}
{"streamID":"A","synopsisID":4,"dataSetKey":"Forex","param":["c","price","Queryable","Ad-hoc"],"requestID":4}
{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["HLL","price","NotQueryable",0.05],"noOfP":2,"requestID":5}
{"streamID":"","synopsisID":2,"dataSetKey":"Forex","param":["x","price","Queryable","Continues"],"requestID":6}"#,
    );
    let mut clean = Vec::new();
    for i in 0..400u32 {
        let stream = if i % 3 == 0 { "B" } else { "A" };
        clean.push(tuple(stream, i, &format!("{}", 1.0 + f64::from(i % 7) * 0.5)));
    }
    let mut dirty = clean.clone();
    dirty.insert(10, "{not json".to_string());
    dirty.insert(20, r#"{"dataSetKey":"Forex","price":1}"#.to_string()); // no streamID
    dirty.insert(30, tuple("A", 31, r#""abc""#)); // non-numeric price for a DFT
    dirty.insert(
        40,
        r#"{"streamID":"A","dataSetKey":"Forex","date":"13/45/2019","time":"00:00:00","price":1}"#.to_string(),
    );
    dirty.insert(300, tuple("A", 5, "1.5")); // far older than the newest tuple: late
    dirty.push(r#"{"streamID":"A","dataSetKey":"Forex","timestamp":"2019-01-02T00:06:39Z","price":[1]}"#.to_string());
    let (clean_path, dirty_path) = (dir.join("clean.json"), dir.join("dirty.json"));
    std::fs::write(&clean_path, clean.join("\n")).expect("write clean");
    std::fs::write(&dirty_path, dirty.join("\n")).expect("write dirty");
    let dead = dir.join("dead.jsonl");
    let good = run(&[
        "-w",
        "2",
        "--requests",
        &r,
        "--data",
        &clean_path.to_string_lossy(),
        "--window",
        "30s",
        "--lateness",
        "20s",
    ]);
    let bad = run(&[
        "-w",
        "2",
        "--requests",
        &r,
        "--data",
        &dirty_path.to_string_lossy(),
        "--window",
        "30s",
        "--lateness",
        "20s",
        "--dead-letter",
        &dead.to_string_lossy(),
    ]);
    assert_eq!(sorted_lines(&good.stdout), sorted_lines(&bad.stdout));
    assert!(
        summary(&good).contains("tuples=400 ") && summary(&good).contains("dead_letters=0 late=0"),
        "{}",
        summary(&good)
    );
    assert!(
        summary(&bad).contains("tuples=400 ") && summary(&bad).contains("dead_letters=6 late=1"),
        "{}",
        summary(&bad)
    );
    let dead_lines = std::fs::read_to_string(&dead).expect("dead letters");
    assert_eq!(dead_lines.lines().count(), 6);
    for needle in
        ["malformed JSON", "missing `streamID`", "not numeric", "bad date", "late:", "must be a number or a string"]
    {
        assert!(dead_lines.contains(needle), "no dead letter for {needle}: {dead_lines}");
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// A hostfile of two processes on free loopback ports, in a fresh temporary directory `name`.
fn two_process_hostfile(name: &str) -> PathBuf {
    let hostfile = tmp(name).join("hosts");
    std::fs::write(&hostfile, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port())).expect("hostfile");
    hostfile
}

#[test]
fn two_processes_on_loopback_give_the_single_process_estimations() {
    let hostfile = two_process_hostfile("cluster");
    let dir = hostfile.parent().expect("the hostfile's directory").to_path_buf();
    let req = repo("datasets/requests/all-kinds.json");
    let snaps: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("snap{i}"))).collect();
    let single = without_kll(sorted_lines(
        &run(&[
            "-w",
            "2",
            "--requests",
            &req,
            "--generate",
            "stocks:6:2000",
            "--snapshots",
            &snaps[0].to_string_lossy(),
        ])
        .stdout,
    ));
    let outs: Vec<PathBuf> = (0..2).map(|p| dir.join(format!("out{p}.json"))).collect();
    let spawn = |p: usize| {
        Command::new(BIN)
            .args(["-w", "2", "-n", "2", "-p", &p.to_string(), "-h", &hostfile.to_string_lossy()])
            .args(["--requests", &req, "--generate", "stocks:6:2000", "--progress", "0"])
            .args(["--snapshots", &snaps[p + 1].to_string_lossy(), "--out", &outs[p].to_string_lossy()])
            .output()
    };
    let (a, b) = std::thread::scope(|s| {
        let h0 = s.spawn(|| spawn(0));
        let h1 = s.spawn(|| spawn(1));
        (h0.join().expect("process 0 thread"), h1.join().expect("process 1 thread"))
    });
    for o in [a.expect("process 0"), b.expect("process 1")] {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let mut union = Vec::new();
    for o in &outs {
        union.extend(String::from_utf8_lossy(&std::fs::read(o).expect("process output")).lines().map(str::to_string));
    }
    union.sort();
    assert_eq!(single, without_kll(union));
}

/// A multi-process job answering to standard output (the default) writes estimations there and
/// nothing else, even when a process starts well before the one it connects to: timely's own
/// connection set-up printed `worker 1: error connecting to worker 0: …; retrying` and `awaiting
/// connections (at 0/1)` to stdout, amid the JSON lines. The two outputs together are the
/// single-process answers.
#[test]
fn processes_answering_to_stdout_write_only_estimations_whatever_order_they_start_in() {
    let hostfile = two_process_hostfile("cluster-stdout");
    let req = repo("datasets/requests/all-kinds.json");
    let args = ["--requests", &req, "--generate", "stocks:6:500"];
    let single = without_kll(sorted_lines(&run(&[&["-w", "2"], &args[..]].concat()).stdout));
    let spawn = |p: usize| {
        Command::new(BIN)
            .args(["-w", "2", "-n", "2", "-p", &p.to_string(), "-h", &hostfile.to_string_lossy()])
            .args(args)
            .args(["--progress", "0"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn saams")
    };
    // Process 1 first: its first connections to process 0 are refused.
    let second = spawn(1);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let first = spawn(0);
    let mut union = Vec::new();
    for child in [first, second] {
        let o = child.wait_with_output().expect("wait for saams");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            assert!(serde_json::from_str::<serde_json::Value>(line).is_ok(), "not an estimation on stdout: {line:?}");
            union.push(line.to_string());
        }
    }
    union.sort();
    assert_eq!(single, without_kll(union));
}

/// A process whose peers never come gives up after `--connect-timeout`, saying which process it
/// waited for, instead of waiting forever; a bad duration is refused.
#[test]
fn a_process_gives_up_on_peers_that_never_connect() {
    let hostfile = two_process_hostfile("cluster-alone");
    let h = hostfile.to_string_lossy();
    let req = repo("datasets/requests/all-kinds.json");
    let fail = |args: &[&str]| {
        Command::new(BIN).args(args).args(["--requests", &req, "--progress", "0"]).output().expect("run saams")
    };
    for (p, missing) in [("0", "processes [1] did not connect"), ("1", "process 0 at 127.0.0.1:")] {
        let out = fail(&["-n", "2", "-p", p, "-h", &h, "--connect-timeout", "300ms", "--generate", "stocks:1:10"]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(missing), "process {p}: {err}");
        assert!(out.stdout.is_empty(), "process {p} wrote to stdout: {}", String::from_utf8_lossy(&out.stdout));
    }
    let out = fail(&["-n", "2", "-p", "0", "-h", &h, "--connect-timeout", "soon", "--generate", "stocks:1:10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--connect-timeout"));
}

#[test]
fn help_lists_every_flag_with_its_default() {
    let out = Command::new(BIN).arg("--help").output().expect("run saams --help");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "-w, --workers",
        "-n, --processes",
        "-p, --process",
        "-h, --hostfile",
        "--connect-timeout",
        "--requests",
        "--data",
        "--generate",
        "--out",
        "--dead-letter",
        "--snapshots",
        "--window",
        "--lateness",
        "--no-synopses",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
    for default in [
        "[default: 1]",
        "[default: stocks:100:2000]",
        "[default: 60s]",
        "[default: 0s]",
        "[default: -]",
        "[default: 5m]",
    ] {
        assert!(help.contains(default), "--help lacks {default}");
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn real_ais_file_distinct_vessels_within_the_bound_for_any_worker_count() {
    let dir = tmp("ais");
    let r = write_requests(
        &dir,
        r#"{"streamID":"","synopsisID":2,"dataSetKey":"US","param":["HLL","streamID","NotQueryable",0.02],"noOfP":2}
{"streamID":"","synopsisID":2,"dataSetKey":"US","param":["x","streamID","Queryable","Ad-hoc"],"requestID":1}
{"streamID":"","synopsisID":8,"dataSetKey":"US","param":["GK","speed","NotQueryable",0.01],"noOfP":3}
{"streamID":"","synopsisID":8,"dataSetKey":"US","param":[0.9,"speed","Queryable","Ad-hoc"],"requestID":2}"#,
    );
    let data = concat!(env!("SAAMS_DATASETS_DIR"), "/ais").to_string();
    let one = sorted_lines(&run(&["-w", "1", "--requests", &r, "--data", &data, "--window", "1h"]).stdout);
    let three = sorted_lines(&run(&["-w", "3", "--requests", &r, "--data", &data, "--window", "1h"]).stdout);
    assert_eq!(one, three);
    // The shared sample holds 8,469 distinct vessels (datasets README).
    let distinct = answer_of(&one, 1);
    let (lo, hi) = (distinct["lower"].as_f64().expect("lower"), distinct["upper"].as_f64().expect("upper"));
    assert!(lo <= 8469.0 && 8469.0 <= hi, "{distinct}");
    assert!(answer_of(&one, 2)["estimate"].as_f64().is_some());
}

#[test]
fn malformed_csv_rows_are_dead_lettered_without_changing_answers() {
    let dir = tmp("csv");
    let (clean_dir, dirty_dir) = (dir.join("clean"), dir.join("dirty"));
    std::fs::create_dir_all(&clean_dir).expect("mkdir");
    std::fs::create_dir_all(&dirty_dir).expect("mkdir");
    let mut rows = vec!["Date,Time,Price,Volume,Exchange,SaleCondition,Suspicious".to_string()];
    for i in 0..300u32 {
        rows.push(format!(
            "2013-10-07,09:{:02}:{:02}.000,{}.{:02},{},P,0,0",
            30 + i / 60,
            i % 60,
            160 + i % 5,
            i % 7,
            100 * (1 + i % 3)
        ));
    }
    std::fs::write(clean_dir.join("equity_usa_SPY_tick_trade.csv"), rows.join("\n")).expect("write");
    let mut dirty = rows.clone();
    dirty.insert(50, "2013-10-07,09:30:50.000,abc,100,P,0,0".to_string());
    dirty.insert(100, "2013-10-07,not a time,1,1".to_string());
    dirty.insert(150, "garbage".to_string());
    std::fs::write(dirty_dir.join("equity_usa_SPY_tick_trade.csv"), dirty.join("\n")).expect("write");
    let r = write_requests(
        &dir,
        r#"{"streamID":"SPY","synopsisID":1,"dataSetKey":"equity_usa","param":["CountMin","volume","NotQueryable",0.01,0.99,3]}
{"streamID":"SPY","synopsisID":1,"dataSetKey":"equity_usa","param":[200,"volume","Queryable","Continues"],"requestID":1}
{"streamID":"","synopsisID":10,"dataSetKey":"equity_usa","param":["WSQ","price","NotQueryable",0.01,100],"noOfP":2}
{"streamID":"","synopsisID":10,"dataSetKey":"equity_usa","param":[0.5,"price","Queryable","Continues"],"requestID":2}"#,
    );
    let dead = dir.join("dead.jsonl");
    let good = run(&["-w", "2", "--requests", &r, "--data", &clean_dir.to_string_lossy()]);
    let bad = run(&[
        "-w",
        "3",
        "--requests",
        &r,
        "--data",
        &dirty_dir.to_string_lossy(),
        "--dead-letter",
        &dead.to_string_lossy(),
    ]);
    let good_lines = sorted_lines(&good.stdout);
    assert!(good_lines.iter().any(|l| l.contains(r#""requestID":2,"#) && l.contains(r#""estimate":"#)));
    assert_eq!(good_lines, sorted_lines(&bad.stdout));
    assert!(summary(&bad).contains("tuples=300 ") && summary(&bad).contains("dead_letters=3 "), "{}", summary(&bad));
    let dead_lines = std::fs::read_to_string(&dead).expect("dead letters");
    assert!(
        dead_lines.contains("equity_usa_SPY_tick_trade.csv:51") && dead_lines.contains("not a number"),
        "{dead_lines}"
    );
}

#[test]
fn byte_ranges_of_a_large_file_read_every_line_once_whatever_the_split() {
    let dir = tmp("chunks");
    let mut rows = vec!["Date,Time,Price,Volume".to_string()];
    for i in 0..500u32 {
        rows.push(format!("2013-10-07,10:{:02}:{:02}.000,{}.5,{}", i / 60, i % 60, 100 + i % 9, 1 + i % 4));
    }
    let file = dir.join("equity_usa_IBM_tick_trade.csv");
    std::fs::write(&file, rows.join("\n") + "\n").expect("write");
    let line_len = (rows[1].len() + 1).to_string();
    let r = write_requests(
        &dir,
        r#"{"streamID":"IBM","synopsisID":5,"dataSetKey":"equity_usa","param":["Lossy","volume","NotQueryable",0.01]}
{"streamID":"IBM","synopsisID":5,"dataSetKey":"equity_usa","param":[2,"countEstimation","volume","Queryable","Continues"],"requestID":1}"#,
    );
    let f = file.to_string_lossy().to_string();
    let whole = run(&["-w", "1", "--requests", &r, "--data", &f, "--chunk-bytes", "0"]);
    assert!(summary(&whole).contains("tuples=500 "), "{}", summary(&whole));
    for (w, chunk) in [("2", "1"), ("3", "7"), ("2", line_len.as_str()), ("3", "1000")] {
        let split = run(&["-w", w, "--requests", &r, "--data", &f, "--chunk-bytes", chunk]);
        assert!(summary(&split).contains("tuples=500 "), "chunk {chunk}: {}", summary(&split));
        assert!(summary(&split).contains("dead_letters=0"), "chunk {chunk}: {}", summary(&split));
        assert_eq!(sorted_lines(&whole.stdout), sorted_lines(&split.stdout), "chunk {chunk}");
    }
}

/// Standard input given after a file is read whatever the number of workers: it was unit 1,
/// which with two workers nobody read (its 300 tuples lost, the summary counting only the file's).
#[test]
fn stdin_after_a_file_is_read_by_any_number_of_workers() {
    let dir = tmp("stdin-after-file");
    let r = write_requests(
        &dir,
        r#"{"dataSetKey":"Forex","noOfP":1,"param":["HyperLogLog","price","NotQueryable",0.02],"requestID":1,"streamID":"EURTRY","synopsisID":2}
{"dataSetKey":"Forex","noOfP":1,"param":["distinct","price","Queryable","Continues"],"requestID":2,"streamID":"EURTRY","synopsisID":2}"#,
    );
    let lines =
        |from: u32| (from..from + 300).map(|s| tuple("EURTRY", s, &format!("{}.5", s % 97))).collect::<Vec<_>>();
    let file = dir.join("first.jsonl");
    std::fs::write(&file, lines(0).join("\n") + "\n").expect("write file");
    let piped = lines(300).join("\n") + "\n";
    let f = file.to_string_lossy().to_string();
    let answers = |workers: &str| {
        use std::io::Write as _;
        let mut child = Command::new(BIN)
            .args(["-w", workers, "--requests", &r, "--data", &f, "--data", "-", "--progress", "0"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run saams");
        child.stdin.take().expect("stdin").write_all(piped.as_bytes()).expect("feed stdin");
        let out = child.wait_with_output().expect("wait for saams");
        assert!(out.status.success(), "-w {workers}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(summary(&out).contains("tuples=600 "), "-w {workers}: {}", summary(&out));
        sorted_lines(&out.stdout)
    };
    let one = answers("1");
    assert_eq!(one.len(), 10, "one distinct count per 60 s window: {one:?}");
    assert_eq!(answers("2"), one);
    assert_eq!(answers("3"), one);
    // Two readers of one stdin split lines between their buffers: `-` twice is refused.
    let twice = Command::new(BIN)
        .args(["--requests", &r, "--data", "-", "--data", "-", "--progress", "0"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run saams");
    assert!(!twice.status.success());
    assert!(
        String::from_utf8_lossy(&twice.stderr).contains("standard input is given more than once"),
        "{}",
        String::from_utf8_lossy(&twice.stderr)
    );
}

/// A stream named in requests whose name is longer than 16 bytes, alone in its dataset: its
/// values reached no synopsis (the router's cache answered the dataset-wide groups, none), so the
/// job printed no estimation at all.
#[test]
fn a_long_stream_name_alone_in_its_dataset_is_routed_to_its_synopses() {
    let dir = tmp("long-stream");
    let long = "equity_usa_SPY_tick_trade";
    let r = write_requests(
        &dir,
        format!(
            r#"{{"dataSetKey":"D","noOfP":1,"param":["HyperLogLog","price","NotQueryable",0.02],"requestID":1,"streamID":"{long}","synopsisID":2}}
{{"dataSetKey":"D","noOfP":1,"param":["distinct","price","Queryable","Continues"],"requestID":2,"streamID":"{long}","synopsisID":2}}"#
        ),
    );
    let lines: Vec<String> = (0..100u32)
        .map(|s| {
            format!(
                r#"{{"streamID":"{long}","dataSetKey":"D","date":"01/02/2019","time":"00:00:{:02}","price":{s},"volume":1}}"#,
                s * 60 / 100
            )
        })
        .collect();
    let data = dir.join("long.jsonl");
    std::fs::write(&data, lines.join("\n") + "\n").expect("write tuples");
    let d = data.to_string_lossy().to_string();
    for workers in ["1", "2"] {
        let out = run(&["-w", workers, "--requests", &r, "--data", &d]);
        let answers = sorted_lines(&out.stdout);
        assert_eq!(answers.len(), 1, "-w {workers}: {answers:?} {}", summary(&out));
        let estimate = answer_of(&answers, 2)["estimate"].as_f64().expect("a distinct count");
        assert!((estimate - 100.0).abs() <= 4.0, "-w {workers}: 100 distinct prices, estimated {estimate}");
    }
}

/// Continuous set-valued answers are changes: over four 30 s windows, streams A and B move
/// together throughout (a stable pair: one `+` line in the first window, nothing after), C moves
/// with them for the first minute and against them after it (its pairs get a `-` line in the
/// third window); frequent item 2 leaves the set in the second window while item 1 stays.
#[test]
fn continuous_set_answers_are_emitted_as_changes() {
    let dir = tmp("changes");
    let mut requests = Vec::new();
    for s in ["A", "B", "C"] {
        requests.push(format!(
            r#"{{"streamID":"{s}","synopsisID":4,"dataSetKey":"Forex","param":["DFT","price","NotQueryable",1,4,8,2]}}"#
        ));
    }
    requests.push(
        r#"{"streamID":"A","synopsisID":4,"dataSetKey":"Forex","param":[0.9,"correlation","price","Queryable","Continues"],"requestID":1}"#.into(),
    );
    requests.push(
        r#"{"streamID":"S","synopsisID":5,"dataSetKey":"Forex","param":["LossyCounting","volume","NotQueryable",0.01],"noOfP":2}"#.into(),
    );
    requests.push(
        r#"{"streamID":"S","synopsisID":5,"dataSetKey":"Forex","param":[0.3,"FrequentItems","volume","Queryable","Continues"],"requestID":2}"#.into(),
    );
    let r = write_requests(&dir, requests.join("\n"));
    let mut data = Vec::new();
    for sec in 0..120u32 {
        let t = f64::from(sec);
        let x = (t * 0.9).sin() + 0.5 * (t * 0.37).sin() + 2.0;
        let c = if sec < 60 { x } else { 5.0 - x };
        for (s, p) in [("A", x), ("B", 2.0 * x + 1.0), ("C", c)] {
            data.push(tuple(s, sec, &format!("{p}")));
        }
        // Volumes of S: window 1: 1 ×20, 2 ×10; window 2: 1 ×20, 3 ×10; then only 1s.
        let volume = match (sec / 30, sec % 3) {
            (0, 0) => 2,
            (1, 0) => 3,
            _ => 1,
        };
        data.push(tuple("S", sec, "1").replace(r#""volume":1"#, &format!(r#""volume":{volume}"#)));
    }
    let path = dir.join("data.json");
    std::fs::write(&path, data.join("\n")).expect("write data");
    let d = path.to_string_lossy().to_string();
    let base = sorted_lines(&run(&["-w", "1", "--requests", &r, "--data", &d, "--window", "30s"]).stdout);
    for w in ["2", "3"] {
        let other = sorted_lines(&run(&["-w", w, "--requests", &r, "--data", &d, "--window", "30s"]).stdout);
        assert_eq!(base, other, "-w {w} differs from -w 1");
    }
    let changes = |id: u64| -> Vec<(String, String, String)> {
        let needle = format!(r#""requestID":{id},"#);
        let mut v: Vec<_> = base
            .iter()
            .filter(|l| l.contains(&needle))
            .map(|l| {
                let j: serde_json::Value = serde_json::from_str(l).expect("estimation is JSON");
                let change = j["change"].as_str().unwrap_or_else(|| panic!("not a change line: {l}")).to_string();
                assert_eq!(j["estimate"].is_number(), change == "+", "{l}");
                // Landmark answers: the window whose close changed the set ends at `end`.
                let end = saams::api::time::parse_timestamp(j["window"]["end"].as_str().expect("window"));
                let closed = saams::api::time::format_timestamp(end.expect("time") - 30_000);
                (closed, change, j["member"].to_string())
            })
            .collect();
        v.sort();
        v
    };
    let at = |m: u32, s: u32| format!("2019-01-02T00:{m:02}:{s:02}Z");
    let expect = |v: &[(String, &str, &str)]| -> Vec<(String, String, String)> {
        let mut v: Vec<_> = v.iter().map(|(w, c, m)| (w.clone(), c.to_string(), m.to_string())).collect();
        v.sort();
        v
    };
    assert_eq!(
        changes(1),
        expect(&[
            (at(0, 0), "+", r#"["A","B"]"#),
            (at(0, 0), "+", r#"["A","C"]"#),
            (at(0, 0), "+", r#"["B","C"]"#),
            (at(1, 0), "-", r#"["A","C"]"#),
            (at(1, 0), "-", r#"["B","C"]"#),
        ]),
        "{base:#?}"
    );
    assert_eq!(changes(2), expect(&[(at(0, 0), "+", "1"), (at(0, 0), "+", "2"), (at(0, 30), "-", "2")]), "{base:#?}");
}

/// Values go to their synopses in event-time order (then arrival sequence) as the watermark
/// passes them, not in arrival order: an input shuffled within the lateness bound, whole or split
/// into files read by different workers, with any number of workers, answers exactly as the same
/// tuples in time order — order-sensitive kinds (DFT, window quantiles, LSH) and order-dependent
/// ones (GK) alike. Times are distinct per stream, so the order is the event-time order alone.
#[test]
fn out_of_order_input_within_the_lateness_answers_as_the_sorted_input() {
    let dir = tmp("reorder");
    let r = write_requests(
        &dir,
        r#"{"streamID":"A","synopsisID":4,"dataSetKey":"Forex","param":["DFT","price","NotQueryable",1,5,20,4],"requestID":1}
{"streamID":"A","synopsisID":4,"dataSetKey":"Forex","param":["coefficients","price","Queryable","Continues"],"requestID":2}
{"streamID":"A","synopsisID":10,"dataSetKey":"Forex","param":["WindowSketchQuantiles","price","NotQueryable",0.01,50],"noOfP":2,"requestID":3}
{"streamID":"A","synopsisID":10,"dataSetKey":"Forex","param":[0.9,"price","Queryable","Continues"],"requestID":4}
{"streamID":"A","synopsisID":8,"dataSetKey":"Forex","param":["GKQuantiles","price","NotQueryable",0.05],"requestID":5}
{"streamID":"A","synopsisID":8,"dataSetKey":"Forex","param":[0.5,"price","Queryable","Continues"],"requestID":6}
{"streamID":"A","synopsisID":1,"dataSetKey":"Forex","param":["CountMin","price","NotQueryable",0.01,0.99,1],"noOfP":2,"requestID":7}
{"streamID":"A","synopsisID":1,"dataSetKey":"Forex","param":[1.5,"price","Queryable","Continues"],"requestID":8}
{"streamID":"B","synopsisID":9,"dataSetKey":"Forex","param":["LSH","price","NotQueryable",100,500,20],"requestID":9}
{"streamID":"B","synopsisID":9,"dataSetKey":"Forex","param":["signature","price","Queryable","Ad-hoc"],"requestID":10}"#,
    );
    let mut sorted = Vec::new();
    for i in 0..600u32 {
        for stream in ["A", "B"] {
            let price = 1.0 + f64::from((i * 37 + u32::from(stream == "B") * 5) % 11) * 0.5;
            sorted.push(tuple(stream, i, &format!("{price}")));
        }
    }
    // Each block of 16 lines (8 seconds) reversed: every tuple arrives up to 8 s out of order.
    let shuffled: Vec<String> = sorted.chunks(16).flat_map(|c| c.iter().rev().cloned()).collect();
    assert_ne!(sorted, shuffled);
    let write = |name: &str, lines: &[String]| {
        let p = dir.join(name);
        std::fs::write(&p, lines.join("\n") + "\n").expect("write input");
        p.to_string_lossy().to_string()
    };
    let sorted_file = write("sorted.json", &sorted);
    let shuffled_file = write("shuffled.json", &shuffled);
    // The shuffled input as three files (each a third of the time span, so each unit is in order
    // within the lateness): different units, read by different workers.
    let parts: Vec<String> =
        shuffled.chunks(400).enumerate().map(|(i, c)| write(&format!("part{i}.json"), c)).collect();
    let args = |w: &'static str, data: &[String], chunk: &'static str| {
        let mut a: Vec<String> =
            ["-w", w, "--requests", &r, "--window", "30s", "--lateness", "20s"].iter().map(|s| s.to_string()).collect();
        a.extend(["--chunk-bytes".to_string(), chunk.to_string()]);
        for d in data {
            a.extend(["--data".to_string(), d.clone()]);
        }
        a
    };
    let answers = |a: Vec<String>| {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = run(&refs);
        assert!(summary(&out).contains("tuples=1200 ") && summary(&out).contains("late=0"), "{}", summary(&out));
        sorted_lines(&out.stdout)
    };
    let base = answers(args("1", std::slice::from_ref(&sorted_file), "0"));
    assert_eq!(base.iter().filter(|l| l.contains(r#""requestID":2,"#)).count(), 20, "a DFT answer per window");
    for (id, kind) in [(4, "WindowSketchQuantiles"), (6, "GKQuantiles"), (8, "CountMin"), (10, "LSH")] {
        let needle = format!(r#""requestID":{id},"synopsisID""#);
        assert!(base.iter().any(|l| l.contains(&needle) && l.contains(kind) && l.contains(r#""estimate":"#)));
    }
    for (w, data, chunk) in [
        ("1", vec![shuffled_file.clone()], "0"),
        ("2", vec![shuffled_file.clone()], "0"),
        ("3", vec![shuffled_file.clone()], "1000"),
        ("3", parts.clone(), "0"),
        ("2", parts.clone(), "0"),
        ("1", parts.clone(), "0"),
    ] {
        assert_eq!(
            base,
            answers(args(w, &data, chunk)),
            "-w {w} over {} file(s) differs from the sorted input",
            data.len()
        );
    }
}
