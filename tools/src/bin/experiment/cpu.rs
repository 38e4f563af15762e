//! CPU seconds and load from `/proc`, beside the ingest experiment's wall-clock figures.

use std::path::Path;
use std::process::Command;

/// CPU seconds (user + system) of this process' children that have been waited for, from
/// `/proc/self/stat` (`cutime` + `cstime`): the difference across a run is what the run's `saams`
/// processes used, all workers and both processes of a loopback pair included. `None` where there
/// is no `/proc`.
pub fn children_cpu_seconds(ticks: f64) -> Option<f64> {
    proc_stat_cpu("/proc/self/stat", 13, ticks)
}

/// CPU seconds (user + system) a running process has used so far (`utime` + `stime` of
/// `/proc/<pid>/stat`).
pub fn process_cpu_seconds(pid: u32, ticks: f64) -> Option<f64> {
    proc_stat_cpu(&format!("/proc/{pid}/stat"), 11, ticks)
}

/// Two adjacent tick counters of a `/proc/<pid>/stat` file, in seconds: `first` counts the
/// fields after the command name (field 3, the state, is 0), so 11 is `utime` + `stime` and 13
/// is `cutime` + `cstime`.
fn proc_stat_cpu(path: &str, first: usize, ticks: f64) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    // The command name is in parentheses and may hold spaces: the fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(first);
    let a: f64 = fields.next()?.parse().ok()?;
    let b: f64 = fields.next()?.parse().ok()?;
    Some((a + b) / ticks)
}

/// Clock ticks per second of the `/proc` counters (`getconf CLK_TCK`; Linux fixes it at 100).
pub fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<f64>().ok())
        .filter(|t| *t > 0.0)
        .unwrap_or(100.0)
}

/// The one-minute load average (`/proc/loadavg`), recorded beside every figure: on a machine
/// whose cores other work shares, wall-clock rates and scaling say little, CPU-second figures more.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// The pid in a broker's pidfile (scripts/start-kafka.sh writes one).
pub fn read_pid(path: &Path) -> Result<u32, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--kafka-pidfile {}: {e}", path.display()))?;
    text.trim().parse().map_err(|_| format!("--kafka-pidfile {}: {:?} is not a pid", path.display(), text.trim()))
}
