//! Requests that need a device's state reach the device (`saams-edge --follow`), against a real
//! Kafka-protocol broker (`SAAMS_KAFKA_BROKERS`): the paper workload on four streams (Count-Min,
//! HyperLogLog and DFT on `price`, one group per stream), two devices each the only reader of
//! two streams, keeping their groups whole (`--sole-reader`) or resident (`--resident`).
//!
//! - A LOAD posted while they run reaches them at its fence with the snapshot's bytes: the
//!   answers equal those of one job over the raw tuples in which the same snapshot was merged at
//!   the same fence (before it: the run without the LOAD; from it on: the run with the LOAD in
//!   its script, whose landmark Count-Min holds the snapshot from its start).
//! - An ad-hoc query and a SAVE of a resident synopsis are answered by its device from its state
//!   at their fence: the reply equals the end-of-input answer of one job over the raw tuples
//!   before the fence (with `asOf`, the fence, added), and the snapshot file has the same bytes.
//!   Once the devices have left, the same query is 503 naming the device.
//! - An ask waiting when its device's input ends is answered from the device's state at its end,
//!   also one posted as the input ends, before the device can have heard it (it hears it in the
//!   round trip it makes to the cloud at its end);
//!   one to a device whose input is quiet (`saams-edge --idle-after`) once it has been quiet
//!   that long, and one to a device fed slowly when it reads its fence's window: each equals the
//!   answer of one job over the tuples the device took before the fence (those older than a
//!   fence it took as its watermark, read after it, are late on the device).
//! - The cloud hands a device's answer on as it comes: with every device quiet and no
//!   `--exit-when-idle`, the client gets it (no 504), written once to the job's output.
//! - An ad-hoc pair query of resident synopses (on one device, or on two) is answered by the
//!   cloud from the views at its point, equal to the raw run of the tuples before it; so is one
//!   of synopses kept whole on two devices (from their states).
//!
//! Where the variable was unset at build time the tests show as ignored.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

#[allow(dead_code)] // the devices produce the data (kafka_common::replay_into is not used)
mod kafka_common;
use kafka_common::{check, declared_broker, unique};
mod edge_common;
use edge_common::{Cloud, Edge, SAAMS, sorted, sorted_without_devices};
mod http_common;

/// The streams each device is the only reader of.
const SHARES: [[&str; 2]; 2] = [["EURTRY", "XAUUSD"], ["IBM", "SPY"]];

/// EURTRY's Count-Min (request 1 of the script; its continuous query is request 4).
fn request(param: &str, id: u32) -> String {
    request_on("EURTRY", param, id)
}

