//! Streams kept whole on their only device (`saams-edge --sole-reader`), against a real
//! Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`): each of four streams holds the paper workload
//! (Count-Min, HyperLogLog and DFT on `price`, continuous queries on each) and two streams ask
//! for the DFT pair correlations continuously. A device that is its streams' only reader feeds
//! their DFT in event order itself and ships whole states; the cloud job's answers must be those
//! of one job reading the same tuples from a file, byte for byte (sorted). A stream split over
//! two devices goes raw (and a whole state of it is refused); a device killed with `kill -9` and
//! restarted is merged exactly once. Where the variable was unset at build time the tests show
//! as ignored.

use std::path::{Path, PathBuf};
use std::process::{Child, Output};

mod edge_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Edge, answers_and_devices, figure, stream_of};
use kafka_common::{declared_broker, unique};

const WINDOW_MS: u64 = 120_000;

/// The script and window of these tests.
fn edge() -> Edge {
    Edge::new("jobs/tests/edge_whole_data/requests.json", "120s")
}

fn tmp(name: &str) -> PathBuf {
    edge_common::tmp("edge-whole", name)
}

fn window_of(line: &str) -> u64 {
    edge().window_of(line)
}

fn data(dir: &Path, devices: usize, pick: impl Fn(usize, &str) -> bool) -> Vec<PathBuf> {
    edge_common::data(dir, devices, pick)
}

/// EURTRY and XAUUSD on device 0, IBM and SPY on device 1 (the other streams feed nothing).
fn by_stream(d: usize, line: &str) -> bool {
    let stream = stream_of(line);
    if d == 0 { ["EURTRY", "XAUUSD"].contains(&stream) } else { ["IBM", "SPY"].contains(&stream) }
}

/// The cloud job's answers without their `devices` field, sorted.
fn answers(out: &Output) -> Vec<String> {
    answers_and_devices(out).0
}

fn raw_run(dir: &Path) -> Vec<String> {
    edge().raw_run(dir)
}

/// Run device `id` over `data` to partition `partition` of `topic` until its input ends.
fn device(brokers: &str, topic: &str, at: (&str, usize), data: &Path, extra: &[&str]) -> Output {
    edge().device(brokers, topic, at, data, extra)
}

/// Feed `lines` to a sole-reader device on its standard input, then wait until `topic` holds
/// `records`.
fn device_fed(brokers: &str, topic: &str, id: &str, lines: &[&str], records: usize) -> Child {
    edge().device_fed(brokers, topic, (id, &["--sole-reader"]), lines, records)
}

/// The cloud job over `topic`, to the end of what the devices shipped.
fn cloud(brokers: &str, topic: &str, dir: &Path) -> Output {
    edge().cloud(brokers, topic, dir, &[])
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn streams_kept_whole_on_their_only_device_answer_as_the_raw_run() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("whole");
    let files = data(&dir, 2, by_stream);
    let expected = raw_run(&dir);
    assert!(expected.iter().any(|l| l.contains("\"requestID\":26")), "the raw run answers the correlations");
    let topic = unique("edge-whole");
    for (i, file) in files.iter().enumerate() {
        // Device 1 also ships its open window every few milliseconds: its whole groups go raw
        // then, and whole at each window's close over them.
        let extra: &[&str] = if i == 1 { &["--sole-reader", "--ship-every", "2ms"] } else { &["--sole-reader"] };
        let out = device(&brokers, &topic, (&format!("dev{i}"), i), file, extra);
        let (shipped, raw) = (figure(&out, "edge ", "shipped_bytes"), figure(&out, "edge ", "raw_bytes"));
        assert!(shipped > 0 && shipped < raw, "device {i} shipped {shipped} bytes of {raw} raw");
        assert!(figure(&out, "edge ", "whole_groups") > 0, "device {i} shipped whole states");
    }
    let out = cloud(&brokers, &topic, &dir);
    assert_eq!(answers(&out), expected, "the answers of the raw run, correlations included");
    assert_eq!(figure(&out, "summary ", "dead_letters"), 0);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_stream_split_over_two_devices_goes_raw_and_its_whole_states_are_refused() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("split");
    // EURTRY's even windows on device 0, its odd ones on device 1.
    let files = data(&dir, 2, |d, l| {
        if stream_of(l) == "EURTRY" { (window_of(l) / WINDOW_MS) % 2 == d as u64 } else { by_stream(d, l) }
    });
    let expected = raw_run(&dir);
    let topic = unique("edge-split");
    for (i, file) in files.iter().enumerate() {
        let out = device(&brokers, &topic, (&format!("dev{i}"), i), file, &[]);
        assert_eq!(figure(&out, "edge ", "whole_groups"), 0, "without --sole-reader nothing is kept whole");
    }
    let out = cloud(&brokers, &topic, &dir);
    assert_eq!(answers(&out), expected, "a split stream's DFT fed from raw values in event order");
    assert_eq!(figure(&out, "summary ", "dead_letters"), 0);

    // The same split claimed as sole readers: a whole state of EURTRY from the second device
    // to ship it is refused, with a dead letter saying why.
    let topic = unique("edge-split-claimed");
    for (i, file) in files.iter().enumerate() {
        device(&brokers, &topic, (&format!("dev{i}"), i), file, &["--sole-reader"]);
    }
    let out = cloud(&brokers, &topic, &dir);
    assert!(figure(&out, "summary ", "dead_letters") > 0, "the split stream's whole states are refused");
    let dead = std::fs::read_to_string(dir.join("dead.json")).expect("dead letters");
    assert!(dead.contains("stream EURTRY is read by"), "{dead}");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_sole_reader_killed_and_restarted_is_merged_exactly_once() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("kill");
    let files = data(&dir, 2, by_stream);
    let expected = raw_run(&dir);
    let topic = unique("edge-whole-kill");
    let text = std::fs::read_to_string(&files[0]).expect("device 0 tuples");
    let lines: Vec<&str> = text.lines().collect();
    let first = window_of(lines[0]);
    // Two windows and the first tuple of the third: the device ships two windows (hello + 2).
    let third = lines.iter().position(|l| window_of(l) >= first + 2 * WINDOW_MS).expect("a third window");
    let mut killed = device_fed(&brokers, &topic, "dev0", &lines[..=third], 3);
    killed.kill().expect("kill -9 the device");
    killed.wait().expect("reap it");
    let again = device(&brokers, &topic, ("dev0", 0), &files[0], &["--sole-reader"]);
    assert!(figure(&again, "edge ", "whole_groups") > 0, "the restarted device ships whole states");
    device(&brokers, &topic, ("dev1", 1), &files[1], &["--sole-reader"]);
    let out = cloud(&brokers, &topic, &dir);
    assert_eq!(answers(&out), expected, "the windows shipped before the kill merged once");
    let dead = std::fs::read_to_string(dir.join("dead.json")).expect("dead letters");
    assert_eq!(dead.lines().filter(|l| l.contains("replayed")).count(), 2, "{dead}");
    assert_eq!(figure(&out, "summary ", "dead_letters"), 2);
}
