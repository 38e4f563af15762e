//! Checkpoints and recovery: a job killed with SIGKILL (`kill -9`) and started again with the
//! same command and `--checkpoints` directory ends with exactly the output of a run without the
//! crash — every line once (sorted, byte for byte), whatever the point of the kill, a crash in
//! the middle of writing a checkpoint, a damaged newest checkpoint, or another `-w` on restart.
//!
//! KLL answers are left out of the comparisons: Apache DataSketches' KLL compacts with an
//! unseeded random generator, so two runs of the same input differ (see engine.rs).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod checkpoint_common;
mod live_common;
use live_common::{Live, answers_from};

use checkpoint_common::{assert_same, complete, fresh_dir, kill_after, nanos, newest_id, sorted_file, stderr_of};

const BIN: &str = env!("CARGO_BIN_EXE_saams");
const REPLAY: &str = env!("CARGO_BIN_EXE_replay");

fn repo(rel: &str) -> String {
    format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    fresh_dir("ckpt", name)
}

fn check(out: Output, what: &str) -> Output {
    assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The job's arguments: the request script covering every kind, on 6 generated streams of 20,000
/// tuples (about 440 one-minute windows), or on `data`.
fn job_args(dir: &Path, data: Option<&Path>) -> Vec<String> {
    let mut args: Vec<String> = ["--requests", &repo("datasets/requests/all-kinds.json"), "--progress", "0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--snapshots".to_string(), dir.join("snapshots").display().to_string()]);
    match data {
        Some(d) => {
            args.extend(["--data".to_string(), d.display().to_string(), "--chunk-bytes".into(), "400000".into()])
        }
        None => args.extend(["--generate".to_string(), "stocks:6:20000".to_string()]),
    }
    std::fs::create_dir_all(dir.join("snapshots")).expect("snapshot dir");
    args
}

/// The output of a run without checkpoints.
fn uninterrupted(dir: &Path, data: Option<&Path>, workers: &str) -> Vec<String> {
    let out = dir.join("uninterrupted.json");
    check(
        Command::new(BIN)
            .args(job_args(&dir.join("plain"), data))
            .args(["-w", workers, "--out"])
            .arg(&out)
            .output()
            .expect("run saams"),
        "the uninterrupted run",
    );
    sorted_file(&out)
}

/// Start the checkpointed job (paced with `--rate` when `rate` is given, so it can be killed
/// mid-replay); stdout/stderr go to files in `dir`.
fn start(dir: &Path, data: Option<&Path>, workers: &str, rate: Option<&str>, extra: &[&str]) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.args(job_args(dir, data))
        .args(["-w", workers, "--checkpoint-interval", "150ms", "--checkpoints"])
        .arg(dir.join("checkpoints"))
        .arg("--out")
        .arg(dir.join("out.json"))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("stderr-{}", nanos()))).expect("stderr file"));
    if let Some(r) = rate {
        cmd.args(["--rate", r]);
    }
    cmd.spawn().expect("start saams")
}

/// Run the checkpointed job to its end (no pacing) and return its sorted output.
fn finish(dir: &Path, data: Option<&Path>, workers: &str) -> Vec<String> {
    let mut child = start(dir, data, workers, None, &[]);
    let status = child.wait().expect("wait for saams");
    assert!(status.success(), "the resumed run failed: {}", stderr_of(dir));
    sorted_file(&dir.join("out.json"))
}

#[test]
fn a_generator_job_killed_at_several_points_ends_with_the_uninterrupted_answers() {
    let dir = tmp("generator");
    let want = uninterrupted(&dir, None, "2");
    assert!(want.len() > 1000, "expected many answers, got {}", want.len());
    for (i, kills) in [vec![1], vec![4], vec![2, 3]].into_iter().enumerate() {
        let run = dir.join(format!("run{i}"));
        std::fs::create_dir_all(&run).expect("run dir");
        for n in kills {
            let mut child = start(&run, None, "2", Some("40000"), &[]);
            kill_after(&mut child, &run, n);
        }
        let got = finish(&run, None, "2");
        assert!(stderr_of(&run).contains("resuming from checkpoint"), "{}", stderr_of(&run));
        assert_same(&got, &want, &format!("kill points {i}"));
    }
}

/// The generator's 6 streams of 20,000 tuples as a JSON-lines file at `path`.
fn generate_ticks(path: &Path) {
    check(
        Command::new(REPLAY).args(["--generate", "stocks:6:20000", "--output"]).arg(path).output().expect("run replay"),
        "replay",
    );
}

