//! The `saams` binary with Kafka sources and sinks, against a real Kafka-protocol broker at
//! `SAAMS_KAFKA_BROKERS` (`scripts/test.sh` starts one and sets it): the same estimations as from
//! files (one and two processes, one tuple or many per record), malformed records (and lines of
//! batched records) dead-lettered, and a clear error for an unreachable broker. Where the variable was unset at build time the broker tests show as ignored.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use saams_jobs::kafka::{KafkaOptions, StartFrom, TopicSpec, ensure_topics, replay_lines};

mod kafka_common;
use kafka_common::{check, declared_broker, produce_raw, read_topic, replay_into, repo, unique};

const SAAMS: &str = env!("CARGO_BIN_EXE_saams");
const REPLAY: &str = env!("CARGO_BIN_EXE_replay");
const CONSUMER_SETTINGS: [&str; 4] = ["-X", "session.timeout.ms=2000", "-X", "heartbeat.interval.ms=500"];

/// A name no other test (or earlier run) uses.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-kafka-job-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

fn options(brokers: &str, group: &str) -> KafkaOptions {
    let mut opts = KafkaOptions::new(brokers, group);
    opts.from = StartFrom::Earliest;
    opts
}

fn summary(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).lines().find(|l| l.starts_with("summary ")).expect("summary line").to_string()
}

fn sorted_lines(text: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(text).lines().map(str::to_string).collect();
    v.sort();
    v
}

/// Generated tuples as JSON lines in event-time order (the replay tool's generator).
fn generate(spec: &str, file: &PathBuf) {
    check(
        Command::new(REPLAY)
            .args(["--generate", spec, "--progress", "none", "--output"])
            .arg(file)
            .output()
            .expect("run replay"),
        "replay --generate",
    );
}

