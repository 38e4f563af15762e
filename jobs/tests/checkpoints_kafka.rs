//! Checkpoints with Kafka, against a real broker at `SAAMS_KAFKA_BROKERS` (shown as ignored where
//! it was unset at build time): a job reading a 4-partition data topic, killed with SIGKILL after
//! two checkpoints and started again with the same command, ends with exactly the answers of an
//! uninterrupted run of the same data from a file — each once — whether it writes them to a file
//! or to an answer topic (read whole: the deduplicating sink produces no answer twice), and
//! whether the topic holds a tuple per record or many (the batched format: a checkpoint inside a
//! record resumes from its next line).
//!
//! KLL answers are left out of the comparisons (see checkpoints.rs), and so are GK quantiles:
//! their bounds depend on the order a window's values reach the summary, which differs between
//! a file reader and a Kafka consumer (measured: a plain Kafka run without checkpoints gives the
//! same GK lines as the killed and resumed one, and both differ from the file run's in some
//! windows' bounds; every other line is equal).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use saams_jobs::kafka::{KafkaOptions, TopicSpec, ensure_topics};

#[allow(dead_code)] // its own assert_same also names lines written twice
mod checkpoint_common;
#[allow(dead_code)] // this test produces its data itself (kafka_common::replay_into is not used)
mod kafka_common;
use checkpoint_common::{kill_after, stderr_of};
use kafka_common::{check, declared_broker, read_topic, repo, unique};

const SAAMS: &str = env!("CARGO_BIN_EXE_saams");
const REPLAY: &str = env!("CARGO_BIN_EXE_replay");
const REQUESTS: &str = "datasets/requests/all-kinds.json";

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-ckpt-kafka-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("snapshots")).expect("create temp dir");
    d
}