#[test]
fn a_file_job_read_in_byte_ranges_resumes_mid_file() {
    let dir = tmp("file");
    let data = dir.join("ticks.jsonl");
    generate_ticks(&data);
    let want = uninterrupted(&dir, Some(&data), "2");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let mut child = start(&run, Some(&data), "2", Some("40000"), &[]);
    kill_after(&mut child, &run, 3);
    let got = finish(&run, Some(&data), "2");
    assert_same(&got, &want, "file job");
}

/// Dead letters survive a crash: a resumed job keeps its dead-letter file, cut back to the
/// length the checkpoint recorded (flushed and synced before the manifest), instead of starting
/// it anew — which lost every dead letter from before the crash. Every malformed line of the
/// input is in it at the end, at least once (the dead letters of lines read again after the
/// checkpoint may be written twice); the answers are the uninterrupted run's.
#[test]
fn a_resumed_job_keeps_the_dead_letters_from_before_the_crash() {
    let dir = tmp("dead-letters");
    let clean = dir.join("clean.jsonl");
    generate_ticks(&clean);
    let mut bad = std::collections::BTreeSet::new();
    let mut text = String::new();
    for (i, line) in std::fs::read_to_string(&clean).expect("ticks").lines().enumerate() {
        let line = if i % 4000 == 1999 {
            bad.insert(format!("not a tuple {i}")).then(|| format!("not a tuple {i}"))
        } else {
            None
        }
        .unwrap_or_else(|| line.to_string());
        text.push_str(&line);
        text.push('\n');
    }
    let data = dir.join("ticks.jsonl");
    std::fs::write(&data, text).expect("write ticks");
    let want = uninterrupted(&dir, Some(&data), "2");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let dead = run.join("dead.jsonl").display().to_string();
    let mut child = start(&run, Some(&data), "2", Some("40000"), &["--dead-letter", &dead]);
    kill_after(&mut child, &run, 3);
    let newest = complete(&run.join("checkpoints"), 1).pop().expect("a checkpoint");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(newest.join("manifest-p0.json")).expect("manifest"))
            .expect("manifest JSON");
    assert_eq!(manifest["dead_letters"]["path"], dead.as_str(), "the manifest records the dead-letter file");
    assert!(manifest["dead_letters"]["bytes"].as_u64().is_some_and(|b| b > 0), "{}", manifest["dead_letters"]);
    let status = start(&run, Some(&data), "2", None, &["--dead-letter", &dead]).wait().expect("wait for saams");
    assert!(status.success(), "the resumed run failed: {}", stderr_of(&run));
    assert_same(&sorted_file(&run.join("out.json")), &want, "answers with dead letters");
    let inputs: std::collections::BTreeSet<String> = std::fs::read_to_string(&dead)
        .expect("dead letters")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a dead letter is JSON")["input"].to_string())
        .map(|s| s.trim_matches('"').to_string())
        .collect();
    assert_eq!(inputs, bad, "every malformed line is a dead letter after the restart");
}

