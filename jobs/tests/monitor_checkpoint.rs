//! The monitoring kind (`synopsisID` 14) in checkpoints: a job killed with SIGKILL (`kill -9`)
//! in the middle of its input and started again with the same command and `--checkpoints`
//! directory ends with exactly the answers of a run without the crash — every monitor answer
//! (estimate, guarantee, the words, bytes and messages the sites sent, the refused items) once,
//! sorted, byte for byte — whatever the kill point, and when it resumes with another number of
//! workers (the sites' state is keyed by site, not by worker). The checkpoints hold the
//! monitors' state: had the resumed monitors started empty, their windows and counters after
//! the restart would differ.

mod checkpoint_common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use checkpoint_common::{assert_same, complete, kill_after, nanos, stderr_of};
use saams::checkpoint::CheckpointPart;

const BIN: &str = env!("CARGO_BIN_EXE_saams");
const START_MS: i64 = 1_600_000_000_000;
const TUPLES: i64 = 40_000;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-monckpt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// Two streams, one tuple every 50 ms in turn, prices from a skewed set; every 997th price is
/// text that is no number (the sites refuse and count it).
fn write_data(path: &Path) {
    let mut text = String::new();
    let mut x: u64 = 11;
    for i in 0..TUPLES {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let ts = saams::api::time::format_timestamp(START_MS + i * 50);
        let stream = ["S", "T"][i as usize % 2];
        let price = [10, 10, 10, 11, 12, 13, 14, 15, 20, 25][(x >> 33) as usize % 10] + (x >> 20) % 4;
        let price = if i % 997 == 500 { "\"n/a\"".to_string() } else { price.to_string() };
        text.push_str(&format!(
            "{{\"streamID\":\"{stream}\",\"dataSetKey\":\"D\",\"timestamp\":\"{ts}\",\"price\":{price}}}\n"
        ));
    }
    std::fs::write(path, text).expect("data");
}

/// Monitors on both streams (S: 4 sites, ε 0.1; T: 6 sites, ε 0.02, where the sites run the
/// protocol part of the time), their continuous and ad-hoc queries, and a Count-Min beside them.
const REQUESTS: &str = r#"{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["SlidingWindowMonitor","price","NotQueryable","5m",0.1,0.2,4],"requestID":"cS"}
{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["count","price","Queryable","Continuous"],"requestID":"qS1"}
{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["quantile",0.5,"price","Queryable","Continuous"],"requestID":"qS2"}
{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["frequentItems","price","Queryable","Continuous"],"requestID":"qS3"}
{"streamID":"T","synopsisID":14,"dataSetKey":"D","param":["SlidingWindowMonitor","price","NotQueryable","3m",0.02,0.1,6],"requestID":"cT"}
{"streamID":"T","synopsisID":14,"dataSetKey":"D","param":["itemCount",12,"price","Queryable","Continuous"],"requestID":"qT1"}
{"streamID":"T","synopsisID":14,"dataSetKey":"D","param":["quantile",0.9,"price","Queryable","Continuous"],"requestID":"qT2"}
{"streamID":"T","synopsisID":14,"dataSetKey":"D","param":["count","price","Queryable","Ad-hoc"],"requestID":"qT3"}
{"streamID":"S","synopsisID":1,"dataSetKey":"D","param":["CountMin","price","NotQueryable",0.01,0.99,1],"requestID":"cm"}
{"streamID":"S","synopsisID":1,"dataSetKey":"D","param":[12,"price","Queryable","Continuous"],"requestID":"qcm"}
"#;

struct Job {
    dir: PathBuf,
    data: PathBuf,
    requests: PathBuf,
}

impl Job {
    fn new(name: &str) -> Job {
        let dir = tmp(name);
        let data = dir.join("ticks.jsonl");
        write_data(&data);
        let requests = dir.join("requests.json");
        std::fs::write(&requests, REQUESTS).expect("requests");
        Job { dir, data, requests }
    }

