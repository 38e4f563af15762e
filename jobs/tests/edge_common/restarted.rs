//! The harness of the tests that kill a following device with `kill -9` while its cloud job
//! runs and restart it from its state file (`edge_idle_state.rs`, `edge_monitor_state.rs`): the
//! cloud job with HTTP, its output read as it comes, and a device fed on its standard input. A
//! test file declares it with `#[path = "edge_common/restarted.rs"] mod restarted;` beside
//! `mod edge_common; mod http_common; mod kafka_common;`.
#![allow(dead_code)] // Not every test that includes this module calls every helper.

use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Output};

use super::edge_common::{self, Edge};
use super::http_common;

/// A cloud job running throughout: [`edge_common::Cloud`] (its output read as it comes) and its
/// HTTP address.
pub struct Cloud {
    pub addr: String,
    job: edge_common::Cloud,
}

impl Cloud {
    /// The cloud job of `e` over `topic` with `--http`, dead letters to `dir/dead.json`, ending
    /// 10 s after its input went idle, a device silent for `device_timeout` gone.
    pub fn start(e: &Edge, (brokers, topic): (&str, &str), dir: &Path, device_timeout: &str) -> Cloud {
        let job = edge_common::Cloud::start(
            e.cloud_base(brokers, topic)
                .args(["--partitions", "4", "--exit-when-idle", "10s", "--device-timeout", device_timeout])
                .args(["--idle-timeout", "2s", "--http-timeout", "60", "--http", "127.0.0.1:0", "--dead-letter"])
                .arg(dir.join("dead.json")),
        );
        Cloud { addr: job.address(), job }
    }

    /// `GET /devices`' body.
    pub fn devices(&self) -> String {
        http_common::call(&self.addr, "GET", "/devices", "").1
    }

    /// Wait for the job's end: its output, its exit checked.
    pub fn end(self) -> Output {
        self.job.finish("saams --partials-topic --http")
    }
}

/// Device `dev0` of `e` (partition 0) with `flags`, on its standard input.
pub fn device(e: &Edge, (brokers, topic): (&str, &str), flags: &[&str]) -> (Child, ChildStdin) {
    let mut child = e.device_on_stdin(brokers, topic, ("dev0", 0), flags);
    let stdin = child.stdin.take().expect("its stdin");
    (child, stdin)
}

/// Feed `lines` to a device.
pub fn feed(stdin: &mut ChildStdin, lines: &[&str]) {
    lines.iter().for_each(|l| writeln!(stdin, "{l}").expect("feed the device"));
    stdin.flush().expect("flush");
}
