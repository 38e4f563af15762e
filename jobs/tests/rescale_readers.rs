//! Only the active workers read (`--active-workers`, `POST /rescale`; `saams_jobs::job`'s
//! `handover`): a job of 4 workers (`-w 4`, and `-n 2 -w 2`: units then move between
//! processes) started on one active worker, rescaled 1 → 4 → 1 with checkpoints, on the
//! generator and on a file cut into byte ranges. While one worker is active the other three read
//! nothing (their `saams_tuples_in_total` stays put while worker 0's grows); at 4 the others read
//! too (across processes, units moved: `saams_units_moved_between_processes_total`); the job is
//! killed (-9) three checkpoints after it is back at 1 and restarted from its checkpoints (on the
//! file at one process at another shape, `-w 2`): every answer is that of a run without a
//! rescale (sorted, byte for byte), so each tuple was read once across the moves.

#[allow(dead_code)] // kill_after: this test kills every process of a job
mod checkpoint_common;
mod http_common;
mod rescale_common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use rescale_common::{GENERATOR, PACE, answers, free_port, get_json, metrics, rescale, saams, saams_in, script, temp};

const WORKERS: usize = 4;

/// The sum over every process (`addrs`) of a metric's samples whose line starts with `prefix`.
fn metric_sum(addrs: &[String], prefix: &str) -> u64 {
    let text: String = addrs.iter().map(|a| metrics(a)).collect();
    let values = text.lines().filter_map(|l| l.strip_prefix(prefix)?.rsplit(' ').next()?.trim().parse::<u64>().ok());
    values.sum()
}

/// Each worker's `saams_tuples_in_total` (0 for a worker without the series), over every
/// process (`addrs`).
fn tuples_in(addrs: &[String]) -> [u64; WORKERS] {
    let mut counts = [0; WORKERS];
    for line in addrs.iter().map(|a| metrics(a)).collect::<String>().lines() {
        let Some(rest) = line.strip_prefix("saams_tuples_in_total{worker=\"") else { continue };
        let Some((worker, value)) = rest.split_once("\"} ") else { continue };
        if let (Ok(w), Ok(v)) = (worker.parse::<usize>(), value.trim().parse::<u64>())
            && w < WORKERS
        {
            counts[w] = v;
        }
    }
    counts
}

/// Wait (at most 20 s) until the rescale has moved and, over half a second, worker 0 read more
/// while the others read nothing; the counts then.
fn only_worker_0_reads(addrs: &[String]) -> [u64; WORKERS] {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let before = tuples_in(addrs);
        std::thread::sleep(Duration::from_millis(500));
        let after = tuples_in(addrs);
        let moved = addrs.iter().all(|a| get_json(a, "/status")["rescaling"] == false);
        if moved && after[0] > before[0] && after[1..] == before[1..] {
            return after;
        }
        assert!(Instant::now() < deadline, "inactive workers still read: {before:?} then {after:?}");
    }
}

/// A job of [`WORKERS`] workers in `processes` processes (`-w 4`, or `-n 2 -w 2` on a hosts
/// file in `dir`): its processes, each writing its own output.
struct Job {
    children: Vec<Child>,
    outs: Vec<PathBuf>,
}

impl Job {
    fn start(dir: &Path, args: &[&str], processes: usize, http: bool) -> Job {
        Job::start_in(dir, &[], args, processes, http)
    }

    /// [`Job::start`], process `p` run in `cwds[p]` if given.
    fn start_in(dir: &Path, cwds: &[&Path], args: &[&str], processes: usize, http: bool) -> Job {
        let per_process = (WORKERS / processes).to_string();
        let hosts = dir.join("hosts");
        if processes > 1 && !hosts.exists() {
            let lines: String = (0..processes).map(|_| format!("127.0.0.1:{}\n", free_port())).collect();
            std::fs::write(&hosts, lines).expect("hosts");
        }
        let (n, hosts) = (processes.to_string(), hosts.display().to_string());
        let outs: Vec<PathBuf> = (0..processes).map(|p| dir.join(format!("rescaled-p{p}.jsonl"))).collect();
        let children = (0..processes)
            .map(|p| {
                let p = p.to_string();
                let mut all = args.to_vec();
                all.extend(["-w", &per_process]);
                if processes > 1 {
                    all.extend(["-n", &n, "-p", &p, "-h", &hosts]);
                }
                let p = p.parse::<usize>().expect("p");
                saams_in(cwds.get(p).copied(), &all, &outs[p], http)
            })
            .collect();
        Job { children, outs }
    }

