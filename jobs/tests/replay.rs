//! The `replay` binary: output equals the converter's, malformed rows are counted, and pacing holds
//! loosely (counts over time within ±10 %, measured by the binary from its first tuple).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use saams::api::Tuple;

fn replay(args: &[&str], stdin: Option<&str>) -> (String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_replay"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start replay");
    if let Some(text) = stdin {
        child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write stdin");
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("run replay");
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(out.status.success(), "replay {args:?} failed: {stderr}");
    (stdout, stderr)
}

/// The `key=value` pairs of the final summary line.
fn summary(stderr: &str) -> std::collections::HashMap<String, f64> {
    let line = stderr.lines().rfind(|l| l.starts_with("replay: done")).expect("summary line");
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("saams-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn files_replay_as_reference_json_with_malformed_rows_counted() {
    let dir = scratch("txt");
    let path = dir.join("Forex\u{b7}EURTRY\u{b7}NoExpiry.txt");
    std::fs::write(&path, "01/02/2019,00:00:01,6.0654,1\n01/02/2019,00:00:0x,6.0654,1\n01/02/2019,00:00:02,6.0656,1\n")
        .unwrap();
    let (out, err) = replay(&[path.to_str().unwrap(), "--progress", "none"], None);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        r#"{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654,"volume":1}"#
    );
    assert_eq!(lines.len(), 2);
    let s = summary(&err);
    assert_eq!((s["tuples"], s["malformed"], s["bytes"]), (2.0, 1.0, out.len() as f64));
    assert!(err.contains("NoExpiry.txt:2: Time"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--validate` parses every row and writes nothing: the same tuples and malformed rows counted as
/// a replay of the input, nothing on stdout; it cannot be combined with an output.
#[test]
fn validate_counts_what_a_replay_would_write_and_writes_nothing() {
    let dir = scratch("validate");
    let path = dir.join("ticks.jsonl");
    let good = r#"{"streamID":"A","objectID":null,"dataSetKey":"D","date":"01/02/2019","time":"00:00:01","price":1.5,"volume":1}"#;
    let text = format!("{good}\n{{\"streamID\":\"A\"}}\n{good}\nnot json\n{good}\n");
    std::fs::write(&path, &text).unwrap();
    let p = path.to_str().unwrap();
    let (out, err) = replay(&[p, "--validate", "--progress", "none"], None);
    assert_eq!(out, "");
    let (replayed, replay_err) = replay(&[p, "--progress", "none"], None);
    let (checked, written) = (summary(&err), summary(&replay_err));
    assert_eq!((checked["tuples"], checked["malformed"], checked["bytes"]), (3.0, 2.0, 0.0));
    assert_eq!((written["tuples"], written["malformed"]), (3.0, 2.0));
    assert_eq!(replayed.lines().count(), 3);
    assert!(err.contains("ticks.jsonl:2"), "{err}");
    let (out, _) = replay(&["--generate", "stocks:3:20", "--validate", "--progress", "none"], None);
    assert_eq!(out, "");
    let refused = Command::new(env!("CARGO_BIN_EXE_replay"))
        .args([p, "--validate", "--output", dir.join("x").to_str().unwrap()])
        .output()
        .expect("run replay");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--output"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stdin_limit_scale_and_generator() {
    let json = r#"{"streamID":"A","dataSetKey":"D","date":"2019-01-02","time":"00:00:01","price":1.5,"volume":1}"#;
    let (out, _) = replay(&["-", "--progress", "none"], Some(&format!("{json}\n{json}\n")));
    assert_eq!(out.lines().count(), 2);
    assert_eq!(Tuple::from_json(out.lines().next().unwrap()).unwrap(), Tuple::from_json(json).unwrap());

    let (out, err) = replay(&["--generate", "ais:7:30", "--limit", "100", "--progress", "none"], None);
    assert_eq!((out.lines().count(), summary(&err)["tuples"]), (100, 100.0));
    let times: Vec<i64> = out.lines().map(|l| Tuple::from_json(l).unwrap().time_ms.unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "generator output is in event-time order");

    let (out, _) = replay(&["--generate", "stocks:3:20", "--scale", "9", "--progress", "none"], None);
    let ids: std::collections::HashSet<String> = out.lines().map(|l| Tuple::from_json(l).unwrap().stream_id).collect();
    assert_eq!((out.lines().count(), ids.len()), (180, 9));
}

#[test]
fn rate_control_holds_within_ten_percent() {
    // 4 000 tuples at 2 000/s: about 2 s. The binary times itself from the first tuple.
    let (out, err) = replay(
        &["--generate", "stocks:4:1000", "--rate", "2000", "--progress", "plain", "--progress-interval", "0.5"],
        None,
    );
    assert_eq!(out.lines().count(), 4000);
    let s = summary(&err);
    assert!((1.8..2.2).contains(&s["seconds"]), "{err}");
    assert!((1800.0..2200.0).contains(&s["rate"]), "{err}");
    // Not a terminal: plain periodic progress lines.
    assert!(err.lines().filter(|l| l.starts_with("replay: progress")).count() >= 2, "{err}");
}

#[test]
fn speed_control_follows_event_time() {
    let (out, _) = replay(&["--generate", "stocks:2:300", "--progress", "none"], None);
    let times: Vec<i64> = out.lines().map(|l| Tuple::from_json(l).unwrap().time_ms.unwrap()).collect();
    let span_s = (times[times.len() - 1] - times[0]) as f64 / 1000.0;
    // Replay the same event-time span in about 1.5 s.
    let speed = span_s / 1.5;
    let (_, err) = replay(&["--generate", "stocks:2:300", "--speed", &speed.to_string(), "--progress", "none"], None);
    let secs = summary(&err)["seconds"];
    assert!((1.35..1.65).contains(&secs), "span {span_s} s at speed {speed}: {err}");
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn merge_replays_a_directory_in_event_time_order() {
    let dir = PathBuf::from(env!("SAAMS_DATASETS_DIR")).join("stocks/minute");
    let (out, err) = replay(&[dir.to_str().unwrap(), "--merge", "--progress", "none"], None);
    let times: Vec<i64> = out.lines().map(|l| Tuple::from_json(l).unwrap().time_ms.unwrap()).collect();
    assert_eq!((times.len(), summary(&err)["malformed"]), (14_936, 0.0));
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn output_dash_writes_to_stdout_not_a_file_named_dash() {
    let dir = scratch("dash");
    let out = Command::new(env!("CARGO_BIN_EXE_replay"))
        .args(["--generate", "stocks:2:5", "--output", "-", "--progress", "none"])
        .current_dir(&dir)
        .output()
        .expect("run replay");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 10);
    assert!(stdout.lines().all(|l| Tuple::from_json(l).is_ok()));
    assert!(!dir.join("-").exists(), "a file named `-` was created");
}

/// Each binary's `--help` starts with what that binary does (they once all showed the package's
/// one-line description). The measurement tools' binaries are checked in `saams-tools`.
#[test]
fn every_binary_describes_itself() {
    let mut firsts = Vec::new();
    for (bin, word) in [(env!("CARGO_BIN_EXE_saams"), "synopses"), (env!("CARGO_BIN_EXE_replay"), "Replay")] {
        let out = Command::new(bin).arg("--help").output().expect("run --help");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let first = text.lines().next().unwrap_or_default().to_string();
        assert!(first.contains(word), "{bin}: {first:?}");
        assert!(!first.contains(env!("CARGO_PKG_DESCRIPTION")), "{bin} shows the package description: {first:?}");
        firsts.push(first);
    }
    firsts.sort();
    firsts.dedup();
    assert_eq!(firsts.len(), 2);
}