/// The lines, KLL and GK answers left out, sorted (duplicates kept: each must be there once).
fn sorted(lines: impl IntoIterator<Item = String>) -> Vec<String> {
    let compared = |l: &String| !l.contains(r#""kind":"KLL""#) && !l.contains(r#""kind":"GKQuantiles""#);
    let mut v: Vec<String> = lines.into_iter().filter(compared).collect();
    v.sort();
    v
}

/// The same lines, or a message with the counts and the first lines only one side has.
#[track_caller]
fn assert_same(got: &[String], want: &[String], what: &str) {
    if got == want {
        return;
    }
    let missing: Vec<&String> = want.iter().filter(|l| !got.contains(l)).take(3).collect();
    let extra: Vec<&String> = got.iter().filter(|l| !want.contains(l)).take(3).collect();
    let mut twice: Vec<&String> = got.windows(2).filter(|w| w[0] == w[1]).map(|w| &w[0]).take(3).collect();
    twice.dedup();
    panic!(
        "{what}: {} lines, expected {}; missing e.g. {missing:#?}; unexpected e.g. {extra:#?}; twice e.g. {twice:#?}",
        got.len(),
        want.len()
    );
}

/// Streams of the data: the generator's, each re-timed to one tick a second.
const STREAMS: usize = 12;
/// Ticks per stream (about 170 one-minute windows).
const TICKS: usize = 10_000;

/// The ticks of the stock generator's streams, re-timed so every stream has one tick a second
/// (stream `s` at `s` × 10 ms past each second), in event-time order: a data topic of 4
/// partitions holding them, stream `s` in partition `s % 4`, and the same as 4 files, one per
/// partition (read by one worker each, as the partitions are: answers whose bounds depend on
/// the order partial states are merged in come out the same).
///
/// Every partition advances through event time at the same pace: the job's workers (one per
/// partition) keep together, as the checkpoints' boundaries need (a worker far ahead in event
/// time sets a boundary the others reach only at the end of their input).
///
/// `batch` > 1 writes the topic in the batched format: each partition's lines in records of
/// `batch` newline-separated lines (a checkpoint's boundary then mostly falls inside a record).
fn data(brokers: &str, dir: &Path, batch: usize) -> (Vec<PathBuf>, String) {
    let generated = dir.join("generated.jsonl");
    check(
        Command::new(REPLAY)
            .args(["--generate", &format!("stocks:{STREAMS}:{TICKS}"), "--progress", "none", "--output"])
            .arg(&generated)
            .output()
            .expect("run replay"),
        "replay --generate",
    );
    let mut streams: Vec<String> = Vec::new();
    let mut per_stream: Vec<Vec<serde_json::Value>> = Vec::new();
    for line in std::fs::read_to_string(&generated).expect("generated ticks").lines() {
        let tick: serde_json::Value = serde_json::from_str(line).expect("a JSON tick");
        let id = tick["streamID"].as_str().expect("streamID").to_string();
        let s = streams.iter().position(|x| *x == id).unwrap_or_else(|| {
            streams.push(id);
            per_stream.push(Vec::new());
            streams.len() - 1
        });
        per_stream[s].push(tick);
    }
    assert_eq!(streams.len(), STREAMS);
    let mut lines = Vec::new();
    for i in 0..TICKS {
        for (s, ticks) in per_stream.iter_mut().enumerate() {
            let ms = i * 1000 + s * 10;
            let tick = &mut ticks[i];
            tick["date"] = "01/02/2019".into();
            tick["time"] =
                format!("{:02}:{:02}:{:02}.{:03}", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000).into();
            lines.push((s, tick.to_string()));
        }
    }
    let files: Vec<PathBuf> = (0..4).map(|p| dir.join(format!("ticks-{p}.jsonl"))).collect();
    for (p, file) in files.iter().enumerate() {
        let text: String = lines.iter().filter(|(s, _)| s % 4 == p).map(|(_, l)| format!("{l}\n")).collect();
        std::fs::write(file, text).expect("write ticks");
    }
    let topic = unique("ckpt-data");
    let opts = KafkaOptions::new(brokers, unique("producer"));
    ensure_topics(&opts, &[TopicSpec::new(&topic, 4)]).expect("data topic");
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("linger.ms", "20")
        .set("queue.buffering.max.messages", "500000")
        .create()
        .expect("producer");
    if batch > 1 {
        for p in 0..4 {
            let ours: Vec<&str> = lines.iter().filter(|(s, _)| s % 4 == p).map(|(_, l)| l.as_str()).collect();
            for chunk in ours.chunks(batch) {
                let payload = chunk.join("\n");
                let record = BaseRecord::<[u8], [u8]>::to(&topic).payload(payload.as_bytes()).partition(p as i32);
                producer.send(record).map_err(|(e, _)| e).expect("enqueue");
            }
        }
    }
    for (s, line) in lines.iter().filter(|_| batch <= 1) {
        let key = streams[*s].as_bytes();
        let record = BaseRecord::<[u8], [u8]>::to(&topic).key(key).payload(line.as_bytes()).partition((s % 4) as i32);
        producer.send(record).map_err(|(e, _)| e).expect("enqueue");
    }
    producer.flush(Duration::from_secs(60)).expect("flush");
    (files, topic)
}

/// The answers of a run without checkpoints from the files (one worker each).
fn uninterrupted(dir: &Path, files: &[PathBuf]) -> Vec<String> {
    let out = dir.join("uninterrupted.json");
    let mut cmd = Command::new(SAAMS);
    for f in files {
        cmd.arg("--data").arg(f);
    }
    check(
        cmd.args(["-w", "4", "--requests", &repo(REQUESTS), "--progress", "0", "--snapshots"])
            .arg(dir.join("snapshots"))
            .arg("--out")
            .arg(&out)
            .output()
            .expect("run saams"),
        "the uninterrupted run",
    );
    sorted(std::fs::read_to_string(&out).expect("output").lines().map(str::to_string))
}

/// Where the checkpointed job writes its answers.
enum Answers<'a> {
    File(&'a Path),
    Topic(&'a str),
}

/// The first life's `--rate`: the 120 k tuples over ~6 s, so that a loaded machine still sees
/// the checkpoints the tests wait for (every 150 ms) before the input ends. At 40,000 (~3 s) a
/// machine loaded by a parallel build once ended the run before its third checkpoint.
const PACED_RATE: &str = "20000";

/// Start the checkpointed Kafka job (paced with `--rate` when `rate` is given, so it can be
/// killed mid-stream); stderr goes to a file in `dir`.
fn start(
    brokers: &str,
    dir: &Path,
    (topic, group): (&str, &str),
    answers: &Answers<'_>,
    (rate, env): (Option<&str>, &[(&str, &str)]),
) -> Child {
    let mut cmd = Command::new(SAAMS);
    cmd.envs(env.iter().copied());
    // One worker per partition: a worker's consumer reads its partitions one after the other
    // (the broker fills a fetch from the first partition), and a partition waiting behind
    // another would hold the watermark, and the checkpoints, until the other is drained.
    cmd.args(["-w", "4", "--requests", &repo(REQUESTS), "--progress", "0", "--snapshots"])
        .arg(dir.join("snapshots"))
        .args(["--brokers", brokers, "--data-topic", topic, "--group-id", group, "--from", "earliest"])
        .args(["--exit-when-idle", "3s"])
        .args(["--checkpoint-interval", "150ms", "--checkpoints"])
        .arg(dir.join("checkpoints"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("stderr-{}", unique("run")))).expect("stderr file"));
    match answers {
        Answers::File(out) => cmd.arg("--out").arg(out),
        Answers::Topic(t) => cmd.args(["--output-topic", t]),
    };
    if let Some(r) = rate {
        cmd.args(["--rate", r]);
    }
    cmd.spawn().expect("start saams")
}

/// Kill the job after two checkpoints, run the same command to its end, check it resumed; the
/// stderr of both runs.
fn crash_and_resume(brokers: &str, dir: &Path, topic: &str, answers: &Answers<'_>) -> String {
    let group = unique("ckpt-group");
    let mut child = start(brokers, dir, (topic, &group), answers, (Some(PACED_RATE), &[]));
    kill_after(&mut child, dir, 2);
    let manifest = std::fs::read_to_string(
        std::fs::read_dir(dir.join("checkpoints"))
            .expect("checkpoints")
            .filter_map(Result::ok)
            .map(|e| e.path().join("manifest-p0.json"))
            .find(|p| p.exists())
            .expect("a manifest"),
    )
    .expect("read manifest");
    let status = start(brokers, dir, (topic, &group), answers, (None, &[])).wait().expect("wait for saams");
    let stderr = stderr_of(dir);
    assert!(status.success(), "the resumed run failed: {stderr}");
    assert!(stderr.contains("resuming from checkpoint"), "{stderr}");
    // The checkpoint names the data topic among its inputs.
    assert!(manifest.contains(&format!("\"kafka:{topic}\"")), "{manifest}");
    stderr
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_kafka_job_killed_after_two_checkpoints_writes_each_answer_to_its_topic_once() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("topic");
    let (files, topic) = data(&brokers, &dir, 1);
    let want = uninterrupted(&dir, &files);
    assert!(want.len() > 500, "expected many answers, got {}", want.len());
    let out_topic = unique("ckpt-answers");
    let stderr = crash_and_resume(&brokers, &dir, &topic, &Answers::Topic(&out_topic));
    let got = sorted(read_topic(&brokers, &out_topic).into_iter().map(|v| String::from_utf8(v).expect("UTF-8")));
    println!("{stderr}");
    assert_same(&got, &want, "answer topic after kill -9 and restart");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_kafka_job_killed_after_two_checkpoints_writes_each_answer_to_its_file_once() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("file");
    let (files, topic) = data(&brokers, &dir, 1);
    let want = uninterrupted(&dir, &files);
    let out = dir.join("out.json");
    crash_and_resume(&brokers, &dir, &topic, &Answers::File(&out));
    let got = sorted(std::fs::read_to_string(&out).expect("output").lines().map(str::to_string));
    assert_same(&got, &want, "answer file after kill -9 and restart");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn answers_delivered_after_the_newest_checkpoint_are_not_produced_again() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("dedup");
    let (files, topic) = data(&brokers, &dir, 1);
    let want = uninterrupted(&dir, &files);
    let out_topic = unique("ckpt-answers");
    let answers = Answers::Topic(&out_topic);
    let group = unique("ckpt-group");
    // The process ends after checkpoint 3's answers are delivered, before its manifest: the
    // topic holds answers past checkpoint 2, which the restart computes again.
    let crash = [("SAAMS_CRASH_AFTER_OUTPUT", "3")];
    let status = start(&brokers, &dir, (&topic, &group), &answers, (Some(PACED_RATE), &crash)).wait().expect("wait");
    assert!(!status.success(), "the job did not end at checkpoint 3: {}", stderr_of(&dir));
    let before = read_topic(&brokers, &out_topic).len();
    let status = start(&brokers, &dir, (&topic, &group), &answers, (None, &[])).wait().expect("wait for saams");
    let stderr = stderr_of(&dir);
    assert!(status.success(), "the resumed run failed: {stderr}");
    assert!(stderr.contains("resuming from checkpoint 2 "), "{stderr}");
    let skipped: usize = stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("kafka estimations already in the topic after the checkpoint (not produced again)=")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no answers skipped: {stderr}"));
    assert!(skipped > 0 && skipped <= before, "{skipped} skipped of {before} before the restart");
    let got = sorted(read_topic(&brokers, &out_topic).into_iter().map(|v| String::from_utf8(v).expect("UTF-8")));
    assert_same(&got, &want, "answer topic after a crash between delivering and the manifest");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_batched_kafka_job_killed_mid_record_resumes_from_the_next_line() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("batched");
    // 7 lines a record: 2⅓ s of a partition's three streams, so boundaries fall inside records.
    let (files, topic) = data(&brokers, &dir, 7);
    let want = uninterrupted(&dir, &files);
    let out = dir.join("out.json");
    let stderr = crash_and_resume(&brokers, &dir, &topic, &Answers::File(&out));
    let got = sorted(std::fs::read_to_string(&out).expect("output").lines().map(str::to_string));
    assert_same(&got, &want, "answer file of a batched topic after kill -9 and restart");
    // The lines of the record a checkpoint stopped in that were read before it are skipped, not
    // read again (they would be late: measured, 8 such lines dead-lettered without the skip).
    let resumed = stderr.lines().find(|l| l.starts_with("summary ")).expect("the resumed run's summary");
    assert!(resumed.contains(" dead_letters=0 late=0 "), "{resumed}");
}
