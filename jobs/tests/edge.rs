//! The continuum against a real Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`): `saams-edge`
//! devices ship their windows' partials (or raw values, when smaller) to a partials topic, and
//! `saams --partials-topic` merges them. Its answers must be those of one job reading the same
//! tuples from a file, byte for byte (sorted); a device killed and restarted is merged exactly
//! once; a device that never comes back stops holding windows after `--device-timeout`; forged
//! and replayed records are refused with a dead letter. Where the variable was unset at build
//! time the tests show as ignored.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use kafka_common::{check, declared_broker, repo, unique};

const SAAMS: &str = env!("CARGO_BIN_EXE_saams");
const EDGE: &str = env!("CARGO_BIN_EXE_saams-edge");
const REPLAY: &str = env!("CARGO_BIN_EXE_replay");
const WINDOW: &str = "600s";

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-edge-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

fn requests() -> String {
    repo("jobs/tests/edge_data/requests.json")
}

/// Six generated streams (1500 tuples each, about one a second): `all.json`, and one file per
/// device holding the streams `split` gives it.
fn data(dir: &Path, split: &[&[&str]]) -> Vec<PathBuf> {
    let all = dir.join("all.json");
    check(
        Command::new(REPLAY)
            .args(["--generate", "stocks:6:1500", "--progress", "none", "-o"])
            .arg(&all)
            .output()
            .expect("run replay"),
        "replay --generate",
    );
    let text = std::fs::read_to_string(&all).expect("read generated tuples");
    split
        .iter()
        .enumerate()
        .map(|(i, streams)| {
            let path = dir.join(format!("device{i}.json"));
            let mine: String = text
                .lines()
                .filter(|l| streams.iter().any(|s| l.contains(&format!("\"streamID\":\"{s}\""))))
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(&path, mine).expect("write device tuples");
            path
        })
        .collect()
}

fn sorted(out: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(out).lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// The answers of one job reading every tuple from the file.
fn raw_run(dir: &Path) -> Vec<String> {
    let out = Command::new(SAAMS)
        .args(["--requests", &requests(), "--window", WINDOW, "-w", "1", "--progress", "0", "--data"])
        .arg(dir.join("all.json"))
        .output()
        .expect("run saams");
    sorted(&check(out, "saams over the file").stdout)
}

/// Run device `id` over `data` to partition `partition` of `topic` until its input ends.
fn device(brokers: &str, topic: &str, id: &str, partition: usize, data: &Path) -> Output {
    let out = Command::new(EDGE)
        .args(["--device", id, "--brokers", brokers, "--partials-topic", topic, "--requests", &requests()])
        .args(["--window", WINDOW, "--partition", &partition.to_string(), "--data"])
        .arg(data)
        .output()
        .expect("run saams-edge");
    check(out, "saams-edge")
}

/// A figure of a `key=value` summary line on stderr starting with `prefix`.
fn figure(out: &Output, prefix: &str, key: &str) -> u64 {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no `{prefix}` line in {err}"));
    let field = line.split(' ').find_map(|kv| kv.strip_prefix(&format!("{key}="))).expect("the figure");
    field.parse().expect("a number")
}

/// The cloud job over `topic`, to the end of what the devices shipped.
fn cloud(brokers: &str, topic: &str, dir: &Path, extra: &[&str]) -> Output {
    let out = Command::new(SAAMS)
        .args(["--requests", &requests(), "--window", WINDOW, "-w", "2", "--progress", "0"])
        .args(["--brokers", brokers, "--partials-topic", topic, "--from", "earliest"])
        .args(["--exit-when-idle", "3s", "--device-timeout", "2s", "--partitions", "4", "--dead-letter"])
        .arg(dir.join("dead.json"))
        .args(extra)
        .output()
        .expect("run saams");
    check(out, "saams --partials-topic")
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn two_and_three_devices_answer_as_one_job_over_the_raw_tuples() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    for split in [
        &[&["EURTRY", "XAUUSD", "BTCUSD"][..], &["IBM", "SPY", "ETHUSD"][..]][..],
        &[&["EURTRY", "XAUUSD"][..], &["IBM", "SPY", "BTCUSD"][..], &["ETHUSD"][..]][..],
    ] {
        let dir = tmp(&format!("devices{}", split.len()));
        let files = data(&dir, split);
        let expected = raw_run(&dir);
        assert!(expected.len() > 20, "the raw run answers: {expected:?}");
        let topic = unique("edge-partials");
        let mut chose_partials = 0;
        for (i, file) in files.iter().enumerate() {
            let out = device(&brokers, &topic, &format!("dev{i}"), i, file);
            let (shipped, raw) = (figure(&out, "edge ", "shipped_bytes"), figure(&out, "edge ", "raw_bytes"));
            assert!(shipped > 0 && shipped <= raw, "device {i} shipped {shipped} bytes of {raw} raw");
            chose_partials += figure(&out, "edge ", "partial_windows");
        }
        assert!(chose_partials > 0, "some window was cheaper as partials");
        let out = cloud(&brokers, &topic, &dir, &[]);
        assert_eq!(sorted(&out.stdout), expected, "{} devices: the answers of the raw run", split.len());
        assert_eq!(figure(&out, "summary ", "dead_letters"), 0);
    }
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_device_shipping_everything_again_is_merged_once() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("again");
    let files = data(&dir, &[&["EURTRY", "XAUUSD", "BTCUSD"], &["IBM", "SPY", "ETHUSD"]]);
    let expected = raw_run(&dir);
    let topic = unique("edge-again");
    let first = device(&brokers, &topic, "dev0", 0, &files[0]);
    device(&brokers, &topic, "dev1", 1, &files[1]);
    // dev0 restarted from the start of its input: every shipment again.
    device(&brokers, &topic, "dev0", 0, &files[0]);
    let out = cloud(&brokers, &topic, &dir, &[]);
    assert_eq!(sorted(&out.stdout), expected, "each shipment merged once");
    let replays = figure(&first, "edge ", "windows");
    assert_eq!(figure(&out, "summary ", "dead_letters"), replays, "every shipment of the second run refused");
    let dead = std::fs::read_to_string(dir.join("dead.json")).expect("dead letters");
    let reasons: BTreeSet<&str> =
        dead.lines().map(|l| if l.contains("replayed") { "replayed" } else { "other" }).collect();
    assert_eq!(reasons, BTreeSet::from(["replayed"]), "{dead}");
}