    fn command(&self, workers: usize, out: &Path) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["-w", &workers.to_string(), "--window", "1m", "--progress", "0", "--chunk-bytes", "200000"])
            .arg("--data")
            .arg(&self.data)
            .arg("--requests")
            .arg(&self.requests)
            .arg("--out")
            .arg(out)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        cmd
    }

    /// The sorted answers of a run without checkpoints.
    fn uninterrupted(&self, workers: usize) -> Vec<String> {
        let out = self.dir.join(format!("uninterrupted-{workers}.json"));
        let run = self.command(workers, &out).output().expect("run saams");
        assert!(run.status.success(), "the uninterrupted run failed: {}", String::from_utf8_lossy(&run.stderr));
        sorted(&out)
    }

    /// Start the checkpointed job in `run` (paced with `--rate` when given, to be killed
    /// mid-input).
    fn start(&self, run: &Path, workers: usize, rate: Option<&str>) -> Child {
        let mut cmd = self.command(workers, &run.join("out.json"));
        cmd.args(["--checkpoint-interval", "150ms", "--checkpoints"]).arg(run.join("checkpoints"));
        if let Some(r) = rate {
            cmd.args(["--rate", r]);
        }
        let stderr = std::fs::File::create(run.join(format!("stderr-{}", nanos()))).expect("stderr file");
        cmd.stderr(stderr).spawn().expect("start saams")
    }
}

/// The answers (the monitors' and the Count-Min's) of an output file, sorted.
fn sorted(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut v: Vec<String> = text.lines().map(str::to_string).collect();
    v.sort();
    v
}

/// The monitor copies (stream, site) of the newest checkpoint in `run`: every part decoded.
fn monitor_copies(run: &Path) -> Vec<(u32, Option<u32>)> {
    let folder = complete(&run.join("checkpoints"), 1).pop().expect("a complete checkpoint");
    let mut copies = Vec::new();
    for e in std::fs::read_dir(&folder).expect("checkpoint folder").filter_map(Result::ok) {
        if e.path().extension().is_some_and(|x| x == "bin") {
            let part = CheckpointPart::decode(&std::fs::read(e.path()).expect("part")).expect("a part");
            copies.extend(part.monitors.iter().map(|m| (m.group, m.site)));
        }
    }
    copies.sort();
    copies
}

/// Kill the job at `workers` after each count of `kills` checkpoints, resume it with `resume`
/// workers to the end, and compare with the uninterrupted run.
fn killed_and_resumed(job: &Job, name: &str, (workers, kills, resume): (usize, &[u64], usize), want: &[String]) {
    let run = job.dir.join(name);
    std::fs::create_dir_all(&run).expect("run dir");
    for &n in kills {
        let mut child = job.start(&run, workers, Some("20000"));
        kill_after(&mut child, &run, n);
    }
    // Both streams' coordinators and all their sites (4 + 6) are in the checkpoint.
    let copies = monitor_copies(&run);
    let coordinators = copies.iter().filter(|c| c.1.is_none()).count();
    assert_eq!((coordinators, copies.len()), (2, 2 + 4 + 6), "{name}: {copies:?}");
    let status = job.start(&run, resume, None).wait().expect("wait for saams");
    let stderr = stderr_of(&run);
    assert!(status.success(), "{name}: the resumed run failed: {stderr}");
    assert!(stderr.contains("resuming from checkpoint"), "{name}: {stderr}");
    assert_same(&sorted(&run.join("out.json")), want, name);
}

#[test]
fn monitors_killed_mid_stream_resume_to_the_uninterrupted_answers() {
    let job = Job::new("same-shape");
    let want = job.uninterrupted(2);
    let monitor_lines = want.iter().filter(|l| l.contains(r#""kind":"SlidingWindowMonitor""#)).count();
    assert!(monitor_lines > 100, "expected many monitor answers, got {monitor_lines}");
    assert!(want.iter().any(|l| l.contains(r#""requestID":"qT3""#)), "the ad-hoc answer");
    assert!(want.iter().any(|l| l.contains(r#""refused":20"#)), "refusals counted: {:.400}", want.join("\n"));
    for (i, kills) in [&[1][..], &[4], &[2, 3]].into_iter().enumerate() {
        killed_and_resumed(&job, &format!("run{i}"), (2, kills, 2), &want);
    }
    let _ = std::fs::remove_dir_all(&job.dir);
}

#[test]
fn a_checkpoint_of_two_workers_resumes_its_monitors_with_one_or_three() {
    let job = Job::new("rebinned");
    let want = job.uninterrupted(2);
    assert_eq!(want, job.uninterrupted(3), "the answers do not depend on the workers");
    for resume in [1, 3] {
        killed_and_resumed(&job, &format!("w{resume}"), (2, &[3], resume), &want);
    }
    let _ = std::fs::remove_dir_all(&job.dir);
}