    fn wait(mut self) -> Vec<PathBuf> {
        for c in &mut self.children {
            assert!(c.wait().expect("wait").success());
        }
        self.outs
    }

    /// Wait until `n` more checkpoints are complete (every process' manifest), then SIGKILL
    /// every process.
    fn kill_after(mut self, dir: &Path, n: u64) {
        checkpoint_common::kill_all_after(&mut self.children, dir, n);
    }
}

/// 1 → 4 → 1 active workers on `input` with checkpoints in `processes` processes, killed (-9)
/// once back at 1 and restarted in `restart` processes of `restart.1` workers: the answers of a
/// run without rescale.
fn one_four_one(dir: &Path, input: &[&str], processes: usize, restart: (usize, &str)) {
    let requests = script(dir).display().to_string();
    let mut args: Vec<&str> = input.to_vec();
    args.extend(["--window", "1s", "--requests", &requests]);
    let reference = dir.join("reference.jsonl");
    let mut plain = args.clone();
    plain.extend(["-w", "4"]);
    assert!(saams(&plain, &reference, false).wait().expect("wait").success());
    let expected = answers(&[reference]);
    assert!(expected.len() > 100, "the script answers: {}", expected.len());

    let checkpoints = dir.join("checkpoints").display().to_string();
    args.extend(["--checkpoints", &checkpoints, "--checkpoint-interval", "200ms"]);
    let mut rescaled = args.clone();
    // Across processes at half the pace: the input (32 s) outlasts the moves on a loaded machine
    // (`--rate` is the job's: process 0 alone reads all of it at one active worker).
    rescaled.extend(["--active-workers", "1", "--rate", if processes > 1 { "750" } else { PACE }]);
    let mut job = Job::start(dir, &rescaled, processes, true);
    let outs = job.outs.clone();
    let addrs: Vec<String> =
        job.children.iter_mut().map(|c| http_common::http_address(c, Duration::from_secs(30))).collect();
    let at_start = only_worker_0_reads(&addrs);
    assert_eq!(at_start[1..], [0, 0, 0], "one active worker: the others read nothing");
    rescale(&addrs[0], 4);
    // The file's byte ranges follow each other in event time: a worker given a later range
    // routes nothing until the frontier reaches it (one range is about 11 s of the paced input
    // across processes, more on a loaded machine), so the wait is for the ranges, not the move.
    let deadline = Instant::now() + Duration::from_secs(if processes > 1 { 60 } else { 20 });
    while tuples_in(&addrs)[1..].contains(&0) {
        assert!(Instant::now() < deadline, "at 4 active workers not every worker reads: {:?}", tuples_in(&addrs));
        std::thread::sleep(Duration::from_millis(50));
    }
    if processes > 1 {
        let moved = metric_sum(&addrs, "saams_units_moved_between_processes_total");
        assert!(moved > 0, "units moved between processes: {moved}");
    }
    rescale(&addrs[addrs.len() - 1], 1);
    only_worker_0_reads(&addrs);
    // Killed after three more checkpoints: the restart resumes after both moves.
    job.kill_after(dir, 3);

    let (restart_processes, restart_workers) = restart;
    let mut again = args.clone();
    if restart_processes == processes {
        Job::start(dir, &again, processes, false).wait();
    } else {
        again.extend(["-w", restart_workers]);
        assert!(saams(&again, &outs[0], false).wait().expect("wait").success());
    }
    checkpoint_common::assert_same(&answers(&outs), &expected, "rescaled 1 → 4 → 1, killed and restarted");
}

