//! The threads a process runs beside its workers: the `--http` server, the flusher of file
//! sinks, the progress lines, and the followers of live requests (stdin, the request topic).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::cli::Cli;
use crate::control::autoscale::policy::parse_bounds;
use crate::control::autoscale::{AutoscaleBoard, Meter};
use crate::control::http::Server;
use crate::control::hub::Hub;
use crate::control::intake::Intake;
use crate::duration::parse_duration_ms;
use crate::edge::devices::Devices;
use crate::kafka::{FollowFrom, KafkaJob};
use crate::metrics::{Metrics, Totals};
use crate::sink::file::LineSink;
use crate::stats::Stats;

use super::config::Outputs;
use super::requests::follow_stdin_requests;

/// The threads beside the workers, and the metrics registry and request hub they share with
/// them.
pub(super) struct Services {
    /// Set once the workers are done: the flusher and progress threads end.
    finished: Arc<AtomicU64>,
    progress: Option<JoinHandle<()>>,
    flusher: Option<JoinHandle<()>>,
    pub(super) metrics: Arc<Metrics>,
    /// `--metrics-linger`: how long the HTTP server stays up after the job's end.
    linger_ms: i64,
    pub(super) hub: Arc<Hub>,
    server: Option<Server>,
    /// Set at the end: the request topic's follower stops.
    stop_following: Arc<AtomicBool>,
    follower: Option<JoinHandle<()>>,
}

impl Services {
    /// Start the progress lines, the flusher of the file sinks in `outputs`, the HTTP server
    /// and the followers of live requests: the request topic's `source` (read by the Kafka
    /// job), and stdin when `follow_stdin`.
    ///
    /// # Errors
    /// For a bad `--metrics-linger` or an HTTP server that cannot start.
    pub(super) fn start(
        cli: &Cli,
        (window_ms, stats, first_ticket): (i64, &Arc<Stats>, u64),
        outputs: &Outputs,
        (kafka_job, request_topic, follow_stdin): (Option<&Arc<KafkaJob>>, Option<FollowFrom>, bool),
        devices: Option<&Arc<Devices>>,
    ) -> Result<Services, String> {
        let finished = Arc::new(AtomicU64::new(0));
        let progress = start_progress(cli.progress, stats.clone(), finished.clone(), window_ms);
        // Sinks writing files (or stdout) are flushed as the job runs; those producing to Kafka
        // deliver on their own (their flush waits for the brokers).
        let Outputs { sink, file_sink, dead, dead_path } = outputs;
        let files: Vec<Arc<LineSink>> = [file_sink.then(|| sink.clone()), dead.clone().filter(|_| dead_path.is_some())]
            .into_iter()
            .flatten()
            .collect();
        let flusher = (!files.is_empty()).then(|| start_flusher(files, finished.clone()));
        let metrics = Arc::new(Metrics::new());
        let linger_ms = parse_duration_ms(&cli.metrics.metrics_linger)?;
        // With a request log, tickets are the logged requests' ids: numbered on from the log's.
        let hub = Arc::new(Hub::with_intake(Intake::new(cli.strict_requests)).with_first_ticket(first_ticket));
        let workers = cli.workers * cli.processes;
        hub.rescale_board().start(workers, cli.active_workers.unwrap_or(workers));
        hub.rescale_board().count_into(metrics.rescale_counters());
        let autoscale = autoscale_board(cli, &metrics);
        if !cli.take_over {
            // Open before the server says where it listens, so a client that connects as soon as
            // it reads `http on` is never told the job takes no requests yet. (A job taking over
            // opens it once it is the writer: `crate::handoff`.)
            hub.open();
        }
        let server = start_metrics(cli, (&metrics, devices), stats, sink, hub.clone(), autoscale.clone())?;
        if let (Some(settings), Some(board)) = (super::config::autoscale_settings(cli)?, autoscale) {
            let first = cli.process * cli.workers;
            let meter = Meter::new(window_ms, cli.rate.map(|r| r / cli.processes as f64), (first, cli.workers));
            crate::control::autoscale::start(settings, hub.clone(), stats.clone(), (board, meter), finished.clone())?;
        }
        // Requests produced on the request topic after the start arrive while the job runs.
        let stop_following = Arc::new(AtomicBool::new(false));
        if follow_stdin {
            follow_stdin_requests(hub.clone(), cli.take_over);
        }
        let follower = match (kafka_job, request_topic) {
            (Some(k), Some(source)) => Some(k.follow_requests(source, hub.clone(), stop_following.clone())),
            _ => None,
        };
        Ok(Services { finished, progress, flusher, metrics, linger_ms, hub, server, stop_following, follower })
    }

    /// Once the workers are done: no more requests taken, the request topic's follower
    /// stopped, the flusher and progress threads told to end, and the HTTP server stopped after
    /// `--metrics-linger`.
    pub(super) fn stop_requests_and_server(&mut self) {
        self.hub.close();
        self.stop_following.store(true, Ordering::Relaxed);
        if let Some(f) = self.follower.take() {
            let _ = f.join();
        }
        self.finished.store(1, Ordering::Relaxed);
        if let Some(flusher) = &self.flusher {
            flusher.thread().unpark();
        }
        if let Some((_, stop, handle)) = self.server.take() {
            std::thread::sleep(Duration::from_millis(self.linger_ms as u64));
            stop.store(true, Ordering::Relaxed);
            let _ = handle.join();
        }
    }

