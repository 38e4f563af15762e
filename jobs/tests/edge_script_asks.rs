//! Ad-hoc queries and SAVEs of synopses resident on devices (`saams-edge --resident`) in the
//! request script (`--requests`), against a real Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`):
//! the paper workload on four streams, two devices each the only reader of two streams, and
//! end-of-input ad-hoc queries (a Count-Min count no continuous query asks, a distinct count,
//! DFT coefficients) and SAVEs of synopses on both devices. The cloud holds only the synopses'
//! query views, which cannot answer the count nor be saved: each device answers from its final
//! state before its goodbye, and the cloud hands its lines on in place of its own. The cloud's
//! answers must be those of one job reading the same tuples with the same script, byte for byte
//! (sorted), and the snapshot files it writes the raw run's, byte for byte: with devices reading
//! the script themselves, and following the cloud job (`--follow`: the script reaches them at
//! the start of the control topic). Where the variable was unset at build time the tests show
//! as ignored.
//!
//! And every ask gets one answer when a device does not give it in time: a device killed for
//! good before its end has each of its asks answered with an error line naming it as gone
//! (`--device-timeout`) at the job's end, every other answer the raw run's; a device that answers after the
//! cloud's input went idle (`--exit-when-idle`) is still read, and its answers handed on.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command};
use std::time::{Duration, Instant};

use saams_jobs::edge::shipment::{Body, Shipment};

mod edge_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Edge, SAAMS, sorted, sorted_without_devices, stream_of};
use kafka_common::{check, declared_broker, read_topic, repo, unique};

/// The script's end-of-input asks of resident synopses: on EURTRY (device 0) and IBM (device 1).
const ASKS: &str = r#"[
 {"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":1,"param":[13.75,"price","Queryable","AdHoc"],"requestID":101},
 {"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":2,"param":["distinct","price","Queryable","AdHoc"],"requestID":102},
 {"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":1,"param":["SAVE_REQUEST","cm-eurtry.bin"],"requestID":103},
 {"dataSetKey":"Equity","streamID":"IBM","synopsisID":4,"param":["coefficients","price","Queryable","AdHoc"],"requestID":104},
 {"dataSetKey":"Equity","streamID":"IBM","synopsisID":2,"param":["SAVE_REQUEST","hll-ibm.bin"],"requestID":105},
 {"dataSetKey":"Equity","streamID":"IBM","synopsisID":1,"param":[150.5,"price","Queryable","AdHoc"],"requestID":106}
]"#;

/// The snapshot files the script SAVEs.
const SAVED: [&str; 2] = ["cm-eurtry.bin", "hll-ibm.bin"];

/// EURTRY and XAUUSD on device 0, IBM and SPY on device 1.
fn by_share(d: usize, line: &str) -> bool {
    ["EURTRY", "XAUUSD"].contains(&stream_of(line)) == (d == 0)
}

/// The paper workload's script with [`ASKS`] after it, in `dir`, with windows of 60 s.
fn edge(dir: &Path) -> Edge {
    let script = dir.join("script.json");
    edge_common::script_with(&repo("jobs/tests/edge_whole_data/requests.json"), ASKS, &script);
    Edge::of_script(script.to_str().expect("a path"), "60s")
}

/// A fresh snapshot directory `dir/name`.
fn snapshots(dir: &Path, name: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).expect("a snapshot directory");
    d
}

/// The raw run's answers (one job reading every tuple, SAVEs to `dir/raw-snapshots`), sorted.
fn raw_run(e: &Edge, dir: &Path) -> Vec<String> {
    let out = Command::new(SAAMS)
        .args(["--requests", &e.requests, "--window", e.window, "-w", "1", "--progress", "0", "--snapshots"])
        .arg(snapshots(dir, "raw-snapshots"))
        .arg("--data")
        .arg(dir.join("all.json"))
        .output()
        .expect("run saams");
    sorted(&check(out, "saams over the file").stdout)
}

/// One test's setting: the broker, its directory (the tuples, each device's share, the
/// script), the raw run's answers and a topic of its own.
struct Setting {
    brokers: String,
    dir: PathBuf,
    e: Edge,
    files: Vec<PathBuf>,
    expected: Vec<String>,
    topic: String,
}

impl Setting {
    /// The setting of the test `name`.
    fn new(name: &str) -> Setting {
        let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
        let dir = edge_common::tmp("edge-script-asks", name);
        let e = edge(&dir);
        let files = edge_common::data(&dir, 2, by_share);
        let expected = raw_run(&e, &dir);
        let topic = unique(&format!("edge-script-asks-{name}"));
        Setting { brokers, dir, e, files, expected, topic }
    }

    /// Device `d` run `--resident` over its share on its standard input, fed every tuple and
    /// then `more`, its input left open (as a live device's): the child and its input.
    fn fed_device(&self, d: usize, more: &[String]) -> (Child, ChildStdin) {
        let mut child = self.e.device_on_stdin(&self.brokers, &self.topic, (&format!("dev{d}"), d), &["--resident"]);
        let mut stdin = child.stdin.take().expect("its stdin");
        let text = std::fs::read_to_string(&self.files[d]).expect("the device's tuples");
        for line in text.lines().chain(more.iter().map(String::as_str)) {
            writeln!(stdin, "{line}").expect("feed the device");
        }
        stdin.flush().expect("flush");
        (child, stdin)
    }

