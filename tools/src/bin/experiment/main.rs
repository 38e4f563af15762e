//! `experiment`: the paper's figures (§6) measured on this machine with the `saams` binary.
//!
//! ```text
//! experiment                 # the full set (scripts/experiments.sh)
//! experiment --quick         # a small version (CI's smoke test)
//! ```
//!
//! It spawns `saams` (found next to its own executable) with different `-w`/`-n`/`--generate`/
//! `--window` settings, parses the `summary` line each process prints, repeats every setting
//! (`--repeats`, at least 3) and reports the median. Three experiments:
//!
//! * horizontal (figure 9): the paper's workload (100 streams × CountMin + HyperLogLog + DFT) at
//!   1, 2, 4 workers in one process and 1, 2 workers in each of 2 processes on loopback;
//! * vertical (figure 10): 10 → 500 streams at a fixed number of workers, the same number of
//!   tuples in total;
//! * federated (figure 11): edge devices (the edge runtime's window logic, 2–5 devices, each with
//!   its share of the streams) ship the smaller of their partials and their raw values per
//!   period; raw bytes over shipped bytes for CM+HLL and the paper workload (CM+HLL+DFT), at the
//!   paper's setting and across rates and shipping periods (see `federated.rs`).
//!
//! * memory (`--only memory`, not in the default set; Linux): peak resident set size of one
//!   worker on the paper's workload at 60 s, 10 min, 1 h and 1 d windows. Open windows hold the
//!   synopses' state, not their tuples, so the peak should not grow with the window.
//!
//! * ingest (`--only ingest`, not in the default set; Linux for the CPU figures): the paper's
//!   workload read from a JSON-lines file of the generator's tuples (written by `replay`) against
//!   the generator itself, in alternating rounds: `-w 1`, `-w 1 --no-synopses`, `-w 2`,
//!   `-n 2 -w 1`, and from a Kafka topic of the same tuples at `-w 2` with `--kafka-brokers`;
//!   beside them, two independent `-w 1` jobs at once (the machine's own parallel ceiling for
//!   this work, which no `-w 2` or `-n 2` run can pass), and the parser's pace: `replay --validate`
//!   on the same file (the same line reader and parser, nothing routed). Each file setting's run
//!   starts with its input just read once (in the page cache, which these machines empty within
//!   minutes). Wall-clock tuples/s and tuples per CPU-second (the `saams` processes' user + system
//!   time, or `replay`'s),
//!   the load average beside each, the broker's CPU with `--kafka-pidfile`, and the answers of
//!   every setting checked against the `-w 1` file run's (`ingest.tsv`, `ingest-targets.tsv`,
//!   `ingest.png`).
//!
//! * rescale (`--only rescale`, not in the default set): the paper's figure 12. Synopses for
//!   10 → 500 AIS vessels (`--generate ais:500`, synopses added live) while the parallelism
//!   goes 3 → 6 → 9 → 12 at 50 / 100 / 180 vessels: in-job rescale (`POST /rescale` on a job of
//!   12 workers), stop + restart from a checkpoint with the new `-w` (downtime as zero
//!   throughput), and `--autoscale 3..12` choosing (`rescale.tsv`, `rescale-targets.tsv`,
//!   `fig12-rescale.png`). Workers are threads on this machine's cores: the ratio and the gaps
//!   in answers are the result.
//!
//! Output: `<out>/<git-commit>-<params>/` with `horizontal.tsv`, `vertical.tsv`, `federated.tsv`
//! and one PNG per figure; the directory is printed at the end. Streams are the seeded
//! generator's (random-walk prices, Zipf volumes), replayed as fast as possible.

mod cpu;
mod federated;
mod figures;
mod ingest;
mod memory;
mod plots;
mod requests;
mod rescale;
mod runner;
mod settings;

use std::process::Command;

use clap::Parser;
use plotters::prelude::FontStyle;

use crate::runner::Runner;
use crate::settings::Args;

fn main() {
    let a = Args::parse();
    if let Err(e) = run(&a) {
        eprintln!("experiment: {e}");
        std::process::exit(2);
    }
}

fn run(a: &Args) -> Result<(), String> {
    if a.repeats < 3 {
        return Err("--repeats must be at least 3 (medians of several runs)".into());
    }
    let saams = match &a.saams {
        Some(p) => p.clone(),
        None => {
            let me = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
            me.with_file_name(format!("saams{}", std::env::consts::EXE_SUFFIX))
        }
    };
    if !saams.is_file() {
        return Err(format!("{} not found: build it with `cargo build --release -p saams-jobs`", saams.display()));
    }
    if !a.requests.is_file() {
        return Err(format!("--requests {} not found (run from the repository root)", a.requests.display()));
    }
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| "the embedded DejaVu Sans font did not load".to_string())?;
    let only: Vec<&str> = a.only.split(',').map(str::trim).collect();
    for o in &only {
        if !["horizontal", "vertical", "federated", "memory", "ingest", "rescale"].contains(o) {
            return Err(format!(
                "--only: unknown experiment {o:?} (horizontal, vertical, federated, memory, ingest, rescale)"
            ));
        }
    }
    let total = a.tuples.unwrap_or(if a.quick { 200_000 } else { 5_000_000 });
    if total < 1_000 {
        return Err("--tuples must be at least 1000".into());
    }
    let per_stream = total / 100;
    let params = format!("{}-t{total}-r{}", if a.quick { "quick" } else { "full" }, a.repeats);
    let dir = a.out.join(format!("{}-{params}", git_commit()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let r = Runner { saams, dir: dir.clone(), repeats: a.repeats };
    if only.contains(&"horizontal") {
        figures::horizontal(&r, a, per_stream)?;
    }
    if only.contains(&"vertical") {
        figures::vertical(&r, a, total)?;
    }
    if only.contains(&"federated") {
        federated::federated(&r, a.quick, &a.datasets)?;
        if a.netns {
            federated::netns_rows(&r, a.kafka_brokers.as_deref().unwrap_or("127.0.0.1:9092"))?;
        }
    }
    if only.contains(&"memory") {
        memory::memory(&r, a, per_stream)?;
    }
    if only.contains(&"ingest") {
        ingest::ingest(&r, a, per_stream)?;
    }
    if only.contains(&"rescale") {
        rescale::rescale(&r, a)?;
    }
    println!("experiment: results in {}", dir.display());
    Ok(())
}

/// The short commit of the checkout the results are filed under (`nogit` outside one).
fn git_commit() -> String {
    Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "nogit".into())
}
