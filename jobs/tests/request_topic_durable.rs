//! The request topic with checkpoints (`--request-topic` with `--checkpoints`): the request log
//! records how far the topic was read, so a job killed with SIGKILL (`kill -9`) and started
//! again applies every live request of the topic exactly once — those acknowledged before the
//! kill at the fence they were acknowledged with, one produced while it was down at a fence of
//! its own — and a job taking over (`--take-over`) reads on where the running job stopped.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[allow(dead_code)] // declared_broker, produce_raw and unique are what this file uses
mod kafka_common;
mod live_common;
use live_common::{Live, answers_from};

const BIN: &str = env!("CARGO_BIN_EXE_saams");
/// Four streams, one a synopsis: the script's (3) and three live ones (0, 1, 2).
const GENERATOR: &str = "stocks:4:150000";
const WINDOW_MS: i64 = 60_000;

/// A new request topic of one partition (as the job creates one), holding the script's record.
fn request_topic(brokers: &str, what: &str) -> String {
    let topic = kafka_common::unique(what);
    let opts = saams_jobs::kafka::KafkaOptions::new(brokers, kafka_common::unique("admin"));
    saams_jobs::kafka::ensure_topics(&opts, &[saams_jobs::kafka::TopicSpec::new(&topic, 1)]).expect("topic");
    kafka_common::produce_raw(brokers, &topic, &[construct(3, "s")]);
    topic
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-request-topic-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// A Count-Min construct on stream `i` and its continuous query, as one record (a JSON array):
/// request ids `c<name>` and `q<name>`.
fn construct(i: usize, name: &str) -> Vec<u8> {
    let spec = saams_datasets::GeneratorSpec::parse(GENERATOR).expect("spec");
    let (stream, dataset) = (spec.stream_id(i), spec.dataset_key(i));
    format!(
        r#"[{{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":["CountMin","price","NotQueryable",0.01,0.99,7],"requestID":"c{name}"}},
            {{"streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":[1.5,"price","Queryable","Continuous"],"requestID":"q{name}"}}]"#
    )
    .into_bytes()
}

/// The live synopsis `construct(i, name)` makes.
fn live(i: usize, name: &str) -> (String, String, usize) {
    (format!("c{name}"), format!("q{name}"), i)
}

/// Asserts the answers of `(construct, query, stream)` in `text` from `fence` on, every window
/// once; returns its acknowledgements.
fn check_answers(text: &str, (construct, query, stream): &(String, String, usize), fence: i64) -> usize {
    let live = Live { generator: GENERATOR, stream: *stream, window_ms: WINDOW_MS, construct, query };
    answers_from(text, &live, fence)
}

/// The `saams` command reading `GENERATOR` with requests from `topic` (and an empty script) and
/// checkpoints in `run/checkpoints`; stderr to `run/stderr-<name>`.
fn saams(run: &Path, (brokers, topic): (&str, &str), name: &str, extra: &[&str]) -> Command {
    let none = run.join("none.json");
    std::fs::write(&none, "").expect("empty script");
    let mut cmd = Command::new(BIN);
    cmd.args(["--generate", GENERATOR, "--window", "1m", "--progress", "0", "--requests"])
        .arg(&none)
        .args(["--brokers", brokers, "--request-topic", topic, "--checkpoint-interval", "150ms", "--checkpoints"])
        .arg(run.join("checkpoints"))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(run.join(format!("stderr-{name}"))).expect("stderr file"));
    cmd
}

fn stderr_of(run: &Path, name: &str) -> String {
    let mut all = String::new();
    for e in std::fs::read_dir(run).into_iter().flatten().filter_map(Result::ok) {
        if e.file_name().to_string_lossy().starts_with(&format!("stderr-{name}")) {
            all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    all
}

/// Wait until `what` holds, with the job's stderr in the message if it does not within a minute
/// (a guard against a hang, not a timing assertion).
fn wait_until(what: &str, run: &Path, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within a minute: {}", stderr_of(run, ""));
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The request logs' entries of requests from the topic: (offset, fence).
fn logged(run: &Path) -> Vec<(i64, i64)> {
    let dir = run.join("checkpoints");
    let mut got = Vec::new();
    for e in std::fs::read_dir(&dir).into_iter().flatten().filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("requests-p") && name.ends_with(".log")) {
            continue;
        }
        let file = std::fs::File::open(e.path()).expect("log");
        for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
            let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
            if let (Some(offset), Some(fence)) = (v["topic"]["offset"].as_i64(), v["fence_ms"].as_i64()) {
                got.push((offset, fence));
            }
        }
    }
    got.sort_unstable();
    got
}

