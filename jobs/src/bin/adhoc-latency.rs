//! Ad-hoc latency under load: how long an ad-hoc query takes from arrival to answer while the
//! job ingests at its full rate.
//!
//! Starts `saams` (next to this binary) on the unbounded generator with a request script (the
//! paper workload by default) and `--http`, posts ad-hoc queries one after another over HTTP
//! (the query must be for a synopsis of the script), measures each round trip, stops the job
//! with SIGTERM and prints p50 / p90 / p99 / max and the job's ingest rate from its summary.
//!
//! ```text
//! adhoc-latency [-w 2] [--queries 300] [--every-ms 20] [--requests FILE] [--generate stocks:100]
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;

/// Ad-hoc query latency while the job ingests at full rate.
#[derive(Parser, Debug)]
#[command(name = "adhoc-latency")]
struct Args {
    /// Worker threads of the job.
    #[arg(short = 'w', default_value_t = 2)]
    workers: usize,
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
    let mut job = Command::new(&saams)
        .args(["-w", &args.workers.to_string(), "--requests", &args.requests, "--generate", &args.generate])
        .args(["--http", "127.0.0.1:0", "--progress", "0", "--out", "/dev/null"])
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", saams.display()))?;
    let stderr = job.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
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
    });
    let addr = rx.recv_timeout(Duration::from_secs(60)).map_err(|_| "the job did not start its HTTP server")?;
    std::thread::sleep(Duration::from_millis(500)); // at full rate before the first query
    let mut ms = Vec::with_capacity(args.queries);
    for _ in 0..args.queries {
        let t = Instant::now();
        post(&addr, &args.query)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        std::thread::sleep(Duration::from_millis(args.every_ms));
    }
    let _ = Command::new("kill").args(["-TERM", &job.id().to_string()]).status();
    let _ = job.wait();
    let summary = reader.join().unwrap_or_default();
    ms.sort_by(f64::total_cmp);
    let rate = summary.split(' ').find_map(|f| f.strip_prefix("tuples_per_s=")).unwrap_or("?");
    println!(
        "adhoc-latency -w {} queries={} p50_ms={:.2} p90_ms={:.2} p99_ms={:.2} max_ms={:.2} ingest_tuples_per_s={rate}",
        args.workers,
        ms.len(),
        percentile(&ms, 0.5),
        percentile(&ms, 0.9),
        percentile(&ms, 0.99),
        ms[ms.len() - 1]
    );
    Ok(())
}
