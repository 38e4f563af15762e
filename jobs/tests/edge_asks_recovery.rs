//! An ask waiting for a device's answer survives a `kill -9` of the cloud job, against a real
//! Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`): the paper workload on four streams, two
//! devices following the job (`saams-edge --follow --resident`), each the only reader of two
//! streams, and a cloud job with `--checkpoints`.
//!
//! An ad-hoc query of a synopsis resident on dev0 is posted while dev0's input is quiet (it
//! answers once its input passes the query's fence). In the first test dev1 reads on until the
//! job has written a checkpoint after the fence, with the ask waiting in it; in the second the
//! job is killed as soon as the query is in its request log, before any checkpoint after its
//! fence. The job is killed with `kill -9` and started again (it resumes from its newest
//! checkpoint); then dev0 reads on and answers. The job's output holds the answer once, equal
//! to one job's over the raw tuples before the fence. (A job resumed without the asks of its
//! checkpoint kept the device's answer for an ask it did not know, and never wrote it; one
//! resumed from a checkpoint before the fence applied the logged query again but did not make
//! its ask, with the same result.)
//!
//! Where the variable was unset at build time the test shows as ignored.

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::{ChildStdin, Command};
use std::time::{Duration, Instant};

mod edge_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Cloud, Edge, SAAMS, second_of_day, sorted, without_devices};
use kafka_common::{check, declared_broker, unique};
mod http_common;

/// The streams each device is the only reader of.
const SHARES: [[&str; 2]; 2] = [["EURTRY", "XAUUSD"], ["IBM", "SPY"]];

/// The second of the day both devices read up to before the query (a window boundary).
const CUT: u64 = 120;

/// EURTRY's Count-Min (resident on dev0) asked for the frequency of 13.5.
const QUERY: &str = r#"{"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":1,"param":[13.5,"price","Queryable","Ad-hoc"],"requestID":211}"#;

fn edge() -> Edge {
    Edge::new("jobs/tests/edge_whole_data/requests.json", "20s")
}

/// The cloud job: two workers, checkpoints every 150 ms into `dir/checkpoints`, answers to
/// `dir/out.json`; a quiet device is timed out after 3 s (its windows stop waiting for it), and
/// the job ends 10 s after its input went idle when `ends`.
fn cloud(e: &Edge, (brokers, topic): (&str, &str), dir: &Path, ends: bool) -> Cloud {
    let mut command = e.cloud_base(brokers, topic);
    command
        .args(["--partitions", "4", "--device-timeout", "3s", "--idle-timeout", "3s"])
        .args(["--http", "127.0.0.1:0", "--http-timeout", "120", "--checkpoint-interval", "150ms"])
        .arg("--checkpoints")
        .arg(dir.join("checkpoints"))
        .arg("--out")
        .arg(dir.join("out.json"))
        .arg("--dead-letter")
        .arg(dir.join("dead.json"));
    if ends {
        command.args(["--exit-when-idle", "10s"]);
    }
    Cloud::start(&mut command)
}

/// Feed `stdin` the lines of `lines` whose second of the day is in `seconds`.
fn feed(stdin: &mut ChildStdin, lines: &[&str], seconds: std::ops::Range<u64>) {
    for line in lines.iter().filter(|l| seconds.contains(&second_of_day(l))) {
        writeln!(stdin, "{line}").expect("feed the device");
    }
    stdin.flush().expect("flush");
}

/// `POST /requests` of `body`, its reply left unread (the job is killed before it comes).
fn post_unread(addr: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(s, "POST /requests HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}", body.len()).expect("post");
    s
}

/// The fence of the live request `id` once the newest complete checkpoint in `dir` was taken
/// after it (its boundary is after the fence and its request log holds it), else `None`.
fn checkpointed_after(dir: &Path, id: &str) -> Option<u64> {
    let newest = kafka_common::newest_checkpoint(dir);
    let text = std::fs::read_to_string(dir.join(format!("{newest:010}")).join("manifest-p0.json")).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    let boundary = manifest["boundary_ms"].as_u64()?;
    let logged =
        manifest["requests"].as_array()?.iter().find(|r| r["text"].as_str().is_some_and(|t| t.contains(id)))?;
    let fence = logged["fence_ms"].as_u64()?;
    (boundary > fence).then_some(fence)
}