/// The fence the request logs hold for the topic's record at `offset`, once they hold it.
fn fence_of(run: &Path, offset: i64) -> i64 {
    let mut fence = None;
    wait_until(&format!("the record at offset {offset} logged"), run, || {
        fence = logged(run).iter().find(|(o, _)| *o == offset).map(|(_, f)| *f);
        fence.is_some()
    });
    fence.expect("fence")
}

/// The newest complete checkpoint's id (0: none).
fn newest_checkpoint(run: &Path) -> u64 {
    let entries = std::fs::read_dir(run.join("checkpoints")).into_iter().flatten().filter_map(Result::ok);
    entries
        .filter(|e| e.path().join("manifest-p0.json").exists())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .max()
        .unwrap_or(0)
}

/// The acknowledgements of `construct` in `text`: their fences.
fn acks(text: &str, construct: &str) -> Vec<i64> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["requestID"] == construct && v["accepted"].is_string())
        .map(|v| saams::api::time::parse_timestamp(v["effectiveFrom"].as_str().expect("fence")).expect("time"))
        .collect()
}

fn wait_success(child: &mut Child, what: &str, run: &Path) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            assert!(status.success(), "{what} failed: {}", stderr_of(run, ""));
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not end by itself: {}", stderr_of(run, ""));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A record of the script (on the topic before the start), one acknowledged and held by a
/// checkpoint, one acknowledged right before the kill (perhaps in the request log only), one
/// produced while the job is down: after the restart each is applied once, the first two at
/// their fences, and every window of every synopsis is answered once.
#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_job_killed_and_restarted_applies_each_request_of_the_topic_once_at_its_fence() {
    let brokers = kafka_common::declared_broker("SAAMS_KAFKA_BROKERS");
    let run = tmp("kill");
    let topic = request_topic(&brokers, "durable-requests");
    let kafka = (brokers.as_str(), topic.as_str());
    let out = run.join("out.jsonl").display().to_string();
    let mut child = saams(&run, kafka, "first", &["-w", "2", "--rate", "30000", "--out", &out]).spawn().expect("saams");
    wait_until("the topic followed", &run, || stderr_of(&run, "first").contains("followed from partition:offset 0:1"));
    kafka_common::produce_raw(&brokers, &topic, &[construct(0, "1")]);
    let first_fence = fence_of(&run, 1);
    let held = newest_checkpoint(&run) + 2;
    wait_until("two checkpoints after the first request", &run, || newest_checkpoint(&run) >= held);
    kafka_common::produce_raw(&brokers, &topic, &[construct(1, "2")]);
    let second_fence = fence_of(&run, 2);
    child.kill().expect("kill -9");
    let _ = child.wait();
    kafka_common::produce_raw(&brokers, &topic, &[construct(2, "3")]);
    // Paced too: a request produced while the job was down is a live request to the restarted
    // job, applied if the job still runs when its follower reads it (unpaced, the rest of the
    // input was read in ~0.2 s, and in one CI run the job ended before the record was fetched).
    let again = ["-w", "2", "--rate", "100000", "--out", &out];
    let mut again = saams(&run, kafka, "second", &again).spawn().expect("saams again");
    wait_success(&mut again, "the restarted job", &run);
    let stderr = stderr_of(&run, "second");
    assert!(stderr.contains("followed from partition:offset 0:3"), "{stderr}");
    let text = std::fs::read_to_string(&out).expect("output");
    assert_eq!(acks(&text, "c1"), [first_fence], "the first request once, at its fence");
    assert_eq!(acks(&text, "c2"), [second_fence], "the second request once, at its fence");
    let third = acks(&text, "c3");
    assert_eq!(third.len(), 1, "the request produced while the job was down, once: {third:?}");
    check_answers(&text, &live(3, "s"), 0);
    check_answers(&text, &live(0, "1"), first_fence);
    check_answers(&text, &live(1, "2"), second_fence);
    check_answers(&text, &live(2, "3"), third[0]);
    let logged = logged(&run);
    assert_eq!(logged.iter().map(|(o, _)| *o).collect::<Vec<_>>(), [1, 2, 3], "each record logged once: {logged:?}");
    // The directory is that topic's: another is refused before anything is written.
    let other = kafka_common::unique("other-requests");
    let refused = saams(&run, (&brokers, &other), "other", &["--out", &out]).status().expect("saams");
    assert!(!refused.success());
    let stderr = stderr_of(&run, "other");
    assert!(stderr.contains(&format!("were written by a job reading request topic {topic:?}")), "{stderr}");
    assert_eq!(std::fs::read_to_string(&out).expect("output"), text, "the output as it was");
    let _ = std::fs::remove_dir_all(&run);
}