    /// Wait for the progress and flusher threads to end (after
    /// [`Services::stop_requests_and_server`]).
    pub(super) fn join_threads(&mut self) {
        if let Some(h) = self.progress.take() {
            let _ = h.join();
        }
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
    }
}

/// Start the `--http` server (if asked for); it stops when the returned flag is set.
fn start_metrics(
    cli: &Cli,
    (metrics, devices): (&Arc<Metrics>, Option<&Arc<Devices>>),
    stats: &Arc<Stats>,
    sink: &Arc<LineSink>,
    hub: Arc<Hub>,
    autoscale: Option<Arc<AutoscaleBoard>>,
) -> Result<Option<Server>, String> {
    if cli.control.http.is_some() {
        hub.set_status_source(status_source(stats.clone(), sink.clone(), autoscale));
    }
    let (stats, sink, intake) = (stats.clone(), sink.clone(), hub.clone());
    let totals = move || Totals {
        estimations: sink.count(),
        dead_letters: stats.dead_letters.load(Ordering::Relaxed),
        late: stats.late.load(Ordering::Relaxed),
        // The request file's unknown fields, and live requests' (counted by the hub's intake).
        request_warnings: stats.request_warnings.load(Ordering::Relaxed) + intake.warnings(),
        window_lag_ms: (stats.newest.load(Ordering::Relaxed) - stats.epoch.load(Ordering::Relaxed)).max(0),
    };
    let refused = metrics.http_refused.clone();
    let mut text = metrics.clone().scrape(totals);
    if let Some(devices) = devices {
        let table = devices.clone();
        hub.set_devices_source(Arc::new(move || table.to_json()));
        let (devices, metrics, scrape) = (devices.clone(), metrics.clone(), text);
        text = Arc::new(move || {
            metrics.publish_devices(&devices.rows());
            metrics.publish_unanswered(&devices.unanswered());
            scrape()
        });
    }
    crate::control::http::start(&cli.control, hub, text, refused)
}

/// `GET /status`'s counters of this process, read when asked: tuples read (published every 4096
/// per worker), seconds since the first, the oldest open and the newest window read (event
/// time) and the lag between them, answers written, dead letters and late tuples.
fn status_source(
    stats: Arc<Stats>,
    sink: Arc<LineSink>,
    autoscale: Option<Arc<AutoscaleBoard>>,
) -> crate::control::hub::StatusSource {
    use saams::api::time::format_timestamp;
    Arc::new(move || {
        let (open, newest) = (stats.epoch.load(Ordering::Relaxed), stats.newest.load(Ordering::Relaxed));
        let read_for = stats.first.get().map_or(0.0, |t| t.elapsed().as_secs_f64());
        serde_json::json!({
            "tuples": stats.tuples.load(Ordering::Relaxed),
            "readingSeconds": (read_for * 1000.0).round() / 1000.0,
            "openWindow": (open > 0).then(|| format_timestamp(open)),
            "newestWindow": (newest > 0).then(|| format_timestamp(newest)),
            "windowLagMs": (newest - open).max(0),
            "answers": sink.count(),
            "deadLetters": stats.dead_letters.load(Ordering::Relaxed),
            "late": stats.late.load(Ordering::Relaxed),
            "autoscale": autoscale.as_ref().map(|a| a.status()),
            "inputLag": input_lag(&stats),
        })
    })
}

/// `GET /status`'s `inputLag` on process 0 of a job with `--autoscale` (from every worker's load
/// reports): `{"kafkaRecords", "fileBytes", "workersReporting"}` (a figure is null for an input
/// the job does not read); null otherwise.
fn input_lag(stats: &Stats) -> serde_json::Value {
    use crate::stats::JobLoad;
    let reports = stats.job_load.read();
    if reports.is_empty() {
        return serde_json::Value::Null;
    }
    serde_json::json!({
        "kafkaRecords": JobLoad::kafka_records(&reports),
        "fileBytes": JobLoad::file_bytes(&reports),
        "workersReporting": reports.len(),
    })
}

/// The board of `--autoscale` (process 0 runs the autoscaler; the other processes have none).
fn autoscale_board(cli: &Cli, metrics: &Metrics) -> Option<Arc<AutoscaleBoard>> {
    let (min, max) = cli.autoscale.as_deref().and_then(|b| parse_bounds(b, cli.workers * cli.processes).ok())?;
    (cli.process == 0).then(|| Arc::new(AutoscaleBoard::new(min, max, metrics.autoscale_decisions.clone())))
}

/// How often a file or stdout sink is flushed while the job runs: a service's answers (and the
/// acknowledgements of live requests) and its dead letters reach readers within this, not at
/// the end (a dead-letter file of a long run with few bad lines was written only when its
/// buffer filled).
const FLUSH_EVERY: Duration = Duration::from_millis(200);

fn start_flusher(sinks: Vec<Arc<LineSink>>, finished: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // Parked for the rest of the period; the job's end unparks it
        // (`stop_requests_and_server`), so it does not wait for a whole period. (It napped 10 ms
        // at a time: 100 wake-ups a second, a seventh of an idle Kafka job's CPU.)
        let mut last = Instant::now();
        while finished.load(Ordering::Relaxed) == 0 {
            std::thread::park_timeout(FLUSH_EVERY.saturating_sub(last.elapsed()));
            if last.elapsed() >= FLUSH_EVERY {
                sinks.iter().for_each(|s| s.flush());
                last = Instant::now();
            }
        }
    })
}

fn start_progress(
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
