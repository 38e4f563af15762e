//! Peak resident set size of one worker against the window length (`--only memory`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::runner::{Fields, Runner, null_device, parse_summary, spawn, write};
use crate::settings::Args;

/// Run `saams` once (one process) and return its summary and its peak resident set size in KiB
/// (the kernel's high-water mark `VmHWM`, read from `/proc` until the process exits; `None`
/// where there is no `/proc`).
fn once_with_peak_rss(saams: &Path, args: &[String]) -> Result<(Fields, Option<u64>), String> {
    let mut c = Command::new(saams);
    c.args(args).args(["--out", &null_device(), "--progress", "0"]);
    let mut child = spawn(c)?;
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let mut stderr = child.stderr.take().ok_or("saams: no stderr pipe")?;
    // saams writes a few lines to stderr: read them on a thread so it never blocks on the pipe.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let mut peak = None;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("saams: {e}"))? {
            break status;
        }
        let hwm = std::fs::read_to_string(&status_file).ok().and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        });
        if hwm.is_some() {
            peak = peak.max(hwm);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let text = reader.join().map_err(|_| "saams: stderr reader failed".to_string())?;
    if !status.success() {
        return Err(format!("saams {} failed ({status}):\n{text}", args.join(" ")));
    }
    Ok((parse_summary(&text)?, peak))
}

/// Peak RSS of one worker against the window length (`memory.tsv`): the median of the repeats.
pub fn memory(r: &Runner, a: &Args, tuples_per_stream: u64) -> Result<(), String> {
    let requests = a.requests.display().to_string();
    let generate = format!("stocks:100:{tuples_per_stream}");
    let mut tsv = String::from("experiment\twindow\ttuples\ttuples_per_s\tpeak_rss_kib\tpeak_over_60s\n");
    let mut base = None;
    for window in ["60s", "10m", "1h", "1d"] {
        let args: Vec<String> = ["-w", "1", "--requests", &requests, "--generate", &generate, "--window", window]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut runs = Vec::new();
        for _ in 0..r.repeats {
            runs.push(once_with_peak_rss(&r.saams, &args)?);
        }
        runs.sort_by_key(|(_, peak)| *peak);
        let (fields, peak) = runs.swap_remove(runs.len() / 2);
        let get = |k: &str| fields.get(k).copied().unwrap_or(0.0);
        let rate = if get("seconds") > 0.0 { get("tuples") / get("seconds") } else { 0.0 };
        let peak_kib = peak.unwrap_or(0);
        let base_kib = *base.get_or_insert(peak_kib);
        let ratio = if base_kib > 0 { peak_kib as f64 / base_kib as f64 } else { 0.0 };
        eprintln!("experiment: memory {window}: peak RSS {peak_kib} KiB ({ratio:.2}x 60 s), {rate:.0} tuples/s");
        let _ = writeln!(tsv, "memory\t{window}\t{}\t{rate:.0}\t{peak_kib}\t{ratio:.3}", get("tuples"));
    }
    write(&r.dir.join("memory.tsv"), &tsv)
}
