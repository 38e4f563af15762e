//! Helpers shared by the tests that run `saams-edge` devices and a cloud job (`saams
//! --partials-topic`) against a real broker (`edge.rs`, `edge_whole.rs`, `edge_cloud.rs`,
//! `edge_monitor.rs`): generated tuples split over devices, the devices (to their input's end, or fed and left running to be killed), the
//! cloud job, the raw run whose answers the cloud's must equal, and the figures of their summary
//! lines. A test file declares `mod kafka_common;` beside `mod edge_common;` (this module reads
//! topics and checks commands through it).
#![allow(dead_code)] // Not every test that includes this module calls every helper.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::kafka_common::{check, read_topic, repo};

pub const SAAMS: &str = env!("CARGO_BIN_EXE_saams");
pub const EDGE: &str = env!("CARGO_BIN_EXE_saams-edge");
pub const REPLAY: &str = env!("CARGO_BIN_EXE_replay");

/// A fresh temporary directory for the test `name` of the file `file` (emptied if it existed).
pub fn tmp(file: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-{file}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// Six generated streams (1500 tuples each, about one a second) in `dir/all.json`, and one file
/// per device (`dir/device{d}.json`): `pick(device, line)` says whether the device reads the line.
pub fn data(dir: &Path, devices: usize, pick: impl Fn(usize, &str) -> bool) -> Vec<PathBuf> {
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
    (0..devices)
        .map(|d| {
            let path = dir.join(format!("device{d}.json"));
            let mine: String = text.lines().filter(|l| pick(d, l)).map(|l| format!("{l}\n")).collect();
            std::fs::write(&path, mine).expect("write device tuples");
            path
        })
        .collect()
}

/// The stream of a generated tuple line (its `streamID`).
pub fn stream_of(line: &str) -> &str {
    let at = line.find("\"streamID\":\"").expect("a stream") + 12;
    &line[at..at + line[at..].find('"').expect("its end")]
}

/// The second of the day of a generated tuple line (its `time` field, `hh:mm:ss.mmm`).
pub fn second_of_day(line: &str) -> u64 {
    let at = line.find("\"time\":\"").expect("a time") + 8;
    let hms: Vec<u64> = line[at..at + 8].split(':').map(|x| x.parse().expect("a number")).collect();
    hms[0] * 3600 + hms[1] * 60 + hms[2]
}

/// The lines of `out`, sorted.
pub fn sorted(out: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(out).lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// An answer of the cloud job without its `devices` field, and the devices it names.
pub fn without_devices(line: &str) -> (String, Vec<String>) {
    let at = line.rfind(",\"devices\":[").unwrap_or_else(|| panic!("no devices named in {line}"));
    let names: Vec<String> = serde_json::from_str(&line[at + 11..line.len() - 1]).expect("a list of devices");
    (format!("{}}}", &line[..at]), names)
}

/// The lines of `out` without the `devices` fields of those that name them (a monitor's answers
/// name none), sorted.
pub fn sorted_without_devices(out: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> =
        sorted(out).into_iter().map(|l| if l.contains(",\"devices\":[") { without_devices(&l).0 } else { l }).collect();
    lines.sort();
    lines
}

/// The cloud job's answers without their `devices` fields (sorted), and every answer's devices.
pub fn answers_and_devices(out: &Output) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let named: Vec<(String, Vec<String>)> = sorted(&out.stdout).iter().map(|l| without_devices(l)).collect();
    let mut answers: Vec<String> = named.iter().map(|(a, _)| a.clone()).collect();
    answers.sort();
    (answers, named)
}

/// A cloud job started with its standard output and error piped, both read as they come by
/// threads of their own. Why: a pipe holds ~64 KiB; left unread until the end, a run's answers
/// filled it, the job's writer blocked in `write(1)`, its workers with it, and devices waiting
/// for the job to route their windows failed after `--cloud-timeout` (the "stall" seen after
/// pair asks). Every edge test starts its cloud job this way.
pub struct Cloud {
    pub child: Child,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    /// The job's HTTP address, once its stderr names it (`--http`).
    address: Receiver<String>,
}

impl Cloud {
    /// Start `command` (its stdin as the caller set it).
    pub fn start(command: &mut Command) -> Cloud {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start saams");
        let (stdout, out_reader) = collect(child.stdout.take().expect("its stdout"), |_| {});
        let (tx, address) = channel();
        let (stderr, err_reader) = collect(child.stderr.take().expect("its stderr"), move |line| {
            if let Some(addr) = line.strip_prefix("saams: http on http://") {
                let _ = tx.send(addr.to_string());
            }
        });
        Cloud { child, stdout, stderr, readers: vec![out_reader, err_reader], address }
    }

    /// The job's HTTP address (it runs with `--http`), waited for up to 60 s.
    pub fn address(&self) -> String {
        self.address.recv_timeout(Duration::from_secs(60)).expect("the job announces its HTTP address")
    }

    /// The lines the job has written so far.
    pub fn lines(&self) -> Vec<String> {
        let out = self.stdout.lock().expect("the output");
        String::from_utf8_lossy(&out).lines().map(str::to_string).collect()
    }

    /// The job's end: its status and everything it wrote.
    pub fn output(mut self) -> Output {
        let status = self.child.wait().expect("the job ends");
        for reader in self.readers {
            reader.join().expect("a reader of the job's output");
        }
        let take = |b: &Arc<Mutex<Vec<u8>>>| std::mem::take(&mut *b.lock().expect("the output"));
        Output { status, stdout: take(&self.stdout), stderr: take(&self.stderr) }
    }

    /// [`Cloud::output`], checked to have succeeded (`what` names the job in the panic).
    pub fn finish(self, what: &str) -> Output {
        check(self.output(), what)
    }
}

/// Read `from` to its end on a thread of its own into the returned buffer, handing each line
/// (without its newline) to `on_line` as it comes.
fn collect(
    from: impl Read + Send + 'static,
    mut on_line: impl FnMut(&str) + Send + 'static,
) -> (Arc<Mutex<Vec<u8>>>, JoinHandle<()>) {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let into = bytes.clone();
    let reader = std::thread::spawn(move || {
        let mut from = BufReader::new(from);
        let mut line = Vec::new();
        while from.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            on_line(String::from_utf8_lossy(&line).trim_end());
            into.lock().expect("the output").extend_from_slice(&line);
            line.clear();
        }
    });
    (bytes, reader)
}

