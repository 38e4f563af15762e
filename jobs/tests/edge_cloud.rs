//! The cloud side of the continuum against a real Kafka-protocol broker
//! (`SAAMS_KAFKA_BROKERS`): a cloud job of two processes lists every device in `GET /devices`
//! on either process; a cloud job killed with `kill -9` and restarted from its checkpoint
//! answers as the raw run; a following device (`--follow`) killed and restarted from its state
//! file is merged exactly once; a LOAD into a stream a device keeps whole is refused (409); a
//! following device whose cloud job is not running, or dies, gives up after `--cloud-timeout`.
//! Where the variable was unset at build time the tests show as ignored.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod edge_common;
mod http_common;
#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use edge_common::{Cloud, Edge, answers_and_devices, stream_of};
use kafka_common::{check, declared_broker, unique};

/// The script and window of these tests.
fn edge() -> Edge {
    Edge::new("jobs/tests/edge_data/requests.json", "600s")
}

/// EURTRY, XAUUSD and BTCUSD on device 0, IBM, SPY and ETHUSD on device 1.
fn by_stream(d: usize, line: &str) -> bool {
    let first = ["EURTRY", "XAUUSD", "BTCUSD"].contains(&stream_of(line));
    first == (d == 0)
}

/// The device table `GET /devices` of the job at `addr` gives: (device, process, state) rows.
fn device_rows(addr: &str) -> Vec<(String, u64, String)> {
    let (status, body) = http_common::call(addr, "GET", "/devices", "");
    assert_eq!(status, 200, "{body}");
    let table: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let rows = table["devices"].as_array().cloned().unwrap_or_default();
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    rows.iter().map(|r| (text(&r["device"]), r["process"].as_u64().unwrap_or(99), text(&r["state"]))).collect()
}

