//! The `saams` binary on a stream that does not end: `--generate stocks:N` without a tuple count
//! runs until SIGTERM, `--rate` paces it, and at the signal the job closes its windows and exits
//! normally with its summary. Bad `--rate` and `--generate` values are refused with a reason.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_saams");

/// Long enough for a loaded machine; a job that hangs fails the test instead of hanging it.
const DEADLINE: Duration = Duration::from_secs(120);

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-unbounded-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// A Count-Min on EURTRY's volume (stream 0 of `stocks:3`) answered at every window close.
fn continuous_count_min(dir: &std::path::Path) -> String {
    let path = dir.join("requests.json");
    std::fs::write(
        &path,
        concat!(
            r#"{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":["CountMin","volume","NotQueryable",0.002,0.99,12345],"noOfP":1,"requestID":1}"#,
            "\n",
            r#"{"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":[1,"volume","Queryable","Continues"],"requestID":2}"#,
            "\n"
        ),
    )
    .expect("write requests");
    path.to_string_lossy().into_owned()
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill").args([name, &child.id().to_string()]).status().expect("run kill");
    assert!(status.success(), "kill {name} failed");
}

/// Wait for the child to exit (killing it and failing after [`DEADLINE`]).
fn wait(mut child: Child, started: Instant) -> std::process::ExitStatus {
    loop {
        if let Some(status) = child.try_wait().expect("wait for saams") {
            return status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("saams did not exit within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `key=value` figures of the summary line.
fn summary(stderr: &str) -> std::collections::HashMap<String, f64> {
    let line = stderr.lines().find(|l| l.starts_with("summary ")).unwrap_or_else(|| panic!("no summary: {stderr}"));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.into(), v.parse().ok()?)))
        .collect()
}

#[test]
fn an_unbounded_paced_generator_runs_until_sigterm_then_closes_its_windows() {
    let dir = tmp("sigterm");
    let requests = continuous_count_min(&dir);
    let rate = 2000.0;
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args(["-w", "2", "--requests", &requests, "--generate", "stocks:3", "--rate", "2000", "--window", "1s"])
        .args(["--progress", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start saams");
    // Read the estimations on a thread; the test waits for the 50th.
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            lines.push(line.expect("read stdout"));
            if lines.len() == 50 {
                let _ = tx.send(());
            }
        }
        lines
    });
    let stderr = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || std::io::read_to_string(stderr).expect("read stderr"));
    if rx.recv_timeout(DEADLINE).is_err() {
        let _ = child.kill();
        panic!("no 50 estimations within {DEADLINE:?}: {}", errors.join().unwrap_or_default());
    }
    signal(&child, "-TERM");
    let status = wait(child, started);
    let elapsed = started.elapsed().as_secs_f64();
    let (lines, stderr) = (reader.join().expect("stdout thread"), errors.join().expect("stderr thread"));
    assert!(status.success(), "saams exited with {status} at SIGTERM: {stderr}");
    let s = summary(&stderr);
    // Every estimation the job counted was written before it exited (its windows were closed
    // and flushed), and each is a whole Count-Min answer.
    assert_eq!(s["estimations"], lines.len() as f64, "{stderr}");
    assert!(lines.len() >= 50);
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!((v["kind"].as_str(), v["requestID"].as_u64()), (Some("CountMin"), Some(2)), "{line}");
    }
    // Paced: no more than 3× the rate over the run (unpaced, the generator reads millions per
    // second), and it did read.
    let tuples = s["tuples"];
    assert!(tuples > 0.0 && tuples <= 3.0 * rate * elapsed, "{tuples} tuples in {elapsed:.2} s at --rate {rate}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn refused(args: &[&str]) -> String {
    let out: Output = Command::new(BIN).args(args).output().expect("run saams");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "saams {args:?} should fail");
    assert_eq!(out.stdout, b"", "no output before the error");
    stderr
}

#[test]
fn bad_rates_and_generator_specs_are_refused_with_a_reason() {
    let dir = tmp("refused");
    let requests = continuous_count_min(&dir);
    for rate in ["0", "abc", "-5", "inf"] {
        let err = refused(&["--requests", &requests, "--generate", "stocks:3", &format!("--rate={rate}")]);
        assert!(err.contains("--rate") && err.contains("positive number of tuples per second"), "{rate}: {err}");
    }
    for (spec, reason) in [
        ("stocks:abc", "the number of streams N must be a non-negative integer"),
        ("stocks:3:abc", "tuples per stream T must be a non-negative integer or `unbounded`"),
        ("ais:0", "at least 1"),
    ] {
        let err = refused(&["--requests", &requests, "--generate", spec]);
        assert!(err.contains("--generate") && err.contains(reason), "{spec}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
