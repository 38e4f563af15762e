//! Rescaling while the job runs (`POST /rescale`, `--active-workers`): the answers of every
//! window are those of a run without a rescale (sorted, byte for byte; KLL excepted as
//! everywhere), for 1 → 2 → 4 → 1 active workers at `-w 4` and across `-n 2 -w 2`, with
//! order-dependent kinds (DFT, GK, Lossy Counting, window quantiles) owned and window-based,
//! spread and partition-based kinds, a live request at a rescale's fence, and checkpoints; a
//! `kill -9` after the rescales and a restart give the same answers; batched moves (`--rescale-batch`,
//! `POST /rescale`'s `binsPerFence`) at `-w 4`, across `-n 2 -w 2` and on a Kafka data topic
//! too; a rescale to 0 workers, to more than the job has, with a bad `binsPerFence`, or while
//! another is moving is refused (400, 409) and nothing moves.

mod http_common;
mod rescale_common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rescale_common::{
    GENERATOR, PACE, answers, free_port, get_json, metrics, post, rescale, rescale_batched, saams, script, temp,
};
use serde_json::Value;

fn common(requests: &str) -> Vec<&str> {
    vec!["--generate", GENERATOR, "--window", "1s", "--requests", requests]
}

/// The reference: the same script and input at `-w 4`, no rescale.
fn reference(dir: &Path, requests: &str) -> Vec<String> {
    let out = dir.join("reference.jsonl");
    let mut args = common(requests);
    args.extend(["-w", "4"]);
    assert!(saams(&args, &out, false).wait().expect("wait").success());
    answers(&[out])
}