fn file_run(requests: &str, data: &PathBuf, workers: &str) -> Vec<String> {
    let out = check(
        Command::new(SAAMS)
            .args(["-w", workers, "--requests", requests, "--data"])
            .arg(data)
            .args(["--progress", "0"])
            .output()
            .expect("run saams"),
        "saams from files",
    );
    sorted_lines(&out.stdout)
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn kafka_in_kafka_out_gives_the_file_estimations() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("roundtrip");
    let data = dir.join("ticks.jsonl");
    generate("stocks:100:2000", &data);
    let (data_topic, req_topic, out_topic) = (unique("data"), unique("requests"), unique("out"));
    let opts = options(&brokers, &unique("producer"));
    ensure_topics(&opts, &[TopicSpec::new(&req_topic, 1)]).expect("request topic");
    let requests = repo("datasets/requests/paper-workload.json");
    let request_lines = std::fs::read_to_string(&requests).expect("paper workload");
    replay_lines(&opts, &req_topic, request_lines.lines(), None).expect("produce requests");
    replay_into(&brokers, &data_topic, &data, 4);

    let started = Instant::now();
    let out = check(
        Command::new(SAAMS)
            .args(["-w", "2", "--brokers", &brokers, "--request-topic", &req_topic, "--data-topic", &data_topic])
            .args(["--output-topic", &out_topic, "--group-id", &unique("group"), "--from", "earliest"])
            .args(["--exit-when-idle", "3s", "--progress", "0"])
            .args(CONSUMER_SETTINGS)
            .output()
            .expect("run saams"),
        "saams from Kafka",
    );
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(summary(&out).contains("tuples=200000 "), "{stderr}");
    assert!(stderr.contains("kafka estimations sent="), "{stderr}");
    assert!(stderr.contains(" failed=0"), "{stderr}");
    println!("saams -w 2 Kafka → Kafka: {took:.2?} (3 s of it idle wait)\n{stderr}");

    let mut from_kafka: Vec<String> =
        read_topic(&brokers, &out_topic).into_iter().map(|v| String::from_utf8(v).expect("UTF-8")).collect();
    from_kafka.sort();
    let from_files = file_run(&requests, &data, "2");
    assert!(from_files.len() > 1000, "expected continuous answers, got {}", from_files.len());
    assert_eq!(from_kafka.len(), from_files.len());
    assert!(from_kafka == from_files, "Kafka estimations differ from the file run's");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn two_processes_split_the_partitions_and_give_the_file_estimations() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("cluster");
    let data = dir.join("ticks.jsonl");
    generate("stocks:40:1000", &data);
    let data_topic = unique("cluster-data");
    replay_into(&brokers, &data_topic, &data, 4);
    let requests = repo("datasets/requests/paper-workload.json");
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port())).expect("hostfile");
    let group = unique("cluster-group");
    let outs: Vec<PathBuf> = (0..2).map(|p| dir.join(format!("out{p}.json"))).collect();
    let spawn = |p: usize| {
        Command::new(SAAMS)
            .args(["-w", "2", "-n", "2", "-p", &p.to_string(), "-h", &hostfile.to_string_lossy()])
            .args(["--requests", &requests, "--brokers", &brokers, "--data-topic", &data_topic])
            .args(["--group-id", &group, "--from", "earliest", "--exit-when-idle", "3s", "--progress", "0"])
            .args(CONSUMER_SETTINGS)
            .args(["--out", &outs[p].to_string_lossy()])
            .output()
            .expect("run saams")
    };
    let (a, b) = std::thread::scope(|s| {
        let h0 = s.spawn(|| spawn(0));
        let h1 = s.spawn(|| spawn(1));
        (h0.join().expect("process 0"), h1.join().expect("process 1"))
    });
    let (a, b) = (check(a, "process 0"), check(b, "process 1"));
    let tuples = |o: &Output| -> u64 {
        let s = summary(o);
        s.split_whitespace().find_map(|f| f.strip_prefix("tuples=")).and_then(|n| n.parse().ok()).expect("tuples=")
    };
    assert!(tuples(&a) > 0 && tuples(&b) > 0, "both processes read partitions: {} / {}", summary(&a), summary(&b));
    assert_eq!(tuples(&a) + tuples(&b), 40_000);
    let mut union = Vec::new();
    for o in &outs {
        union.extend(sorted_lines(&std::fs::read(o).expect("process output")));
    }
    union.sort();
    assert!(union == file_run(&requests, &data, "2"), "two-process Kafka estimations differ from the file run's");
}

