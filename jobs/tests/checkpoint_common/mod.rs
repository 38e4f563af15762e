//! Shared by the tests that kill a checkpointed job and compare what it ends with: the
//! checkpoints completed so far, killing after more of them, the jobs' stderr, and comparing
//! sorted outputs.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// The same lines, or a message with the counts and the first lines only one side has.
#[track_caller]
pub fn assert_same(got: &[String], want: &[String], what: &str) {
    if got == want {
        return;
    }
    let missing: Vec<&String> = want.iter().filter(|l| !got.contains(l)).take(3).collect();
    let extra: Vec<&String> = got.iter().filter(|l| !want.contains(l)).take(3).collect();
    panic!(
        "{what}: {} lines, expected {}; missing e.g. {missing:#?}; unexpected e.g. {extra:#?}",
        got.len(),
        want.len()
    );
}

/// A fresh temporary directory `saams-{what}-{pid}-{name}` (emptied if it was there).
#[allow(dead_code)] // Not every test that includes this module calls it.
pub fn fresh_dir(what: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-{what}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    d
}

/// The lines of an output file, sorted, KLL answers left out (Apache DataSketches' KLL compacts
/// with an unseeded random generator, so two runs of the same input differ).
#[allow(dead_code)] // Not every test that includes this module calls it.
pub fn sorted_file(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut v: Vec<String> = text.lines().filter(|l| !l.contains(r#""kind":"KLL""#)).map(str::to_string).collect();
    v.sort();
    v
}

/// Now, in ns since the epoch: distinct names for each start's stderr file.
#[allow(dead_code)] // Not every test that includes this module calls it.
pub fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// Complete checkpoints (with every process' manifest) in `dir`.
pub fn complete(dir: &Path, processes: usize) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| (0..processes).all(|i| p.join(format!("manifest-p{i}.json")).exists()))
        .collect();
    v.sort();
    v
}

/// The newest complete checkpoint's id (0: none). Older ones are pruned (`--checkpoint-keep`).
pub fn newest_id(dir: &Path, processes: usize) -> u64 {
    complete(dir, processes)
        .last()
        .and_then(|p| p.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

/// Wait until `n` more checkpoints have completed (ids grow by one), then SIGKILL.
pub fn kill_after(child: &mut Child, dir: &Path, n: u64) {
    kill_all_after(std::slice::from_mut(child), dir, n);
}

/// Wait until `n` more checkpoints have completed in `dir/checkpoints` with a manifest of
/// every process (one child each), then SIGKILL them all.
pub fn kill_all_after(children: &mut [Child], dir: &Path, n: u64) {
    let processes = children.len();
    let first = newest_id(&dir.join("checkpoints"), processes);
    let deadline = Instant::now() + Duration::from_secs(120);
    while newest_id(&dir.join("checkpoints"), processes) < first + n {
        for child in children.iter_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the job ended ({status}) before {n} checkpoints: {}", stderr_of(dir));
            }
        }
        assert!(Instant::now() < deadline, "no {n} checkpoints within 2 minutes: {}", stderr_of(dir));
        std::thread::sleep(Duration::from_millis(5));
    }
    for child in children {
        child.kill().expect("kill -9");
        let _ = child.wait();
    }
}

/// Everything the jobs started in `dir` wrote to stderr (their `stderr-*` files).
pub fn stderr_of(dir: &Path) -> String {
    let mut all = String::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().filter_map(Result::ok) {
        if e.file_name().to_string_lossy().starts_with("stderr-") {
            all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    all
}