/// 1 → 4 → 1 ([`one_four_one`]) on the generator's tuples written as a file cut into six byte
/// ranges: units for every worker, and more than one each at 1 active worker.
fn on_a_file(name: &str, processes: usize, restart: (usize, &str)) {
    let dir = temp(name);
    let chunk = ticks_in(&dir);
    let data = dir.join("ticks.jsonl").display().to_string();
    one_four_one(&dir, &["--data", &data, "--chunk-bytes", &chunk], processes, restart);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The generator's tuples written to `dir/ticks.jsonl`: the `--chunk-bytes` that cuts it into
/// six byte ranges.
fn ticks_in(dir: &Path) -> String {
    let generated =
        Command::new(env!("CARGO_BIN_EXE_replay")).args(["--generate", GENERATOR]).output().expect("replay");
    assert!(generated.status.success() && !generated.stdout.is_empty(), "replay --generate");
    std::fs::write(dir.join("ticks.jsonl"), &generated.stdout).expect("data");
    (generated.stdout.len() / 6 + 1).to_string()
}

/// A move to a worker whose process cannot open the file (process 1 reads `ticks.jsonl` in a
/// directory of its own, whose copy is removed once the job runs) is refused, logged and
/// counted (`saams_unit_moves_refused_total`); the old worker reads on: process 1's workers read
/// nothing at 4 active workers, and the answers are a plain run's.
#[test]
fn a_move_to_a_process_that_cannot_open_the_file_is_refused_and_the_old_worker_reads_on() {
    let dir = temp("readers-refused");
    let chunk = ticks_in(&dir);
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("dir");
    std::fs::copy(dir.join("ticks.jsonl"), elsewhere.join("ticks.jsonl")).expect("copy");
    let requests = script(&dir).display().to_string();
    let args = ["--data", "ticks.jsonl", "--chunk-bytes", &chunk, "--window", "1s", "--requests", &requests];
    let reference = dir.join("reference.jsonl");
    assert!(
        saams_in(Some(&dir), &[&args[..], &["-w", "4"]].concat(), &reference, false).wait().expect("wait").success()
    );
    let mut rescaled = args.to_vec();
    rescaled.extend(["--active-workers", "1", "--rate", PACE]);
    let mut job = Job::start_in(&dir, &[&dir, &elsewhere], &rescaled, 2, true);
    let addrs: Vec<String> =
        job.children.iter_mut().map(|c| http_common::http_address(c, Duration::from_secs(30))).collect();
    std::fs::remove_file(elsewhere.join("ticks.jsonl")).expect("remove the copy");
    rescale(&addrs[0], 4);
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric_sum(&addrs, "saams_unit_moves_refused_total") == 0 {
        assert!(Instant::now() < deadline, "no move refused: {:?}", tuples_in(&addrs));
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let counts = tuples_in(&addrs);
    assert_eq!(counts[2..], [0, 0], "process 1 cannot open the file: its workers read nothing");
    assert!(counts[0] > 0, "worker 0 reads on: {counts:?}");
    let outs = job.wait();
    checkpoint_common::assert_same(&answers(&outs), &answers(&[reference]), "moves refused");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn on_the_generator_only_active_workers_read_and_the_answers_are_a_plain_runs() {
    let dir = temp("readers-gen");
    one_four_one(&dir, &["--generate", GENERATOR], 1, (1, "4"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn on_a_file_in_byte_ranges_only_active_workers_read_and_a_restart_at_w2_answers_as_a_plain_run() {
    on_a_file("readers-file", 1, (1, "2"));
}

#[test]
fn across_two_processes_on_the_generator_units_move_and_the_answers_are_a_plain_runs() {
    let dir = temp("readers-gen-n2");
    one_four_one(&dir, &["--generate", GENERATOR], 2, (2, "2"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn across_two_processes_on_a_file_in_byte_ranges_units_move_and_a_restart_answers_as_a_plain_run() {
    on_a_file("readers-file-n2", 2, (2, "2"));
}