/// Start the cloud job `command` ([`Cloud::start`]), and read the text of each of `files` (what
/// its devices are to be fed).
pub fn spawn_with_texts(command: &mut Command, files: &[PathBuf]) -> (Cloud, Vec<String>) {
    (Cloud::start(command), files.iter().map(|f| std::fs::read_to_string(f).expect("device tuples")).collect())
}

/// Devices fed on their standard input: each child, its stdin and the lines it is to read.
pub type Fed<'a> = (Child, std::process::ChildStdin, Vec<&'a str>);

/// Feed each device of `devices` part `part` of its lines, cut in thirds (the last part,
/// `last`, runs to the end).
pub fn feed_third(devices: &mut [Fed<'_>], part: usize, last: usize) {
    for (_, stdin, lines) in devices {
        let third = lines.len() / 3;
        let end = if part == last { lines.len() } else { (part + 1) * third };
        for line in &lines[part * third..end] {
            writeln!(stdin, "{line}").expect("feed the device");
        }
        stdin.flush().expect("flush");
    }
}

/// Wait (up to 2 min) until `devices_table()`, a `GET /devices` reply of the cloud job, shows a
/// merged window (`lastWindow`) at or after `from` for each of `devices`.
pub fn wait_merged(devices_table: impl Fn() -> String, devices: &[&str], from: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let body = devices_table();
        let table: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        let rows = table["devices"].as_array().cloned().unwrap_or_default();
        let window = |d: &str| rows.iter().find(|r| r["device"] == d).and_then(|r| r["lastWindow"].as_u64());
        if devices.iter().all(|d| window(d).is_some_and(|w| w >= from)) {
            return;
        }
        assert!(Instant::now() < deadline, "the devices' windows were not merged: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A figure of a `key=value` summary line on stderr starting with `prefix`.
pub fn figure(out: &Output, prefix: &str, key: &str) -> u64 {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no `{prefix}` line in {err}"));
    let field = line.split(' ').find_map(|kv| kv.strip_prefix(&format!("{key}="))).expect("the figure");
    field.parse().expect("a number")
}

/// One test file's setting: its request script and job window, which the devices, the cloud job
/// and the raw run share.
pub struct Edge {
    /// The request script (a path).
    pub requests: String,
    /// The job window, as the flag takes it (`600s`).
    pub window: &'static str,
    /// The same in ms.
    pub window_ms: u64,
}

impl Edge {
    /// The setting of the script `requests` (a path in the repository) with windows of `window_s`
    /// seconds.
    pub fn new(requests: &str, window: &'static str) -> Edge {
        Edge::of_script(&repo(requests), window)
    }

    /// The setting of the script at `requests` (any path) with windows of `window_s` seconds.
    pub fn of_script(requests: &str, window: &'static str) -> Edge {
        let secs: u64 = window.strip_suffix('s').and_then(|s| s.parse().ok()).expect("a window in seconds");
        Edge { requests: requests.to_string(), window, window_ms: secs * 1000 }
    }

    /// The job window (start, ms of the day) of a generated tuple line (its `time` field).
    pub fn window_of(&self, line: &str) -> u64 {
        second_of_day(line) * 1000 / self.window_ms * self.window_ms
    }

    /// The answers of one job reading every tuple of `dir/all.json`, sorted.
    pub fn raw_run(&self, dir: &Path) -> Vec<String> {
        self.raw_run_of(&dir.join("all.json"))
    }

    /// The answers of one job reading every tuple of `data`, sorted.
    pub fn raw_run_of(&self, data: &Path) -> Vec<String> {
        let out = Command::new(SAAMS)
            .args(["--requests", &self.requests, "--window", self.window, "-w", "1", "--progress", "0", "--data"])
            .arg(data)
            .output()
            .expect("run saams");
        sorted(&check(out, "saams over the file").stdout)
    }

    /// A device command: `id` shipping to `partition` of `topic`, with `extra` flags first (with
    /// `--follow` among them it learns its requests from the cloud job, else from the script).
    fn device_command(&self, brokers: &str, topic: &str, (id, partition): (&str, usize), extra: &[&str]) -> Command {
        let mut command = Command::new(EDGE);
        command.args(extra).args(["--device", id, "--brokers", brokers, "--partials-topic", topic]);
        if !extra.contains(&"--follow") {
            command.args(["--requests", &self.requests]);
        }
        command.args(["--window", self.window, "--partition", &partition.to_string(), "--data"]);
        command
    }

    /// Device `id` shipping to `partition` of `topic`, reading its standard input (piped).
    pub fn device_on_stdin(&self, brokers: &str, topic: &str, at: (&str, usize), extra: &[&str]) -> Child {
        self.device_command(brokers, topic, at, extra)
            .arg("-")
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start saams-edge")
    }

    /// Run device `id` over `data` to `partition` of `topic` until its input ends.
    pub fn device(&self, brokers: &str, topic: &str, at: (&str, usize), data: &Path, extra: &[&str]) -> Output {
        let out = self.device_command(brokers, topic, at, extra).arg(data).output().expect("run saams-edge");
        check(out, "saams-edge")
    }

    /// Feed `lines` to device `id` (partition 0, `extra` flags) on its standard input, then wait
    /// until `topic` holds `records`; the device is left running (its input open, as a live
    /// one's), to be killed.
    pub fn device_fed(
        &self,
        brokers: &str,
        topic: &str,
        (id, extra): (&str, &[&str]),
        lines: &[&str],
        records: usize,
    ) -> Child {
        let mut child = self
            .device_command(brokers, topic, (id, 0), extra)
            .arg("-")
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start saams-edge");
        let mut stdin = child.stdin.take().expect("its stdin");
        for line in lines {
            writeln!(stdin, "{line}").expect("feed the device");
        }
        stdin.flush().expect("flush");
        // Kept open: the device waits for more input, as a live one does.
        std::mem::forget(stdin);
        let deadline = Instant::now() + Duration::from_secs(60);
        while read_topic(brokers, topic).len() < records {
            assert!(Instant::now() < deadline, "the device did not ship its windows");
            std::thread::sleep(Duration::from_millis(100));
        }
        child
    }

    /// The cloud job command over `topic` (2 workers, from its start, `--device-timeout 2s`, dead
    /// letters to `dir/dead.json`), to the end of what the devices shipped (3 s idle).
    pub fn cloud_command(&self, brokers: &str, topic: &str, dir: &Path) -> Command {
        let mut command = self.cloud_base(brokers, topic);
        command
            .args(["--exit-when-idle", "3s", "--device-timeout", "2s", "--partitions", "4", "--dead-letter"])
            .arg(dir.join("dead.json"));
        command
    }

    /// The cloud job command over `topic` (2 workers, from its start) without the flags of
    /// its end, its devices' timeout and its outputs: the caller adds them.
    pub fn cloud_base(&self, brokers: &str, topic: &str) -> Command {
        self.cloud_shaped(brokers, topic, &["-w", "2"])
    }

    /// [`Edge::cloud_base`] with the `shape` flags (workers, processes) instead of `-w 2`.
    pub fn cloud_shaped(&self, brokers: &str, topic: &str, shape: &[&str]) -> Command {
        let mut command = Command::new(SAAMS);
        command.args(["--requests", &self.requests, "--window", self.window, "--progress", "0"]).args(shape).args([
            "--brokers",
            brokers,
            "--partials-topic",
            topic,
            "--from",
            "earliest",
        ]);
        command
    }

    /// The cloud job of a test that restarts a following device ([`Cloud::start`]): it runs
    /// throughout (the devices wait for it before each window), a device restarting is not
    /// timed out, and a device shipping once another is done joins (its partition waits for it
    /// as for a device); dead letters to `dir/dead.json`.
    pub fn cloud_throughout(&self, brokers: &str, topic: &str, dir: &Path) -> Cloud {
        Cloud::start(
            self.cloud_base(brokers, topic)
                .args(["--partitions", "4", "--idle-timeout", "120s"])
                .args(["--exit-when-idle", "10s", "--device-timeout", "120s", "--dead-letter"])
                .arg(dir.join("dead.json")),
        )
    }

    /// [`Edge::cloud_command`] with `extra` flags, run to its end.
    pub fn cloud(&self, brokers: &str, topic: &str, dir: &Path, extra: &[&str]) -> Output {
        let out = self.cloud_command(brokers, topic, dir).args(extra).output().expect("run saams");
        check(out, "saams --partials-topic")
    }
}

/// A hosts file in `dir` for a job of two processes on this machine (two free ports).
pub fn two_hosts(dir: &Path) -> PathBuf {
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
    };
    let hostfile = dir.join("hosts");
    std::fs::write(&hostfile, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free(), free())).expect("hostfile");
    hostfile
}

/// A job resumed from its checkpoint into `dir` ended with `status`: assert it succeeded and
/// resumed (its runs' stderr is in `dir/stderr-*`), and return its answer lines (`dir/out.json`).
pub fn resumed_answers(dir: &Path, status: std::process::ExitStatus) -> Vec<String> {
    let mut stderr = String::new();
    for entry in std::fs::read_dir(dir).expect("the test directory").filter_map(Result::ok) {
        if entry.file_name().to_string_lossy().starts_with("stderr-") {
            stderr.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    assert!(status.success(), "the restarted job failed: {stderr}");
    assert!(stderr.contains("resuming from checkpoint"), "{stderr}");
    let out = std::fs::read_to_string(dir.join("out.json")).expect("the answers");
    out.lines().map(str::to_string).collect()
}

/// Write to `path` the request script at `requests` followed by the requests of the JSON array
/// `live` (what a job over the raw tuples runs to match live requests).
pub fn script_with(requests: &str, live: &str, path: &Path) {
    let script = std::fs::read_to_string(requests).expect("the script")
        + &serde_json::from_str::<Vec<serde_json::Value>>(live)
            .expect("JSON")
            .iter()
            .map(|r| format!("{r}\n"))
            .collect::<String>();
    std::fs::write(path, script).expect("write the script");
}