/// The Count-Min of the Forex `stream` (`param`), as request `id`.
fn request_on(stream: &str, param: &str, id: u32) -> String {
    format!(r#"{{"dataSetKey":"Forex","streamID":"{stream}","synopsisID":1,"param":{param},"requestID":{id}}}"#)
}

fn edge() -> Edge {
    Edge::new("jobs/tests/edge_whole_data/requests.json", "20s")
}

/// The generated tuples and each device's share, in a fresh directory with a `snapshots` one.
fn workspace(name: &str) -> (PathBuf, Vec<PathBuf>) {
    workspace_of(name, SHARES)
}

/// [`workspace`] with the devices reading `shares` of the streams.
fn workspace_of(name: &str, shares: [[&str; 2]; 2]) -> (PathBuf, Vec<PathBuf>) {
    let dir = edge_common::tmp("edge-requests", name);
    let files = edge_common::data(&dir, 2, |d, l| shares[d].contains(&edge_common::stream_of(l)));
    std::fs::create_dir_all(dir.join("snapshots")).expect("the snapshot directory");
    (dir, files)
}

/// One job over `data` with the script and `more` requests after it, SAVE and LOAD in
/// `snapshots`: its sorted answers.
fn raw_with(dir: &Path, (more, snapshots): (&[String], &Path), data: &Path) -> Vec<String> {
    let e = edge();
    let script = std::fs::read_to_string(&e.requests).expect("the script") + &more.join("\n") + "\n";
    let requests = dir.join(format!("requests-{}.json", more.len()));
    std::fs::write(&requests, script).expect("write the script");
    let out = Command::new(SAAMS)
        .args(["--window", e.window, "-w", "1", "--progress", "0", "--requests"])
        .arg(&requests)
        .arg("--snapshots")
        .arg(snapshots)
        .arg("--data")
        .arg(data)
        .output()
        .expect("run saams");
    sorted(&check(out, "saams over the file").stdout)
}

/// The end (ms) of an answer's window.
fn window_end(line: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(line).expect("an answer");
    let end = v["window"]["end"].as_str().unwrap_or_else(|| panic!("no window in {line}"));
    saams::api::time::parse_timestamp(end).expect("a timestamp") as u64
}

/// The cloud job (`--http`, `--snapshots`) and the two devices (`--follow` and `mode`) fed on
/// their standard input.
struct Running {
    /// The cloud job (its first process).
    cloud: Cloud,
    addr: String,
    devices: Vec<edge_common::Fed<'static>>,
    /// A cloud job of two processes: the second, and its HTTP address.
    other: Option<(Cloud, String)>,
}

impl Running {
    /// `flags`: the devices'; `idle`: the cloud's `--idle-timeout` (how long a partition whose
    /// device said goodbye holds windows). The cloud ends 10 s after its input went idle.
    fn start(brokers: &str, at: (&Path, &[PathBuf]), topic: &str, flags: (&[&str], &str)) -> Running {
        Running::start_ending(brokers, at, topic, flags, &["--exit-when-idle", "10s"])
    }

    /// [`Running::start`] with the cloud's `ends` flags (none: it runs until stopped).
    fn start_ending(
        brokers: &str,
        at: (&Path, &[PathBuf]),
        topic: &str,
        flags: (&[&str], &str),
        ends: &[&str],
    ) -> Running {
        Running::start_shaped(brokers, at, topic, flags, (ends, false))
    }

    /// [`Running::start_ending`], the cloud job of two processes of one worker each when
    /// `two` (partition `q` is read by process `q mod 2`), else of one process of two workers.
    fn start_shaped(
        brokers: &str,
        (dir, files): (&Path, &[PathBuf]),
        topic: &str,
        (flags, idle): (&[&str], &str),
        (ends, two): (&[&str], bool),
    ) -> Running {
        let e = edge();
        let hosts = two.then(|| edge_common::two_hosts(dir));
        let hosts = hosts.as_ref().map(|h| h.to_str().expect("a path"));
        let mut clouds = (0..if two { 2 } else { 1 }).map(|p| {
            let p = p.to_string();
            let shape = match hosts {
                Some(hosts) => vec!["-w", "1", "-n", "2", "-p", &p, "-h", hosts],
                None => vec!["-w", "2"],
            };
            let mut base = e.cloud_shaped(brokers, topic, &shape);
            base.args(ends)
                .args(["--partitions", "4", "--device-timeout", "60s", "--idle-timeout", idle, "--http-timeout", "60"])
                .args(["--http", "127.0.0.1:0", "--snapshots"])
                .arg(dir.join("snapshots"));
            let cloud = Cloud::start(&mut base);
            let addr = cloud.address();
            (cloud, addr)
        });
        let (cloud, addr) = clouds.next().expect("the cloud job");
        let other = clouds.next();
        let texts = files.iter().map(|f| std::fs::read_to_string(f).expect("device tuples"));
        let devices = texts
            .into_iter()
            .enumerate()
            .map(|(i, text)| {
                let flags: Vec<&str> = ["--follow"].iter().chain(flags).copied().collect();
                let mut child = e.device_on_stdin(brokers, topic, (&format!("dev{i}"), i), &flags);
                let stdin = child.stdin.take().expect("its stdin");
                let text: &'static str = Box::leak(text.into_boxed_str());
                (child, stdin, text.lines().collect())
            })
            .collect();
        Running { cloud, addr, devices, other }
    }

    fn feed(&mut self, part: usize) {
        edge_common::feed_third(&mut self.devices, part, 2);
    }

    /// Wait until the cloud has merged a window of both devices at or after `from` (ms).
    fn wait_merged(&self, from: u64) {
        let addr = self.addr.clone();
        edge_common::wait_merged(move || http_common::call(&addr, "GET", "/devices", "").1, &["dev0", "dev1"], from);
    }

    /// The devices' ends (their inputs closed), then `more` while the cloud runs, then its end.
    fn finish(self, more: impl FnOnce(&str)) -> (Vec<Output>, Output) {
        let Running { cloud, addr, devices, other } = self;
        let outs = devices
            .into_iter()
            .map(|(child, stdin, _)| {
                drop(stdin);
                check(child.wait_with_output().expect("the device ends"), "saams-edge --follow")
            })
            .collect();
        more(&addr);
        let mut out = cloud.finish("saams --partials-topic --http");
        if let Some((other, _)) = other {
            out.stdout.extend(other.finish("saams -n 2 --partials-topic --http").stdout);
        }
        (outs, out)
    }
}

/// A LOAD into EURTRY's Count-Min (kept whole or resident on dev0) posted mid-stream: the
/// answers of the raw run with the snapshot merged at the LOAD's fence.
fn a_load_reaches_the_device_at_its_fence(mode: &str) {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, files) = workspace(mode.trim_start_matches('-'));
    // The snapshot: EURTRY's Count-Min over every tuple, saved by a job of its own.
    let save = request(r#"["SAVE_REQUEST","cm.bin"]"#, 100);
    raw_with(&dir, (&[save], &dir.join("snapshots")), &dir.join("all.json"));
    assert!(dir.join("snapshots/cm.bin").exists(), "the snapshot was saved");
    let topic = unique("edge-requests-load");
    let mut run = Running::start(&brokers, (&dir, &files), &topic, (&[mode], "60s"));
    run.feed(0);
    run.wait_merged(0);
    let load = request(r#"["LOAD_REQUEST","cm.bin"]"#, 101);
    let (status, body) = http_common::call(&run.addr, "POST", "/requests", &load);
    assert_eq!(status, 200, "{body}");
    let ack: serde_json::Value = serde_json::from_str(body.lines().next().expect("an ack")).expect("JSON");
    let fence = saams::api::time::parse_timestamp(ack["effectiveFrom"].as_str().expect("a fence")).expect("a time");
    run.feed(1);
    run.feed(2);
    let (outs, out) = run.finish(|_| {});
    for device in &outs {
        assert_eq!(edge_common::figure(device, "edge ", "live_requests"), 1, "the LOAD applied on each device");
    }
    let answers: Vec<String> =
        sorted_without_devices(&out.stdout).into_iter().filter(|l| !l.contains("\"accepted\"")).collect();
    let plain = edge().raw_run(&dir);
    let loaded = raw_with(&dir, (&[load], &dir.join("snapshots")), &dir.join("all.json"));
    let cm = |l: &String| l.starts_with("{\"requestID\":4,");
    let from_fence = |l: &String| cm(l) && window_end(l) > fence as u64;
    let mut expected: Vec<String> = plain.iter().filter(|l| !from_fence(l)).cloned().collect();
    expected.extend(loaded.iter().filter(|l| from_fence(l)).cloned());
    expected.sort();
    let first = plain.iter().filter(|l| cm(l)).map(|l| window_end(l)).min().expect("Count-Min answers");
    // Mid-stream: at least the first window is answered before the fence.
    assert!(fence as u64 >= first, "the fence is mid-stream: {fence}");
    assert_ne!(expected, plain, "the snapshot changes the answers from the fence on");
    assert_eq!(answers, expected, "the answers of the raw run with the snapshot merged at the fence");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_load_into_a_synopsis_kept_whole_reaches_its_device_at_the_fence() {
    a_load_reaches_the_device_at_its_fence("--sole-reader");
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_load_into_a_resident_synopsis_reaches_its_device_at_the_fence() {
    a_load_reaches_the_device_at_its_fence("--resident");
}

/// `line` without its `asOf` field, and that field's time (ms).
fn without_as_of(line: &str) -> (String, i64) {
    let at = line.rfind(",\"asOf\":\"").unwrap_or_else(|| panic!("no asOf in {line}"));
    let time = saams::api::time::parse_timestamp(&line[at + 9..line.len() - 2]).expect("a timestamp");
    (format!("{}}}", &line[..at]), time)
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn ad_hoc_queries_and_saves_of_a_resident_synopsis_are_answered_by_its_device() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, files) = workspace("asks");
    let topic = unique("edge-requests-asks");
    let mut run = Running::start(&brokers, (&dir, &files), &topic, (&["--resident"], "60s"));
    run.feed(0);
    run.wait_merged(0);
    let query = query(201);
    let save = request(r#"["SAVE_REQUEST","saved.bin"]"#, 202);
    // Answered once the device reads past the fence: the POST waits while it is fed.
    let posted = post(&run.addr, &format!("[{query},{save}]"));
    std::thread::sleep(Duration::from_secs(2));
    run.feed(1);
    let (status, reply) = posted.join().expect("the POST");
    assert_eq!(status, 200, "{reply}");
    let lines: Vec<&str> = reply.lines().collect();
    assert_eq!(lines.len(), 2, "{reply}");
    run.feed(2);
    let ask_again = self::query(203);
    let mut gone = (0, String::new());
    let (outs, out) = run.finish(|addr| gone = http_common::call(addr, "POST", "/requests", &ask_again));
    let answered: u64 = outs.iter().map(|o| edge_common::figure(o, "edge ", "answers")).sum();
    assert_eq!(answered, 2, "dev0 answered the query and the SAVE");
    let (answer, fence) = without_as_of(lines[0]);
    let (saved, saved_at) = without_as_of(lines[1]);
    assert_eq!(saved_at, fence, "one fence for the body");
    // One job over the tuples before the fence, asked at its end.
    let before = dir.join("before-fence.json");
    let all = std::fs::read_to_string(dir.join("all.json")).expect("the tuples");
    let e = edge();
    // The generated tuples are of one day: `window_of` reads the time of day.
    let of_day = fence % 86_400_000;
    let kept: String = all.lines().filter(|l| (e.window_of(l) as i64) < of_day).map(|l| format!("{l}\n")).collect();
    std::fs::write(&before, kept).expect("write the tuples before the fence");
    std::fs::create_dir_all(dir.join("raw-snapshots")).expect("a snapshot directory");
    let raw = raw_with(&dir, (&[query, save], &dir.join("raw-snapshots")), &before);
    let raw_line = |id: &str| raw.iter().find(|l| l.starts_with(id)).cloned().unwrap_or_else(|| panic!("no {id}"));
    assert_eq!(answer, raw_line("{\"requestID\":201,"), "the query answered from the state at the fence");
    assert!(answer.contains("\"tuples\":"), "{answer}");
    assert_eq!(saved, raw_line("{\"requestID\":202,"), "the SAVE answered as the raw run's");
    let bytes = |p: &Path| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert_eq!(bytes(&dir.join("snapshots/saved.bin")), bytes(&dir.join("raw-snapshots/saved.bin")), "the state saved");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("{\"requestID\":201,")), "the answer is in the job's output");
    assert_eq!(gone.0, 503, "{}", gone.1);
    assert!(gone.1.contains("resident on device dev0") && gone.1.contains("has left"), "{}", gone.1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// EURTRY's Count-Min asked for the frequency of 13.5, as request `id`.
fn query(id: u32) -> String {
    query_on("EURTRY", id)
}

/// The Forex `stream`'s Count-Min asked for the frequency of 13.5, as request `id`.
fn query_on(stream: &str, id: u32) -> String {
    request_on(stream, r#"[13.5,"price","Queryable","Ad-hoc"]"#, id)
}

/// `POST /requests` of `body` on a thread (the reply waits for the device's answer).
fn post(addr: &str, body: &str) -> std::thread::JoinHandle<(u16, String)> {
    let (addr, body) = (addr.to_string(), body.to_string());
    std::thread::spawn(move || http_common::call(&addr, "POST", "/requests", &body))
}

/// The answer line of a `POST /requests` reply without its `asOf`, and the fence it is as of.
fn answered(reply: (u16, String)) -> (String, i64) {
    let (status, body) = reply;
    assert_eq!(status, 200, "{body}");
    without_as_of(body.lines().next().unwrap_or_else(|| panic!("no answer in {body}")))
}

/// Wait until the control topic of `topic` holds `n` live requests (the devices can hear them).
fn wait_requests(brokers: &str, topic: &str, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let control = format!("{topic}.control");
    while kafka_common::read_topic(brokers, &control).iter().filter(|r| r.starts_with(b"{\"request\"")).count() < n {
        assert!(std::time::Instant::now() < deadline, "the cloud job did not agree {n} live requests");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Wait until the partials topic `topic` holds `n` devices' answers.
fn wait_answers(brokers: &str, topic: &str, n: usize) {
    use saams_jobs::edge::shipment::{Body, Shipment};
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let answers = || {
        let records = kafka_common::read_topic(brokers, topic);
        records.iter().filter(|r| matches!(Shipment::decode(r).map(|s| s.body), Ok(Body::Answer(_)))).count()
    };
    while answers() < n {
        assert!(std::time::Instant::now() < deadline, "the devices did not answer {n} asks");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The answer to `query` of one job over `lines` (its script with the query after it), asked at
/// the input's end: the raw run of the tuples a device took.
fn raw_answer(dir: &Path, name: &str, lines: &[&str], query: &str) -> String {
    let data = dir.join(format!("{name}.json"));
    std::fs::write(&data, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write the tuples");
    let snapshots = dir.join(format!("{name}-snapshots"));
    std::fs::create_dir_all(&snapshots).expect("a snapshot directory");
    let id: serde_json::Value = serde_json::from_str(query).expect("JSON");
    let prefix = format!("{{\"requestID\":{},", id["requestID"]);
    let raw = raw_with(dir, (&[query.to_string()], &snapshots), &data);
    raw.into_iter().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {prefix} in the raw run"))
}

/// The first cut of the devices' inputs (second of the day): each device reads what comes
/// before it, then waits; the second cut ends what a paced device reads.
const CUT: u64 = 120;
const CUT2: u64 = 240;

impl Running {
    /// Feed each device its lines whose second of the day is in `seconds`, twenty at a time,
    /// every `pause` (`ZERO`: at once); both devices window by window, so neither runs ahead.
    fn feed_seconds(&mut self, seconds: std::ops::Range<u64>, pause: Duration) {
        use std::io::Write;
        let e = edge();
        let step = e.window_ms / 1000;
        let last = self.devices.iter().flat_map(|(_, _, lines)| lines.last()).map(|l| edge_common::second_of_day(l));
        let end = seconds.end.min(last.max().unwrap_or(0) + 1);
        for window in (seconds.start / step * step..end).step_by(step as usize) {
            for (_, stdin, lines) in &mut self.devices {
                let of = |l: &&&str| {
                    let s = edge_common::second_of_day(l);
                    seconds.contains(&s) && s / step * step == window
                };
                let mine: Vec<&str> = lines.iter().filter(|l| of(l)).copied().collect();
                for chunk in mine.chunks(20) {
                    chunk.iter().for_each(|l| writeln!(stdin, "{l}").expect("feed the device"));
                    stdin.flush().expect("flush");
                    std::thread::sleep(pause);
                }
            }
        }
    }

    /// Wait until the cloud merged every window before the last one before `CUT` (which stays
    /// open until a later tuple or the input's end), then a second more.
    fn wait_cut(&self) {
        let e = edge();
        // The generated tuples are of 2 January 2019.
        let day = saams::api::time::parse_timestamp("2019-01-02T00:00:00Z").expect("a time") as u64;
        self.wait_merged(day + CUT * 1000 - 2 * e.window_ms);
        std::thread::sleep(Duration::from_secs(1));
    }
}

impl Running {
    /// Feed both devices up to the middle of the window before the cut (that window stays open
    /// on them), then end dev1's input: from now on only dev0 holds the cloud's watermark (a
    /// quiet device beside it would hold it, and the reply with it, for --device-timeout).
    /// That second of the day, and dev1's output.
    fn dev0_alone(&mut self) -> (u64, Output) {
        let half = CUT - edge().window_ms / 2000;
        self.feed_seconds(0..half, Duration::ZERO);
        self.wait_cut();
        let (dev1, stdin, _) = self.devices.remove(1);
        drop(stdin);
        (half, check(dev1.wait_with_output().expect("dev1 ends"), "saams-edge --follow"))
    }
}

/// The lines of `lines` whose second of the day is in `seconds`.
fn lines_in<'a>(lines: &[&'a str], seconds: std::ops::Range<u64>) -> Vec<&'a str> {
    lines.iter().filter(|l| seconds.contains(&edge_common::second_of_day(l))).copied().collect()
}

/// The second of the day of a fence (ms since the epoch).
fn second_of(fence: i64) -> u64 {
    (fence % 86_400_000) as u64 / 1000
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn an_ask_waiting_when_its_device_input_ends_is_answered_from_its_state_at_the_end() {
    an_ask_at_the_input_end("ended", true);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn an_ask_posted_as_its_device_input_ends_is_answered_not_timed_out() {
    an_ask_at_the_input_end("ending", false);
}

/// An ask of dev0's resident Count-Min posted after its last window, its input ended once the
/// job agreed the ask (`agreed`), or at once: before dev0 can have heard the ask, which it then
/// hears in the round trip it makes at its end. Either way the reply is its answer from its
/// state at its end, never a 504.
fn an_ask_at_the_input_end(name: &str, agreed: bool) {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, files) = workspace(name);
    let topic = unique(&format!("edge-requests-{name}"));
    let mut run = Running::start(&brokers, (&dir, &files), &topic, (&["--resident"], "60s"));
    run.feed_seconds(0..CUT, Duration::ZERO);
    run.wait_cut();
    let asked = query(211);
    let reply = post(&run.addr, &asked);
    if agreed {
        wait_requests(&brokers, &topic, 1);
    } else {
        // The request on its way to the job.
        std::thread::sleep(Duration::from_millis(20));
    }
    // dev0's input ends with the ask waiting: no value of the fence's window can come.
    let (dev0, stdin, lines) = run.devices.remove(0);
    drop(stdin);
    let dev0 = check(dev0.wait_with_output().expect("dev0 ends"), "saams-edge --follow");
    let (answer, fence) = answered(reply.join().expect("the POST"));
    let (outs, _) = run.finish(|_| {});
    assert_eq!(edge_common::figure(&dev0, "edge ", "answers"), 1, "dev0 answered at its end");
    assert!(second_of(fence) >= CUT, "the fence {fence} is after every tuple dev0 read: it answered at its end");
    let taken = lines_in(&lines, 0..CUT);
    assert_eq!(answer, raw_answer(&dir, name, &taken, &asked), "the state of every tuple dev0 read");
    assert_eq!(edge_common::figure(&outs[0], "edge ", "answers"), 0, "dev1 holds no EURTRY");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn asks_to_a_quiet_device_and_to_a_slowly_paced_one_are_answered_at_their_fences() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, files) = workspace("quiet");
    let topic = unique("edge-requests-quiet");
    let mut run = Running::start(&brokers, (&dir, &files), &topic, (&["--resident", "--idle-after", "3s"], "2s"));
    let (half, dev1) = run.dev0_alone();
    // Quiet: 3 s after its last line dev0 takes the fence as its watermark and answers (the
    // cloud relays the answer when it comes: `a_quiet_device_s_answer_reaches_the_client_while_every_device_is_quiet`).
    let first = query(221);
    let reply1 = post(&run.addr, &first);
    wait_answers(&brokers, &topic, 1);
    let lines = run.devices[0].2.clone();
    // Paced: lines come a few at a time; the ask is answered at the first of its fence's window.
    // It is posted once dev0 has merged a window after the first fence (at most the window
    // after dev1's end, which dev1's end routed: a request agreed after that takes effect after
    // it), so its fence is in the paced lines after the first.
    let addr = run.addr.clone();
    let second = query(222);
    let day = saams::api::time::parse_timestamp("2019-01-02T00:00:00Z").expect("a time") as u64;
    let after_first = day + CUT * 1000 + edge().window_ms;
    let reply = std::thread::spawn(move || {
        let table = || http_common::call(&addr, "GET", "/devices", "").1;
        edge_common::wait_merged(table, &["dev0"], after_first);
        answered(http_common::call(&addr, "POST", "/requests", &second))
    });
    run.feed_seconds(half..CUT2, Duration::from_millis(250));
    let (quiet, fence) = answered(reply1.join().expect("the POST"));
    assert!(second_of(fence) >= CUT, "the fence {fence} is after every tuple dev0 read: it answered while quiet");
    let (answer, fence2) = reply.join().expect("the POST");
    run.feed_seconds(CUT2..u64::MAX, Duration::ZERO);
    let (outs, _) = run.finish(|_| {});
    assert_eq!(quiet, raw_answer(&dir, "quiet", &lines_in(&lines, 0..half), &first), "what dev0 read before");
    let paced = second_of(fence)..second_of(fence2);
    assert!(paced.start < paced.end && paced.end < CUT2, "the second fence is in the paced lines: {paced:?}");
    let taken: Vec<&str> = lines_in(&lines, 0..half).into_iter().chain(lines_in(&lines, paced)).collect();
    assert_eq!(answer, raw_answer(&dir, "paced", &taken, &query(222)), "the lines dev0 took before the second fence");
    let figure = |out: &Output, key: &str| edge_common::figure(out, "edge ", key);
    assert_eq!((figure(&outs[0], "answers"), figure(&outs[0], "idle_fences")), (2, 1), "dev0 went quiet once");
    let late = lines_in(&lines, half..second_of(fence)).len() as u64;
    assert!(late > 0, "dev0 read lines of the window it closed when quiet");
    assert_eq!(figure(&outs[0], "late"), late, "the lines older than the first fence, read after it");
    assert_eq!((figure(&dev1, "answers"), figure(&dev1, "idle_fences")), (0, 0), "no ask waited for dev1");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_quiet_device_s_answer_reaches_the_client_while_every_device_is_quiet() {
    quiet_device_answers("relay", false, &[("EURTRY", 231, 0)]);
}

/// Across processes: dev0's partition is read by process 0, XAUUSD's Count-Min is homed on
/// process 1 (its ask waits there) and EURTRY's on process 0. Each answer crosses as it comes
/// (`edge::hops`): to the home in the other process, and back to a client waiting in the
/// reader's process (241), or to the client waiting where the home is (242); and from the
/// reader's process, where the home is, to a client waiting in the other (243).
#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_quiet_device_s_answers_reach_clients_and_homes_in_other_processes() {
    quiet_device_answers("processes", true, &[("XAUUSD", 241, 0), ("XAUUSD", 242, 1), ("EURTRY", 243, 1)]);
}

/// With every device quiet and no `--exit-when-idle` (nothing but the device's answer can end
/// a client's wait), each of `asks` (a stream of dev0, a request id, the cloud process it is
/// posted to; `two`: a cloud of two processes) gets dev0's answer (no 504), equal to the raw
/// run of what dev0 read, written once to the job's output and naming dev0.
fn quiet_device_answers(name: &str, two: bool, asks: &[(&str, u32, usize)]) {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, files) = workspace(name);
    let topic = unique(&format!("edge-requests-{name}"));
    let flags = (&["--resident", "--idle-after", "3s"][..], "2s");
    let mut run = Running::start_shaped(&brokers, (&dir, &files), &topic, flags, (&[], two));
    let (half, _) = run.dev0_alone();
    let addrs: Vec<String> = std::iter::once(run.addr.clone()).chain(run.other.as_ref().map(|o| o.1.clone())).collect();
    if two {
        where_asks_wait(&addrs[0]);
    }
    // Every device is quiet from here on: dev0 answers 3 s after its last line, and the cloud
    // hands the answer on as it comes (its own watermark stays where it is).
    let posted: Vec<(String, _)> = asks
        .iter()
        .map(|&(stream, id, p)| {
            let asked = query_on(stream, id);
            let reply = post(&addrs[p], &asked);
            (asked, reply)
        })
        .collect();
    let lines = run.devices[0].2.clone();
    let mut answers = Vec::new();
    for ((asked, reply), &(_, id, _)) in posted.into_iter().zip(asks) {
        let (answer, fence) = answered(reply.join().expect("the POST"));
        assert!(second_of(fence) >= CUT, "the fence {fence} is after every tuple dev0 read");
        let raw = raw_answer(&dir, &format!("{name}-{id}"), &lines_in(&lines, 0..half), &asked);
        assert_eq!(answer, raw, "what dev0 read before");
        answers.push(answer);
    }
    let (dev0, stdin, _) = run.devices.remove(0);
    drop(stdin);
    let dev0 = check(dev0.wait_with_output().expect("dev0 ends"), "saams-edge --follow");
    assert_eq!(edge_common::figure(&dev0, "edge ", "answers"), asks.len() as u64, "dev0 answered each once");
    let clouds: Vec<Cloud> = std::iter::once(run.cloud).chain(run.other.map(|o| o.0)).collect();
    for cloud in &clouds {
        let stopped = Command::new("kill").args(["-TERM", &cloud.child.id().to_string()]).status().expect("kill");
        assert!(stopped.success());
    }
    let stdout: String = clouds
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c.finish("saams --partials-topic --http").stdout).into_owned())
        .collect();
    for (answer, &(_, id, _)) in answers.iter().zip(asks) {
        let written: Vec<&str> = stdout.lines().filter(|l| l.starts_with(&format!("{{\"requestID\":{id},"))).collect();
        assert_eq!(written.len(), 1, "the answer is written once to the job's output: {written:?}");
        // Named as every answer of a job merging devices is (the devices covering its window).
        let (line, named) = edge_common::without_devices(written[0]);
        assert_eq!(&without_as_of(&line).0, answer, "the output holds the reply");
        assert!(named.iter().any(|d| d == "dev0"), "request {id} names the device that answered: {named:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The setting of [`a_quiet_device_s_answers_reach_clients_and_homes_in_other_processes`], as
/// the cloud at `addr` lists it: dev0 read by process 0, XAUUSD's Count-Min homed on worker 1
/// (process 1), EURTRY's on worker 0.
fn where_asks_wait(addr: &str) {
    let (_, body) = http_common::call(addr, "GET", "/devices", "");
    let devices: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let rows = devices["devices"].as_array().cloned().unwrap_or_default();
    let dev0 = rows.iter().find(|r| r["device"] == "dev0").unwrap_or_else(|| panic!("no dev0 in {body}"));
    assert_eq!(dev0["process"], 0, "dev0's partition is read by process 0: {body}");
    let (_, body) = http_common::call(addr, "GET", "/synopses", "");
    let synopses: Vec<serde_json::Value> = serde_json::from_str(&body).expect("JSON");
    let home = |stream: &str| {
        let cm = synopses.iter().find(|s| s["streamID"] == stream && s["synopsisID"] == 1);
        cm.unwrap_or_else(|| panic!("no Count-Min of {stream} in {body}"))["home"].clone()
    };
    assert_eq!((home("XAUUSD"), home("EURTRY")), (1.into(), 0.into()), "the Count-Mins' homes: {body}");
}

/// The Forex pair split over the devices: EURTRY on dev0, XAUUSD on dev1.
const SPLIT_PAIR: [[&str; 2]; 2] = [["EURTRY", "IBM"], ["XAUUSD", "SPY"]];

/// EURTRY's DFT asked for every Forex pair's correlation (threshold −1), as request `id`.
fn pair_query(id: u32) -> String {
    format!(
        r#"{{"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":4,"param":[-1,"correlation","price","Queryable","Ad-hoc"],"requestID":{id}}}"#
    )
}

/// Two devices keeping `shares` of the streams resident (or whole, as `mode` says): an ad-hoc
/// pair query of EURTRY's DFT posted mid-stream is answered by the cloud from the views (or the
/// states) at its point (`asOf`), equal to the raw run of every tuple before it; it is not a
/// device's ask (no device answers it or takes a fence for it).
fn a_pair_ask_of_device_synopses_equals_the_raw_run(name: &str, mode: &str, shares: [[&'static str; 2]; 2]) {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let (dir, files) = workspace_of(name, shares);
    let topic = unique("edge-requests-pair");
    let mut run = Running::start(&brokers, (&dir, &files), &topic, (&[mode, "--idle-after", "3s"], "2s"));
    let half = CUT - edge().window_ms / 2000;
    run.feed_seconds(0..half, Duration::ZERO);
    run.wait_cut();
    let asked = pair_query(241);
    let (answer, at) = answered(post(&run.addr, &asked).join().expect("the POST"));
    assert!(answer.contains(r#""estimate":[["EURTRY","XAUUSD","#), "the pair is answered: {answer}");
    run.feed_seconds(half..u64::MAX, Duration::ZERO);
    let (outs, _) = run.finish(|_| {});
    let all = std::fs::read_to_string(dir.join("all.json")).expect("the tuples");
    let before: Vec<&str> = all.lines().filter(|l| (edge().window_of(l) as i64) < at % 86_400_000).collect();
    assert_eq!(answer, raw_answer(&dir, name, &before, &asked), "the pairs of the tuples before its point");
    for out in &outs {
        let figure = |key: &str| edge_common::figure(out, "edge ", key);
        assert_eq!((figure("answers"), figure("idle_fences")), (0, 0), "no device answered or waited");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_pair_ask_of_synopses_resident_on_one_device_equals_the_raw_run() {
    // EURTRY and XAUUSD (the Forex pair) both on dev0.
    a_pair_ask_of_device_synopses_equals_the_raw_run("pair-one", "--resident", SHARES);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_pair_ask_of_synopses_resident_on_two_devices_equals_the_raw_run() {
    // EURTRY on dev0, XAUUSD on dev1.
    a_pair_ask_of_device_synopses_equals_the_raw_run("pair-two", "--resident", SPLIT_PAIR);
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn a_pair_ask_of_synopses_kept_whole_on_two_devices_equals_the_raw_run() {
    // EURTRY on dev0, XAUUSD on dev1, their states shipped whole each window.
    a_pair_ask_of_device_synopses_equals_the_raw_run("pair-whole", "--sole-reader", SPLIT_PAIR);
}