/// The answer to [`QUERY`] of one job over the tuples of `dir/all.json` in windows before
/// `fence` (ms), asked at their end.
fn raw_answer(dir: &Path, e: &Edge, fence: u64) -> String {
    let of_day = fence % 86_400_000;
    let all = std::fs::read_to_string(dir.join("all.json")).expect("the tuples");
    let before: String = all.lines().filter(|l| e.window_of(l) < of_day).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("before-fence.json"), before).expect("write the tuples before the fence");
    let script = std::fs::read_to_string(&e.requests).expect("the script") + QUERY + "\n";
    std::fs::write(dir.join("with-query.json"), script).expect("write the script");
    std::fs::create_dir_all(dir.join("raw-snapshots")).expect("a snapshot directory");
    let out = Command::new(SAAMS)
        .args(["--window", e.window, "-w", "1", "--progress", "0", "--requests"])
        .arg(dir.join("with-query.json"))
        .arg("--snapshots")
        .arg(dir.join("raw-snapshots"))
        .arg("--data")
        .arg(dir.join("before-fence.json"))
        .output()
        .expect("run saams");
    let raw = sorted(&check(out, "saams over the tuples before the fence").stdout);
    raw.into_iter().find(|l| l.starts_with("{\"requestID\":211,")).expect("the raw run answers the query")
}

/// `line` without its `asOf` field, and that field's time (ms).
fn without_as_of(line: &str) -> (String, u64) {
    let at = line.rfind(",\"asOf\":\"").unwrap_or_else(|| panic!("no asOf in {line}"));
    let time = saams::api::time::parse_timestamp(&line[at + 9..line.len() - 2]).expect("a timestamp");
    (format!("{}}}", &line[..at]), time as u64)
}

/// The cloud job, the two devices (each with its stdin to feed), and the tuples each reads.
struct Run {
    e: Edge,
    brokers: String,
    topic: String,
    dir: std::path::PathBuf,
    first: Cloud,
    devices: Vec<(std::process::Child, ChildStdin)>,
    texts: Vec<String>,
}

