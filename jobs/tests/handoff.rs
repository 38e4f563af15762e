//! Hand-off (`saams --take-over`, `saams_jobs::handoff`): a job of another shape takes over a
//! running job's checkpoint directory and output; the running job answers the windows before
//! the boundary they agree on and exits by itself, the new one answers from there on, and the
//! output holds every answer exactly once (sorted, byte for byte, the answers of a run without
//! hand-off). A take-over with no running job or no checkpoint is refused with a clear error.
//!
//! KLL answers are left out of the comparisons: Apache DataSketches' KLL compacts with an
//! unseeded random generator, so two runs of the same input differ (see engine.rs).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)] // its stderr and checkpoint helpers are per job name here
mod checkpoint_common;
#[path = "http_common/mod.rs"]
mod http_common;
use checkpoint_common::assert_same;

const BIN: &str = env!("CARGO_BIN_EXE_saams");
const REPLAY: &str = env!("CARGO_BIN_EXE_replay");

fn repo(rel: &str) -> String {
    format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-handoff-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// The lines of `paths`, KLL's left out, sorted.
fn sorted_lines(paths: &[PathBuf]) -> Vec<String> {
    let mut v = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        v.extend(text.lines().filter(|l| !l.contains(r#""kind":"KLL""#)).map(str::to_string));
    }
    v.sort();
    v
}

/// The job's arguments: every kind of synopsis over a file of 6 streams of 20,000 ticks (about
/// 440 one-minute windows), read in byte ranges.
fn job_args(dir: &Path, data: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir.join("snapshots")).expect("snapshot dir");
    let mut args: Vec<String> = vec!["--requests".into(), repo("datasets/requests/all-kinds.json")];
    args.extend(["--progress".into(), "0".into(), "--snapshots".into(), dir.join("snapshots").display().to_string()]);
    args.extend(["--data".into(), data.display().to_string(), "--chunk-bytes".into(), "400000".into()]);
    args
}

/// The generator's 6 streams of 20,000 tuples as a JSON-lines file at `path`.
fn generate_ticks(path: &Path) {
    let out =
        Command::new(REPLAY).args(["--generate", "stocks:6:20000", "--output"]).arg(path).output().expect("run replay");
    assert!(out.status.success(), "replay: {}", String::from_utf8_lossy(&out.stderr));
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// A `saams` command on `data` in `run`, its stderr to a file there named after `name`.
fn saams(run: &Path, data: &Path, name: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(job_args(run, data))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(run.join(format!("stderr-{name}-{}", nanos()))).expect("stderr file"));
    cmd
}

fn stderr_of(dir: &Path, name: &str) -> String {
    let mut all = String::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().filter_map(Result::ok) {
        if e.file_name().to_string_lossy().starts_with(&format!("stderr-{name}")) {
            all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    all
}

/// Both processes of the new job said they took over, at the same checkpoint: the running
/// job's last. (A process still taking over once the other had taken over once took the new
/// job's first checkpoint for the running job's, and dropped the answers between the two.)
fn assert_both_took_over_at_one_checkpoint(new_err: &str) {
    let ids: Vec<&str> = new_err
        .match_indices("took over at checkpoint ")
        .map(|(i, m)| new_err[i + m.len()..].split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(ids.len(), 2, "{new_err}");
    assert_eq!(ids[0], ids[1], "the processes took over at different checkpoints: {new_err}");
}

/// Complete checkpoints (with every process' manifest) in `dir`.
fn complete_checkpoints(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.filter_map(Result::ok).filter(|e| e.path().join("manifest-p0.json").exists()).count()
}

/// Wait for `child` to end by itself (a guard against a hang, not a timing assertion).
fn wait_ends(child: &mut Child, what: &str, stderr: impl Fn() -> String) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not end by itself: {}", stderr());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The file of ticks and the sorted answers of a `-w 1` run without hand-off.
fn ticks_and_plain_answers(dir: &Path) -> (PathBuf, Vec<String>) {
    let data = dir.join("ticks.jsonl");
    generate_ticks(&data);
    let plain = dir.join("plain");
    std::fs::create_dir_all(&plain).expect("plain dir");
    let out = saams(&plain, &data, "plain", &["-w", "1", "--out"]).arg(plain.join("out.json")).output();
    assert!(out.expect("run saams").status.success(), "{}", stderr_of(&plain, "plain"));
    let want = sorted_lines(&[plain.join("out.json")]);
    assert!(want.len() > 1000, "expected many answers, got {}", want.len());
    (data, want)
}

/// Start the running `-w 1` job (paced, so that it still runs when the new one has caught up)
/// and wait for its second checkpoint.
fn start_running_job(run: &Path, data: &Path, common: &[&str]) -> Child {
    let out0 = run.join("out0.json").display().to_string();
    let mut old = saams(run, data, "old", &["-w", "1", "--rate", "10000", "--out", &out0])
        .args(common)
        .spawn()
        .expect("start the running job");
    let deadline = Instant::now() + Duration::from_secs(120);
    while complete_checkpoints(&run.join("checkpoints")) < 2 {
        assert!(Instant::now() < deadline, "no 2 checkpoints within 2 minutes: {}", stderr_of(run, "old"));
        assert!(old.try_wait().expect("try_wait").is_none(), "the running job ended early: {}", stderr_of(run, "old"));
        std::thread::sleep(Duration::from_millis(10));
    }
    old
}

/// The two processes of the new job (one worker each; process 0 writes where the running job
/// wrote, process 1 its own file), with `extra` flags.
fn start_two_processes(run: &Path, data: &Path, common: &[&str], extra: &[&str]) -> Vec<Child> {
    let ports: Vec<u16> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("port").port())
        .collect();
    let hostfile = run.join("hosts");
    std::fs::write(&hostfile, ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect::<String>()).expect("hostfile");
    let hosts = hostfile.display().to_string();
    (0..2)
        .map(|p| {
            let out = run.join(format!("out{p}.json")).display().to_string();
            let shape = ["-n", "2", "-w", "1", "-p", &p.to_string(), "-h", &hosts];
            saams(run, data, "new", &shape).args(common).args(extra).args(["--out", &out]).spawn().expect("start")
        })
        .collect()
}

#[test]
fn a_one_worker_job_hands_off_to_two_processes_and_every_answer_is_written_once() {
    let dir = tmp("one-to-two");
    let (data, want) = ticks_and_plain_answers(&dir);
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let ck = run.join("checkpoints").display().to_string();
    let common = ["--checkpoint-interval", "150ms", "--checkpoints", ck.as_str()];
    let mut old = start_running_job(&run, &data, &common);
    let mut new = start_two_processes(&run, &data, &common, &["--take-over", "--rate", "40000"]);
    let status = wait_ends(&mut old, "the running job", || stderr_of(&run, ""));
    assert!(status.success(), "the running job failed: {}", stderr_of(&run, "old"));
    assert!(stderr_of(&run, "old").contains("handed off"), "{}", stderr_of(&run, "old"));
    for (p, child) in new.iter_mut().enumerate() {
        let status = wait_ends(child, &format!("process {p} of the new job"), || stderr_of(&run, ""));
        assert!(status.success(), "process {p} of the new job failed: {}", stderr_of(&run, "new"));
    }
    let new_err = stderr_of(&run, "new");
    assert_both_took_over_at_one_checkpoint(&new_err);
    // It read on after taking over: the writer, with checkpoints of its own.
    assert!(!new_err.contains("checkpoints written=0"), "{new_err}");
    let got = sorted_lines(&[run.join("out0.json"), run.join("out1.json")]);
    assert_same(&got, &want, "hand-off from -w 1 to -n 2 -w 1");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The job that took over is an ordinary writer of the directory: killed with SIGKILL after its
/// own checkpoints and started again (without `--take-over`), it ends with the answers of a run
/// without hand-off or crash.
#[test]
fn a_job_that_took_over_and_was_killed_resumes_from_its_own_checkpoints() {
    let dir = tmp("took-over-killed");
    let (data, want) = ticks_and_plain_answers(&dir);
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let checkpoints = run.join("checkpoints");
    let ck = checkpoints.display().to_string();
    let common = ["--checkpoint-interval", "150ms", "--checkpoints", ck.as_str()];
    let mut old = start_running_job(&run, &data, &common);
    let mut new = start_two_processes(&run, &data, &common, &["--take-over", "--rate", "20000"]);
    assert!(wait_ends(&mut old, "the running job", || stderr_of(&run, "")).success(), "{}", stderr_of(&run, "old"));
    let last_of_old = kafka_common::newest_checkpoint(&checkpoints);
    let deadline = Instant::now() + Duration::from_secs(120);
    while kafka_common::newest_checkpoint(&checkpoints) < last_of_old + 2 {
        assert!(Instant::now() < deadline, "the new job wrote no 2 checkpoints: {}", stderr_of(&run, "new"));
        assert!(new.iter_mut().all(|c| c.try_wait().expect("try_wait").is_none()), "{}", stderr_of(&run, "new"));
        std::thread::sleep(Duration::from_millis(5));
    }
    for c in &mut new {
        let _ = c.kill();
        let _ = c.wait();
    }
    for (p, mut child) in start_two_processes(&run, &data, &common, &[]).into_iter().enumerate() {
        let status = wait_ends(&mut child, &format!("process {p} restarted"), || stderr_of(&run, ""));
        assert!(status.success(), "process {p} restarted failed: {}", stderr_of(&run, "new"));
    }
    let got = sorted_lines(&[run.join("out0.json"), run.join("out1.json")]);
    assert_same(&got, &want, "hand-off, kill -9 of the new job, restart");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run `saams` with `args` on a small file to its end.
fn run_to_end(run: &Path, data: &Path, name: &str, args: &[&str]) -> Output {
    let mut child = saams(run, data, name, args).stderr(Stdio::piped()).spawn().expect("start saams");
    let status = wait_ends(&mut child, name, String::new);
    let out = child.wait_with_output().expect("output");
    assert_eq!(status.code(), out.status.code());
    out
}

#[test]
fn a_take_over_with_no_checkpoint_or_no_running_job_is_refused() {
    let dir = tmp("refused");
    let data = dir.join("ticks.jsonl");
    generate_ticks(&data);
    let ck = dir.join("checkpoints").display().to_string();
    let out = dir.join("out.json").display().to_string();
    // No checkpoint: nothing to take over from.
    let refused = run_to_end(&dir, &data, "empty", &["--take-over", "--checkpoints", &ck, "--out", &out]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(err.contains("holds no complete checkpoint to take over from"), "{err}");
    assert!(!Path::new(&out).exists(), "a refused take-over writes nothing");
    // A job that ran to its end left checkpoints, and holds nothing any more.
    let done =
        run_to_end(&dir, &data, "first", &["--checkpoint-interval", "100ms", "--checkpoints", &ck, "--out", &out]);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let before = std::fs::read(&out).expect("the first job's output");
    let refused = run_to_end(&dir, &data, "late", &["--take-over", "--checkpoints", &ck, "--out", &out]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    // Refused because no job holds the directory (or, on a loaded machine where the first job
    // ended before its first checkpoint completed, because there is none to take over from).
    assert!(err.contains("no job is running on") || err.contains("holds no complete checkpoint"), "{err}");
    assert!(err.contains("start the job without --take-over"), "{err}");
    assert_eq!(std::fs::read(&out).expect("output"), before, "a refused take-over leaves the output alone");
    // --take-over without --checkpoints: clap names what is missing.
    let refused = run_to_end(&dir, &data, "flags", &["--take-over", "--out", &out]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("--checkpoints"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// POST `body` to `/requests` at `addr`: the status line's code and the body (`None`: nothing
/// listens there).
fn post(addr: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let head =
        format!("POST /requests HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n", body.len());
    s.write_all(head.as_bytes()).and_then(|()| s.write_all(body.as_bytes())).ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    let code = reply.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    Some((code, reply.split("\r\n\r\n").nth(1).unwrap_or("").to_string()))
}

/// POST `body` until it is taken (a job refuses with 503 until it takes requests): how many
/// times it was refused, and the reply.
fn post_until_taken(addr: &str, body: &str) -> (usize, String) {
    let mut refused = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "{addr} took no request");
        match post(addr, body) {
            Some((200, reply)) => return (refused, reply),
            Some((503, _)) => refused += 1,
            other => panic!("{addr} answered {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A live construct with its own uid (its acknowledgement names it).
fn construct(uid: u32) -> String {
    format!(
        r#"{{"dataSetKey":"Forex","noOfP":1,"param":["HyperLogLog","volume","NotQueryable",0.02],"requestID":{uid},"streamID":"EURTRY","synopsisID":2,"uid":{uid}}}"#
    )
}

/// Live requests across a hand-off: one acknowledged by the running job is applied by the new
/// one too (from the request log) and acknowledged in the output once; the new job refuses
/// requests (503) until it has taken over and takes them after, each acknowledged once.
#[test]
fn live_requests_acknowledged_before_and_after_a_hand_off_are_in_the_output_once() {
    let dir = tmp("live");
    let data = dir.join("ticks.jsonl");
    generate_ticks(&data);
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let ck = run.join("checkpoints").display().to_string();
    let out = run.join("out.json").display().to_string();
    let common =
        ["--checkpoint-interval", "150ms", "--checkpoints", ck.as_str(), "--out", &out, "--http", "127.0.0.1:0"];
    let spawn = |extra: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args(job_args(&run, &data)).args(common).args(extra).stdin(Stdio::null()).stdout(Stdio::null());
        let mut child = cmd.stderr(Stdio::piped()).spawn().expect("start saams");
        let addr = http_common::http_address(&mut child, Duration::from_secs(60));
        (child, addr)
    };
    let (mut old, old_addr) = spawn(&["-w", "1", "--rate", "10000"]);
    let (_, reply) = post_until_taken(&old_addr, &construct(901));
    assert!(reply.contains(r#""accepted":"construct""#), "{reply}");
    while complete_checkpoints(&run.join("checkpoints")) < 2 {
        assert!(old.try_wait().expect("try_wait").is_none(), "the running job ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (mut new, new_addr) = spawn(&["-w", "2", "--rate", "20000", "--take-over"]);
    // Refused while it catches up, taken once it is the writer.
    let (refused, reply) = post_until_taken(&new_addr, &construct(902));
    assert!(reply.contains(r#""accepted":"construct""#), "{reply}");
    assert!(refused > 0, "the new job took a request before it had taken over");
    assert!(wait_ends(&mut old, "the running job", String::new).success());
    assert!(wait_ends(&mut new, "the new job", String::new).success());
    let text = std::fs::read_to_string(&out).expect("output");
    for uid in [901, 902] {
        let acks = text.lines().filter(|l| l.contains(&format!(r#""uid":{uid},"#)) && l.contains("accepted")).count();
        assert_eq!(acks, 1, "uid {uid}: {acks} acknowledgements in the output");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[allow(dead_code)] // replay_into, declared_broker, read_topic, unique and newest_checkpoint are what this file uses
mod kafka_common;

/// Where the Kafka jobs write their answers.
#[derive(Clone, Copy)]
enum KafkaAnswers<'a> {
    /// Each process to its file `out<P>.json` in the run's folder.
    Files,
    /// To this topic.
    Topic(&'a str),
}

/// A `saams` command reading `topic` (from its start, as group `group`) with every kind of
/// synopsis, ending once the topic has been quiet for 3 s; stderr to a file in `run`.
fn kafka_saams(run: &Path, (brokers, topic, group): (&str, &str, &str), name: &str, extra: &[&str]) -> Command {
    std::fs::create_dir_all(run.join("snapshots")).expect("snapshot dir");
    let mut cmd = Command::new(BIN);
    cmd.args(["--requests", &repo("datasets/requests/all-kinds.json"), "--progress", "0", "--snapshots"])
        .arg(run.join("snapshots"))
        .args(["--brokers", brokers, "--data-topic", topic, "--group-id", group, "--from", "earliest"])
        .args(["--exit-when-idle", "3s"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(run.join(format!("stderr-{name}-{}", nanos()))).expect("stderr file"));
    cmd
}

/// The answers, KLL's and GK's left out (GK's bounds depend on the order a window's values of
/// several partitions reach it, which differs between one consumer of both and one of each).
fn sorted_answers(lines: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = lines
        .into_iter()
        .filter(|l| !l.contains(r#""kind":"KLL""#) && !l.contains(r#""kind":"GKQuantiles""#))
        .collect();
    v.sort();
    v
}

/// A `-w 1` job reading a topic hands off to a `-n 2 -w 1` job: every answer is in the output
/// once, whether it is a topic or the processes' files.
///
/// One partition: a worker reading two reads them unevenly (the broker fills a fetch from one
/// partition), so its checkpoints' boundaries wait for the other to get there — the running
/// job wrote 3 checkpoints in 12 s, and its last could come after its input's end. The new
/// job's process 1 reads no partition (it holds synopses, and writes their answers).
fn kafka_hand_off(answers: KafkaAnswers<'_>, name: &str) {
    let brokers = kafka_common::declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp(name);
    let data = dir.join("ticks.jsonl");
    generate_ticks(&data);
    let topic = kafka_common::unique("handoff-data");
    kafka_common::replay_into(&brokers, &topic, &data, 1);
    // The answers of a run without hand-off, from the same topic.
    let plain = dir.join("plain");
    let group = kafka_common::unique("handoff-plain");
    let plain_out = plain.join("out.json").display().to_string();
    let status = kafka_saams(&plain, (&brokers, &topic, &group), "plain", &["-w", "1", "--out", &plain_out])
        .status()
        .expect("run saams");
    assert!(status.success(), "{}", stderr_of(&plain, "plain"));
    let want = sorted_answers(std::fs::read_to_string(&plain_out).expect("output").lines().map(str::to_string));
    assert!(want.len() > 1000, "expected many answers, got {}", want.len());

    let run = dir.join("run");
    let ck = run.join("checkpoints").display().to_string();
    let group = kafka_common::unique("handoff-group");
    let kafka = (brokers.as_str(), topic.as_str(), group.as_str());
    let output = |p: usize| match answers {
        KafkaAnswers::Files => vec!["--out".to_string(), run.join(format!("out{p}.json")).display().to_string()],
        KafkaAnswers::Topic(t) => vec!["--output-topic".to_string(), t.to_string()],
    };
    let common = ["--checkpoint-interval", "150ms", "--checkpoints", ck.as_str()];
    let mut old = kafka_saams(&run, kafka, "old", &["-w", "1", "--rate", "10000"])
        .args(common)
        .args(output(0))
        .spawn()
        .expect("start the running job");
    let deadline = Instant::now() + Duration::from_secs(120);
    while complete_checkpoints(&run.join("checkpoints")) < 2 {
        assert!(Instant::now() < deadline, "no 2 checkpoints within 2 minutes: {}", stderr_of(&run, "old"));
        assert!(old.try_wait().expect("try_wait").is_none(), "the running job ended early: {}", stderr_of(&run, "old"));
        std::thread::sleep(Duration::from_millis(10));
    }
    let ports: Vec<u16> = (0..2)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("port").port())
        .collect();
    let hostfile = run.join("hosts");
    std::fs::write(&hostfile, ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect::<String>()).expect("hostfile");
    let hosts = hostfile.display().to_string();
    let mut new: Vec<Child> = (0..2)
        .map(|p| {
            let shape = ["-n", "2", "-w", "1", "-p", &p.to_string(), "-h", &hosts, "--take-over", "--rate", "40000"];
            kafka_saams(&run, kafka, "new", &shape).args(common).args(output(p)).spawn().expect("start")
        })
        .collect();
    let status = wait_ends(&mut old, "the running job", || stderr_of(&run, ""));
    assert!(status.success(), "the running job failed: {}", stderr_of(&run, "old"));
    assert!(stderr_of(&run, "old").contains("handed off"), "{}", stderr_of(&run, "old"));
    for (p, child) in new.iter_mut().enumerate() {
        let status = wait_ends(child, &format!("process {p} of the new job"), || stderr_of(&run, ""));
        assert!(status.success(), "process {p} of the new job failed: {}", stderr_of(&run, "new"));
    }
    let new_err = stderr_of(&run, "new");
    assert_both_took_over_at_one_checkpoint(&new_err);
    assert!(!new_err.contains("checkpoints written=0"), "{new_err}");
    let got = match answers {
        KafkaAnswers::Files => sorted_answers(sorted_lines(&[run.join("out0.json"), run.join("out1.json")])),
        KafkaAnswers::Topic(t) => sorted_answers(
            kafka_common::read_topic(&brokers, t).into_iter().map(|v| String::from_utf8(v).expect("UTF-8")),
        ),
    };
    assert_same(&got, &want, &format!("hand-off of a Kafka job from -w 1 to -n 2 -w 1 ({name})"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_kafka_job_hands_off_to_two_processes_and_every_answer_is_in_the_answer_topic_once() {
    let topic = kafka_common::unique("handoff-answers");
    kafka_hand_off(KafkaAnswers::Topic(&topic), "kafka-topic");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_kafka_job_hands_off_to_two_processes_and_every_answer_is_in_the_files_once() {
    kafka_hand_off(KafkaAnswers::Files, "kafka-files");
}

/// Live requests on standard input across a hand-off (`--requests -`): each job reads its own
/// stdin. One the running job took is applied by the new one too (from the request log); one
/// written to the new job's stdin while it catches up waits in the pipe and is taken once it
/// has taken over; each is acknowledged in the output once.
#[test]
fn live_requests_on_stdin_before_and_after_a_hand_off_are_in_the_output_once() {
    let dir = tmp("stdin");
    let data = dir.join("ticks.jsonl");
    generate_ticks(&data);
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("run dir");
    let ck = run.join("checkpoints");
    let out = run.join("out.json").display().to_string();
    let spawn = |name: &str, extra: &[&str]| {
        let mut args = job_args(&run, &data);
        args[1] = "-".into(); // --requests -: live requests on stdin, no script
        let mut cmd = Command::new(BIN);
        cmd.args(args).args(["--checkpoint-interval", "150ms", "--out", &out, "--checkpoints"]).arg(&ck).args(extra);
        let stderr = std::fs::File::create(run.join(format!("stderr-{name}-{}", nanos()))).expect("stderr file");
        cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(stderr).spawn().expect("start saams")
    };
    let logged = |uid: u32| {
        let logs = std::fs::read_dir(&ck).into_iter().flatten().filter_map(Result::ok);
        logs.filter(|e| e.file_name().to_string_lossy().starts_with("requests-p"))
            .any(|e| std::fs::read_to_string(e.path()).unwrap_or_default().contains(&format!(r#"\"uid\":{uid}"#)))
    };
    let mut old = spawn("old", &["-w", "1", "--rate", "10000"]);
    let mut old_stdin = old.stdin.take().expect("stdin");
    writeln!(old_stdin, "{}", construct(901)).expect("write to the running job");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !logged(901) || complete_checkpoints(&ck) < 2 {
        assert!(Instant::now() < deadline, "the request on stdin was not logged: {}", stderr_of(&run, "old"));
        assert!(old.try_wait().expect("try_wait").is_none(), "the running job ended early: {}", stderr_of(&run, "old"));
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut new = spawn("new", &["-w", "2", "--rate", "20000", "--take-over"]);
    let mut new_stdin = new.stdin.take().expect("stdin");
    writeln!(new_stdin, "{}", construct(902)).expect("write to the new job");
    assert!(wait_ends(&mut old, "the running job", || stderr_of(&run, "old")).success(), "{}", stderr_of(&run, "old"));
    assert!(wait_ends(&mut new, "the new job", || stderr_of(&run, "new")).success(), "{}", stderr_of(&run, "new"));
    drop((old_stdin, new_stdin));
    let text = std::fs::read_to_string(&out).expect("output");
    for uid in [901, 902] {
        let acks = text.lines().filter(|l| l.contains(&format!(r#""uid":{uid},"#)) && l.contains("accepted")).count();
        assert_eq!(acks, 1, "uid {uid}: {acks} acknowledgements in the output: {}", stderr_of(&run, ""));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
