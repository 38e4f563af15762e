//! Ad-hoc latency under load: how long an ad-hoc query takes from arrival to answer while the
//! job ingests at its full rate.
//!
//! Starts `saams` (next to this binary) on the unbounded generator with a request script (the
//! paper workload by default) and `--http`, posts ad-hoc queries one after another over HTTP
//! (the query must be for a synopsis of the script), and as many ad-hoc pair queries (DFT
//! correlation over the dataset's streams by default) in turn with them, measures each round
//! trip, stops the job with SIGTERM and prints p50 / p90 / p99 / max of each kind of query (a
//! line each) and the job's ingest rate from its summary.
//! With `-n 2` or more the job runs as that many processes on loopback ports (the HTTP server is
//! process 0's), so every query crosses the network threads both ways; `--network-sched` is
//! passed on, to compare how they are scheduled.
//!
//! With `--fenced` it times requests that take effect at a fence instead (a construct and its
//! delete, in turns): the round trip to their acknowledgement. With `--checkpoints DIR` the job
//! writes checkpoints there, and every such request is synced to its request log before it is
//! acknowledged (the cost of "acknowledged means durable").
//!
//! ```text
//! adhoc-latency [-w 2] [-n 1] [--network-sched batch] [--queries 300] [--every-ms 20]
//!               [--requests FILE] [--generate stocks:100] [--query JSON] [--pair-query JSON|none]
//!               [--fenced] [--checkpoints DIR]
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::Parser;

/// Ad-hoc query latency while the job ingests at full rate.
#[derive(Parser, Debug)]
#[command(name = "adhoc-latency")]
struct Args {
    /// Worker threads of the job.
    #[arg(short = 'w', default_value_t = 2)]
    workers: usize,
    /// Processes of the job, on free loopback ports.
    #[arg(short = 'n', default_value_t = 1)]
    processes: usize,
    /// The job's `--network-sched` (scheduling of its network threads, with `-n` above 1).
    #[arg(long = "network-sched", default_value = "batch")]
    network_sched: String,
    /// Queries to time.
    #[arg(long, default_value_t = 300)]
    queries: usize,
    /// Pause between queries (ms).
    #[arg(long = "every-ms", default_value_t = 20)]
    every_ms: u64,
    /// Request script of the job.
    #[arg(long, default_value = "datasets/requests/paper-workload.json")]
    requests: String,
    /// The generator (unbounded).
    #[arg(long, default_value = "stocks:100")]
    generate: String,
    /// The ad-hoc query posted (a synopsis of the script).
    #[arg(
        long,
        default_value = r#"{"dataSetKey":"Forex","param":[0.06525,"price","Queryable","AdHoc"],"requestID":"lat","streamID":"EURTRY","synopsisID":1}"#
    )]
    query: String,
    /// The ad-hoc pair query posted in turn with `--query` (`none`: single queries only).
    #[arg(
        long = "pair-query",
        default_value = r#"{"dataSetKey":"Forex","param":[0.9,"price","Queryable","AdHoc"],"requestID":"pair","streamID":"EURTRY","synopsisID":4}"#
    )]
    pair_query: String,
    /// Time acknowledgements of fenced requests (a construct and its delete, in turns) instead
    /// of ad-hoc queries.
    #[arg(long)]
    fenced: bool,
    /// The job writes checkpoints (and its request log) in this directory (emptied first).
    #[arg(long)]
    checkpoints: Option<String>,
    /// The job's `--checkpoint-interval` with `--checkpoints`.
    #[arg(long = "checkpoint-interval", default_value = "1s")]
    checkpoint_interval: String,
}

/// The `i`-th fenced request: a Count-Min on a stream of its own (no tuples: the fence is what
/// is timed), constructed then deleted.
fn fenced_request(i: usize) -> String {
    let status = if i.is_multiple_of(2) { "NotQueryable" } else { "Delete" };
    format!(
        r#"{{"dataSetKey":"Forex","streamID":"ack-latency","synopsisID":1,"requestID":"f{i}","param":["CountMin","price","{status}",0.01,0.99,7]}}"#
    )
}

