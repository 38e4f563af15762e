//! A broker restarted while `saams` runs: the job reconnects and keeps consuming new records.
//!
//! Needs a broker whose storage outlives it, as a real Kafka cluster's does: start one with
//! `scripts/start-kafka.sh --durable` (Tansu on S3 storage kept by a local object store) and set
//! `SAAMS_KAFKA_DURABLE_BROKERS` to it (127.0.0.1:9192; `scripts/test.sh` does both). The test
//! restarts it with `scripts/restart-kafka.sh` (kill -9, start again on the same address and
//! storage; from a linked worktree too, as the scripts keep their PID files in the main checkout).
//! Shows as ignored where that variable was unset at build time (`scripts/test.sh` sets it).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use saams_jobs::kafka::{AdapterError, KafkaBroadcastSource, KafkaOptions, StartFrom};

#[allow(dead_code)] // produce_raw is the other tests'
mod kafka_common;
use kafka_common::{check, declared_broker, read_topic, replay_into, repo, unique};

const SAAMS: &str = env!("CARGO_BIN_EXE_saams");
const REPLAY: &str = env!("CARGO_BIN_EXE_replay");
/// Seconds the broker stays down (starting it again takes about 2 s more): longer than the job's
/// `--idle-timeout`, and long enough that the consumer's errors alone did not hold its partitions
/// active through it. A job that took the outage, or a quiet stretch of it, for idleness turns
/// on-time tuples of the second batch into late ones: 70,903 of 100,000 before
/// `PartitionWatermarks::hold_active`, 24,815 when partitions were held only as errors arrived
/// (the source's `Reachability` now ends an outage by the client's statistics), 1,170 when a
/// commit's flush blocked the workers through the outage (commits now wait for acknowledgements
/// without blocking, and a stalled worker's pause does not count as idleness).
const DOWN_S: &str = "7";
/// After the broker is back, the partitions are silent until the second batch reaches them (the
/// `replay` process starting, producing, the consumers refetching): genuine idleness, which ends in
/// a race between the partitions when it outlasts this timeout. 6 s leaves room on a loaded machine.
const IDLE_TIMEOUT: &str = "6s";
/// Longer than the time from the first batch's last record to the second batch's first.
const EXIT_WHEN_IDLE: &str = "20s";

/// Sorted, distinct estimation lines of a file run (the sink is at-least-once across a restart:
/// a produce request retried after the broker came back may be stored twice).
fn file_run(requests: &str, data: &Path) -> Vec<String> {
    let out = check(
        Command::new(SAAMS)
            .args(["-w", "2", "--progress", "0", "--requests"])
            .arg(requests)
            .arg("--data")
            .arg(data)
            .output()
            .expect("run saams"),
        "saams from a file",
    );
    distinct(String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect())
}

fn distinct(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// The end of the window whose close produced the answer (a landmark answer starts at its
/// synopsis' first window, so the end tells the windows apart).
fn window_end(line: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(line).expect("estimation JSON");
    v["window"]["end"].as_str().expect("window end").to_string()
}

#[test]
#[cfg_attr(
    saams_no_durable_kafka,
    ignore = "needs a durable Kafka broker: set SAAMS_KAFKA_DURABLE_BROKERS (scripts/test.sh starts one)"
)]
fn broker_restart_while_the_job_runs_reconnects_and_consumes_the_new_records() {
    let brokers = declared_broker("SAAMS_KAFKA_DURABLE_BROKERS");
    let dir = std::env::temp_dir().join(format!("saams-kafka-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let all = dir.join("all.jsonl");
    check(
        Command::new(REPLAY)
            .args(["--generate", "stocks:100:2000", "--progress", "none", "--output"])
            .arg(&all)
            .output()
            .expect("run replay"),
        "replay --generate",
    );
    // in event-time order: the second half is newer than the first
    let text = std::fs::read_to_string(&all).expect("generated tuples");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 200_000);
    let (first, second) = (dir.join("batch1.jsonl"), dir.join("batch2.jsonl"));
    std::fs::write(&first, lines[..100_000].join("\n") + "\n").expect("batch 1");
    std::fs::write(&second, lines[100_000..].join("\n") + "\n").expect("batch 2");
    let requests = repo("datasets/requests/paper-workload.json");

    let (data_topic, out_topic) = (unique("data"), unique("out"));
    replay_into(&brokers, &data_topic, &first, 4);
    let started = Instant::now();
    let job = Command::new(SAAMS)
        .args(["-w", "2", "--brokers", &brokers, "--data-topic", &data_topic, "--output-topic", &out_topic])
        .arg("--requests")
        .arg(&requests)
        .args(["--group-id", &unique("group"), "--from", "earliest", "--progress", "0"])
        .args(["--idle-timeout", IDLE_TIMEOUT, "--exit-when-idle", EXIT_WHEN_IDLE])
        .args(["-X", "session.timeout.ms=2000", "-X", "heartbeat.interval.ms=500"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run saams");

    // the first estimations of batch 1 reach the output topic (which the job creates)
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out_reader = loop {
        let mut opts = KafkaOptions::new(&brokers, unique("reader"));
        opts.from = StartFrom::Earliest;
        match KafkaBroadcastSource::new(&opts, &out_topic, 0) {
            Ok(r) => break r,
            Err(AdapterError::MissingTopic { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Err(e) => panic!("reader of the output topic: {e}"),
        }
    };
    while out_reader.poll_batch(100, Duration::from_millis(50)).expect("poll").is_empty() {
        assert!(Instant::now() < deadline, "no estimation within 30 s");
    }
    drop(out_reader);
    let first_estimation = started.elapsed();

    let restart = Command::new(repo("scripts/restart-kafka.sh")).arg(DOWN_S).output().expect("run restart-kafka.sh");
    check(restart, "scripts/restart-kafka.sh");
    let restarted = started.elapsed();
    replay_into(&brokers, &data_topic, &second, 4);

    let out = job.wait_with_output().expect("saams finished");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    println!(
        "first estimation at {first_estimation:.2?}, broker back at {restarted:.2?}, job done at {took:.2?}\n{stderr}"
    );
    assert!(stderr.contains("poll error"), "the job did not see the broker go away:\n{stderr}");
    let summary = stderr.lines().find(|l| l.starts_with("summary ")).expect("summary line");
    assert!(summary.contains("tuples=200000 "), "both batches counted: {summary}");
    assert!(summary.contains(" late=0 ") && summary.contains(" dead_letters=0 "), "{summary}");
    assert!(stderr.contains(" failed=0"), "every estimation delivered:\n{stderr}");

    // what the job wrote, before and after the restart, is what a file run of both batches gives
    let from_kafka = distinct(
        read_topic(&brokers, &out_topic).into_iter().map(|v| String::from_utf8(v).expect("UTF-8 estimation")).collect(),
    );
    let expected = file_run(&requests, &all);
    assert_eq!(from_kafka.len(), expected.len());
    assert!(from_kafka == expected, "estimations across the restart differ from the file run's");
    // and it covers windows that only batch 2 has
    let last_of_batch1 = file_run(&requests, &first).iter().map(|l| window_end(l)).max().expect("batch 1 windows");
    let newer = from_kafka.iter().filter(|l| window_end(l) > last_of_batch1).count();
    assert!(newer > 1000, "only {newer} estimations of windows after {last_of_batch1}");
}