#[test]
fn a_crash_while_writing_a_checkpoint_resumes_from_the_one_before() {
    let dir = tmp("torn");
    let want = uninterrupted(&dir, None, "2");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    // The process ends by itself after writing the parts of checkpoint 3, before its manifest.
    let mut torn = Command::new(BIN);
    torn.args(job_args(&run, None))
        .args(["-w", "2", "--checkpoint-interval", "150ms", "--rate", "40000", "--checkpoints"])
        .arg(run.join("checkpoints"))
        .arg("--out")
        .arg(run.join("out.json"))
        .env("SAAMS_CRASH_BEFORE_MANIFEST", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let out = torn.output().expect("run saams");
    assert!(!out.status.success(), "the job was to end itself at checkpoint 3");
    assert!(String::from_utf8_lossy(&out.stderr).contains("SAAMS_CRASH_BEFORE_MANIFEST=3"));
    let torn_dir = run.join("checkpoints").join(format!("{:010}", 3));
    assert!(torn_dir.exists() && !torn_dir.join("manifest-p0.json").exists(), "checkpoint 3 has parts and no manifest");
    let got = finish(&run, None, "2");
    assert!(stderr_of(&run).contains("resuming from checkpoint 2 "), "{}", stderr_of(&run));
    assert_same(&got, &want, "torn checkpoint");
}

#[test]
fn a_damaged_newest_checkpoint_is_skipped_with_a_message() {
    let dir = tmp("damaged");
    let want = uninterrupted(&dir, None, "2");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let mut child = start(&run, None, "2", Some("40000"), &[]);
    kill_after(&mut child, &run, 3);
    let newest = complete(&run.join("checkpoints"), 1).pop().expect("a complete checkpoint");
    let part = std::fs::read_dir(&newest)
        .expect("checkpoint dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "bin"))
        .expect("a part file");
    let mut bytes = std::fs::read(&part).expect("read part");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&part, bytes).expect("damage part");
    let got = finish(&run, None, "2");
    let stderr = stderr_of(&run);
    assert!(stderr.contains("skipped:"), "{stderr}");
    assert_same(&got, &want, "damaged checkpoint");
}

#[test]
fn a_checkpoint_of_two_workers_resumes_with_one_or_three() {
    let dir = tmp("rebin");
    let want = uninterrupted(&dir, None, "2");
    for w in ["1", "3"] {
        let run = dir.join(format!("w{w}"));
        std::fs::create_dir_all(&run).expect("run dir");
        let mut child = start(&run, None, "2", Some("40000"), &[]);
        kill_after(&mut child, &run, 2);
        let got = finish(&run, None, w);
        assert_same(&got, &want, &format!("resumed with -w {w}"));
    }
}

#[test]
fn a_checkpoint_of_another_request_script_is_refused() {
    let dir = tmp("other-script");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let mut child = start(&run, None, "1", Some("40000"), &[]);
    kill_after(&mut child, &run, 1);
    let out = Command::new(BIN)
        .args(["--requests", &repo("datasets/requests/paper-workload.json"), "--generate", "stocks:6:20000"])
        .arg("--checkpoints")
        .arg(run.join("checkpoints"))
        .output()
        .expect("run saams");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("another request script"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn one_process_of_two_killed_then_both_restarted_end_with_the_uninterrupted_answers() {
    let dir = tmp("two-processes");
    let ports: Vec<u16> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("port").port())
        .collect();
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect::<String>()).expect("hostfile");
    // The job on two processes of one worker each (`checkpoints`: none for the uninterrupted run).
    let spawn = |run: &Path, p: usize, rate: Option<&str>, checkpoints: bool| {
        let mut cmd = Command::new(BIN);
        cmd.args(job_args(run, None))
            .args(["-w", "1", "-n", "2", "-p", &p.to_string(), "-h"])
            .arg(&hostfile)
            .arg("--out")
            .arg(run.join(format!("out{p}.json")))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(run.join(format!("stderr-{p}-{}", nanos()))).expect("stderr file"));
        if checkpoints {
            cmd.args(["--checkpoint-interval", "150ms", "--checkpoints"]).arg(run.join("checkpoints"));
        }
        if let Some(r) = rate {
            cmd.args(["--rate", r]);
        }
        cmd.spawn().expect("start saams")
    };
    // Compared with the same shape uninterrupted: the last digits of a DFT pair correlation
    // differ between `-n 2 -w 1` and `-w 2` (the partials' merge order follows the processes).
    let plain = dir.join("plain");
    std::fs::create_dir_all(&plain).expect("plain dir");
    let (mut a, mut b) = (spawn(&plain, 0, None, false), spawn(&plain, 1, None, false));
    assert!(a.wait().expect("process 0").success() && b.wait().expect("process 1").success(), "{}", stderr_of(&plain));
    let mut want = sorted_file(&plain.join("out0.json"));
    want.extend(sorted_file(&plain.join("out1.json")));
    want.sort();
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let spawn = |p: usize, rate: Option<&str>| spawn(&run, p, rate, true);
    let mut p0 = spawn(0, Some("40000"));
    let mut p1 = spawn(1, Some("40000"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while newest_id(&run.join("checkpoints"), 2) < 2 {
        assert!(Instant::now() < deadline, "no 2 checkpoints within 2 minutes: {}", stderr_of(&run));
        std::thread::sleep(Duration::from_millis(20));
    }
    p1.kill().expect("kill -9 process 1");
    let _ = p1.wait();
    // Timely is fail-stop: the other process ends (or is ended) too.
    std::thread::sleep(Duration::from_millis(500));
    let _ = p0.kill();
    let _ = p0.wait();
    let (mut a, mut b) = (spawn(0, None), spawn(1, None));
    assert!(a.wait().expect("process 0").success(), "{}", stderr_of(&run));
    assert!(b.wait().expect("process 1").success(), "{}", stderr_of(&run));
    let mut got = sorted_file(&run.join("out0.json"));
    got.extend(sorted_file(&run.join("out1.json")));
    got.sort();
    assert_same(&got, &want, "two processes");
}

#[test]
fn a_checkpoint_of_two_processes_resumes_in_one_process_of_two_workers() {
    let dir = tmp("two-to-one");
    let want = uninterrupted(&dir, None, "2");
    let ports: Vec<u16> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("port").port())
        .collect();
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect::<String>()).expect("hostfile");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let mut children: Vec<Child> = (0..2)
        .map(|p| {
            Command::new(BIN)
                .args(job_args(&run, None))
                .args(["-w", "1", "-n", "2", "-p", &p.to_string(), "-h"])
                .arg(&hostfile)
                .args(["--rate", "40000", "--checkpoint-interval", "150ms", "--checkpoints"])
                .arg(run.join("checkpoints"))
                .arg("--out")
                .arg(run.join(format!("out{p}.json")))
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(run.join(format!("stderr-{p}-{}", nanos()))).expect("stderr file"))
                .spawn()
                .expect("start saams")
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while newest_id(&run.join("checkpoints"), 2) < 2 {
        assert!(Instant::now() < deadline, "no 2 checkpoints within 2 minutes: {}", stderr_of(&run));
        std::thread::sleep(Duration::from_millis(5));
    }
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    // One process of two workers, writing where process 0 wrote; process 1's output is cut back
    // to its checkpoint (it is on this host).
    let mut child = Command::new(BIN)
        .args(job_args(&run, None))
        .args(["-w", "2", "--checkpoint-interval", "150ms", "--checkpoints"])
        .arg(run.join("checkpoints"))
        .arg("--out")
        .arg(run.join("out0.json"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(run.join(format!("stderr-{}", nanos()))).expect("stderr file"))
        .spawn()
        .expect("start saams");
    assert!(child.wait().expect("wait").success(), "{}", stderr_of(&run));
    let mut got = sorted_file(&run.join("out0.json"));
    got.extend(sorted_file(&run.join("out1.json")));
    got.sort();
    assert_same(&got, &want, "two processes resumed as one");
}

/// A construct posted over HTTP while the job runs is in the checkpoints' request log: after a
/// kill and a restart it goes on from its fence, every window answered once, each counting
/// exactly the stream's values from the fence to the window's end; its acknowledgement is in
/// the output once.
#[test]
fn a_live_construct_survives_a_crash_with_its_answers_once_from_its_fence() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tmp("live");
    let requests = dir.join("none.json");
    std::fs::write(&requests, "").expect("requests");
    let out = dir.join("out.jsonl");
    let generator = "stocks:1:600000";
    let spec = saams_datasets::GeneratorSpec::parse(generator).expect("spec");
    let (stream, dataset) = (spec.stream_id(0), spec.dataset_key(0).to_string());
    let start = |rate: Option<&str>| {
        let mut cmd = Command::new(BIN);
        cmd.args(["-w", "2", "--generate", generator, "--window", "1m", "--progress", "0", "--requests"])
            .arg(&requests)
            .arg("--out")
            .arg(&out)
            .args(["--http", "127.0.0.1:0", "--checkpoint-interval", "150ms", "--checkpoints"])
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
    };
    let (mut child, addr) = start(Some("100000"));
    std::thread::sleep(Duration::from_millis(300));
    let body = format!(
        r#"[{{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":["CountMin","price","NotQueryable",0.01,0.99,7],"requestID":"c"}},
            {{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":[1.5,"price","Queryable","Continuous"],"requestID":"q"}}]"#
    );
    let mut s = std::net::TcpStream::connect(&addr).expect("connect");
    write!(
        s,
        "POST /requests HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("post");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("reply");
    let ack: serde_json::Value =
        serde_json::from_str(reply.split("\r\n\r\n").nth(1).and_then(|b| b.lines().next()).expect("ack line"))
            .expect("ack JSON");
    let fence = saams::api::time::parse_timestamp(ack["effectiveFrom"].as_str().expect("effectiveFrom")).expect("time");
    // Two checkpoints after the construct: the newest one's request log holds it.
    let first = newest_id(&dir.join("checkpoints"), 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    while newest_id(&dir.join("checkpoints"), 1) < first + 2 {
        assert!(Instant::now() < deadline, "no checkpoints after the construct");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("kill -9");
    let _ = child.wait();
    let (mut child, _) = start(None);
    assert!(child.wait().expect("wait").success());
    // What each answer must count: the stream's values from the fence on.
    let text = std::fs::read_to_string(&out).expect("output");
    let live = Live { generator, stream: 0, window_ms: 60_000, construct: "c", query: "q" };
    assert_eq!(answers_from(&text, &live, fence), 1, "the acknowledgement once");
}