/// A `-w 1` job reading requests from the topic hands off to a `-n 2 -w 1` job: the request
/// the running job applied is applied by the new one at the same fence (and answered once), and
/// the new job reads the topic on from after it: a request produced after the hand-off is
/// applied once.
#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_job_taking_over_reads_the_request_topic_on_from_where_the_running_job_stopped() {
    let brokers = kafka_common::declared_broker("SAAMS_KAFKA_BROKERS");
    let run = tmp("take-over");
    let topic = request_topic(&brokers, "handoff-requests");
    let kafka = (brokers.as_str(), topic.as_str());
    let outs: Vec<String> = (0..2).map(|p| run.join(format!("out{p}.json")).display().to_string()).collect();
    let mut old = saams(&run, kafka, "old", &["-w", "1", "--rate", "20000", "--out", &outs[0]]).spawn().expect("old");
    wait_until("the topic followed", &run, || stderr_of(&run, "old").contains("followed from partition:offset 0:1"));
    kafka_common::produce_raw(&brokers, &topic, &[construct(0, "1")]);
    let first_fence = fence_of(&run, 1);
    let held = newest_checkpoint(&run) + 2;
    wait_until("two checkpoints after the first request", &run, || newest_checkpoint(&run) >= held);
    let ports: Vec<u16> = (0..2)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port())
        .collect();
    let hosts = run.join("hosts");
    std::fs::write(&hosts, ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect::<String>()).expect("hosts");
    let hosts = hosts.display().to_string();
    let mut new: Vec<Child> = (0..2)
        .map(|p| {
            let shape = ["-n", "2", "-w", "1", "-p", &p.to_string(), "-h", &hosts, "--take-over", "--rate", "60000"];
            saams(&run, kafka, &format!("new{p}"), &shape).args(["--out", &outs[p]]).spawn().expect("new")
        })
        .collect();
    wait_success(&mut old, "the running job", &run);
    assert!(stderr_of(&run, "old").contains("handed off"), "{}", stderr_of(&run, "old"));
    wait_until("the new job took over", &run, || {
        stderr_of(&run, "new").matches("took over at checkpoint").count() == 2
    });
    wait_until("the new job follows the topic", &run, || {
        stderr_of(&run, "new0").contains("followed from partition:offset 0:2")
    });
    kafka_common::produce_raw(&brokers, &topic, &[construct(1, "2")]);
    let second_fence = fence_of(&run, 2);
    for (p, child) in new.iter_mut().enumerate() {
        wait_success(child, &format!("process {p} of the new job"), &run);
    }
    let text: String = outs.iter().map(|o| std::fs::read_to_string(o).unwrap_or_default()).collect();
    assert_eq!(acks(&text, "c1"), [first_fence], "the running job's request once, at its fence");
    assert_eq!(acks(&text, "c2"), [second_fence], "the request after the hand-off once");
    check_answers(&text, &live(3, "s"), 0);
    check_answers(&text, &live(0, "1"), first_fence);
    check_answers(&text, &live(1, "2"), second_fence);
    let _ = std::fs::remove_dir_all(&run);
}
