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
//! * federated (figure 11): CountMin + HyperLogLog on 100 streams, 2 processes on loopback. Bytes
//!   that cross between the processes (timely's communication log) when the raw tuples go to each
//!   stream's owner, against the bytes when every process summarizes what it reads (dataset-wide,
//!   partition-based synopses) and ships partials per window; and the sizes of all tuples as
//!   compact records (shipping the raw streams) against the encoded partials shipped, at 5 s, 60 s
//!   (600 s in the full set) and 1 d event-time windows. A 1 d window covers the whole input: one
//!   shipment per site and synopsis, which is what the paper's partials shipped every 5 s of
//!   processing time amount to when the whole input replays in less than 5 s.
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
//! Output: `<out>/<git-commit>-<params>/` with `horizontal.tsv`, `vertical.tsv`, `federated.tsv`
//! and one PNG per figure; the directory is printed at the end. Streams are the seeded
//! generator's (random-walk prices, Zipf volumes), replayed as fast as possible.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use plotters::prelude::*;
use saams_datasets::GeneratorSpec;

/// Run the paper's experiments on this machine and write TSVs and PNGs.
#[derive(Debug, Parser)]
#[command(name = "experiment", version)]
struct Args {
    /// A small version (a few seconds; CI's smoke test).
    #[arg(long)]
    quick: bool,
    /// Tuples per run (default 200 000 with --quick, else 5 000 000): 100 streams share them in the
    /// horizontal and federated experiments, 10 → 500 streams in the vertical one.
    #[arg(long)]
    tuples: Option<u64>,
    /// Runs per setting (the median is reported); at least 3.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Directory under which the run's directory is created.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// The paper's request workload (100 streams × CountMin + HyperLogLog + DFT).
    #[arg(long, default_value = "datasets/requests/paper-workload.json")]
    requests: PathBuf,
    /// Experiments to run (comma separated: horizontal, vertical, federated; `memory` and
    /// `ingest` on request).
    #[arg(long, default_value = "horizontal,vertical,federated")]
    only: String,
    /// The `saams` binary (default: next to this executable).
    #[arg(long)]
    saams: Option<PathBuf>,
    /// Kafka bootstrap brokers (`host:port`) for the ingest experiment's Kafka setting: a topic of
    /// the same tuples is loaded there (with `replay`) and read at `-w 2`. Without it, no Kafka.
    #[arg(long = "kafka-brokers")]
    kafka_brokers: Option<String>,
    /// The broker's pidfile (scripts/start-kafka.sh's KAFKA_PIDFILE): the ingest experiment
    /// reports the broker's CPU seconds during the Kafka runs.
    #[arg(long = "kafka-pidfile", requires = "kafka_brokers")]
    kafka_pidfile: Option<PathBuf>,
    /// The shared sample data (its `ais/` NOAA sample feeds the ingest experiment's AIS CSV
    /// setting; without it that setting is skipped and says so). Default: where the build found
    /// it; `$SAAMS_DATASETS` overrides it.
    #[arg(long, env = "SAAMS_DATASETS", default_value = env!("SAAMS_DATASETS_DIR"))]
    datasets: PathBuf,
    /// The AIS CSV setting's requests (dataset-wide synopses over the vessels and ship types).
    #[arg(long, default_value = "datasets/requests/ais-workload.json")]
    ais_requests: PathBuf,
}

/// One process' summary line, as numbers.
type Fields = HashMap<String, f64>;

/// A setting's result: summed over processes (tuples, bytes), slowest process (seconds).
#[derive(Clone, Debug, Default)]
struct RunResult {
    tuples: f64,
    seconds: f64,
    bytes_between_processes: f64,
    partial_bytes: f64,
    raw_bytes: f64,
    estimations: f64,
}

impl RunResult {
    fn rate(&self) -> f64 {
        if self.seconds > 0.0 { self.tuples / self.seconds } else { 0.0 }
    }
}

fn parse_summary(stderr: &str) -> Result<Fields, String> {
    let line = stderr
        .lines()
        .rfind(|l| l.starts_with("summary "))
        .ok_or_else(|| format!("no summary line in saams' stderr:\n{stderr}"))?;
    let mut fields = HashMap::new();
    for kv in line.split_whitespace().skip(1) {
        if let Some((k, v)) = kv.split_once('=') {
            let x: f64 = v.parse().map_err(|_| format!("summary field {kv:?} is not a number"))?;
            fields.insert(k.to_string(), x);
        }
    }
    Ok(fields)
}

struct Runner {
    saams: PathBuf,
    dir: PathBuf,
    repeats: usize,
}

impl Runner {
    /// Run saams once on `processes` processes (loopback) and combine their summaries.
    fn once(&self, processes: usize, workers: usize, args: &[String]) -> Result<RunResult, String> {
        self.once_to(processes, workers, args, &vec![null_device(); processes])
    }

    /// [`once`](Self::once), process `p` writing its estimations to `outs[p]`.
    fn once_to(&self, processes: usize, workers: usize, args: &[String], outs: &[String]) -> Result<RunResult, String> {
        if outs.len() != processes {
            return Err(format!("{} output files for {processes} processes", outs.len()));
        }
        let mut common: Vec<String> = vec!["-w".into(), workers.to_string()];
        common.extend(["--progress".into(), "0".into()]);
        common.extend(args.iter().cloned());
        let mut children = Vec::new();
        if processes > 1 {
            let hostfile = self.dir.join("hostfile.txt");
            let ports = free_ports(processes)?;
            let text: String = ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
            std::fs::write(&hostfile, text).map_err(|e| format!("{}: {e}", hostfile.display()))?;
            for (p, out) in outs.iter().enumerate() {
                let mut c = Command::new(&self.saams);
                c.args(&common).args(["--out", out]);
                c.args(["-n", &processes.to_string(), "-p", &p.to_string(), "-h"]).arg(&hostfile);
                children.push(spawn(c)?);
            }
        } else {
            let mut c = Command::new(&self.saams);
            c.args(&common).args(["--out", &outs[0]]);
            children.push(spawn(c)?);
        }
        collect(children, &common)
    }

