//! Partitions of a partials topic that hold nothing back, against a real Kafka-protocol broker
//! (`SAAMS_KAFKA_BROKERS`): a partition no device ships to, and one whose device said goodbye,
//! stop holding the cloud's windows after `--idle-timeout`, not after the `--device-timeout` a
//! silent device is owed (10 min here, which the test would never see end); and a job reading
//! at a slow `--rate` reads every shipment of its busy partition while a quiet one has nothing
//! (a quiet worker once held the rate's only token, and `--exit-when-idle` ended the job with
//! records unread). Where the variable was unset at build time the tests show as ignored.

use std::path::Path;
use std::time::{Duration, Instant};

mod edge_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Cloud, Edge, Fed, answers_and_devices, stream_of, without_devices};
use kafka_common::{check, declared_broker, read_topic, unique};

/// EURTRY, XAUUSD and BTCUSD on device 0, IBM, SPY and ETHUSD on device 1.
fn by_stream(d: usize, line: &str) -> bool {
    let first = ["EURTRY", "XAUUSD", "BTCUSD"].contains(&stream_of(line));
    first == (d == 0)
}

/// Wait (up to 2 min, far under the 10 min device timeout) for an answer of the running job
/// `cloud` whose window ends after `after` (ms of the day).
fn wait_answer_after(cloud: &mut Cloud, e: &Edge, after: u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let lines = cloud.lines();
        if lines.iter().any(|l| end_of(l) > after) {
            return;
        }
        assert!(cloud.child.try_wait().expect("the job").is_none(), "{what}: the job ended ({} lines)", lines.len());
        assert!(
            Instant::now() < deadline,
            "{what}: no answer ended after {after} ms ({} lines, window {})",
            lines.len(),
            e.window
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The end of the window an answer line answers (ms of the day).
fn end_of(line: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(line).expect("an answer");
    let end = saams::api::time::parse_timestamp(v["window"]["end"].as_str().unwrap_or_default()).expect("an end");
    (end - 1_546_387_200_000) as u64
}

/// `lines` sorted by their tuples' time (stable: a stream's tuples keep their order), written to
/// `path`.
fn write_in_time_order(path: &Path, mut lines: Vec<&str>) {
    lines.sort_by_key(|l| {
        let at = l.find("\"time\":\"").expect("a time") + 8;
        l[at..].split('"').next().map(str::to_string)
    });
    std::fs::write(path, lines.join("\n") + "\n").expect("write the tuples");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn partitions_without_a_device_do_not_hold_windows_for_the_device_timeout() {
    use std::io::Write;
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = Edge::new("jobs/tests/edge_data/requests.json", "60s");
    let dir = edge_common::tmp("edge-idle", "vacant");
    let files = edge_common::data(&dir, 2, by_stream);
    let topic = unique("edge-vacant");
    // The devices say hello before the job starts (so both are assigned from its first read);
    // partitions 2 and 3 of the topic's 4 never get a device.
    let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).expect("device tuples")).collect();
    let opts = saams_jobs::kafka::KafkaOptions::new(brokers.as_str(), unique("admin"));
    saams_jobs::kafka::ensure_topics(&opts, &[saams_jobs::kafka::TopicSpec::new(&topic, 4)]).expect("the topic");
    let mut devices: Vec<Fed> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut child = e.device_on_stdin(&brokers, &topic, (&format!("dev{i}"), i), &[]);
            let stdin = child.stdin.take().expect("its stdin");
            (child, stdin, text.lines().collect())
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while read_topic(&brokers, &topic).len() < 2 {
        assert!(Instant::now() < deadline, "the devices did not say hello");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut cloud = Cloud::start(e.cloud_base(&brokers, &topic).args([
        "--partitions",
        "4",
        "--device-timeout",
        "10m",
        "--idle-timeout",
        "1s",
        "--exit-when-idle",
        "15s",
    ]));
    // The first four windows of each device: three shipped, so windows close while both
    // devices live (the fourth still open) and the empty partitions are silent.
    let early = |l: &str| e.window_of(l) < 4 * e.window_ms;
    for (_, stdin, lines) in &mut devices {
        for line in lines.iter().filter(|l| early(l)) {
            writeln!(stdin, "{line}").expect("feed the device");
        }
        stdin.flush().expect("flush");
    }
    wait_answer_after(&mut cloud, &e, 0, "partitions 2 and 3 held the windows");
    // Device 0 leaves (its goodbye, after its fourth window); device 1 reads on: its windows
    // close without device 0's partition holding them.
    let (leaving, stdin0, lines0) = devices.remove(0);
    let kept0: Vec<&str> = lines0.iter().copied().filter(|l| early(l)).collect();
    let last0 = 3 * e.window_ms;
    drop(stdin0);
    check(leaving.wait_with_output().expect("device 0 ends"), "saams-edge");
    let (device1, mut stdin1, lines1) = devices.remove(0);
    assert!(e.window_of(lines1[lines1.len() - 1]) > last0 + 3 * e.window_ms, "device 1 reads on past device 0");
    for line in lines1.iter().filter(|l| !early(l)) {
        writeln!(stdin1, "{line}").expect("feed device 1");
    }
    stdin1.flush().expect("flush");
    wait_answer_after(&mut cloud, &e, last0 + 2 * e.window_ms, "device 0's partition held the windows");
    drop(stdin1);
    check(device1.wait_with_output().expect("device 1 ends"), "saams-edge");
    let seen = edge_common::sorted(&cloud.finish("saams --partials-topic").stdout);
    // Exact for what the devices shipped (device 0's first four windows, device 1's all), and
    // the windows after device 0 left name device 1 only.
    write_in_time_order(&dir.join("shipped.json"), kept0.into_iter().chain(lines1.iter().copied()).collect());
    let mut answers: Vec<String> = seen.iter().map(|l| without_devices(l).0).collect();
    answers.sort();
    assert_eq!(answers, e.raw_run_of(&dir.join("shipped.json")), "the answers of the tuples shipped");
    for line in seen.iter().filter(|l| end_of(l) > last0 + e.window_ms) {
        assert_eq!(without_devices(line).1, ["dev1"], "after device 0 left: {line}");
    }
}

/// Device 0 ships only its first window; device 1 all of its tuples.
fn quiet_and_busy(dir: &Path, e: &Edge, files: &[std::path::PathBuf]) -> std::path::PathBuf {
    let text = std::fs::read_to_string(&files[0]).expect("device 0 tuples");
    let first = e.window_of(text.lines().next().expect("a tuple"));
    let mine: String = text.lines().filter(|l| e.window_of(l) == first).map(|l| format!("{l}\n")).collect();
    std::fs::write(&files[0], &mine).expect("device 0's first window");
    let other = std::fs::read_to_string(&files[1]).expect("device 1 tuples");
    let path = dir.join("shipped.json");
    write_in_time_order(&path, mine.lines().chain(other.lines()).collect());
    path
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_slow_rate_reads_every_shipment_of_a_busy_partition_beside_a_quiet_one() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = Edge::new("jobs/tests/edge_data/requests.json", "10s");
    let dir = edge_common::tmp("edge-idle", "rate");
    let files = edge_common::data(&dir, 2, by_stream);
    let shipped = quiet_and_busy(&dir, &e, &files);
    let expected = e.raw_run_of(&shipped);
    let topic = unique("edge-rate");
    for (i, file) in files.iter().enumerate() {
        e.device(&brokers, &topic, (&format!("dev{i}"), i), file, &[]);
    }
    let records = read_topic(&brokers, &topic).len() as u64;
    assert!(records > 100, "device 1 shipped its windows: {records} records");
    // Two workers: partition 0 (device 0: three records) is worker 0's, partition 1 worker 1's.
    // At 20 shipments a second the job reads for several seconds; idle for 3 s, it ends
    // (before the fix, worker 1 read nothing for 3 s in one run out of three at 60 s windows).
    let out = e.cloud(&brokers, &topic, &dir, &["--rate", "20"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("kafka consumed={records} ")), "every record read: {err}");
    assert_eq!(answers_and_devices(&out).0, expected, "every shipment merged");
}