/// Process `p` of a two-process cloud job (one worker each: partition `q` is read by process
/// `q mod 2`) with `--http` on a free port.
fn cloud_process(brokers: &str, topic: &str, dir: &Path, (p, hostfile): (usize, &Path)) -> Cloud {
    let e = edge();
    Cloud::start(
        Command::new(edge_common::SAAMS)
            .args(["--requests", &e.requests, "--window", e.window, "-w", "1", "-n", "2", "-p", &p.to_string(), "-h"])
            .arg(hostfile)
            .args(["--progress", "0", "--brokers", brokers, "--partials-topic", topic, "--from", "earliest"])
            .args(["--exit-when-idle", "3s", "--device-timeout", "2s", "--partitions", "4"])
            .args(["--http", "127.0.0.1:0", "--metrics-linger", "10s", "--dead-letter"])
            .arg(dir.join(format!("dead{p}.json"))),
    )
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn every_process_of_a_two_process_cloud_job_lists_every_device() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge();
    let dir = edge_common::tmp("edge-cloud", "processes");
    let files = edge_common::data(&dir, 2, by_stream);
    let expected = e.raw_run(&dir);
    let topic = unique("edge-processes");
    for (i, file) in files.iter().enumerate() {
        e.device(&brokers, &topic, (&format!("dev{i}"), i), file, &[]);
    }
    let hostfile = edge_common::two_hosts(&dir);
    let processes: Vec<Cloud> = (0..2).map(|p| cloud_process(&brokers, &topic, &dir, (p, &hostfile))).collect();
    let addrs: Vec<String> = processes.iter().map(Cloud::address).collect();
    // Both devices said goodbye: `left` on every process, each named with the process reading it.
    let want = vec![("dev0".to_string(), 0, "left".to_string()), ("dev1".to_string(), 1, "left".to_string())];
    for addr in &addrs {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let rows = device_rows(addr);
            if rows == want {
                break;
            }
            assert!(Instant::now() < deadline, "{addr} lists {rows:?}, not {want:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let mut answers = Vec::new();
    for child in processes {
        let out = child.finish("saams -n 2 --partials-topic");
        answers.extend(answers_and_devices(&out).0);
    }
    answers.sort();
    assert_eq!(answers, expected, "the two processes together answer as the raw run");
}

/// The cloud job of the restart test: checkpoints every 150 ms into `dir/checkpoints`, answers
/// to `dir/out.json`, devices never timed out (they pause while the job is down). The topic has
/// a partition per device: a partition no device ships to holds windows open as a silent
/// device does, for `--device-timeout`, which would hold every checkpoint back.
fn checkpointed_cloud(brokers: &str, topic: &str, dir: &Path, e: &Edge) -> Child {
    e.cloud_base(brokers, topic)
        .args(["--partitions", "2"])
        .args(["--exit-when-idle", "5s", "--device-timeout", "120s", "--checkpoint-interval", "150ms"])
        .arg("--checkpoints")
        .arg(dir.join("checkpoints"))
        .arg("--out")
        .arg(dir.join("out.json"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("stderr-{}", unique("run")))).expect("stderr file"))
        .spawn()
        .expect("start saams")
}

/// Each device's lines by window, in order.
fn by_window<'a>(e: &Edge, text: &'a str) -> Vec<Vec<&'a str>> {
    let mut windows: Vec<Vec<&str>> = Vec::new();
    let mut last = None;
    for line in text.lines() {
        let w = e.window_of(line);
        if last != Some(w) {
            windows.push(Vec::new());
            last = Some(w);
        }
        windows.last_mut().expect("a window").push(line);
    }
    windows
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_cloud_job_killed_and_restarted_from_its_checkpoint_answers_as_the_raw_run() {
    use std::io::Write;
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = Edge::new("jobs/tests/edge_data/requests.json", "60s");
    let dir = edge_common::tmp("edge-cloud", "restart");
    let files = edge_common::data(&dir, 2, by_stream);
    let expected = e.raw_run(&dir);
    let topic = unique("edge-restart");
    let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).expect("device tuples")).collect();
    let windows: Vec<Vec<Vec<&str>>> = texts.iter().map(|t| by_window(&e, t)).collect();
    let mut devices: Vec<Child> =
        (0..2).map(|i| e.device_on_stdin(&brokers, &topic, (&format!("dev{i}"), i), &["--partitions", "2"])).collect();
    let mut stdins: Vec<_> = devices.iter_mut().map(|d| d.stdin.take().expect("its stdin")).collect();
    let mut feed = |w: usize| {
        for (stdin, windows) in stdins.iter_mut().zip(&windows) {
            for line in windows.get(w).into_iter().flatten() {
                writeln!(stdin, "{line}").expect("feed the device");
            }
            stdin.flush().expect("flush");
        }
    };
    // A window at a time (each ships the one before), until the job has written two
    // checkpoints; then kill -9, and the rest while the job is down.
    let mut cloud = checkpointed_cloud(&brokers, &topic, &dir, &e);
    let mut next = 0;
    while kafka_common::newest_checkpoint(&dir.join("checkpoints")) < 2 {
        assert!(next + 4 < windows[0].len(), "no two checkpoints before the last windows");
        feed(next);
        next += 1;
        std::thread::sleep(Duration::from_millis(400));
    }
    cloud.kill().expect("kill -9 the cloud job");
    cloud.wait().expect("reap it");
    let written = std::fs::read_to_string(dir.join("out.json")).unwrap_or_default().lines().count();
    while next < windows[0].len().max(windows[1].len()) {
        feed(next);
        next += 1;
    }
    drop(stdins);
    for d in devices {
        check(d.wait_with_output().expect("the device ends"), "saams-edge");
    }
    let status = checkpointed_cloud(&brokers, &topic, &dir, &e).wait().expect("the restarted job ends");
    let lines = edge_common::resumed_answers(&dir, status);
    let mut answers: Vec<String> = lines.iter().map(|l| edge_common::without_devices(l).0).collect();
    answers.sort();
    assert!(written > 0 && written < expected.len(), "killed mid-stream: {written} of {} answers", expected.len());
    assert_eq!(answers, expected, "each answer once, as the raw run's, across the kill");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_following_device_killed_and_restarted_from_its_state_is_merged_exactly_once() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge();
    let dir = edge_common::tmp("edge-cloud", "follow-state");
    let files = edge_common::data(&dir, 2, by_stream);
    let expected = e.raw_run(&dir);
    let topic = unique("edge-follow-state");
    // Device 1 ships once device 0 is done.
    let cloud = e.cloud_throughout(&brokers, &topic, &dir);
    let text = std::fs::read_to_string(&files[0]).expect("device 0 tuples");
    let lines: Vec<&str> = text.lines().collect();
    let state = dir.join("dev0.state");
    let state_arg = state.to_str().expect("a path");
    // Following, and shipping its open window every 2 ms, the device is killed while it ships
    // in the middle of its second window (hello, a position and shipments on the topic).
    let second = lines.iter().position(|l| e.window_of(l) > e.window_of(lines[0])).expect("a second window");
    let extra = ["--follow", "--ship-every", "2ms", "--state", state_arg];
    let mut killed = e.device_fed(&brokers, &topic, ("dev0", &extra), &lines[..second + 200], 6);
    killed.kill().expect("kill -9 the device");
    killed.wait().expect("reap it");
    assert!(state.exists(), "the device wrote its state");
    let again = e.device(&brokers, &topic, ("dev0", 0), &files[0], &extra);
    e.device(&brokers, &topic, ("dev1", 1), &files[1], &["--follow"]);
    let out = cloud.finish("saams --partials-topic");
    assert_eq!(answers_and_devices(&out).0, expected, "every tuple merged once across the kill");
    let dead = std::fs::read_to_string(dir.join("dead.json")).unwrap_or_default();
    assert!(dead.lines().all(|l| l.contains("replayed")), "only the batch being produced is sent again: {dead}");
    let tuples = edge_common::figure(&again, "edge ", "tuples");
    assert!(tuples < lines.len() as u64, "the restarted device skipped what it had shipped: {tuples}");
    assert!(edge_common::figure(&again, "edge ", "positions") > 0, "the restarted device followed the job");
}

