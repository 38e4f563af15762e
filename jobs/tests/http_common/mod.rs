//! Shared by the tests that start `saams` with `--http 127.0.0.1:0`: the address the job
//! announces once it listens.

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

/// The `host:port` a job started with `--http 127.0.0.1:0` (and `stderr` piped) announces, read
/// from its stderr within `wait`. Every stderr line is passed on, so a failing test shows what
/// the job said (the harness captures it).
pub fn http_address(child: &mut Child, wait: Duration) -> String {
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("saams: http on http://") {
                let _ = tx.send(addr.to_string());
            }
            eprintln!("[saams] {line}");
        }
    });
    rx.recv_timeout(wait).expect("the job announces its HTTP address")
}
