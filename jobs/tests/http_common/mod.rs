//! Shared by the tests that start `saams` with `--http 127.0.0.1:0`: the address the job
//! announces once it listens.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

/// The `host:port` a job started with `--http 127.0.0.1:0` (and `stderr` piped) announces, read
/// from its stderr within `wait`. Every stderr line is passed on, so a failing test shows what
/// the job said (the harness captures it).
#[allow(dead_code)] // The edge tests read it through `edge_common::Cloud`.
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

/// Status and body of `method path` with `body`, on a connection of its own.
#[allow(dead_code)] // Not every test that includes this module calls it.
pub fn call(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("read");
    let status = reply.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, reply.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}