impl Run {
    /// Both devices read up to [`CUT`], the job merged it and routed the open window's position;
    /// then [`QUERY`] is posted (its reply left unread) while dev0's input is quiet.
    fn asked(name: &str) -> (Run, TcpStream) {
        let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
        let e = edge();
        let dir = edge_common::tmp("edge-asks-recovery", name);
        let files = edge_common::data(&dir, 2, |d, l| SHARES[d].contains(&edge_common::stream_of(l)));
        let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).expect("device tuples")).collect();
        let topic = unique("edge-asks-recovery");
        let first = cloud(&e, (&brokers, &topic), &dir, false);
        let addr = first.address();
        let mut devices: Vec<_> = (0..2)
            .map(|d| {
                let mut child =
                    e.device_on_stdin(&brokers, &topic, (&format!("dev{d}"), d), &["--follow", "--resident"]);
                let stdin = child.stdin.take().expect("its stdin");
                (child, stdin)
            })
            .collect();
        for (d, (_, stdin)) in devices.iter_mut().enumerate() {
            feed(stdin, &texts[d].lines().collect::<Vec<_>>(), 0..CUT);
        }
        // The generated tuples are of 2 January 2019.
        let day = saams::api::time::parse_timestamp("2019-01-02T00:00:00Z").expect("a time") as u64;
        let table = || http_common::call(&addr, "GET", "/devices", "").1;
        edge_common::wait_merged(table, &["dev0", "dev1"], day + CUT * 1000 - 2 * e.window_ms);
        // And a second more: the job routes the open window's position (the query's fence comes
        // after it, so dev0, which read that window, cannot answer before it reads on).
        std::thread::sleep(Duration::from_secs(1));
        // dev0's input is quiet from now on: the ask waits for it.
        let asked = post_unread(&addr, QUERY);
        (Run { e, brokers, topic, dir, first, devices, texts }, asked)
    }

    /// Kill the job (`kill -9`), resume it, feed dev0 from [`CUT`] and dev1 from `next` (s) to
    /// their ends; the answer line to [`QUERY`] must be written once, as of `fence`, and equal
    /// to one job's over the raw tuples before it.
    fn killed_and_resumed(mut self, asked: TcpStream, (next, fence): (u64, u64)) {
        self.first.child.kill().expect("kill -9 the cloud job");
        self.first.child.wait().expect("reap it");
        drop(asked);
        let out = self.dir.join("out.json");
        let before = std::fs::read_to_string(&out).unwrap_or_default();
        let answer_line = |l: &&str| l.starts_with("{\"requestID\":211,") && l.contains("\"asOf\"");
        assert_eq!(before.lines().filter(answer_line).count(), 0, "not answered before the kill");
        // The job resumes; then dev0 reads on (it answers from its state at the fence) and both end.
        let second = cloud(&self.e, (&self.brokers, &self.topic), &self.dir, true);
        second.address();
        for (d, (_, stdin)) in self.devices.iter_mut().enumerate() {
            let lines: Vec<&str> = self.texts[d].lines().collect();
            feed(stdin, &lines, if d == 0 { CUT..u64::MAX } else { next..u64::MAX });
        }
        let outs: Vec<_> = self
            .devices
            .into_iter()
            .map(|(child, stdin)| {
                drop(stdin);
                check(child.wait_with_output().expect("the device ends"), "saams-edge --follow --resident")
            })
            .collect();
        assert_eq!(edge_common::figure(&outs[0], "edge ", "answers"), 1, "dev0 answered the query");
        let resumed = second.finish("saams --partials-topic --checkpoints (resumed)");
        let stderr = String::from_utf8_lossy(&resumed.stderr);
        assert!(stderr.contains("resuming from checkpoint"), "{stderr}");
        let written = std::fs::read_to_string(&out).expect("the answers");
        let answers: Vec<&str> = written.lines().filter(answer_line).collect();
        assert_eq!(answers.len(), 1, "the device's answer written once: {answers:?}");
        let (answer, as_of) = without_as_of(&without_devices(answers[0]).0);
        assert_eq!(as_of, fence, "the answer is as of the fence");
        assert_eq!(
            answer,
            raw_answer(&self.dir, &self.e, fence),
            "the answer of one job over the tuples before the fence"
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn an_ask_waiting_when_the_cloud_is_killed_is_answered_once_after_it_resumed() {
    let (mut run, asked) = Run::asked("killed");
    // dev1 reads on, a window at a time, until a checkpoint is taken after the query's fence.
    let deadline = Instant::now() + Duration::from_secs(120);
    let step = run.e.window_ms / 1000;
    let mut next = CUT;
    let lines: Vec<String> = run.texts[1].lines().map(str::to_string).collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let fence = loop {
        if let Some(fence) = checkpointed_after(&run.dir.join("checkpoints"), "\"request_id\":211,") {
            break fence;
        }
        assert!(Instant::now() < deadline, "no checkpoint after the query's fence");
        assert!(next < 1200, "dev1's input ran out before a checkpoint after the query's fence");
        feed(&mut run.devices[1].1, &lines, next..next + step);
        next += step;
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(fence % 86_400_000 >= CUT * 1000, "the fence {fence} is after the windows dev0 read");
    run.killed_and_resumed(asked, (next, fence));
}

/// The query's fence (ms) once process 0's request log holds it.
fn logged_fence(dir: &Path) -> Option<u64> {
    let log = std::fs::read_to_string(dir.join("requests-p0.log")).ok()?;
    let entries = log.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    let entry = entries.into_iter().find(|e| e["text"].as_str().is_some_and(|t| t.contains("\"request_id\":211,")))?;
    entry["fence_ms"].as_u64()
}

/// The boundary (ms) of the newest complete checkpoint in `dir` (0: none).
fn newest_boundary(dir: &Path) -> u64 {
    let newest = kafka_common::newest_checkpoint(dir);
    let manifest = std::fs::read_to_string(dir.join(format!("{newest:010}")).join("manifest-p0.json"));
    let value = manifest.ok().and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    value.and_then(|v| v["boundary_ms"].as_u64()).unwrap_or(0)
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn an_ask_fenced_after_the_last_checkpoint_is_answered_once_after_the_cloud_resumed() {
    let (run, asked) = Run::asked("fenced-after");
    let checkpoints = run.dir.join("checkpoints");
    let deadline = Instant::now() + Duration::from_secs(60);
    let fence = loop {
        if let Some(fence) = logged_fence(&checkpoints) {
            break fence;
        }
        assert!(Instant::now() < deadline, "the query is not in the request log");
        std::thread::sleep(Duration::from_millis(10));
    };
    // Every device is quiet: the frontier stays before the fence, and so does every checkpoint.
    std::thread::sleep(Duration::from_millis(500));
    assert!(newest_boundary(&checkpoints) < fence, "the newest checkpoint is before the fence");
    assert!(fence % 86_400_000 >= CUT * 1000, "the fence {fence} is after the windows dev0 read");
    run.killed_and_resumed(asked, (CUT, fence));
}