    /// `replay --validate` over the input file `data`: the line readers and the parser alone,
    /// nothing routed, updated or written. Its summary's tuples and seconds (first tuple to last).
    fn parse_only(&self, data: &str) -> Result<RunResult, String> {
        let replay = self.saams.with_file_name(format!("replay{}", std::env::consts::EXE_SUFFIX));
        let out = Command::new(&replay)
            .arg("--validate")
            .args(["--progress", "none", data])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", replay.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("replay --validate {data} failed ({}):\n{stderr}", out.status));
        }
        let line = stderr
            .lines()
            .rfind(|l| l.starts_with("replay: done "))
            .ok_or_else(|| format!("no summary line in replay's stderr:\n{stderr}"))?;
        let field = |k: &str| -> Result<f64, String> {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("replay's summary has no number {k}: {line}"))
        };
        Ok(RunResult { tuples: field("tuples")?, seconds: field("seconds")?, ..RunResult::default() })
    }

    /// Runs `outs.len()` independent single-process jobs of `workers` workers at once, each on the
    /// whole input of `args` and answering into its own file of `outs`: tuples add up, seconds
    /// are the slowest job's.
    fn independent_to(&self, workers: usize, args: &[String], outs: &[String]) -> Result<RunResult, String> {
        let mut common: Vec<String> = vec!["-w".into(), workers.to_string()];
        common.extend(["--progress".into(), "0".into()]);
        common.extend(args.iter().cloned());
        let mut children = Vec::new();
        for out in outs {
            let mut c = Command::new(&self.saams);
            c.args(&common).args(["--out", out]);
            children.push(spawn(c)?);
        }
        collect(children, &common)
    }
}

/// Waits for the `saams` processes `children` (run with `common`) and adds up their summaries.
fn collect(children: Vec<std::process::Child>, common: &[String]) -> Result<RunResult, String> {
    let mut r = RunResult::default();
    for child in children {
        let out = child.wait_with_output().map_err(|e| format!("saams: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("saams {} failed ({}):\n{stderr}", common.join(" "), out.status));
        }
        let f = parse_summary(&stderr)?;
        let get = |k: &str| f.get(k).copied().unwrap_or(0.0);
        r.tuples += get("tuples");
        r.seconds = r.seconds.max(get("seconds"));
        r.bytes_between_processes += get("bytes_between_processes");
        r.partial_bytes += get("partial_bytes");
        r.raw_bytes += get("raw_bytes");
        r.estimations += get("estimations");
    }
    Ok(r)
}

impl Runner {
    /// Repeat a setting and keep the run with the median throughput.
    fn median(&self, label: &str, processes: usize, workers: usize, args: &[String]) -> Result<RunResult, String> {
        let mut runs = Vec::new();
        for _ in 0..self.repeats {
            runs.push(self.once(processes, workers, args)?);
        }
        runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
        let m = runs[runs.len() / 2].clone();
        let rates: Vec<String> = runs.iter().map(|r| format!("{:.0}", r.rate())).collect();
        eprintln!("experiment: {label}: median {:.0} tuples/s (runs {})", m.rate(), rates.join(", "));
        Ok(m)
    }
}

fn null_device() -> String {
    if cfg!(windows) { "NUL".into() } else { "/dev/null".into() }
}

fn spawn(mut c: Command) -> Result<std::process::Child, String> {
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| format!("saams: {e}"))
}

/// Ports free right now on loopback (the OS picks them; released before saams binds them).
fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("free port: {e}")))
        .collect::<Result<_, _>>()?;
    listeners.iter().map(|l| l.local_addr().map(|a| a.port()).map_err(|e| format!("free port: {e}"))).collect()
}

