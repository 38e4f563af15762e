//! A device that moves on to a later window lets the cloud answer the window it closed at once
//! (its last record names the next window, `Body::Data`'s `through`), not only when it ships the
//! next window or goes silent for `--device-timeout`. Against a real Kafka-protocol broker
//! (`SAAMS_KAFKA_BROKERS`); where the variable was unset at build time the test shows as ignored.

use std::path::PathBuf;
use std::time::{Duration, Instant};

mod edge_common;
#[allow(dead_code)] // the device produces the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Cloud, Edge, without_devices};
use kafka_common::{declared_broker, unique};

fn edge() -> Edge {
    Edge::new("jobs/tests/edge_data/requests.json", "600s")
}

fn tmp(name: &str) -> PathBuf {
    edge_common::tmp("edge-moved-on", name)
}

/// One device, fed its first window and the first tuple of the next, its input left open (a
/// live device): the cloud job answers the first window while the device is live and its
/// timeout (120 s) far away, and the answers equal one job over the first window's tuples. Before
/// the device named the window it moved on to, the first window waited for the second's
/// shipment or the timeout, and this test failed at its 60 s deadline.
#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_window_is_answered_once_its_device_moved_on() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = tmp("first");
    let files = edge_common::data(&dir, 1, |_, _| true);
    let text = std::fs::read_to_string(&files[0]).expect("the device's tuples");
    let lines: Vec<&str> = text.lines().collect();
    let first = edge().window_of(lines[0]);
    let second = lines.iter().position(|l| edge().window_of(l) > first).expect("a second window");
    std::fs::write(dir.join("first.json"), lines[..second].join("\n") + "\n").expect("write the first window");
    let expected = edge().raw_run_of(&dir.join("first.json"));
    assert!(!expected.is_empty(), "the first window has answers");

    let topic = unique("edge-moved-on");
    // The hello and the first window's record.
    let mut device = edge().device_fed(&brokers, &topic, ("dev0", &[]), &lines[..=second], 2);
    let mut cloud = Cloud::start(
        edge()
            .cloud_base(&brokers, &topic)
            .args(["--partitions", "4", "--idle-timeout", "1s", "--device-timeout", "120s"])
            .args(["--exit-when-idle", "120s"]),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let answered = loop {
        let mut answers: Vec<String> =
            cloud.lines().iter().filter(|l| l.starts_with('{')).map(|l| without_devices(l).0).collect();
        if answers.len() >= expected.len() {
            answers.sort();
            break answers;
        }
        if Instant::now() > deadline {
            let _ = (cloud.child.kill(), device.kill());
            panic!("the first window was not answered while its device was live: {answers:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = (cloud.child.kill(), device.kill(), device.wait());
    let _ = cloud.output();
    assert_eq!(answered, expected, "the first window's answers, as one job over its tuples");
}