/// One stream, two partitions, two processes of one worker each: only one partition (so one
/// process) has records. The other process is all idle; it must follow the active one's epoch
/// (gossiped between processes), not hold its windows open until `--exit-when-idle` — which is set
/// far beyond the wait below, so only a job that closes windows while running passes.
#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn an_all_idle_process_does_not_hold_the_other_processes_windows_open() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("idle-process");
    let data = dir.join("ticks.jsonl");
    generate("stocks:1:30000", &data);
    let topic = unique("idle-process-data");
    replay_into(&brokers, &topic, &data, 2);
    let requests = repo("datasets/requests/paper-workload.json");
    let expected = file_run(&requests, &data, "1");
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port())).expect("hostfile");
    let group = unique("idle-process-group");
    let outs: Vec<PathBuf> = (0..2).map(|p| dir.join(format!("out{p}.json"))).collect();
    let jobs: Vec<_> = (0..2)
        .map(|p| {
            Command::new(SAAMS)
                .args(["-w", "1", "-n", "2", "-p", &p.to_string(), "-h", &hostfile.to_string_lossy()])
                .args(["--requests", &requests, "--brokers", &brokers, "--data-topic", &topic])
                .args(["--group-id", &group, "--from", "earliest", "--exit-when-idle", "120s", "--progress", "0"])
                .args(["--idle-timeout", "1s"])
                .args(CONSUMER_SETTINGS)
                .args(["--out", &outs[p].to_string_lossy()])
                .stderr(Stdio::piped())
                .spawn()
                .expect("run saams")
        })
        .collect();
    let count = || outs.iter().map(|o| std::fs::read(o).map(|b| sorted_lines(&b).len()).unwrap_or(0)).sum::<usize>();
    // every window but the last few closes while the job runs
    let deadline = Instant::now() + Duration::from_secs(60);
    while count() * 10 < expected.len() * 9 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let reached = count();
    for job in &jobs {
        Command::new("kill").args(["-TERM", &job.id().to_string()]).status().expect("kill");
    }
    let outputs: Vec<Output> = jobs.into_iter().map(|j| j.wait_with_output().expect("saams finished")).collect();
    assert!(
        reached * 10 >= expected.len() * 9,
        "only {reached} of {} estimations while running: the idle process held the windows open",
        expected.len()
    );
    for (p, o) in outputs.iter().enumerate() {
        assert!(o.status.success(), "process {p}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let mut union = Vec::new();
    for o in &outs {
        union.extend(sorted_lines(&std::fs::read(o).expect("process output")));
    }
    union.sort();
    assert!(union == expected, "estimations differ from the file run's");
}

/// Produces raw values to `topic`, waiting for every acknowledgement.
/// The sorted estimations of `saams -w 2` reading `topic` from its start (stdout).
fn topic_run(brokers: &str, requests: &str, topic: &str) -> (Vec<String>, String) {
    let out = check(
        Command::new(SAAMS)
            .args(["-w", "2", "--brokers", brokers, "--requests", requests, "--data-topic", topic])
            .args(["--group-id", &unique("group"), "--from", "earliest", "--exit-when-idle", "3s", "--progress", "0"])
            .args(CONSUMER_SETTINGS)
            .output()
            .expect("run saams"),
        "saams from a topic",
    );
    (sorted_lines(&out.stdout), summary(&out))
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_batched_topic_gives_the_one_tuple_topics_and_the_files_estimations() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("batched");
    let data = dir.join("ticks.jsonl");
    generate("stocks:100:2000", &data);
    let (one, batched) = (unique("one-tuple"), unique("batched"));
    replay_into(&brokers, &one, &data, 4);
    // 37 tuples a record: records end at no window's edge, and each partition's last is short.
    check(
        Command::new(REPLAY)
            .arg(&data)
            .args(["--brokers", &brokers, "--topic", &batched, "--partitions", "4", "--batch", "37"])
            .args(["--progress", "none"])
            .output()
            .expect("run replay"),
        "replay --batch",
    );
    let records = read_topic(&brokers, &batched);
    assert!(records.len() < 200_000 / 30, "{} records for 200,000 tuples", records.len());
    assert_eq!(records.iter().map(|r| r.split(|&b| b == b'\n').count()).sum::<usize>(), 200_000);

    let requests = repo("datasets/requests/paper-workload.json");
    let (from_one, one_summary) = topic_run(&brokers, &requests, &one);
    let (from_batched, batched_summary) = topic_run(&brokers, &requests, &batched);
    let from_files = file_run(&requests, &data, "2");
    assert!(
        batched_summary.contains("tuples=200000 ") && batched_summary.contains("dead_letters=0 "),
        "{batched_summary}"
    );
    assert!(one_summary.contains("tuples=200000 "), "{one_summary}");
    assert!(from_files.len() > 1000, "expected continuous answers, got {}", from_files.len());
    assert!(from_one == from_files, "the one-tuple topic's estimations differ from the file run's");
    assert!(from_batched == from_files, "the batched topic's estimations differ from the file run's");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_malformed_line_of_a_batched_record_is_dead_lettered_alone() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (data_topic, dead_topic) = (unique("bad-batch"), unique("bad-batch-dead"));
    let opts = options(&brokers, &unique("bad-producer"));
    ensure_topics(&opts, &[TopicSpec::new(&data_topic, 1)]).expect("topics");
    let tuple = |s: u32| {
        format!(
            r#"{{"streamID":"EURTRY","dataSetKey":"Forex","values":{{"price":"{}.25"}},"timestamp":"01/02/2020 10:00:{s:02}"}}"#,
            s % 7
        )
    };
    let lines: Vec<String> = (0..10).map(tuple).collect();
    // a malformed line in the middle of one record, a blank one in another, a final newline
    let first = format!("{}\n{{not json\n{}\n", lines[..4].join("\n"), lines[4..6].join("\n"));
    let second = format!("{}\n\n{}", lines[6..8].join("\n"), lines[8..].join("\n"));
    produce_raw(&brokers, &data_topic, &[first.into_bytes(), second.into_bytes()]);
    let out = check(
        Command::new(SAAMS)
            .args(["-w", "1", "--brokers", &brokers, "--data-topic", &data_topic, "--dead-letter-topic", &dead_topic])
            .args(["--requests", &repo("datasets/requests/paper-workload.json")])
            .args([
                "--group-id",
                &unique("bad-group"),
                "--from",
                "earliest",
                "--exit-when-idle",
                "2s",
                "--progress",
                "0",
            ])
            .args(CONSUMER_SETTINGS)
            .output()
            .expect("run saams"),
        "saams with a malformed line in a batch",
    );
    let s = summary(&out);
    assert!(s.contains("tuples=10 ") && s.contains("dead_letters=1 "), "{s}");
    let dead = read_dead_letters(&brokers, &dead_topic);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].0, b"{not json", "the line alone, byte for byte");
}