/// The paper's per-stream workload for the generator's first `n` streams (as
/// `datasets/requests/paper-workload.json` does for 100).
fn per_stream_requests(n: usize) -> String {
    let spec = GeneratorSpec::parse(&format!("stocks:{n}:1"));
    let mut text = String::new();
    let mut id = 1;
    for i in 0..n {
        let (stream, ds) = match &spec {
            Ok(s) => (s.stream_id(i), s.dataset_key(i)),
            Err(_) => (format!("S{i}"), "Forex"),
        };
        let params = [
            (1, r#"["CountMin","price","NotQueryable",0.002,0.99,12345]"#),
            (2, r#"["HyperLogLog","price","NotQueryable",0.02]"#),
            (4, r#"["DFT","price","NotQueryable",1,500,2000,8]"#),
            (1, r#"[3.2478,"price","Queryable","Continues"]"#),
            (2, r#"["distinct","price","Queryable","Continues"]"#),
            (4, r#"["coefficients","price","Queryable","Continues"]"#),
        ];
        for (syn, p) in params {
            let _ = writeln!(
                text,
                r#"{{"dataSetKey":"{ds}","noOfP":1,"param":{p},"requestID":{id},"streamID":"{stream}","synopsisID":{syn}}}"#
            );
            id += 1;
        }
    }
    text
}

/// CountMin + HyperLogLog (+ a continuous distinct count) on `price`. Dataset-wide (`streams` =
/// 0): the engine makes exact-merge synopses partition-based, each worker summarizes what it
/// reads and ships a partial per window to the tree merge. Per stream (`streams` > 0, `noOfP` 1):
/// each stream's synopses have one owner and the raw tuples go there.
fn federated_requests(streams: usize) -> String {
    let targets: Vec<(String, String)> = if streams == 0 {
        ["Forex", "Equity", "Crypto"].iter().map(|d| (d.to_string(), String::new())).collect()
    } else {
        match GeneratorSpec::parse(&format!("stocks:{streams}:1")) {
            Ok(s) => (0..streams).map(|i| (s.dataset_key(i).to_string(), s.stream_id(i))).collect(),
            Err(_) => Vec::new(),
        }
    };
    let mut text = String::new();
    let mut id = 1;
    for (ds, stream) in targets {
        for (syn, p) in [
            (1, r#"["CountMin","price","NotQueryable",0.002,0.99,12345]"#),
            (2, r#"["HyperLogLog","price","NotQueryable",0.02]"#),
            (2, r#"["distinct","price","Queryable","Continues"]"#),
        ] {
            let _ = writeln!(
                text,
                r#"{{"dataSetKey":"{ds}","noOfP":1,"param":{p},"requestID":{id},"streamID":"{stream}","synopsisID":{syn}}}"#
            );
            id += 1;
        }
    }
    text
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

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

/// One series of a chart: its name and points.
type Series = (String, Vec<(f64, f64)>);

/// A line chart with points (log-scaled y when asked), written as a PNG.
fn chart(path: &Path, title: &str, x_label: &str, y_label: &str, series: &[Series], log_y: bool) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let points = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return Err(format!("{}: no points to draw", path.display()));
    }
    let pad = ((x1 - x0) * 0.05).max(0.5);
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let colors = [RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(148, 103, 189)];
    macro_rules! draw {
        ($chart:expr) => {{
            let mut c = $chart;
            c.configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .x_label_formatter(&|x| human(*x))
                .y_label_formatter(&|y| human(*y))
                .draw()
                .map_err(|e| err(&e))?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let color = colors[i % colors.len()];
                c.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                    .map_err(|e| err(&e))?
                    .label(name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                c.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled()))).map_err(|e| err(&e))?;
            }
            c.configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(if log_y { SeriesLabelPosition::LowerLeft } else { SeriesLabelPosition::LowerRight })
                .draw()
                .map_err(|e| err(&e))?;
        }};
    }
    let mut builder = ChartBuilder::on(&root);
    let (xl, xh) = (x0 / 1.5, x1 * 1.5);
    builder.caption(title, ("sans-serif", 24)).margin(16).x_label_area_size(48).y_label_area_size(90);
    if log_y {
        // Log scales on both axes (the federated figure: windows 5 s → 600 s, bytes).
        let (lo, hi) = (y0.max(1.0) / 2.0, y1.max(2.0) * 2.0);
        draw!(builder.build_cartesian_2d((xl..xh).log_scale(), (lo..hi).log_scale()).map_err(|e| err(&e))?);
    } else {
        draw!(builder.build_cartesian_2d(x0 - pad..x1 + pad, 0.0..y1 * 1.15).map_err(|e| err(&e))?);
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// A number for an axis label: 1.2M, 350k, 12, 0.5.
fn human(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.1}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if a >= 1e3 {
        format!("{:.0}k", x / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn horizontal(r: &Runner, a: &Args, tuples_per_stream: u64) -> Result<(), String> {
    let settings: &[(usize, usize)] =
        if a.quick { &[(1, 1), (1, 2), (2, 1)] } else { &[(1, 1), (1, 2), (1, 4), (2, 1), (2, 2)] };
    let gen_spec = format!("stocks:100:{tuples_per_stream}");
    let args: Vec<String> =
        vec!["--requests".into(), a.requests.display().to_string(), "--generate".into(), gen_spec.clone()];
    let mut tsv = String::from(
        "experiment\tprocesses\tworkers_per_process\tworkers\tstreams\tgenerate\twindow\ttuples\tseconds\ttuples_per_s\tbytes_between_processes\tspeedup_vs_1\n",
    );
    let mut base = None;
    let mut by_procs: HashMap<usize, Vec<(f64, f64)>> = HashMap::new();
    for &(n, w) in settings {
        let m = r.median(&format!("horizontal n={n} w={w}"), n, w, &args)?;
        let base_rate = *base.get_or_insert(m.rate());
        let _ = writeln!(
            tsv,
            "horizontal\t{n}\t{w}\t{}\t100\t{gen_spec}\t60s\t{:.0}\t{:.3}\t{:.0}\t{:.0}\t{:.2}",
            n * w,
            m.tuples,
            m.seconds,
            m.rate(),
            m.bytes_between_processes,
            m.rate() / base_rate
        );
        by_procs.entry(n).or_default().push(((n * w) as f64, m.rate()));
    }
    write(&r.dir.join("horizontal.tsv"), &tsv)?;
    let mut series: Vec<Series> = by_procs
        .into_iter()
        .map(|(n, pts)| (format!("{n} process{}", if n > 1 { "es (loopback)" } else { "" }), pts))
        .collect();
    series.sort_by(|a, b| a.0.cmp(&b.0));
    chart(
        &r.dir.join("fig9-horizontal.png"),
        "Horizontal: 100 streams x CM+HLL+DFT",
        "workers in total",
        "tuples/s (median)",
        &series,
        false,
    )
}

fn vertical(r: &Runner, a: &Args, total: u64) -> Result<(), String> {
    let streams: &[usize] = if a.quick { &[10, 100] } else { &[10, 50, 100, 200, 500] };
    let workers = 2;
    let mut tsv = String::from(
        "experiment\tprocesses\tworkers\tstreams\tsynopses\tgenerate\twindow\ttuples\tseconds\ttuples_per_s\testimations\n",
    );
    let mut pts = Vec::new();
    for &n in streams {
        let req = r.dir.join(format!("requests-{n}-streams.json"));
        write(&req, &per_stream_requests(n))?;
        let gen_spec = format!("stocks:{n}:{}", (total / n as u64).max(1));
        let args = vec!["--requests".into(), req.display().to_string(), "--generate".into(), gen_spec.clone()];
        let m = r.median(&format!("vertical streams={n}"), 1, workers, &args)?;
        let _ = writeln!(
            tsv,
            "vertical\t1\t{workers}\t{n}\t{}\t{gen_spec}\t60s\t{:.0}\t{:.3}\t{:.0}\t{:.0}",
            3 * n,
            m.tuples,
            m.seconds,
            m.rate(),
            m.estimations
        );
        pts.push((n as f64, m.rate()));
    }
    write(&r.dir.join("vertical.tsv"), &tsv)?;
    chart(
        &r.dir.join("fig10-vertical.png"),
        "Vertical: streams x CM+HLL+DFT at 2 workers",
        "streams",
        "tuples/s (median)",
        &[("1 process, 2 workers".into(), pts)],
        false,
    )
}

fn federated(r: &Runner, tuples_per_stream: u64, windows: &[(&str, f64)]) -> Result<(), String> {
    let (processes, workers) = (2, 1);
    let gen_spec = format!("stocks:100:{tuples_per_stream}");
    let raw_req = r.dir.join("federated-raw.json");
    let syn_req = r.dir.join("federated-synopses.json");
    write(&raw_req, &federated_requests(100))?;
    write(&syn_req, &federated_requests(0))?;
    let mut tsv = String::from(
        "experiment\tscheme\tprocesses\tworkers_per_process\tgenerate\twindow\ttuples\tseconds\ttuples_per_s\tbytes_between_processes\traw_record_bytes\tpartial_bytes\twire_ratio_raw_over_synopses\tcodec_ratio_raw_over_partials\tpaper_ratio\n",
    );
    let (mut raw_pts, mut syn_pts, mut codec_pts, mut compact_pts) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &(window, secs) in windows {
        let run = |req: &Path, scheme: &str| {
            let args = vec![
                "--requests".into(),
                req.display().to_string(),
                "--generate".into(),
                gen_spec.clone(),
                "--window".into(),
                window.into(),
            ];
            r.median(&format!("federated {scheme} window={window}"), processes, workers, &args)
        };
        let raw = run(&raw_req, "raw")?;
        let syn = run(&syn_req, "synopses")?;
        let wire = if syn.bytes_between_processes > 0.0 {
            raw.bytes_between_processes / syn.bytes_between_processes
        } else {
            0.0
        };
        let codec = if syn.partial_bytes > 0.0 { syn.raw_bytes / syn.partial_bytes } else { 0.0 };
        for (scheme, m) in [("raw", &raw), ("synopses", &syn)] {
            let _ = writeln!(
                tsv,
                "federated\t{scheme}\t{processes}\t{workers}\t{gen_spec}\t{window}\t{:.0}\t{:.3}\t{:.0}\t{:.0}\t{:.0}\t{:.0}\t{wire:.3}\t{codec:.3}\t28 (cloud) / 215 (continuum)",
                m.tuples,
                m.seconds,
                m.rate(),
                m.bytes_between_processes,
                m.raw_bytes,
                m.partial_bytes
            );
        }
        raw_pts.push((secs, raw.bytes_between_processes));
        syn_pts.push((secs, syn.bytes_between_processes));
        codec_pts.push((secs, syn.partial_bytes));
        compact_pts.push((secs, syn.raw_bytes));
    }
    write(&r.dir.join("federated.tsv"), &tsv)?;
    chart(
        &r.dir.join("fig11-federated.png"),
        "Federated: bytes between 2 processes (100 streams)",
        "event-time window (s, log)",
        "bytes (log)",
        &[
            ("all tuples as compact records".into(), compact_pts),
            ("raw tuples to owners (measured, between processes)".into(), raw_pts),
            ("partials shipped (encoded, all processes)".into(), codec_pts),
            ("partials (measured, between processes)".into(), syn_pts),
        ],
        true,
    )
}

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
        if !["horizontal", "vertical", "federated", "memory", "ingest"].contains(o) {
            return Err(format!("--only: unknown experiment {o:?} (horizontal, vertical, federated, memory, ingest)"));
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
        horizontal(&r, a, per_stream)?;
    }
    if only.contains(&"vertical") {
        vertical(&r, a, total)?;
    }
    if only.contains(&"federated") {
        // 1d covers the whole input: one shipment per site and synopsis, as the paper's 5 s of
        // processing time does when the input replays as fast as possible in under 5 s.
        let windows: &[(&str, f64)] = if a.quick {
            &[("5s", 5.0), ("60s", 60.0), ("1d", 86_400.0)]
        } else {
            &[("5s", 5.0), ("60s", 60.0), ("600s", 600.0), ("1d", 86_400.0)]
        };
        federated(&r, per_stream, windows)?;
    }
    if only.contains(&"memory") {
        memory(&r, a, per_stream)?;
    }
    if only.contains(&"ingest") {
        ingest(&r, a, per_stream)?;
    }
    println!("experiment: results in {}", dir.display());
    Ok(())
}

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
fn memory(r: &Runner, a: &Args, tuples_per_stream: u64) -> Result<(), String> {
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

/// CPU seconds (user + system) of this process' children that have been waited for, from
/// `/proc/self/stat` (`cutime` + `cstime`): the difference across a run is what the run's `saams`
/// processes used, all workers and both processes of a loopback pair included. `None` where there
/// is no `/proc`.
fn children_cpu_seconds(ticks: f64) -> Option<f64> {
    proc_stat_cpu("/proc/self/stat", 13, ticks)
}

/// CPU seconds (user + system) a running process has used so far (`utime` + `stime` of
/// `/proc/<pid>/stat`).
fn process_cpu_seconds(pid: u32, ticks: f64) -> Option<f64> {
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
fn clock_ticks() -> f64 {
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
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// The pid in a broker's pidfile (scripts/start-kafka.sh writes one).
fn read_pid(path: &Path) -> Result<u32, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--kafka-pidfile {}: {e}", path.display()))?;
    text.trim().parse().map_err(|_| format!("--kafka-pidfile {}: {:?} is not a pid", path.display(), text.trim()))
}

/// The estimation lines of a run's output files, sorted (processes write their own files; the
/// order of lines within and across files depends on the workers' scheduling, their set does not).
fn sorted_estimations(outs: &[String]) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for o in outs {
        let text = std::fs::read_to_string(o).map_err(|e| format!("{o}: {e}"))?;
        lines.extend(text.lines().map(str::to_string));
    }
    lines.sort_unstable();
    Ok(lines)
}

/// The first line two sorted answer sets differ in, for the failure message.
fn first_difference(a: &[String], b: &[String]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!("line {i} of the sorted answers: {:?} against {:?}", a[i], b[i]),
        None => format!("{} lines against {}", a.len(), b.len()),
    }
}

/// One setting of the ingest experiment.
struct IngestSetting {
    /// Short name (TSV `setting` column).
    name: &'static str,
    /// generator, file or kafka.
    input: &'static str,
    processes: usize,
    workers: usize,
    /// saams' input flags (and `--no-synopses`).
    args: Vec<String>,
    /// Compared with the `-w 1` file run's answers (the generator's are reported, not required).
    checked: bool,
    /// Seconds of the summary that are no ingest: the wait of `--exit-when-idle` (Kafka).
    idle_seconds: f64,
    /// The processes are independent jobs started at once (each reads the whole input), not one
    /// cluster of `-n processes`.
    independent: bool,
}

/// One run of a setting: the summary, the children's CPU seconds, the processes' wall time, the
/// load before it and, for Kafka, the broker's CPU seconds during it.
#[derive(Clone, Debug, Default)]
struct IngestRun {
    tuples: f64,
    /// The summary's seconds (first tuple read to last window closed), less the idle wait.
    seconds: f64,
    cpu_seconds: f64,
    process_seconds: f64,
    load: f64,
    broker_cpu_seconds: Option<f64>,
}

impl IngestRun {
    fn rate(&self) -> f64 {
        if self.seconds > 0.0 { self.tuples / self.seconds } else { 0.0 }
    }

    fn per_cpu_second(&self) -> f64 {
        if self.cpu_seconds > 0.0 { self.tuples / self.cpu_seconds } else { 0.0 }
    }
}

/// The median of some numbers (the upper one of an even count); 0 for none.
fn median_of(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// Ingest (`--only ingest`, issue 15): the paper's workload from a JSON-lines file of the
/// generator's tuples against the generator itself, in alternating rounds of the same run, at
/// `-w 1`, `-w 1 --no-synopses`, `-w 2` and `-n 2 -w 1`, and from a Kafka topic of the same
/// tuples at `-w 2` when `--kafka-brokers` is given. Every setting's answers must equal the `-w 1`
/// file run's, sorted, byte for byte (the experiment fails otherwise). `ingest.tsv` has one row
/// per setting (medians of the rounds); `ingest-targets.tsv` the issue's ratios against its
/// targets, each with the load average during the runs it compares.
fn ingest(r: &Runner, a: &Args, tuples_per_stream: u64) -> Result<(), String> {
    let ticks = clock_ticks();
    let requests = a.requests.display().to_string();
    let generate = format!("stocks:100:{tuples_per_stream}");
    let replay = r.saams.with_file_name(format!("replay{}", std::env::consts::EXE_SUFFIX));
    if !replay.is_file() {
        return Err(format!("{} not found: build it with `cargo build --release -p saams-jobs`", replay.display()));
    }
    let file = r.dir.join("ingest-tuples.jsonl");
    let load_tuples = |extra: &[&str]| -> Result<(), String> {
        let out = Command::new(&replay)
            .args(["--generate", &generate, "--progress", "none"])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("replay: {e}"))?;
        if !out.status.success() {
            return Err(format!("replay {extra:?} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
        }
        Ok(())
    };
    load_tuples(&["--output", &file.display().to_string()])?;
    let data = file.display().to_string();
    let strings = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let on_file = |extra: &[&str]| [strings(&["--requests", &requests, "--data", &data]), strings(extra)].concat();
    // A setting on the file: (name, processes, workers, extra flags, answers checked).
    let on_file_setting = |name, processes, workers, extra: &[&str], checked| IngestSetting {
        name,
        input: "file",
        processes,
        workers,
        args: on_file(extra),
        checked,
        idle_seconds: 0.0,
        independent: false,
    };
    let mut settings = vec![
        IngestSetting {
            name: "generator-w1",
            input: "generator",
            processes: 1,
            workers: 1,
            args: strings(&["--requests", &requests, "--generate", &generate]),
            checked: false,
            idle_seconds: 0.0,
            independent: false,
        },
        on_file_setting("file-w1", 1, 1, &[], true),
        on_file_setting("file-w1-no-synopses", 1, 1, &["--no-synopses"], false),
        on_file_setting("file-w2", 1, 2, &[], true),
        on_file_setting("file-n2-w1", 2, 1, &[], true),
        // What two cores give two jobs that share nothing: -w 2 and -n 2 can at best match it.
        IngestSetting { independent: true, ..on_file_setting("two-file-w1-jobs", 2, 1, &[], true) },
        // The parser's pace: the same file through the same line reader and parser, nothing else.
        IngestSetting {
            name: "parse-only",
            input: "parse-only",
            processes: 1,
            workers: 1,
            args: strings(&["--data", &data]),
            checked: false,
            idle_seconds: 0.0,
            independent: false,
        },
    ];
    let ais_file = r.dir.join("ingest-ais.csv");
    match write_ais_rows(&a.datasets.join("ais"), &ais_file, 5_000_000)? {
        Some(rows) => {
            eprintln!("experiment: ingest: {rows} AIS rows in {}", ais_file.display());
            let args = [("--requests", &a.ais_requests), ("--data", &ais_file)]
                .iter()
                .flat_map(|(flag, path)| [flag.to_string(), path.display().to_string()])
                .chain(["--format".to_string(), "ais-csv".to_string()])
                .collect();
            settings.push(IngestSetting {
                name: "ais-csv-w1",
                input: "ais-csv",
                processes: 1,
                workers: 1,
                args,
                checked: false,
                idle_seconds: 0.0,
                independent: false,
            });
        }
        None => eprintln!(
            "experiment: ingest: no AIS sample under {}: the AIS CSV setting is skipped (set SAAMS_DATASETS)",
            a.datasets.join("ais").display()
        ),
    }
    let broker_pid = a.kafka_pidfile.as_deref().map(read_pid).transpose()?;
    let mut topic = None;
    if let Some(brokers) = &a.kafka_brokers {
        let topic = topic.insert(format!("saams-ingest-{}-{tuples_per_stream}", std::process::id()));
        eprintln!("experiment: ingest: loading {generate} into topic {topic} at {brokers}");
        load_tuples(&["--brokers", brokers, "--topic", topic, "--partitions", "4"])?;
        let idle = 2.0;
        settings.push(IngestSetting {
            name: "kafka-w2",
            input: "kafka",
            processes: 1,
            workers: 2,
            args: strings(&[
                "--requests",
                &requests,
                "--brokers",
                brokers,
                "--data-topic",
                topic,
                "--from",
                "earliest",
                "--exit-when-idle",
                &format!("{idle}s"),
            ]),
            checked: true,
            idle_seconds: idle,
            independent: false,
        });
    }
    let result = ingest_rounds(r, &settings, broker_pid, ticks);
    if let Some(brokers) = &a.kafka_brokers
        && let Some(topic) = &topic
    {
        // The broker may keep records in memory: drop this run's copy (≈ 130 bytes a tuple).
        let opts = saams_jobs::kafka_client::KafkaOptions::new(brokers, "saams-experiment");
        if let Err(e) = saams_jobs::kafka_client::delete_topics(&opts, &[topic]) {
            eprintln!("experiment: ingest: topic {topic} not deleted: {e}");
        }
    }
    std::fs::remove_file(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    if ais_file.exists() {
        std::fs::remove_file(&ais_file).map_err(|e| format!("{}: {e}", ais_file.display()))?;
    }
    let (runs, generator_answers_equal) = result?;
    ingest_report(r, &settings, &runs, generator_answers_equal)
}

/// The file a setting reads (`--data FILE`), if it reads one.
fn data_file(args: &[String]) -> Option<&str> {
    args.windows(2).find(|w| w[0] == "--data").map(|w| w[1].as_str())
}

/// Read `path` once, start to end, so that the run after it finds the file in the page cache.
///
/// Why: the machines this runs on drop file pages from the page cache within minutes, with
/// gigabytes free and no reclaim counted (`/proc/vmstat`: `pgscan_*` and `drop_pagecache`
/// unchanged), so without this a file run read part of its 640 MB input from the virtual disk,
/// more of it in later rounds, and paid for it in CPU: four alternating runs of `-w 1` on the
/// same file took 2.36–2.81 CPU-s with the file evicted (`POSIX_FADV_DONTNEED`) against
/// 1.83–2.22 read just before. The settings compare ingest from a file, not the disk: every file
/// setting now starts from the same cache state. The read is this process's, outside the
/// children's CPU seconds and wall time the figures count.
fn warm_page_cache(path: &Path) -> Result<(), String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::io::copy(&mut file, &mut std::io::sink()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// An AIS CSV of at least `rows` data rows at `out`: the first `.csv` sample under `dir` (the
/// NOAA MarineCadastre one) repeated, each copy one day after the previous one (its
/// `BaseDateTime` dates shifted), so event time moves forward as in a longer recording and no
/// row is late. `None` when there is no sample.
fn write_ais_rows(dir: &Path, out: &Path, rows: u64) -> Result<Option<u64>, String> {
    use std::io::Write as _;
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(None) };
    let mut samples: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    samples.sort();
    let Some(sample) = samples.first() else { return Ok(None) };
    let text = std::fs::read_to_string(sample).map_err(|e| format!("{}: {e}", sample.display()))?;
    let (header, body) = text.split_once('\n').ok_or_else(|| format!("{}: no data rows", sample.display()))?;
    let per_copy = body.lines().filter(|l| !l.trim().is_empty()).count() as u64;
    // The sample's date, from its first row's second column (`BaseDateTime`, `yyyy-mm-ddThh:mm:ss`).
    let date = body.lines().next().and_then(|l| l.split(',').nth(1)).and_then(|t| t.get(..10)).unwrap_or("");
    let ymd: Vec<u32> = date.split('-').filter_map(|x| x.parse().ok()).collect();
    let [y, m, d] = ymd[..] else {
        return Err(format!("{}: first row's time is not yyyy-mm-dd…: {date:?}", sample.display()));
    };
    if per_copy == 0 {
        return Err(format!("{}: no data rows", sample.display()));
    }
    let day0 = saams::api::time::days_from_civil(i64::from(y), m, d);
    let mut w = std::io::BufWriter::new(std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?);
    let io = |e: std::io::Error| format!("{}: {e}", out.display());
    writeln!(w, "{header}").map_err(io)?;
    let copies = rows.div_ceil(per_copy);
    for k in 0..copies {
        let (cy, cm, cd) = saams::api::time::civil_from_days(day0 + k as i64);
        let shifted = body.replace(&format!(",{date}T"), &format!(",{cy:04}-{cm:02}-{cd:02}T"));
        w.write_all(shifted.as_bytes()).map_err(io)?;
        if !shifted.ends_with('\n') {
            writeln!(w).map_err(io)?;
        }
    }
    w.flush().map_err(io)?;
    Ok(Some(copies * per_copy))
}

/// The alternating rounds of the ingest settings: every setting's runs (by setting), and whether
/// the generator's answers equal the file's. Fails when a checked setting's answers differ from
/// the `-w 1` file run's.
fn ingest_rounds(
    r: &Runner,
    settings: &[IngestSetting],
    broker_pid: Option<u32>,
    ticks: f64,
) -> Result<(Vec<Vec<IngestRun>>, bool), String> {
    let mut reference: Option<Vec<String>> = None;
    let mut generator_answers_equal = true;
    let mut runs: Vec<Vec<IngestRun>> = vec![Vec::new(); settings.len()];
    for round in 0..r.repeats {
        // file-w1 first: its answers are the reference the others are checked against.
        let order = std::iter::once(1).chain((0..settings.len()).filter(|&i| i != 1));
        for i in order {
            let s = &settings[i];
            let outs: Vec<String> = (0..s.processes)
                .map(|p| r.dir.join(format!("ingest-{}-p{p}.json", s.name)).display().to_string())
                .collect();
            let mut args = s.args.clone();
            if s.input == "kafka" {
                // A group of its own per run: no offsets committed by an earlier run are met.
                args.extend(["--group-id".into(), format!("saams-ingest-{}-{round}", std::process::id())]);
            }
            if let Some(path) = data_file(&s.args) {
                warm_page_cache(Path::new(path))?;
            }
            let load = load_average().unwrap_or(f64::NAN);
            let broker_before = broker_pid.and_then(|p| process_cpu_seconds(p, ticks));
            let cpu_before = children_cpu_seconds(ticks);
            let started = std::time::Instant::now();
            let parse_only = s.input == "parse-only";
            let m = if parse_only {
                let data = data_file(&s.args).ok_or("ingest: the parse-only setting names no --data file")?;
                r.parse_only(data)?
            } else if s.independent {
                r.independent_to(s.workers, &args, &outs)?
            } else {
                r.once_to(s.processes, s.workers, &args, &outs)?
            };
            let process_seconds = started.elapsed().as_secs_f64();
            let cpu = cpu_before.zip(children_cpu_seconds(ticks)).map(|(b, a)| a - b).unwrap_or(0.0);
            let broker = if s.input == "kafka" {
                broker_before.zip(broker_pid.and_then(|p| process_cpu_seconds(p, ticks))).map(|(b, a)| a - b)
            } else {
                None
            };
            // Independent jobs each answer the whole input: checked one by one. A parse-only
            // pass answers nothing.
            let answered = if parse_only {
                0
            } else if s.independent {
                1
            } else {
                outs.len()
            };
            let answers = sorted_estimations(&outs[..answered])?;
            if s.independent
                && let Some(base) = &reference
            {
                for o in &outs[1..] {
                    let other = sorted_estimations(std::slice::from_ref(o))?;
                    if *base != other {
                        return Err(format!("ingest: {} answers differ from file-w1's in {o}", s.name));
                    }
                }
            }
            // Answers equal to file-w1's (or none) are not kept: one copy is (≈ 50 MB at 5 M tuples).
            let mut keep = s.name == "file-w1";
            match (&reference, s.name) {
                (None, "file-w1") => reference = Some(answers),
                (Some(base), _) if s.checked && *base != answers => {
                    return Err(format!(
                        "ingest: {} answers differ from file-w1's ({}); they are in {}",
                        s.name,
                        first_difference(base, &answers),
                        outs.join(", ")
                    ));
                }
                (Some(base), "generator-w1") => {
                    keep = *base != answers;
                    generator_answers_equal &= !keep;
                }
                _ => {}
            }
            if !keep && !parse_only {
                for o in &outs {
                    std::fs::remove_file(o).map_err(|e| format!("{o}: {e}"))?;
                }
            }
            let run = IngestRun {
                tuples: m.tuples,
                seconds: (m.seconds - s.idle_seconds).max(0.0),
                cpu_seconds: cpu,
                process_seconds,
                load,
                broker_cpu_seconds: broker,
            };
            eprintln!(
                "experiment: ingest round {round} {}: {:.0} tuples/s, {:.0} tuples per CPU-second (load {load:.2})",
                s.name,
                run.rate(),
                run.per_cpu_second()
            );
            runs[i].push(run);
        }
    }
    Ok((runs, generator_answers_equal))
}

/// `ingest.tsv`, `ingest-targets.tsv` and `ingest.png` from the runs of every setting.
fn ingest_report(
    r: &Runner,
    settings: &[IngestSetting],
    runs: &[Vec<IngestRun>],
    generator_answers_equal: bool,
) -> Result<(), String> {
    let medians: Vec<IngestRun> = runs
        .iter()
        .map(|rs| {
            let col = |f: &dyn Fn(&IngestRun) -> f64| median_of(rs.iter().map(f).collect());
            IngestRun {
                tuples: col(&|x| x.tuples),
                seconds: col(&|x| x.seconds),
                cpu_seconds: col(&|x| x.cpu_seconds),
                process_seconds: col(&|x| x.process_seconds),
                load: col(&|x| x.load),
                broker_cpu_seconds: rs
                    .iter()
                    .all(|x| x.broker_cpu_seconds.is_some())
                    .then(|| median_of(rs.iter().filter_map(|x| x.broker_cpu_seconds).collect())),
            }
        })
        .collect();
    // Rates are medians of the runs' own rates, not the ratio of the median tuples and seconds.
    let rate = |i: usize| median_of(runs[i].iter().map(IngestRun::rate).collect());
    let per_cpu = |i: usize| median_of(runs[i].iter().map(IngestRun::per_cpu_second).collect());
    let mut tsv = String::from(
        "experiment\tsetting\tinput\tprocesses\tworkers_per_process\ttuples\tseconds\ttuples_per_s\tcpu_seconds\ttuples_per_cpu_s\tprocess_wall_s\tload1\tbroker_cpu_s\tanswers\n",
    );
    for (i, (s, m)) in settings.iter().zip(&medians).enumerate() {
        let answers = match (s.checked, s.name) {
            (true, _) => "equal to file-w1",
            (false, "generator-w1") if generator_answers_equal => "equal to file-w1",
            (false, "generator-w1") => "differ from file-w1",
            (false, "ais-csv-w1") => "own workload (not compared)",
            (false, "parse-only") => "none (parsed only)",
            _ => "none (no synopses)",
        };
        let _ = writeln!(
            tsv,
            "ingest\t{}\t{}\t{}\t{}\t{:.0}\t{:.3}\t{:.0}\t{:.3}\t{:.0}\t{:.3}\t{:.2}\t{}\t{answers}",
            s.name,
            s.input,
            s.processes,
            s.workers,
            m.tuples,
            m.seconds,
            rate(i),
            m.cpu_seconds,
            per_cpu(i),
            m.process_seconds,
            m.load,
            m.broker_cpu_seconds.map(|b| format!("{b:.3}")).unwrap_or_default()
        );
    }
    write(&r.dir.join("ingest.tsv"), &tsv)?;
    let index = |name: &str| settings.iter().position(|s| s.name == name);
    let (gen1, file1, bare, w2, n2) = (0, 1, 2, 3, 4);
    let load_of = |is: &[usize]| is.iter().map(|&i| medians[i].load).fold(0.0, f64::max);
    let mut targets = String::from("measure\tvalue\ttarget\tmet\tload1\n");
    let mut target = |name: &str, value: f64, goal: f64, is: &[usize]| {
        let met = if value >= goal { "yes" } else { "no" };
        let load = load_of(is);
        let _ = writeln!(targets, "{name}\t{value:.3}\t{goal}\t{met}\t{load:.2}");
        eprintln!("experiment: ingest {name} = {value:.3} (target >= {goal}: {met}; load {load:.2})");
    };
    target("file_w1_tuples_per_cpu_s_millions", per_cpu(file1) / 1e6, 3.0, &[file1]);
    target("file_w1_over_generator_w1_wall", rate(file1) / rate(gen1), 0.8, &[file1, gen1]);
    target("file_w1_over_generator_w1_per_cpu_s", per_cpu(file1) / per_cpu(gen1), 0.8, &[file1, gen1]);
    target("file_no_synopses_tuples_per_cpu_s_millions", per_cpu(bare) / 1e6, 6.0, &[bare]);
    target("file_w2_over_w1_wall", rate(w2) / rate(file1), 1.8, &[w2, file1]);
    // With the cores to itself, -w 2 at 1.8x the wall rate of -w 1 spends at most 2/1.8 as much
    // CPU per tuple: 0.9 of -w 1's tuples per CPU-second.
    target("file_w2_over_w1_per_cpu_s", per_cpu(w2) / per_cpu(file1), 0.9, &[w2, file1]);
    target("file_n2w1_over_w1_wall", rate(n2) / rate(file1), 1.7, &[n2, file1]);
    target("file_n2w1_over_w1_per_cpu_s", per_cpu(n2) / per_cpu(file1), 0.85, &[n2, file1]);
    // The machine's ceiling for the two ratios above: two jobs sharing nothing against one. When
    // it is below a target, no engine meets that target on this machine.
    if let Some(two) = index("two-file-w1-jobs") {
        let ceiling = rate(two) / rate(file1);
        target("machine_two_w1_jobs_over_one_wall", ceiling, 1.8, &[two, file1]);
        target("file_w2_over_w1_wall_of_machine_ceiling", rate(w2) / rate(file1) / ceiling, 0.9, &[w2, two, file1]);
        target("file_n2w1_over_w1_wall_of_machine_ceiling", rate(n2) / rate(file1) / ceiling, 0.85, &[n2, two, file1]);
    }
    if let Some(ais) = index("ais-csv-w1") {
        target("ais_csv_w1_rows_per_cpu_s_millions", per_cpu(ais) / 1e6, 2.0, &[ais]);
    }
    if let Some(k) = index("kafka-w2") {
        target("kafka_w2_over_file_w2_wall", rate(k) / rate(w2), 0.8, &[k, w2]);
        target("kafka_w2_over_file_w2_per_cpu_s", per_cpu(k) / per_cpu(w2), 0.8, &[k, w2]);
        if let Some(b) = medians[k].broker_cpu_seconds {
            let with_broker = medians[k].tuples / (medians[k].cpu_seconds + b);
            target("kafka_w2_with_broker_over_file_w2_per_cpu_s", with_broker / per_cpu(w2), 0.8, &[k, w2]);
        }
    }
    // How close the engine comes to the parser's pace (the issue's title), measured in the same
    // run: no target of their own, so `target` and `met` are left empty.
    if let Some(parse) = index("parse-only") {
        let pace = [
            ("parse_only_tuples_per_cpu_s_millions", per_cpu(parse) / 1e6, vec![parse]),
            ("file_w1_over_parse_only_per_cpu_s", per_cpu(file1) / per_cpu(parse), vec![file1, parse]),
            ("file_no_synopses_over_parse_only_per_cpu_s", per_cpu(bare) / per_cpu(parse), vec![bare, parse]),
        ];
        for (name, value, is) in pace {
            let load = load_of(&is);
            let _ = writeln!(targets, "{name}\t{value:.3}\t\t\t{load:.2}");
            eprintln!("experiment: ingest {name} = {value:.3} (load {load:.2})");
        }
    }
    write(&r.dir.join("ingest-targets.tsv"), &targets)?;
    let bars: Vec<(&str, f64, f64)> = settings.iter().enumerate().map(|(i, s)| (s.name, rate(i), per_cpu(i))).collect();
    ingest_chart(&r.dir.join("ingest.png"), &bars)?;
    if !generator_answers_equal {
        eprintln!("experiment: ingest: the generator's answers differ from the file's (reported, not required)");
    }
    Ok(())
}

/// Bars per ingest setting: wall-clock tuples/s and tuples per CPU-second, side by side.
fn ingest_chart(path: &Path, bars: &[(&str, f64, f64)]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let top = bars.iter().map(|&(_, a, b)| a.max(b)).fold(1.0, f64::max) * 1.15;
    let root = BitMapBackend::new(path, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut c = ChartBuilder::on(&root)
        .caption("Ingest: paper workload, 100 streams (medians)", ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5..bars.len() as f64 - 0.5, 0.0..top)
        .map_err(|e| err(&e))?;
    let names: Vec<&str> = bars.iter().map(|b| b.0).collect();
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len())
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).copied().unwrap_or("").to_string()
            } else {
                String::new()
            }
        })
        .y_desc("tuples per second")
        .y_label_formatter(&|y| human(*y))
        .draw()
        .map_err(|e| err(&e))?;
    let series =
        [("wall-clock tuples/s", RGBColor(31, 119, 180), -0.4), ("tuples per CPU-second", RGBColor(214, 39, 40), 0.0)];
    for (k, &(label, color, offset)) in series.iter().enumerate() {
        let rects = bars.iter().enumerate().map(|(i, b)| {
            let v = if k == 0 { b.1 } else { b.2 };
            let x = i as f64 + offset;
            Rectangle::new([(x, 0.0), (x + 0.38, v)], color.filled())
        });
        c.draw_series(rects)
            .map_err(|e| err(&e))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}
