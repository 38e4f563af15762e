//! Only the active workers read (`--active-workers`, `POST /rescale`; `saams_jobs::job`'s
//! `handover`): a job of `-w 4` started on one active worker, rescaled 1 → 4 → 1 with
//! checkpoints, on the generator and on a file cut into byte ranges. While one worker is active
//! the other three read nothing (their `saams_tuples_in_total` stays put while worker 0's grows);
//! at 4 the others read too; the job is killed (-9) three checkpoints after it is back at 1 and
//! restarted from its
//! checkpoints (on the file at another shape, `-w 2`): every answer is that of a run without a
//! rescale (sorted, byte for byte), so each tuple was read once across the moves.

mod checkpoint_common;
mod http_common;
mod rescale_common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rescale_common::{GENERATOR, PACE, answers, get_json, metrics, rescale, saams, script, temp};

const WORKERS: usize = 4;

/// Each worker's `saams_tuples_in_total` (0 for a worker without the series).
fn tuples_in(addr: &str) -> [u64; WORKERS] {
    let mut counts = [0; WORKERS];
    for line in metrics(addr).lines() {
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
fn only_worker_0_reads(addr: &str) -> [u64; WORKERS] {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let before = tuples_in(addr);
        std::thread::sleep(Duration::from_millis(500));
        let after = tuples_in(addr);
        let moved = get_json(addr, "/status")["rescaling"] == false;
        if moved && after[0] > before[0] && after[1..] == before[1..] {
            return after;
        }
        assert!(Instant::now() < deadline, "inactive workers still read: {before:?} then {after:?}");
    }
}

/// 1 → 4 → 1 active workers on `input` with checkpoints, killed (-9) once back at 1 and
/// restarted at `-w restart_workers`: the answers of a run without rescale.
fn one_four_one(dir: &Path, input: &[&str], restart_workers: &str) {
    let requests = script(dir).display().to_string();
    let mut args: Vec<&str> = input.to_vec();
    args.extend(["--window", "1s", "--requests", &requests]);
    let reference = dir.join("reference.jsonl");
    let mut plain = args.clone();
    plain.extend(["-w", "4"]);
    assert!(saams(&plain, &reference, false).wait().expect("wait").success());
    let expected = answers(&[reference]);
    assert!(expected.len() > 100, "the script answers: {}", expected.len());

    let out = dir.join("rescaled.jsonl");
    let checkpoints = dir.join("checkpoints").display().to_string();
    args.extend(["--checkpoints", &checkpoints, "--checkpoint-interval", "200ms"]);
    let mut rescaled = args.clone();
    rescaled.extend(["-w", "4", "--active-workers", "1", "--rate", PACE]);
    let mut child = saams(&rescaled, &out, true);
    let addr = http_common::http_address(&mut child, Duration::from_secs(30));
    let at_start = only_worker_0_reads(&addr);
    assert_eq!(at_start[1..], [0, 0, 0], "one active worker: the others read nothing");
    rescale(&addr, 4);
    let deadline = Instant::now() + Duration::from_secs(20);
    while tuples_in(&addr)[1..].iter().all(|&n| n == 0) {
        assert!(Instant::now() < deadline, "at 4 active workers only worker 0 reads: {:?}", tuples_in(&addr));
        std::thread::sleep(Duration::from_millis(50));
    }
    rescale(&addr, 1);
    only_worker_0_reads(&addr);
    // Killed after three more checkpoints: the restart resumes after both moves.
    checkpoint_common::kill_after(&mut child, dir, 3);

    let mut restart = args.clone();
    restart.extend(["-w", restart_workers]);
    assert!(saams(&restart, &out, false).wait().expect("wait").success());
    checkpoint_common::assert_same(&answers(&[out]), &expected, "rescaled 1 → 4 → 1, killed and restarted");
}

#[test]
fn on_the_generator_only_active_workers_read_and_the_answers_are_a_plain_runs() {
    let dir = temp("readers-gen");
    one_four_one(&dir, &["--generate", GENERATOR], "4");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn on_a_file_in_byte_ranges_only_active_workers_read_and_a_restart_at_w2_answers_as_a_plain_run() {
    let dir = temp("readers-file");
    let data = dir.join("ticks.jsonl");
    let generated =
        Command::new(env!("CARGO_BIN_EXE_replay")).args(["--generate", GENERATOR]).output().expect("replay");
    assert!(generated.status.success() && !generated.stdout.is_empty(), "replay --generate");
    std::fs::write(&data, &generated.stdout).expect("data");
    // Six byte ranges: units for every worker, and more than one each at 1 active worker.
    let chunk = (generated.stdout.len() / 6 + 1).to_string();
    let data = data.display().to_string();
    one_four_one(&dir, &["--data", &data, "--chunk-bytes", &chunk], "2");
    let _ = std::fs::remove_dir_all(&dir);
}