/// Every (value, reason header) of `topic`, from the start to its end.
fn read_dead_letters(brokers: &str, topic: &str) -> Vec<(Vec<u8>, String)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", unique("dead-reader"))
        .set("enable.partition.eof", "true")
        .create()
        .expect("consumer");
    let metadata = consumer.fetch_metadata(Some(topic), Duration::from_secs(5)).expect("metadata");
    let partitions: Vec<i32> = metadata.topics()[0].partitions().iter().map(|p| p.id()).collect();
    let mut tpl = TopicPartitionList::new();
    for &p in &partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning).expect("assignment");
    }
    consumer.assign(&tpl).expect("assign");
    let mut at_end = std::collections::BTreeSet::new();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while at_end.len() < partitions.len() {
        assert!(Instant::now() < deadline, "dead letters not read to the end");
        match consumer.poll(Duration::from_millis(50)) {
            Some(Ok(m)) => {
                let reason = m
                    .headers()
                    .and_then(|h| h.iter().find(|h| h.key == "saams.reason"))
                    .and_then(|h| h.value)
                    .map(|v| String::from_utf8_lossy(v).to_string())
                    .unwrap_or_default();
                got.push((m.payload().unwrap_or_default().to_vec(), reason));
            }
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                at_end.insert(p);
            }
            _ => {}
        }
    }
    got
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn malformed_records_go_to_the_dead_letter_topic_and_the_job_keeps_running() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (data_topic, req_topic, dead_topic) = (unique("bad-data"), unique("bad-requests"), unique("bad-dead"));
    let opts = options(&brokers, &unique("bad-producer"));
    ensure_topics(&opts, &[TopicSpec::new(&data_topic, 2), TopicSpec::new(&req_topic, 1)]).expect("topics");
    let tuple = |s: u32| {
        format!(r#"{{"streamID":"EURTRY","dataSetKey":"Forex","values":{{"price":"{}.25"}},"timestamp":"01/02/2020 10:00:{s:02}"}}"#, s % 7)
            .into_bytes()
    };
    let bad_data: Vec<Vec<u8>> = vec![
        b"{not json".to_vec(),
        vec![0xff, 0xfe, b'x'],
        br#"{"dataSetKey":"Forex","values":{"price":"1"}}"#.to_vec(),
    ];
    let mut data: Vec<Vec<u8>> = (0..20).map(tuple).collect();
    data.extend(bad_data.iter().cloned());
    data.extend((20..40).map(tuple));
    produce_raw(&brokers, &data_topic, &data);
    let workload = std::fs::read_to_string(repo("datasets/requests/paper-workload.json")).expect("workload");
    let lines: Vec<&str> = workload.lines().collect();
    // CountMin and HyperLogLog of EURTRY with their continuous queries, a malformed request between
    let requests: Vec<Vec<u8>> =
        [lines[0], lines[1], "[{\"requestID\": 1,", lines[3], lines[4]].iter().map(|l| l.as_bytes().to_vec()).collect();
    produce_raw(&brokers, &req_topic, &requests);

    let out = check(
        Command::new(SAAMS)
            .args(["-w", "2", "--brokers", &brokers, "--data-topic", &data_topic, "--request-topic", &req_topic])
            .args(["--dead-letter-topic", &dead_topic, "--group-id", &unique("bad-group"), "--from", "earliest"])
            .args(["--exit-when-idle", "2s", "--progress", "0"])
            .args(CONSUMER_SETTINGS)
            .output()
            .expect("run saams"),
        "saams with malformed input",
    );
    let s = summary(&out);
    assert!(s.contains("tuples=40 ") && s.contains("dead_letters=4 "), "{s}");
    let estimations = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(estimations.contains(r#""kind":"HyperLogLog""#), "{estimations}");
    assert!(estimations.contains(r#""kind":"CountMin""#), "{estimations}");

    let mut dead = read_dead_letters(&brokers, &dead_topic);
    dead.sort();
    let mut expected: Vec<Vec<u8>> = bad_data.clone();
    expected.push(requests[2].clone());
    expected.sort();
    assert_eq!(dead.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>(), expected, "raw bytes, byte for byte");
    assert!(dead.iter().all(|(_, reason)| !reason.is_empty()), "every dead letter has a reason: {dead:?}");
    assert!(dead.iter().any(|(_, r)| r.contains("not UTF-8")), "{dead:?}");
    assert!(dead.iter().any(|(_, r)| r.contains("malformed request JSON")), "{dead:?}");
}

#[test]
fn unreachable_broker_is_a_clear_error_within_seconds() {
    let port = free_port();
    let started = Instant::now();
    let out = Command::new(SAAMS)
        .args(["--brokers", &format!("127.0.0.1:{port}"), "--data-topic", "t", "--requests", "-"])
        .stdin(Stdio::null())
        .output()
        .expect("run saams");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")) && stderr.contains("could not fetch metadata"), "{stderr}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn sigterm_closes_the_windows_and_flushes_before_exit() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("sigterm");
    let data = dir.join("ticks.jsonl");
    generate("stocks:10:1000", &data);
    let topic = unique("sigterm-data");
    replay_into(&brokers, &topic, &data, 2);
    let requests = repo("datasets/requests/paper-workload.json");
    let out_file = dir.join("out.json");
    let job = Command::new(SAAMS)
        .args(["-w", "2", "--requests", &requests, "--brokers", &brokers, "--data-topic", &topic])
        .args(["--group-id", &unique("sigterm-group"), "--from", "earliest", "--progress", "0", "--out"])
        .arg(&out_file)
        .args(CONSUMER_SETTINGS)
        .stderr(Stdio::piped())
        .spawn()
        .expect("run saams");
    // no --exit-when-idle: the job runs until stopped
    let deadline = Instant::now() + Duration::from_secs(30);
    let expected = file_run(&requests, &data, "1");
    while std::fs::read(&out_file).map(|b| b.is_empty()).unwrap_or(true) {
        assert!(Instant::now() < deadline, "no estimation within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    let status = Command::new("kill").args(["-TERM", &job.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let out = job.wait_with_output().expect("saams finished");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(summary(&out).contains("tuples=10000 "), "{stderr}");
    let got = sorted_lines(&std::fs::read(&out_file).expect("estimations"));
    assert!(got == expected, "the last windows were not closed and flushed at SIGTERM");
}

#[test]
fn help_lists_the_kafka_flags() {
    let out = Command::new(SAAMS).arg("--help").output().expect("run saams --help");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--brokers",
        "--data-topic",
        "--request-topic",
        "--output-topic",
        "--dead-letter-topic",
        "--group-id",
        "--from",
        "--exit-when-idle",
        "--idle-timeout",
        "--partitions",
        "-X <EXTRA>",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
    for default in ["[default: committed]", "[default: saams]", "[default: 5s]", "[default: 4]"] {
        assert!(help.contains(default), "--help lacks {default}");
    }
    let no_brokers = Command::new(SAAMS).args(["--data-topic", "t", "--requests", "-"]).output().expect("run saams");
    assert!(!no_brokers.status.success());
    assert!(String::from_utf8_lossy(&no_brokers.stderr).contains("need --brokers"));
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_request_produced_on_the_request_topic_after_the_start_is_applied() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("live-request");
    let (data_topic, request_topic) = (unique("live-data"), unique("live-requests"));
    // One stream, one tuple per second of 2019-01-02 (JSON lines).
    let line = |sec: u64| {
        format!(
            r#"{{"streamID":"A","dataSetKey":"D","date":"2019-01-02","time":"{:02}:{:02}:{:02}","price":{},"volume":1}}"#,
            sec / 3600,
            sec / 60 % 60,
            sec % 60,
            sec % 5
        )
        .into_bytes()
    };
    produce_raw(&brokers, &data_topic, &(0..300).map(line).collect::<Vec<_>>());
    produce_raw(&brokers, &request_topic, &[br#"{"streamID":"none","synopsisID":2,"dataSetKey":"D","param":["HLL","price","NotQueryable",0.05],"requestID":"x"}"#.to_vec()]);
    let out_file = dir.join("out.json");
    let job = Command::new(SAAMS)
        .args(["--brokers", &brokers, "--data-topic", &data_topic, "--request-topic", &request_topic])
        .args(["--group-id", &unique("live-group"), "--from", "earliest", "--progress", "0", "--window", "10s"])
        .arg("--out")
        .arg(&out_file)
        .args(CONSUMER_SETTINGS)
        .stderr(Stdio::piped())
        .spawn()
        .expect("run saams");
    std::thread::sleep(Duration::from_secs(3));
    produce_raw(
        &brokers,
        &request_topic,
        &[br#"[{"streamID":"A","synopsisID":1,"dataSetKey":"D","param":["CountMin","price","NotQueryable",0.001,0.99,7],"requestID":"c"},
               {"streamID":"A","synopsisID":1,"dataSetKey":"D","param":[2,"price","Queryable","Continuous"],"requestID":"q"}]"#
            .to_vec()],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let accepted = || std::fs::read_to_string(&out_file).unwrap_or_default().contains(r#""requestID":"c""#);
    while !accepted() {
        assert!(Instant::now() < deadline, "the construct produced after the start was not acknowledged in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    produce_raw(&brokers, &data_topic, &(300..600).map(line).collect::<Vec<_>>());
    std::thread::sleep(Duration::from_secs(3));
    let status = Command::new("kill").args(["-TERM", &job.id().to_string()]).status().expect("kill");
    assert!(status.success());
    let out = job.wait_with_output().expect("saams finished");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&out_file).expect("estimations");
    let ack: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["requestID"] == "c")
        .expect("acknowledgement");
    let fence = saams::api::time::parse_timestamp(ack["effectiveFrom"].as_str().expect("effectiveFrom")).expect("time");
    let first = 1_546_387_200_000i64;
    let answers: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["requestID"] == "q" && v["window"].is_object())
        .collect();
    assert!(!answers.is_empty(), "no answers for the live query: {text}");
    for v in &answers {
        let end = saams::api::time::parse_timestamp(v["window"]["end"].as_str().expect("end")).expect("time");
        let covered = (0..600u64).filter(|&s| first + 1000 * s as i64 >= fence && first + 1000 * (s as i64) < end);
        let covered: Vec<u64> = covered.collect();
        assert_eq!(v["tuples"].as_u64(), Some(covered.len() as u64), "{v}");
        assert_eq!(v["estimate"].as_u64(), Some(covered.iter().filter(|&&s| s % 5 == 2).count() as u64), "{v}");
    }
}