fn post(addr: &str, body: &str) -> Result<String, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    write!(
        s,
        "POST /requests HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).map_err(|e| e.to_string())?;
    if !reply.starts_with("HTTP/1.1 200") {
        return Err(format!("the job answered: {reply}"));
    }
    Ok(reply)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() -> Result<(), String> {
    let args = Args::parse();
    let saams = std::env::current_exe().map_err(|e| e.to_string())?.with_file_name("saams");
    if args.processes == 0 {
        return Err("-n must be at least 1".into());
    }
    let hostfile = std::env::temp_dir().join(format!("adhoc-latency-{}.hosts", std::process::id()));
    if args.processes > 1 {
        write_hostfile(&hostfile, args.processes)?;
    }
    // Every process' summary line (its own workers' tuples), and process 0's HTTP address.
    let (tx, rx) = std::sync::mpsc::channel();
    let (mut processes, readers) = start_job(&args, &saams, &hostfile, &tx)?;
    let timed =
        rx.recv_timeout(Duration::from_secs(60)).map_err(|_| "the job did not start its HTTP server".to_string());
    let timed = timed.and_then(|addr| time_queries(&args, &addr));
    // Every process is told first: one stopped alone waits for the others to end the dataflow.
    for p in &processes {
        let _ = Command::new("kill").args(["-TERM", &p.id().to_string()]).status();
    }
    for p in &mut processes {
        let _ = p.wait();
    }
    let _ = std::fs::remove_file(&hostfile);
    // The job's rate: the sum of its processes' (each counts the tuples its workers read).
    let rates: Vec<Option<f64>> = readers
        .into_iter()
        .map(|r| {
            let summary = r.join().unwrap_or_default();
            summary.split(' ').find_map(|f| f.strip_prefix("tuples_per_s=")).and_then(|v| v.parse().ok())
        })
        .collect();
    let rate = rates.into_iter().sum::<Option<f64>>().map_or("?".to_string(), |r| format!("{r:.0}"));
    // The job is stopped before a failure (no HTTP server, a failed query) is reported.
    let series = timed?;
    for (kind, mut ms) in series {
        if ms.is_empty() {
            continue;
        }
        ms.sort_by(f64::total_cmp);
        println!(
            "adhoc-latency -w {} -n {} network_sched={} query={kind} checkpoints={} queries={} p50_ms={:.2} p90_ms={:.2} p99_ms={:.2} max_ms={:.2} ingest_tuples_per_s={rate}",
            args.workers,
            args.processes,
            args.network_sched,
            args.checkpoints.is_some(),
            ms.len(),
            percentile(&ms, 0.5),
            percentile(&ms, 0.9),
            percentile(&ms, 0.99),
            ms[ms.len() - 1]
        );
    }
    Ok(())
}

/// A hostfile of `processes` free loopback ports.
fn write_hostfile(hostfile: &Path, processes: usize) -> Result<(), String> {
    let port = || TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port());
    let hosts = (0..processes)
        .map(|_| port().map(|p| format!("127.0.0.1:{p}\n")))
        .collect::<Result<String, _>>()
        .map_err(|e| format!("a free port: {e}"))?;
    std::fs::write(hostfile, hosts).map_err(|e| format!("{}: {e}", hostfile.display()))
}

/// Starts the job's processes (the last first; process 0 serves HTTP): the children, and per
/// process a thread reading its stderr that sends process 0's HTTP address on `tx` and returns
/// the process' summary line.
fn start_job(
    args: &Args,
    saams: &Path,
    hostfile: &Path,
    tx: &Sender<String>,
) -> Result<(Vec<Child>, Vec<JoinHandle<String>>), String> {
    let checkpoints: Vec<String> = match &args.checkpoints {
        Some(dir) => {
            let _ = std::fs::remove_dir_all(dir);
            ["--checkpoints", dir, "--checkpoint-interval", &args.checkpoint_interval].map(String::from).to_vec()
        }
        None => Vec::new(),
    };
    let start = |process: usize, cluster: &[String], stderr: Stdio| {
        Command::new(saams)
            .args(&checkpoints)
            .args(["-w", &args.workers.to_string(), "--requests", &args.requests, "--generate", &args.generate])
            .args(["--progress", "0", "--out", "/dev/null", "--network-sched", &args.network_sched])
            .args(cluster)
            .args(if process == 0 { &["--http", "127.0.0.1:0"][..] } else { &[] })
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("{}: {e}", saams.display()))
    };
    let cluster = |p: usize| match args.processes {
        1 => Vec::new(),
        n => ["-n", &n.to_string(), "-p", &p.to_string(), "-h", &hostfile.display().to_string()]
            .map(String::from)
            .to_vec(),
    };
    let mut processes = Vec::new();
    let mut readers = Vec::new();
    for p in (0..args.processes).rev() {
        let mut child = start(p, &cluster(p), Stdio::piped())?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || {
            let mut summary = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("saams: http on http://") {
                    let _ = tx.send(addr.to_string());
                }
                if line.starts_with("summary ") {
                    summary = line;
                }
            }
            summary
        }));
        processes.push(child);
    }
    Ok((processes, readers))
}

/// Posts the query `args.queries` times to the job at `addr`, and the pair query as often in
/// turn with it (unless `none`) — or, with `--fenced`, the fenced requests — pausing between
/// them: each series' round trips in milliseconds, named. An answer that is an error fails the
/// run.
fn time_queries(args: &Args, addr: &str) -> Result<Vec<(&'static str, Vec<f64>)>, String> {
    std::thread::sleep(Duration::from_millis(500)); // at full rate before the first query
    let mut queries: Vec<(&'static str, Vec<f64>)> = vec![(if args.fenced { "fenced" } else { "single" }, Vec::new())];
    if !args.fenced && args.pair_query != "none" {
        queries.push(("pair", Vec::new()));
    }
    for i in 0..args.queries {
        for (kind, times) in &mut queries {
            let body = match *kind {
                "fenced" => fenced_request(i),
                "pair" => args.pair_query.clone(),
                _ => args.query.clone(),
            };
            let t = Instant::now();
            let reply = post(addr, &body)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            if reply.contains("\"error\"") {
                return Err(format!("{body} was answered with an error: {reply}"));
            }
            std::thread::sleep(Duration::from_millis(args.every_ms));
        }
    }
    Ok(queries)
}
