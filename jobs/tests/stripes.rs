//! A long file read in stripes (`--chunk-bytes` ranges longer than a stripe, see
//! `jobs/src/source/stripes.rs`): the answers do not depend on the workers reading it, a bad
//! line is reported at its byte offset, and a job killed with SIGKILL (`kill -9`) mid-file and
//! resumed with another worker count ends with exactly the answers of a run without the crash.
//!
//! KLL answers are left out of the comparisons: Apache DataSketches' KLL compacts with an
//! unseeded random generator, so two runs of the same input differ (see engine.rs).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

mod checkpoint_common;

use checkpoint_common::{assert_same, fresh_dir, kill_after, nanos, sorted_file, stderr_of};

const BIN: &str = env!("CARGO_BIN_EXE_saams");
const REPLAY: &str = env!("CARGO_BIN_EXE_replay");

/// Ranges of at most 5 MB: the ~15 MB test file is four units of stripes of 512 KiB.
const CHUNK: &str = "5000000";

fn tmp(name: &str) -> PathBuf {
    fresh_dir("stripes", name)
}

/// The generator's 6 streams of 20,000 tuples (~15 MB) as a JSON-lines file in `dir`.
fn ticks(dir: &Path) -> PathBuf {
    let path = dir.join("ticks.jsonl");
    let out =
        Command::new(REPLAY).args(["--generate", "stocks:6:20000", "--output"]).arg(&path).output().expect("replay");
    assert!(out.status.success(), "replay: {}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::metadata(&path).unwrap().len() > 12_000_000, "a file of more stripes than units");
    path
}

/// A job over `data` in 5 MB ranges with the request script of every kind, writing to `dir`.
fn job(dir: &Path, data: &Path, workers: &str) -> Command {
    std::fs::create_dir_all(dir.join("snapshots")).expect("snapshot dir");
    let mut cmd = Command::new(BIN);
    cmd.args(["--requests", &format!("{}/../datasets/requests/all-kinds.json", env!("CARGO_MANIFEST_DIR"))])
        .args(["--progress", "0", "-w", workers, "--chunk-bytes", CHUNK, "--data"])
        .arg(data)
        .arg("--snapshots")
        .arg(dir.join("snapshots"))
        .arg("--out")
        .arg(dir.join("out.json"));
    cmd
}

fn run(dir: &Path, data: &Path, workers: &str, extra: &[&str]) -> Vec<String> {
    let out = job(dir, data, workers).args(extra).output().expect("run saams");
    assert!(out.status.success(), "-w {workers}: {}", String::from_utf8_lossy(&out.stderr));
    sorted_file(&dir.join("out.json"))
}

#[test]
fn a_striped_file_gives_the_same_answers_at_one_two_and_three_workers() {
    let dir = tmp("workers");
    let data = ticks(&dir);
    let one = run(&dir.join("w1"), &data, "1", &[]);
    assert!(one.len() > 1000, "expected many answers, got {}", one.len());
    for w in ["2", "3"] {
        assert_same(&run(&dir.join(format!("w{w}")), &data, w, &[]), &one, &format!("-w {w}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A malformed line in a stripe is a dead letter named by its byte offset in the file, and
/// every other line is read once.
#[test]
fn a_bad_line_in_a_stripe_is_reported_at_its_byte_offset() {
    let dir = tmp("bad");
    let data = ticks(&dir);
    let mut text = std::fs::read_to_string(&data).expect("read ticks");
    // A line about 4 MB into the file (in a stripe of unit 3), replaced by garbage of the same
    // length.
    let near = 4 * 1_040_000;
    let start = text[..near].rfind('\n').expect("a line before") + 1;
    let end = start + text[start..].find('\n').expect("a line end");
    let garbage = "x".repeat(end - start);
    text.replace_range(start..end, &garbage);
    std::fs::write(&data, &text).expect("write ticks");
    let dead = dir.join("dead.jsonl");
    let out = job(&dir.join("w2"), &data, "2").arg("--dead-letter").arg(&dead).output().expect("run saams");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("tuples=119999 ") && stderr.contains("dead_letters=1 "), "{stderr}");
    let letters = std::fs::read_to_string(&dead).expect("dead letters");
    let source = format!("{}@byte:{start}", data.display());
    assert!(letters.contains(&source) && letters.contains(&garbage), "{source} not in {letters}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn start(dir: &Path, data: &Path, workers: &str) -> Child {
    job(dir, data, workers)
        .args(["--checkpoint-interval", "150ms", "--rate", "40000", "--checkpoints"])
        .arg(dir.join("checkpoints"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join(format!("stderr-{}", nanos()))).expect("stderr file"))
        .spawn()
        .expect("start saams")
}

#[test]
fn a_striped_file_job_killed_mid_file_resumes_with_three_workers_to_the_uninterrupted_answers() {
    let dir = tmp("resume");
    let data = ticks(&dir);
    let want = run(&dir.join("plain"), &data, "2", &[]);
    let run_dir = dir.join("run");
    std::fs::create_dir_all(&run_dir).expect("run dir");
    let mut child = start(&run_dir, &data, "2");
    kill_after(&mut child, &run_dir, 4);
    let out = job(&run_dir, &data, "3").arg("--checkpoints").arg(run_dir.join("checkpoints")).output().expect("resume");
    assert!(out.status.success(), "the resumed run failed: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("resuming from checkpoint"), "{stderr}\n{}", stderr_of(&run_dir));
    assert_same(&sorted_file(&run_dir.join("out.json")), &want, "killed at -w 2, resumed at -w 3");
    let _ = std::fs::remove_dir_all(&dir);
}
