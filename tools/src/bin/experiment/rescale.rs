//! Figure 12 of the paper (`--only rescale`): synopses for 10 → 500 AIS vessels while the
//! parallelism follows the paper's schedule (3 → 6 → 9 → 12 at 50 / 100 / 180 vessels), three
//! ways in the same run: (a) one job of 12 workers rescaled in place (`POST /rescale`), (b) the
//! SDEaaS way — stop the job (kill) and restart it from its newest checkpoint with the new `-w`,
//! the downtime and the work redone since the checkpoint counted as zero throughput, and (c) one
//! job of 12 workers with `--autoscale 3..12` choosing for itself.
//!
//! Every job reads the seeded generator's 500 vessels (`--generate ais:500`, unbounded, as fast
//! as possible) with checkpoints every second; a phase adds its vessels' synopses (CountMin and
//! HyperLogLog of each vessel's speed, answered every window) with `POST /requests`. Progress is
//! the dataflow's event time (`GET /status`'s `openWindow`, polled): windows closed are answers
//! given, and a restart that resumes from an earlier boundary gains nothing until it passes the
//! old one. Event time is turned into tuples with the generator's density measured in (a).
//! On this 2-core machine the workers are threads sharing two cores: the figure is the ratio of
//! the approaches and their gaps in answers, not the paper's absolute throughput.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::plots::{Series, chart};
use crate::runner::{Runner, write};
use crate::settings::Args;

/// The paper's schedule: (vessels with synopses, parallelism).
const FULL: [(usize, usize); 6] = [(10, 3), (50, 6), (100, 9), (180, 12), (300, 12), (500, 12)];
const QUICK: [(usize, usize); 4] = [(10, 3), (50, 6), (100, 9), (180, 12)];
/// Vessels in the input (all approaches read all of them).
const VESSELS: usize = 500;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Approach {
    InJob,
    StopRestart,
    Autoscale,
}

impl Approach {
    fn name(self) -> &'static str {
        match self {
            Approach::InJob => "in-job-rescale",
            Approach::StopRestart => "stop-restart",
            Approach::Autoscale => "autoscale",
        }
    }
}

/// One phase of one approach, as measured.
#[derive(Clone, Debug, Default)]
struct PhaseResult {
    vessels: usize,
    parallelism: usize,
    seconds: f64,
    /// Event-time ms the dataflow passed (beyond the furthest it had been).
    progress_ms: f64,
    /// Seconds the job answered no status (stopped, restarting) or redid work.
    down_seconds: f64,
    /// Tuples read in the phase by the job's process(es), counted once per process life.
    tuples_read: f64,
}