    /// The window (start, ms) of device `d`'s last tuple, and that tuple's line.
    fn last_of(&self, d: usize) -> (u64, String) {
        let text = std::fs::read_to_string(&self.files[d]).expect("the device's tuples");
        let last = text.lines().last().expect("a tuple").to_string();
        (self.e.window_of(&last), last)
    }

    /// Wait (up to 60 s) until `device` has shipped window `window` or a later one.
    fn wait_shipped(&self, device: &str, window: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let shipped = |r: &Vec<u8>| {
            Shipment::decode(r)
                .is_ok_and(|s| s.device == device && matches!(s.body, Body::Data { window: w, .. } if w >= window))
        };
        while !read_topic(&self.brokers, &self.topic).iter().any(shipped) {
            assert!(Instant::now() < deadline, "{device} did not ship window {window}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Each device run `--resident` over its share to its own partition, to its input's end.
    fn resident_devices(&self) -> Vec<std::process::Output> {
        let s = self;
        let run =
            |(d, f): (usize, &PathBuf)| s.e.device(&s.brokers, &s.topic, (&format!("dev{d}"), d), f, &["--resident"]);
        self.files.iter().enumerate().map(run).collect()
    }
}

/// What the tests check: the raw run answered every ask (no error), the cloud's answers are
/// its answers byte for byte, the snapshot files are its files, and each device answered its
/// three asks at its end.
fn check_answers(expected: &[String], cloud_out: &[u8], dir: &Path, devices: &[std::process::Output]) {
    for id in 101..=106 {
        let line = expected.iter().find(|l| l.starts_with(&format!("{{\"requestID\":{id},"))).expect("answered");
        assert!(!line.contains("\"error\""), "the raw run answers {id}: {line}");
    }
    let got = sorted_without_devices(cloud_out);
    assert_eq!(got, expected, "the raw run's answers ({})", dir.display());
    for file in SAVED {
        let raw = std::fs::read(dir.join("raw-snapshots").join(file)).expect("the raw run's snapshot");
        let cloud =
            std::fs::read(dir.join("cloud-snapshots").join(file)).expect("the device's state, saved by the cloud");
        assert!(raw == cloud, "{file}: the device's state is the raw run's ({} and {} bytes)", raw.len(), cloud.len());
    }
    for device in devices {
        assert_eq!(edge_common::figure(device, "edge ", "script_answers"), 3, "each device answers its three asks");
    }
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn the_scripts_ad_hoc_queries_and_saves_of_resident_synopses_are_answered_by_their_devices() {
    let s = Setting::new("script");
    let devices = s.resident_devices();
    let snapshots = snapshots(&s.dir, "cloud-snapshots");
    let out = s.e.cloud(&s.brokers, &s.topic, &s.dir, &["--snapshots", snapshots.to_str().expect("a path")]);
    check_answers(&s.expected, &out.stdout, &s.dir, &devices);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn devices_following_the_job_answer_its_scripts_asks_of_their_resident_synopses() {
    let Setting { brokers, dir, e, files, expected, topic } = Setting::new("follow");
    let snapshots = snapshots(&dir, "cloud-snapshots");
    let cloud = edge_common::Cloud::start(
        e.cloud_base(&brokers, &topic)
            .args(["--partitions", "4", "--exit-when-idle", "5s", "--device-timeout", "60s", "--dead-letter"])
            .arg(dir.join("dead.json"))
            .arg("--snapshots")
            .arg(&snapshots),
    );
    let devices: Vec<_> = std::thread::scope(|s| {
        let runs: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(d, f)| {
                let (e, brokers, topic) = (&e, &brokers, &topic);
                s.spawn(move || e.device(brokers, topic, (&format!("dev{d}"), d), f, &["--resident", "--follow"]))
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("a device")).collect()
    });
    let out = cloud.finish("saams --partials-topic");
    check_answers(&expected, &out.stdout, &dir, &devices);
    assert!(edge_common::figure(&devices[0], "edge ", "positions") > 0, "the devices followed the job");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_two_process_cloud_hands_on_the_devices_answers_to_its_scripts_asks_where_their_synopses_live() {
    let s = Setting::new("processes");
    let devices = s.resident_devices();
    let (e, dir, brokers, topic) = (&s.e, &s.dir, &s.brokers, &s.topic);
    // Four workers over two processes: the synopses' homes are spread over both, and a device's
    // answer read in one process crosses to the home's (`edge::hops`).
    let hosts = edge_common::two_hosts(dir);
    let snapshots = snapshots(dir, "cloud-snapshots");
    let processes: Vec<edge_common::Cloud> = (0..2)
        .map(|p| {
            let shape =
                ["-w", "2", "-n", "2", "-p", &p.to_string(), "-h", hosts.to_str().expect("a path")].map(String::from);
            let shape: Vec<&str> = shape.iter().map(String::as_str).collect();
            edge_common::Cloud::start(
                e.cloud_shaped(brokers, topic, &shape)
                    .args(["--exit-when-idle", "3s", "--device-timeout", "2s", "--partitions", "4", "--snapshots"])
                    .arg(&snapshots),
            )
        })
        .collect();
    let mut out = Vec::new();
    for process in processes {
        out.extend(process.finish("saams -n 2 --partials-topic").stdout);
    }
    check_answers(&s.expected, &out, dir, &devices);
}

/// `line` (a generated tuple) with its time of day set to `time` (`hh:mm:ss`).
fn at_time(line: &str, time: &str) -> String {
    let at = line.find("\"time\":\"").expect("a time") + 8;
    let end = at + line[at..].find('"').expect("its end");
    format!("{}{time}{}", &line[..at], &line[end..])
}

/// True for the lines of the asks of synopses on device 1 (IBM).
fn asked_of_device_1(line: &str) -> bool {
    (104..=106).any(|id| line.starts_with(&format!("{{\"requestID\":{id},")))
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_device_killed_for_good_before_its_end_has_each_of_its_asks_answered_with_an_error_naming_it() {
    let s = Setting::new("gone");
    let dev0 = s.e.device(&s.brokers, &s.topic, ("dev0", 0), &s.files[0], &["--resident"]);
    // Device 1 reads every tuple of its share and one far later, which closes its last window
    // (every window of the raw run is shipped); killed with kill -9 while that one is open, it
    // never reaches its end, so it never answers the script's asks of its synopses.
    let (last_window, last) = s.last_of(1);
    let (mut dev1, stdin) = s.fed_device(1, &[at_time(&last, "23:00:00")]);
    s.wait_shipped("dev1", last_window);
    dev1.kill().expect("kill -9 device 1");
    dev1.wait().expect("reap it");
    drop(stdin);
    let snapshots = snapshots(&s.dir, "cloud-snapshots");
    let out = s.e.cloud(&s.brokers, &s.topic, &s.dir, &["--snapshots", snapshots.to_str().expect("a path")]);
    let (errors, answers): (Vec<String>, Vec<String>) =
        sorted_without_devices(&out.stdout).into_iter().partition(|l| asked_of_device_1(l));
    let expected: Vec<String> = s.expected.iter().filter(|l| !asked_of_device_1(l)).cloned().collect();
    assert_eq!(answers, expected, "every other answer is the raw run's ({})", s.dir.display());
    for id in 104..=106 {
        let lines: Vec<&String> = errors.iter().filter(|l| l.starts_with(&format!("{{\"requestID\":{id},"))).collect();
        assert_eq!(lines.len(), 1, "one answer line for request {id}: {errors:?}");
        let gone = "device dev1 did not answer before it was gone";
        assert!(lines[0].contains("\"error\"") && lines[0].contains(gone), "an error naming the device: {}", lines[0]);
    }
    let raw = std::fs::read(s.dir.join("raw-snapshots/cm-eurtry.bin")).expect("the raw run's snapshot");
    assert!(std::fs::read(snapshots.join("cm-eurtry.bin")).is_ok_and(|b| b == raw), "device 0's SAVE is the raw run's");
    assert!(!snapshots.join("hll-ibm.bin").exists(), "nothing is saved for the gone device");
    assert_eq!(edge_common::figure(&dev0, "edge ", "script_answers"), 3, "device 0 answers its three asks");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_device_answering_after_the_clouds_input_went_idle_is_still_read_and_its_answers_handed_on() {
    let s = Setting::new("slow");
    let dev0 = s.e.device(&s.brokers, &s.topic, ("dev0", 0), &s.files[0], &["--resident"]);
    let snapshots = snapshots(&s.dir, "cloud-snapshots");
    let mut cloud = edge_common::Cloud::start(
        s.e.cloud_base(&s.brokers, &s.topic)
            .args(["--partitions", "4", "--exit-when-idle", "2s", "--device-timeout", "60s", "--dead-letter"])
            .arg(s.dir.join("dead.json"))
            .arg("--snapshots")
            .arg(&snapshots),
    );
    // Device 1 ships every window but its last, which stays open while its input does.
    let (last_window, _) = s.last_of(1);
    let (dev1, stdin) = s.fed_device(1, &[]);
    s.wait_shipped("dev1", last_window - s.e.window_ms);
    // Twice --exit-when-idle with nothing on the topic: the cloud reads on, as device 1 owes
    // the answers to the script's asks of its synopses (and is not gone).
    std::thread::sleep(Duration::from_secs(4));
    assert!(cloud.child.try_wait().expect("the cloud job's status").is_none(), "the cloud job waits for device 1");
    drop(stdin);
    let dev1 = check(dev1.wait_with_output().expect("device 1 ends"), "saams-edge");
    let out = cloud.finish("saams --partials-topic");
    check_answers(&s.expected, &out.stdout, &s.dir, &[dev0, dev1]);
}