/// 1 → 2 → 4 → 1 active workers while a job of `-w 4` runs (`--rate` keeps it running), a live
/// construct in the same body as the rescale to 4 (one fence), and `extra` flags.
fn rescaled_run(dir: &Path, requests: &str, extra: &[&str]) -> (Vec<String>, Vec<Value>) {
    let out = dir.join("rescaled.jsonl");
    let mut args = common(requests);
    args.extend(["-w", "4", "--active-workers", "1", "--rate", PACE]);
    args.extend(extra);
    let mut child = saams(&args, &out, true);
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    assert_eq!(get_json(&addr, "/status")["activeWorkers"], 1);
    let mut acks = vec![rescale(&addr, 2)];
    let spec = saams_datasets::GeneratorSpec::parse(GENERATOR).expect("spec");
    let live = format!(
        r#"[{{"rescale":{{"activeWorkers":4}}}},{{"streamID":"{}","synopsisID":1,"dataSetKey":"{}","param":["CountMin","volume","NotQueryable",0.01,0.99,7],"requestID":"live"}}]"#,
        spec.stream_id(0),
        spec.dataset_key(0)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let replies: Vec<Value> = loop {
        if get_json(&addr, "/status")["rescaling"] == false {
            let (status, body) = post(&addr, "/requests", &live);
            assert_eq!(status, 200, "{body}");
            break body.lines().map(|l| serde_json::from_str(l).expect("reply")).collect();
        }
        assert!(Instant::now() < deadline, "the first rescale never finished moving");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(replies[0]["activeWorkers"], 4, "{replies:?}");
    assert_eq!(replies[1]["accepted"], "construct", "{replies:?}");
    let construct_fence = saams::api::time::parse_timestamp(replies[1]["effectiveFrom"].as_str().expect("fence"));
    assert_eq!(construct_fence, replies[0]["effectiveFrom"].as_i64(), "one fence for the body");
    acks.push(replies[0].clone());
    acks.push(rescale(&addr, 1));
    let metrics = metrics(&addr);
    assert!(metrics.contains("saams_rescales_total 3"), "{metrics}");
    assert!(metrics.contains("saams_active_workers 1"), "{metrics}");
    // Owned synopses (DFT, GK, Lossy Counting, window quantiles) moved with their state.
    let moved = metrics.lines().find_map(|l| l.strip_prefix("saams_rescale_bytes_moved_total "));
    assert!(moved.and_then(|b| b.trim().parse::<u64>().ok()).is_some_and(|b| b > 0), "{metrics}");
    assert!(child.wait().expect("wait").success());
    (answers(&[out]), acks)
}

#[test]
fn one_two_four_one_active_workers_answer_as_a_run_without_rescale() {
    let dir = temp("w4");
    let requests = script(&dir).display().to_string();
    let expected = reference(&dir, &requests);
    assert!(expected.len() > 100, "the script answers: {}", expected.len());
    let (got, acks) = rescaled_run(&dir, &requests, &[]);
    let fences: Vec<i64> = acks.iter().map(|a| a["effectiveFrom"].as_i64().expect("fence")).collect();
    assert!(fences.windows(2).all(|f| f[0] < f[1]) && fences.iter().all(|f| f % 1000 == 0), "{acks:?}");
    assert_eq!(acks.iter().map(|a| a["moves"].as_u64().unwrap_or(0) > 0).collect::<Vec<_>>(), [true; 3]);
    assert!(got == expected, "{} answers with rescales, {} without", got.len(), expected.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_checkpoints_a_kill_after_the_rescales_and_a_restart_answer_as_a_run_without_rescale() {
    let dir = temp("ckpt");
    let requests = script(&dir).display().to_string();
    let expected = reference(&dir, &requests);
    let checkpoints = dir.join("ckpt").display().to_string();
    let flags = ["--checkpoints", &checkpoints, "--checkpoint-interval", "200ms"];
    let (got, _) = rescaled_run(&dir, &requests, &flags);
    assert!(got == expected, "checkpoints on: {} answers with rescales, {} without", got.len(), expected.len());
    // Again, killed (-9) once the rescales are acknowledged, then the same command started
    // again: the restart applies the logged rescales at their fences.
    let out = dir.join("killed.jsonl");
    let mut args = common(&requests);
    let killed_dir = dir.join("ckpt-killed").display().to_string();
    args.extend(["-w", "4", "--active-workers", "1", "--rate", PACE, "--checkpoints", &killed_dir]);
    args.extend(["--checkpoint-interval", "200ms"]);
    let mut child = saams(&args, &out, true);
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    rescale(&addr, 2);
    rescale(&addr, 4);
    child.kill().expect("kill -9");
    let _ = child.wait();
    let restart: Vec<&str> = args.iter().copied().filter(|a| *a != PACE && *a != "--rate").collect();
    assert!(saams(&restart, &out, false).wait().expect("wait").success());
    let got = answers(&[out]);
    assert!(got == expected, "killed and restarted: {} answers, {} without rescale", got.len(), expected.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_processes_of_two_workers_rescaled_answer_as_a_run_without_rescale() {
    let dir = temp("n2");
    let requests = script(&dir).display().to_string();
    let expected = reference(&dir, &requests);
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port())).expect("hosts");
    let hosts = hosts.display().to_string();
    let outs: Vec<PathBuf> = (0..2).map(|p| dir.join(format!("out{p}.jsonl"))).collect();
    let mut children: Vec<Child> = (0..2)
        .map(|p| {
            let p = p.to_string();
            let mut args = common(&requests);
            args.extend(["-w", "2", "-n", "2", "-p", &p, "-h", &hosts, "--active-workers", "1", "--rate", PACE]);
            saams(&args, &outs[p.parse::<usize>().expect("p")], true)
        })
        .collect();
    let addrs: Vec<String> =
        children.iter_mut().map(|c| http_common::http_address(c, Duration::from_secs(30))).collect();
    // Each process takes one: both agree on each fence. The growth to 4 moves the owned state a
    // bin a window (batched moves across processes); the shrink waits until it has moved.
    rescale(&addrs[0], 2);
    let batched = rescale_batched(&addrs[1], 4, Some(1));
    let (from, by) = (batched["effectiveFrom"].as_u64().expect("fence"), batched["movedBy"].as_u64().expect("movedBy"));
    assert!(by > from, "a bin a window takes several windows: {batched}");
    rescale(&addrs[0], 1);
    for c in &mut children {
        assert!(c.wait().expect("wait").success());
    }
    let got = answers(&outs);
    assert!(got == expected, "-n 2 -w 2: {} answers with rescales, {} without", got.len(), expected.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rescale_the_job_cannot_have_or_one_while_another_moves_is_refused_and_nothing_moves() {
    let dir = temp("bad");
    let requests = script(&dir).display().to_string();
    let out = dir.join("out.jsonl");
    let mut args = common(&requests);
    args.extend(["-w", "2", "--rate", "4000"]);
    let mut child = saams(&args, &out, true);
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    for (body, status, why) in [
        (r#"{"activeWorkers":0}"#, 400, "between 1 and 2"),
        (r#"{"activeWorkers":3}"#, 400, "between 1 and 2"),
        (r#"{"activeWorkers":"two"}"#, 400, "activeWorkers"),
        ("{not json", 400, "malformed JSON"),
        (r#"{"activeWorkers":1,"binsPerFence":-1}"#, 400, "binsPerFence"),
        (r#"{"activeWorkers":1,"binsPerFence":1.5}"#, 400, "binsPerFence"),
        (r#"{"activeWorkers":1,"binsPerFence":"many"}"#, 400, "binsPerFence"),
        (r#"{"activeWorkers":1,"binsPerFence":5000000000}"#, 400, "binsPerFence"),
        (r#"{"activeWorkers":1,"bins":2}"#, 400, "unknown field `bins`"),
        ("[1]", 400, "activeWorkers"),
    ] {
        let (got, reply) = post(&addr, "/rescale", body);
        assert_eq!(got, status, "{body}: {reply}");
        let reply: Value = serde_json::from_str(&reply).expect("error JSON");
        assert!(reply["error"].as_str().is_some_and(|e| e.contains(why)), "{body}: {reply}");
    }
    let status = get_json(&addr, "/status");
    assert_eq!((status["activeWorkers"].as_u64(), status["rescaling"].as_bool()), (Some(2), Some(false)));
    // One rescale at a time: the second, sent while the first waits for its fence or moves, is
    // 409 (at the latest the third is: the first may be done between two posts).
    let first = post(&addr, "/rescale", r#"{"activeWorkers":1}"#);
    assert_eq!(first.0, 200, "{first:?}");
    let again: Vec<u16> = (0..3).map(|_| post(&addr, "/rescale", r#"{"activeWorkers":2}"#).0).collect();
    assert!(again.contains(&409), "{again:?}");
    // Nothing moved for the refused ones.
    let applied = 1 + again.iter().filter(|&&s| s == 200).count();
    let metrics = metrics(&addr);
    assert!(metrics.contains(&format!("saams_rescales_total {applied}\n")), "{applied}: {metrics}");
    assert!(child.wait().expect("wait").success());
    let _ = std::fs::remove_dir_all(&dir);
}

const PAIRS_GENERATOR: &str = "stocks:12:2000";

/// A script whose every synopsis is owned and in a query over pairs (or beside one): DFT on
/// every stream with its coefficients and, per dataset, the correlated pairs; AMS on every
/// stream with the inner product of pairs of them; GK quantiles.
fn pairs_script(dir: &Path) -> PathBuf {
    let spec = saams_datasets::GeneratorSpec::parse(PAIRS_GENERATOR).expect("spec");
    let mut lines = Vec::new();
    let mut add = |i: usize, id: u64, param: String| {
        let n = lines.len() + 1;
        let (stream, dataset) = (spec.stream_id(i), spec.dataset_key(i));
        lines.push(format!(
            r#"{{"streamID":"{stream}","synopsisID":{id},"dataSetKey":"{dataset}","param":{param},"noOfP":1,"requestID":{n}}}"#
        ));
    };
    for i in 0..12 {
        add(i, 4, r#"["DFT","price","NotQueryable",1,5,20,4]"#.into());
        add(i, 4, r#"["coefficients","price","Queryable","Continues"]"#.into());
        add(i, 7, r#"["AMS","volume","NotQueryable",10,1000]"#.into());
        add(i, 8, r#"["GKQuantiles","price","NotQueryable",0.01]"#.into());
        add(i, 8, r#"[0.5,"price","Queryable","Continues"]"#.into());
    }
    // Streams i and i + 3 share a dataset (three datasets).
    for i in 0..3 {
        add(i, 4, r#"[0.5,"correlation","price","Queryable","Continues"]"#.into());
        add(i, 7, format!(r#"["{}","innerProduct","volume","Queryable","Continues"]"#, spec.stream_id(i + 3)));
    }
    let path = dir.join("pairs.json");
    std::fs::write(&path, lines.join("\n")).expect("requests");
    path
}

/// `--rescale-batch 1` (or `POST /rescale`'s `"binsPerFence": 1`) at `-w 4`, 1 → 4 active
/// workers: the owned state (pair queries' participants too) moves a bin a window; the answers are those of a run without rescale, and
/// so are those of a job killed (-9) while the bins are still moving, then started again.
#[test]
fn batched_moves_with_pair_queries_and_a_kill_mid_migration_answer_as_a_run_without_rescale() {
    let dir = temp("fluid");
    let requests = pairs_script(&dir).display().to_string();
    let base = |out: &Path, extra: &[&str]| {
        // Windows of 30 s: the generator's event time runs ~30× the wall clock at --rate 1000,
        // so a batch a window (about a second) gives the checkpoints (every 200 ms) time to fall
        // between two even on a loaded machine.
        let mut args = vec!["--generate", PAIRS_GENERATOR, "--window", "30s", "--requests", &requests, "-w", "4"];
        args.extend(extra);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_saams"));
        cmd.args(args).args(["--progress", "0", "--out", &out.display().to_string()]);
        cmd
    };
    let reference = dir.join("reference.jsonl");
    assert!(base(&reference, &[]).status().expect("reference").success());
    let expected = answers(std::slice::from_ref(&reference));
    let pairs = expected.iter().filter(|l| l.contains("\"member\"") || l.contains("innerProduct")).count();
    assert!(expected.len() > 200 && pairs > 0, "the script answers: {} ({pairs} of pairs)", expected.len());
    let checkpoints = dir.join("ckpt").display().to_string();
    // Straight through, the batches are the job's (`--rescale-batch 1`); killed, the rescale's
    // own (`binsPerFence` of `POST /rescale`), which the restart applies again from the log.
    let fluid = ["--active-workers", "1", "--checkpoints", &checkpoints];
    for kill in [false, true] {
        let _ = std::fs::remove_dir_all(&checkpoints);
        let out = dir.join(format!("fluid-{kill}.jsonl"));
        let mut args: Vec<&str> = fluid.to_vec();
        args.extend(["--checkpoint-interval", "200ms", "--rate", "1000", "--http", "127.0.0.1:0"]);
        if !kill {
            args.extend(["--rescale-batch", "1"]);
        }
        let mut child =
            base(&out, &args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("saams");
        let addr = http_common::http_address(&mut child, Duration::from_secs(30));
        let ack = rescale_batched(&addr, 4, kill.then_some(1));
        let (from, by) = (ack["effectiveFrom"].as_u64().expect("fence"), ack["movedBy"].as_u64().expect("movedBy"));
        assert!(by >= from + 3 * 30_000, "twelve streams leave worker 0 for three others, a bin a window: {ack}");
        if kill {
            // Killed while the bins are moving, once a checkpoint was taken between two of the
            // batches: the job resumes from states held where the partial map put them.
            let deadline = Instant::now() + Duration::from_secs(60);
            while !boundaries(Path::new(&checkpoints)).iter().any(|&b| from < b && b < by) {
                assert_eq!(get_json(&addr, "/status")["rescaling"], true, "no checkpoint between the batches: {ack}");
                assert!(Instant::now() < deadline, "no checkpoint between the batches in time");
                std::thread::sleep(Duration::from_millis(5));
            }
            child.kill().expect("kill -9");
            let _ = child.wait();
            let mut restart: Vec<&str> = fluid.to_vec();
            restart.extend(["--checkpoint-interval", "200ms"]);
            assert!(base(&out, &restart).stderr(Stdio::inherit()).status().expect("restart").success());
        } else {
            let (status, body) = post(&addr, "/rescale", r#"{"activeWorkers":2}"#);
            assert!(status == 409 || get_json(&addr, "/status")["rescaling"] == false, "{status}: {body}");
            assert!(child.wait().expect("wait").success());
        }
        let got = answers(&[out]);
        assert!(
            got == expected,
            "kill {kill}: {} answers with a batched rescale, {} without",
            got.len(),
            expected.len()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The boundaries (event-time ms) of the complete checkpoints of a one-process job in `dir`.
fn boundaries(dir: &Path) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("manifest-p0.json")).ok())
        .filter_map(|text| serde_json::from_str::<Value>(&text).ok()?["boundary_ms"].as_u64())
        .collect()
}

#[allow(dead_code)] // declared_broker, replay_into and unique are what this file uses
mod kafka_common;

/// Batched moves on Kafka: the pairs script over a data topic of four partitions (one a worker)
/// at `-w 4`, rescaled 1 → 4 active workers a bin a window (`binsPerFence` of `POST /rescale`):
/// the answers are those of the same job reading the same topic without rescale.
#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn batched_moves_on_a_data_topic_answer_as_a_run_without_rescale() {
    let brokers = kafka_common::declared_broker("SAAMS_KAFKA_BROKERS");
    let dir = temp("kafka");
    let requests = pairs_script(&dir).display().to_string();
    let data = dir.join("ticks.jsonl");
    let generated = Command::new(env!("CARGO_BIN_EXE_replay"))
        .args(["--generate", PAIRS_GENERATOR, "--progress", "none", "--output"])
        .arg(&data)
        .output()
        .expect("replay");
    assert!(generated.status.success(), "{}", String::from_utf8_lossy(&generated.stderr));
    let topic = kafka_common::unique("rescale-data");
    kafka_common::replay_into(&brokers, &topic, &data, 4);
    let job = |out: &Path, extra: &[&str]| {
        let group = kafka_common::unique("rescale-group");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_saams"));
        cmd.args(["--requests", &requests, "--window", "30s", "-w", "4", "--progress", "0", "--out"])
            .arg(out)
            .args(["--brokers", &brokers, "--data-topic", &topic, "--group-id", &group, "--from", "earliest"])
            .args(["--exit-when-idle", "3s", "-X", "session.timeout.ms=2000", "-X", "heartbeat.interval.ms=500"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        cmd
    };
    let reference = dir.join("reference.jsonl");
    assert!(job(&reference, &[]).status().expect("reference").success());
    let expected = answers(std::slice::from_ref(&reference));
    assert!(expected.len() > 200, "the script answers: {}", expected.len());
    let out = dir.join("rescaled.jsonl");
    let rescaled = ["--active-workers", "1", "--rate", "2000", "--http", "127.0.0.1:0"];
    let mut child = job(&out, &rescaled).stderr(Stdio::piped()).spawn().expect("saams");
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    let ack = rescale_batched(&addr, 4, Some(1));
    let (from, by) = (ack["effectiveFrom"].as_u64().expect("fence"), ack["movedBy"].as_u64().expect("movedBy"));
    assert!(by >= from + 3 * 30_000, "twelve streams leave worker 0 for three others, a bin a window: {ack}");
    assert!(child.wait().expect("wait").success());
    let got = answers(&[out]);
    assert!(got == expected, "{} answers with a batched rescale on Kafka, {} without", got.len(), expected.len());
    let _ = std::fs::remove_dir_all(&dir);
}