/// A running job: the process and its HTTP address.
struct Job {
    child: Child,
    addr: String,
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Figure 12 (`--only rescale`): `rescale.tsv` (per approach and phase), `rescale-targets.tsv`
/// (averages over the schedule, the ratio against stop + restart, the longest gap in answers)
/// and `fig12-rescale.png`.
pub fn rescale(r: &Runner, a: &Args) -> Result<(), String> {
    let schedule: &[(usize, usize)] = if a.quick { &QUICK } else { &FULL };
    let phase = Duration::from_secs_f64(if a.quick { 2.5 } else { 10.0 });
    let vessels = vessel_ids(r)?;
    let mut results = Vec::new();
    for approach in [Approach::InJob, Approach::StopRestart, Approach::Autoscale] {
        eprintln!("experiment: rescale: {} ({} phases of {phase:?})", approach.name(), schedule.len());
        let work = r.dir.join(format!("rescale-{}", approach.name()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let run = run_schedule(r, approach, schedule, phase, (&vessels, &work));
        std::fs::remove_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let (phases, gap) = run?;
        results.push((approach, phases, gap));
    }
    report(r, &results)
}

/// (stream id, dataset key) of the generator's vessels, in its order.
fn vessel_ids(r: &Runner) -> Result<Vec<(String, String)>, String> {
    let replay = r.saams.with_file_name(format!("replay{}", std::env::consts::EXE_SUFFIX));
    let out = Command::new(&replay)
        .args(["--generate", &format!("ais:{VESSELS}:1"), "--progress", "none"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", replay.display()))?;
    if !out.status.success() {
        return Err(format!("replay --generate failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let mut ids = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("replay's tuple {line:?}: {e}"))?;
        let (Some(id), Some(key)) = (v["streamID"].as_str(), v["dataSetKey"].as_str()) else {
            return Err(format!("replay's tuple has no streamID/dataSetKey: {line}"));
        };
        if !ids.iter().any(|(i, _)| i == id) {
            ids.push((id.to_string(), key.to_string()));
        }
    }
    if ids.len() < VESSELS {
        return Err(format!("the generator gave {} vessels, not {VESSELS}", ids.len()));
    }
    Ok(ids)
}

/// The requests of vessels `from..to`: a CountMin and a HyperLogLog of each one's speed, both
/// answered every window.
fn vessel_requests(vessels: &[(String, String)], from: usize, to: usize) -> Value {
    let mut reqs = Vec::new();
    for (i, (id, key)) in vessels.iter().enumerate().take(to).skip(from) {
        let rid = 10 + 4 * i as u64;
        let base = |rid: u64, synopsis: u64, param: Value| json!({"dataSetKey": key, "streamID": id, "noOfP": 1, "requestID": rid, "synopsisID": synopsis, "param": param});
        reqs.push(base(rid, 1, json!(["CountMin", "speed", "NotQueryable", 0.002, 0.99, 12345])));
        reqs.push(base(rid + 1, 1, json!([12, "speed", "Queryable", "Continues"])));
        reqs.push(base(rid + 2, 2, json!(["HyperLogLog", "speed", "NotQueryable", 0.02])));
        reqs.push(base(rid + 3, 2, json!(["distinct", "speed", "Queryable", "Continues"])));
    }
    Value::Array(reqs)
}

/// Run the schedule with one approach; its phases and the longest wall-clock gap (s) in which
/// no window closed.
fn run_schedule(
    r: &Runner,
    approach: Approach,
    schedule: &[(usize, usize)],
    phase: Duration,
    (vessels, work): (&[(String, String)], &Path),
) -> Result<(Vec<PhaseResult>, f64), String> {
    let initial = work.join("requests.json");
    write(&initial, &vessel_requests(vessels, 0, schedule[0].0).to_string())?;
    let (first_workers, most) = (schedule[0].1, schedule.iter().map(|s| s.1).max().unwrap_or(1));
    let spawn_job = |workers: usize| match approach {
        Approach::InJob => start_job(r, work, most, &["--active-workers".into(), first_workers.to_string()]),
        Approach::StopRestart => start_job(r, work, workers, &[]),
        Approach::Autoscale => start_job(
            r,
            work,
            most,
            &[
                "--autoscale".into(),
                format!("{first_workers}..{most}"),
                "--autoscale-interval".into(),
                "250ms".into(),
                "--autoscale-cooldown".into(),
                "1s".into(),
            ],
        ),
    };
    let mut job = spawn_job(first_workers)?;
    let mut probe = Progress::default();
    let deadline = Instant::now() + Duration::from_secs(60);
    while probe.furthest == 0 {
        if Instant::now() > deadline {
            return Err(format!("{}: no window opened within 60 s", approach.name()));
        }
        probe.poll(&job);
        std::thread::sleep(Duration::from_millis(20));
    }
    probe.take_tuples();
    let mut phases = Vec::new();
    let mut previous = schedule[0];
    for (i, &(n, p)) in schedule.iter().enumerate() {
        let start = Instant::now();
        let (before, down_before) = (probe.furthest, probe.down);
        if i > 0 {
            if p != previous.1 {
                match approach {
                    Approach::InJob => {
                        let (status, body) =
                            http(&job.addr, "POST", "/rescale", &json!({"activeWorkers": p}).to_string())?;
                        if status != 200 {
                            return Err(format!("POST /rescale {p}: {status} {body}"));
                        }
                    }
                    Approach::StopRestart => {
                        // Flink's stop-with-savepoint: a fresh checkpoint (the job runs on while
                        // it is written), then the stop; the restart redoes only the values
                        // after that checkpoint's boundary.
                        let newest = newest_checkpoint(work);
                        let deadline = Instant::now() + Duration::from_secs(30);
                        while newest_checkpoint(work) <= newest && Instant::now() < deadline {
                            probe.poll(&job);
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        probe.reading_ended(&job);
                        drop(job);
                        let stopped = Instant::now();
                        job = spawn_job(p)?;
                        probe.down += stopped.elapsed().as_secs_f64();
                    }
                    Approach::Autoscale => {}
                }
            }
            let body = vessel_requests(vessels, previous.0, n).to_string();
            let (status, reply) = http(&job.addr, "POST", "/requests", &body)?;
            if status != 200 {
                return Err(format!("POST /requests (vessels {}..{n}): {status} {reply}", previous.0));
            }
        }
        while start.elapsed() < phase {
            probe.poll(&job);
            std::thread::sleep(Duration::from_millis(50));
        }
        probe.poll(&job);
        let parallelism = if approach == Approach::Autoscale { probe.active.unwrap_or(0) } else { p };
        phases.push(PhaseResult {
            vessels: n,
            parallelism,
            seconds: start.elapsed().as_secs_f64(),
            progress_ms: (probe.furthest - before) as f64,
            down_seconds: probe.down - down_before,
            tuples_read: probe.take_tuples(),
        });
        previous = (n, p);
    }
    probe.poll(&job);
    Ok((phases, probe.longest_gap))
}

/// The number of the newest checkpoint in `work/checkpoints` (0: none).
fn newest_checkpoint(work: &Path) -> u64 {
    std::fs::read_dir(work.join("checkpoints"))
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u64>().ok()).max().unwrap_or(0))
        .unwrap_or(0)
}

/// What the polls of `GET /status` saw: the furthest window the dataflow passed, when it last
/// moved, the longest gap between two moves, and the tuples read.
#[derive(Default)]
struct Progress {
    furthest: i64,
    moved: Option<Instant>,
    longest_gap: f64,
    /// Seconds down (no job), added by the caller at restarts.
    down: f64,
    /// The current process' tuples at the last poll, and tuples counted so far in this phase.
    tuples: (f64, f64),
    active: Option<usize>,
}

impl Progress {
    fn poll(&mut self, job: &Job) {
        let Ok((200, body)) = http(&job.addr, "GET", "/status", "") else { return };
        let Ok(v) = serde_json::from_str::<Value>(&body) else { return };
        self.active = v["activeWorkers"].as_u64().map(|n| n as usize);
        let tuples = v["tuples"].as_f64().unwrap_or(0.0);
        self.tuples.1 += (tuples - self.tuples.0).max(0.0);
        self.tuples.0 = tuples;
        let Some(open) = v["openWindow"].as_str().and_then(saams::api::time::parse_timestamp) else { return };
        let now = Instant::now();
        if self.furthest == 0 {
            // The first window seen is where the measurement starts (the generator's first day).
            (self.furthest, self.moved) = (open, Some(now));
            return;
        }
        if open > self.furthest {
            if let Some(m) = self.moved {
                self.longest_gap = self.longest_gap.max(now.duration_since(m).as_secs_f64());
            }
            self.furthest = open;
            self.moved = Some(now);
        }
    }

    /// The process is about to stop: its next life counts its tuples from 0.
    fn reading_ended(&mut self, job: &Job) {
        self.poll(job);
        self.tuples.0 = 0.0;
    }

    fn take_tuples(&mut self) -> f64 {
        std::mem::take(&mut self.tuples.1)
    }
}

/// Start `saams -w workers` on the generator's vessels with checkpoints in `work` (resuming from
/// them when there are some) and HTTP on a free port; wait until it answers.
fn start_job(r: &Runner, work: &Path, workers: usize, extra: &[String]) -> Result<Job, String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("free port: {e}"))?
        .port();
    let addr = format!("127.0.0.1:{port}");
    let path = |p: &str| -> PathBuf { work.join(p) };
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path("stderr.txt"))
        .map_err(|e| format!("stderr file: {e}"))?;
    let child = Command::new(&r.saams)
        .args(["-w", &workers.to_string(), "--generate", &format!("ais:{VESSELS}")])
        .arg("--requests")
        .arg(path("requests.json"))
        .arg("--checkpoints")
        .arg(path("checkpoints"))
        .args(["--checkpoint-interval", "1s", "--progress", "0", "--http", &addr])
        .arg("--out")
        .arg(path("answers.jsonl"))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("saams: {e}"))?;
    let mut job = Job { child, addr };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        // Up once it takes requests (a resumed job first reads its checkpoint).
        if let Ok((200, body)) = http(&job.addr, "GET", "/status", "")
            && serde_json::from_str::<Value>(&body).is_ok_and(|v| v["accepting"] == json!(true))
        {
            return Ok(job);
        }
        if let Ok(Some(status)) = job.child.try_wait() {
            let log = std::fs::read_to_string(path("stderr.txt")).unwrap_or_default();
            return Err(format!("saams -w {workers} exited ({status}) before serving HTTP:\n{log}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("saams -w {workers} did not serve HTTP within 60 s"))
}

/// One HTTP/1.1 exchange on loopback: (status, body).
fn http(addr: &str, method: &str, path: &str, body: &str) -> Result<(u16, String), String> {
    let sock: std::net::SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let mut s =
        std::net::TcpStream::connect_timeout(&sock, Duration::from_secs(2)).map_err(|e| format!("{addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).and_then(|_| s.write_all(body.as_bytes())).map_err(|e| format!("{addr}: {e}"))?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).map_err(|e| format!("{addr}: {e}"))?;
    let status = reply
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no HTTP reply: {reply}"))?;
    let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
    Ok((status, body))
}

/// The TSVs and the PNG.
fn report(r: &Runner, results: &[(Approach, Vec<PhaseResult>, f64)]) -> Result<(), String> {
    // The generator's density: tuples per event-time ms, from the in-job run (one process life).
    let (tuples, ms) = results
        .iter()
        .filter(|(a, ..)| *a == Approach::InJob)
        .flat_map(|(_, p, _)| p.iter())
        .fold((0.0, 0.0), |(t, m), p| (t + p.tuples_read, m + p.progress_ms));
    if ms <= 0.0 {
        return Err("rescale: the in-job run closed no window: nothing to measure".into());
    }
    let density = tuples / ms;
    let mut tsv =
        String::from("approach\tvessels\tparallelism\tseconds\tdown_seconds\ttuples_per_s\tuptime_tuples_per_s\n");
    let mut series: Vec<Series> = Vec::new();
    let mut averages = Vec::new();
    for (approach, phases, gap) in results {
        let mut points = Vec::new();
        let mut uptime_points = Vec::new();
        for p in phases {
            let rate = p.progress_ms * density / p.seconds.max(1e-9);
            let up = (p.seconds - p.down_seconds).max(1e-9);
            let uptime_rate = p.progress_ms * density / up;
            let _ = writeln!(
                tsv,
                "{}\t{}\t{}\t{:.2}\t{:.2}\t{rate:.0}\t{uptime_rate:.0}",
                approach.name(),
                p.vessels,
                p.parallelism,
                p.seconds,
                p.down_seconds
            );
            points.push((p.vessels as f64, rate));
            uptime_points.push((p.vessels as f64, uptime_rate));
        }
        let total_s: f64 = phases.iter().map(|p| p.seconds).sum();
        let total_ms: f64 = phases.iter().map(|p| p.progress_ms).sum();
        let down: f64 = phases.iter().map(|p| p.down_seconds).sum();
        averages.push((*approach, total_ms * density / total_s.max(1e-9), *gap, down));
        series.push((approach.name().to_string(), points));
        if *approach == Approach::StopRestart {
            series.push(("stop-restart (uptime only)".into(), uptime_points));
        }
    }
    write(&r.dir.join("rescale.tsv"), &tsv)?;
    let restart = averages.iter().find(|a| a.0 == Approach::StopRestart).map_or(0.0, |a| a.1);
    let mut targets = String::from(
        "approach\taverage_tuples_per_s\tratio_to_stop_restart\ttarget\tlongest_gap_in_answers_s\tdown_seconds\tnote\n",
    );
    for &(approach, avg, gap, down) in &averages {
        let ratio = if restart > 0.0 { avg / restart } else { f64::INFINITY };
        let target = match approach {
            Approach::InJob => {
                if ratio >= 3.0 {
                    "met (>= 3x)"
                } else {
                    "missed (< 3x)"
                }
            }
            _ => "-",
        };
        let _ = writeln!(
            targets,
            "{}\t{avg:.0}\t{ratio:.2}\t{target}\t{gap:.2}\t{down:.2}\tworkers are threads on this machine's cores",
            approach.name()
        );
        eprintln!(
            "experiment: rescale: {}: average {avg:.0} tuples/s over the schedule, {ratio:.2}x stop-restart, longest gap in answers {gap:.2} s",
            approach.name()
        );
    }
    write(&r.dir.join("rescale-targets.tsv"), &targets)?;
    chart(
        &r.dir.join("fig12-rescale.png"),
        "Rescale: AIS synopses, parallelism 3 -> 6 -> 9 -> 12 (threads)",
        "vessels with synopses",
        "tuples per second (downtime as zero)",
        &series,
        false,
    )
}
