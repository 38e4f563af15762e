//! One writer (`saams_jobs::writer_lock`): a second job on the checkpoint directory or the output
//! file of a running job refuses at once, naming the holder, and writes nothing; after the first
//! is killed with SIGKILL the same command starts again (the OS lock died with the process).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Start `saams` with `args`, an endless paced generator and `--http` on a free port; returns
/// once it listens (its locks are taken before that).
fn start(args: &[&str]) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["--generate", "stocks:1", "--rate", "2000", "--window", "1s", "--progress", "0"])
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("saams");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.starts_with("saams: http on") {
                let _ = tx.send(());
            }
            eprintln!("[saams] {line}");
        }
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("the job starts and listens");
    child
}

/// Run a second job with `args` to its end (it must end by itself; a guard against a hang,
/// not a timing assertion).
fn refused(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["--generate", "stocks:1", "--rate", "2000", "--window", "1s", "--progress", "0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("saams");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the second job did not refuse: it ran on");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn holder_pid(lock_file: &Path) -> u64 {
    let text = std::fs::read_to_string(lock_file).expect("lock file");
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("the lock file names its holder");
    assert!(v["host"].is_string() && v["started"].is_string(), "{text}");
    v["pid"].as_u64().expect("pid")
}

#[test]
fn a_second_job_on_a_checkpoint_directory_refuses_naming_the_holder_and_a_restart_after_kill_9_starts() {
    let dir = std::env::temp_dir().join(format!("saams-one-writer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let (checkpoints, out, other_out) = (dir.join("cp"), dir.join("out.jsonl"), dir.join("other.jsonl"));
    let (checkpoints, out, other_out) =
        (checkpoints.display().to_string(), out.display().to_string(), other_out.display().to_string());
    let job = ["--checkpoints", &checkpoints, "--checkpoint-interval", "200ms", "--out", &out];
    let mut first = start(&job);
    let lock_file = Path::new(&checkpoints).join("writer-p0.lock");
    assert_eq!(holder_pid(&lock_file), u64::from(first.id()));

    // The same directory with another output file: refused for the directory.
    let second = refused(&["--checkpoints", &checkpoints, "--out", &other_out]);
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{said}");
    assert!(said.contains("failed to lock the checkpoint directory"), "{said}");
    assert!(said.contains(&format!("pid {}", first.id())), "the holder is named: {said}");
    assert!(!Path::new(&other_out).exists(), "the refused job created its output");

    // The same output file without checkpoints: refused for the file, which it leaves alone.
    let before = std::fs::metadata(&out).expect("out").len();
    let third = refused(&["--out", &out]);
    let said = String::from_utf8_lossy(&third.stderr);
    assert!(!third.status.success(), "{said}");
    assert!(said.contains("failed to lock the output file"), "{said}");
    assert!(said.contains(&format!("pid {}", first.id())), "{said}");
    assert!(std::fs::metadata(&out).expect("out").len() >= before, "the refused job cut the output");

    // kill -9: nothing to clean, the same command starts again and holds the locks.
    first.kill().expect("SIGKILL");
    first.wait().expect("wait");
    let mut again = start(&job);
    assert_eq!(holder_pid(&lock_file), u64::from(again.id()));
    let _ = again.kill();
    let _ = again.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
