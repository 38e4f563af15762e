//! The threads a process runs beside its workers: the `--http` server, the flusher of file
//! sinks, and the progress lines.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::cli::Cli;
use crate::control::hub::Hub;
use crate::metrics::{Metrics, Totals};
use crate::sink::file::LineSink;
use crate::stats::Stats;

/// Start the `--http` server (if asked for); it stops when the returned flag is set.
pub(super) fn start_metrics(
    cli: &Cli,
    metrics: &Arc<Metrics>,
    stats: &Arc<Stats>,
    sink: &Arc<LineSink>,
    hub: Arc<Hub>,
) -> Result<Option<crate::control::http::Server>, String> {
    let (stats, sink) = (stats.clone(), sink.clone());
    let totals = move || Totals {
        estimations: sink.count(),
        dead_letters: stats.dead_letters.load(Ordering::Relaxed),
        late: stats.late.load(Ordering::Relaxed),
        request_warnings: stats.request_warnings.load(Ordering::Relaxed),
        window_lag_ms: (stats.newest.load(Ordering::Relaxed) - stats.epoch.load(Ordering::Relaxed)).max(0),
    };
    crate::control::http::start(&cli.control, hub, metrics.clone().scrape(totals))
}

/// How often a file or stdout sink is flushed while the job runs: a service's answers (and the
/// acknowledgements of live requests) and its dead letters reach readers within this, not at
/// the end (a dead-letter file of a long run with few bad lines was written only when its
/// buffer filled).
const FLUSH_EVERY: Duration = Duration::from_millis(200);

pub(super) fn start_flusher(sinks: Vec<Arc<LineSink>>, finished: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // Short naps, so the job's end does not wait for a whole period.
        let mut last = Instant::now();
        while finished.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(10));
            if last.elapsed() >= FLUSH_EVERY {
                sinks.iter().for_each(|s| s.flush());
                last = Instant::now();
            }
        }
    })
}

pub(super) fn start_progress(
    secs: u64,
    stats: Arc<Stats>,
    finished: Arc<AtomicU64>,
    window_ms: i64,
) -> Option<std::thread::JoinHandle<()>> {
    if secs == 0 {
        return None;
    }
    Some(std::thread::spawn(move || {
        let mut last = (Instant::now(), 0u64);
        let mut next = Instant::now() + Duration::from_secs(secs);
        while finished.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(100));
            if Instant::now() < next {
                continue;
            }
            next += Duration::from_secs(secs);
            let n = stats.tuples.load(Ordering::Relaxed);
            let rate = (n - last.1) as f64 / last.0.elapsed().as_secs_f64();
            last = (Instant::now(), n);
            let open =
                (stats.newest.load(Ordering::Relaxed) - stats.epoch.load(Ordering::Relaxed)).max(0) / window_ms + 1;
            eprintln!("progress tuples={n} tuples_per_s={rate:.0} open_windows={open}");
        }
    }))
}