/// A LOAD into the Count-Min (synopsis 1) of `stream` of dataset Forex from `file`.
fn load_of(stream: &str, file: &str) -> String {
    format!(
        r#"{{"dataSetKey":"Forex","streamID":"{stream}","synopsisID":1,"param":["LOAD_REQUEST","{file}"],"requestID":90}}"#
    )
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_load_into_a_stream_kept_whole_on_a_device_is_refused_with_409() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge();
    let dir = edge_common::tmp("edge-cloud", "load");
    let files = edge_common::data(&dir, 2, by_stream);
    let topic = unique("edge-load");
    // EURTRY's group holds a DFT: kept whole on its sole reader. XAUUSD's (Count-Min and
    // HyperLogLog) merges exactly: shipped as partials.
    let out = e.device(&brokers, &topic, ("dev0", 0), &files[0], &["--sole-reader"]);
    assert!(edge_common::figure(&out, "edge ", "whole_groups") > 0, "the device shipped whole states");
    std::fs::create_dir_all(dir.join("snapshots")).expect("snapshots");
    let mut cloud = e
        .cloud_base(&brokers, &topic)
        .args(["--partitions", "4"])
        .args(["--exit-when-idle", "60s", "--device-timeout", "2s", "--http", "127.0.0.1:0", "--snapshots"])
        .arg(dir.join("snapshots"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start saams");
    let addr = http_common::http_address(&mut cloud, Duration::from_secs(60));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = http_common::call(&addr, "GET", "/devices", "");
        let table: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        let whole = &table["devices"][0]["wholeGroups"];
        if whole.as_array().is_some_and(|g| !g.is_empty()) {
            assert_eq!(whole[0]["stream"], "EURTRY", "{table}");
            break;
        }
        assert!(Instant::now() < deadline, "no whole groups listed: {table}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, body) = http_common::call(&addr, "POST", "/requests", &load_of("EURTRY", "cm.bin"));
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("dev0") && body.contains("--sole-reader"), "{body}");
    // A LOAD into a synopsis the cloud merges goes on (to fail here: there is no such file).
    let (status, body) = http_common::call(&addr, "POST", "/requests", &load_of("XAUUSD", "cm.bin"));
    assert_ne!(status, 409, "{body}");
    cloud.kill().expect("stop the job");
    cloud.wait().expect("reap it");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_following_device_without_its_cloud_job_gives_up_after_the_cloud_timeout() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge();
    let dir = edge_common::tmp("edge-cloud", "timeout");
    let files = edge_common::data(&dir, 1, by_stream);
    let topic = unique("edge-no-cloud");
    let out = Command::new(edge_common::EDGE)
        .args(["--device", "dev0", "--brokers", &brokers, "--partials-topic", &topic, "--follow"])
        .args(["--cloud-timeout", "2s", "--window", e.window, "--data"])
        .arg(&files[0])
        .output()
        .expect("run saams-edge");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did not answer") && stderr.contains("--cloud-timeout 2s"), "{stderr}");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_following_device_whose_cloud_job_dies_gives_up_after_the_cloud_timeout() {
    use std::io::Write;
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let e = edge();
    let dir = edge_common::tmp("edge-cloud", "cloud-dies");
    let files = edge_common::data(&dir, 1, by_stream);
    let topic = unique("edge-cloud-dies");
    let mut cloud = e
        .cloud_base(&brokers, &topic)
        .args(["--partitions", "4", "--exit-when-idle", "60s", "--device-timeout", "60s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start saams");
    let mut device = e.device_on_stdin(&brokers, &topic, ("dev0", 0), &["--follow", "--cloud-timeout", "3s"]);
    let mut stdin = device.stdin.take().expect("its stdin");
    let text = std::fs::read_to_string(&files[0]).expect("device tuples");
    let windows = by_window(&e, &text);
    let mut feed = |w: usize| {
        for line in &windows[w] {
            writeln!(stdin, "{line}").expect("feed the device");
        }
        stdin.flush().expect("flush");
    };
    // Two windows read with the job's agreement: hello, two positions and the first window.
    feed(0);
    feed(1);
    let deadline = Instant::now() + Duration::from_secs(60);
    while kafka_common::read_topic(&brokers, &topic).len() < 4 {
        assert!(Instant::now() < deadline, "the device did not ship its first window");
        std::thread::sleep(Duration::from_millis(100));
    }
    cloud.kill().expect("kill -9 the cloud job");
    cloud.wait().expect("reap it");
    // The third window waits for a job that is gone.
    feed(2);
    drop(stdin);
    let out = device.wait_with_output().expect("the device ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did not answer") && stderr.contains("to route window"), "{stderr}");
}
