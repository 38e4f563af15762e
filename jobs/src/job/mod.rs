//! The `saams` job: what one process of it sets up from the command line, the workers it runs,
//! and how it ends. Every worker builds the same dataflow (registry join → update → tree merge →
//! fold → answers → set changes → sink) and reads its share of the input in event-time windows.
//!
//! The rooms:
//! - [`config`]: timely's configuration, the settings, the inputs and the checkpoint resumed
//!   from, the sinks, and what the workers share;
//! - [`services`]: the threads beside the workers (flusher, progress lines, HTTP server);
//! - [`requests`]: the plan built from the request script, live requests applied and answered;
//! - [`reading`] and [`routing`]: a worker's input units, and how their tuples become routed
//!   records; [`generated`]: which worker reads which generated stream, and its routes;
//! - [`checkpoints`]: where the inputs stand at checkpoint boundaries, and the parts written;
//! - [`worker`]: the loop every worker runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use saams_datasets::GeneratorSpec;
use timely::communication::Config as CommunicationConfig;

use crate::checkpoint::CheckpointStore;
use crate::checkpoint::recovery::{Recovery, input_names};
use crate::checkpoint::writer::{CheckpointJob, JobShape};
use crate::cli::Cli;
use crate::control::hub::Hub;
use crate::duration::parse_duration_ms;
use crate::metrics::{CommFigures, Metrics};
use crate::sink::file::{LineSink, SnapshotDir};
use crate::source::file::{RangeLayout, expand_inputs};
use crate::source::kafka::KafkaJob;
use crate::source::{pace::Pacer, stop::StopFlag};
use crate::stats::Stats;

use config::{Settings, Shared, recovery_options};
use requests::follow_stdin_requests;
use services::{start_flusher, start_metrics, start_progress};

mod checkpoints;
mod config;
mod generated;
mod reading;
mod requests;
mod routing;
mod services;
mod worker;

pub use config::timely_config;
pub use reading::reads_unit;

/// What the job did, for the summary line.
#[derive(Debug)]
pub struct Summary {
    /// Valid tuples read by this process.
    pub tuples: u64,
    /// First tuple read to last window closed.
    pub seconds: f64,
    /// Estimation lines written by this process.
    pub estimations: u64,
    /// Rejected lines.
    pub dead_letters: u64,
    /// Late tuples.
    pub late: u64,
    /// Request fields outside the reference's request class.
    pub request_warnings: u64,
    /// Bytes between processes, of partials shipped and of the routed tuples.
    pub comm: CommFigures,
}

impl Summary {
    /// The summary line printed on stderr at exit.
    pub fn line(&self) -> String {
        let rate = if self.seconds > 0.0 { self.tuples as f64 / self.seconds } else { 0.0 };
        format!(
            "summary tuples={} seconds={:.3} tuples_per_s={:.0} estimations={} dead_letters={} late={} request_warnings={} {}",
            self.tuples,
            self.seconds,
            rate,
            self.estimations,
            self.dead_letters,
            self.late,
            self.request_warnings,
            self.comm.fields()
        )
    }
}

/// Run the job described by the CLI to the end of its input.
///
/// # Errors
/// For bad flags, unreadable inputs, or a failure of timely's communication.
pub fn run(cli: Cli) -> Result<Summary, String> {
    let window_ms = parse_duration_ms(&cli.window)?;
    if window_ms == 0 {
        return Err("--window must be longer than 0".into());
    }
    let lateness_ms = parse_duration_ms(&cli.lateness)?;
    let config = timely_config(&cli)?;
    let (stop, pacer) = (StopFlag::install()?, Pacer::new(cli.rate, cli.processes, cli.workers, Instant::now())?);
    let requests_file = cli.requests.clone().unwrap_or_default();
    if requests_file == "-" && cli.data.iter().any(|d| d == "-") {
        return Err("--requests - and --data - cannot both read stdin".into());
    }
    if cli.checkpoints.is_some() {
        crate::checkpoint::recovery::refuse_what_cannot_be_resumed(&recovery_options(&cli))?;
    }
    let kafka_job = KafkaJob::start(&cli.kafka, lateness_ms)?;
    let requests = if cli.process == 0 {
        let text = if requests_file.is_empty() {
            String::new()
        } else if requests_file == "-" {
            // Requests on stdin are live: they arrive while the job runs (follow_stdin_requests).
            String::new()
        } else {
            std::fs::read_to_string(&requests_file).map_err(|e| format!("--requests {requests_file}: {e}"))?
        };
        Some(text)
    } else {
        None
    };
    let generator = if cli.data.is_empty() && cli.kafka.data_topic.is_none() {
        Some(GeneratorSpec::parse(&cli.generate).map_err(|e| format!("--generate: {}", e.0))?)
    } else {
        None
    };
    // The inputs in each way files can be cut into ranges: this job's own first, then the one a
    // checkpoint of an earlier version may name (a job resumes in the layout it started in).
    let layouts: &[RangeLayout] =
        if cli.checkpoints.is_some() { &[RangeLayout::Equal, RangeLayout::Fixed] } else { &[RangeLayout::Equal] };
    let mut candidates = Vec::new();
    for &layout in layouts {
        let units = expand_inputs(&cli.data, cli.format.map(|f| f.parser()), cli.chunk_bytes, layout)?;
        let mut inputs = input_names(&units, generator.as_ref().map(|_| cli.generate.as_str()));
        inputs.extend(cli.kafka.data_topic.as_ref().map(|t| format!("kafka:{t}")));
        candidates.push((units, inputs));
    }
    let recovery = match &cli.checkpoints {
        Some(dir) => {
            let names: Vec<Vec<String>> = candidates.iter().map(|(_, inputs)| inputs.clone()).collect();
            Some(Recovery::open(&recovery_options(&cli), dir, (window_ms as u64, requests.as_deref(), &names))?)
        }
        None => None,
    };
    let layout = recovery.as_ref().and_then(|r| r.resume.as_ref()).map_or(0, |r| r.inputs_at);
    let (units, inputs) = candidates.swap_remove(layout);
    let kafka_sink = kafka_job.as_ref().and_then(|k| k.estimation_writer());
    let file_sink = kafka_sink.is_none();
    if let (Some(k), Some(resume)) = (&kafka_job, recovery.as_ref().and_then(|r| r.resume.as_ref())) {
        // Answers produced after the checkpoint, before the crash: not produced again.
        let found = k.skip_delivered(resume)?;
        if found > 0 {
            eprintln!(
                "saams: {found} answers are in the output topic past checkpoint {}: not produced again",
                resume.id
            );
        }
    }
    let sink = Arc::new(match (kafka_sink, &recovery) {
        (Some(w), None) => LineSink::from_writer(w),
        // Answers are produced when the checkpoint after them is written (crate::sink::kafka).
        (Some(w), Some(_)) => LineSink::from_writer(w).hold_until_commit(),
        (None, None) => LineSink::open(&cli.out)?,
        (None, Some(r)) => r.open_output(&recovery_options(&cli))?,
    });
    // `dead_path`: the dead letters go to this file (or `-`, stdout), not to a topic.
    let (dead, dead_path) = match (kafka_job.as_ref().and_then(|k| k.dead_letter_writer()), &cli.dead_letter) {
        (Some(w), _) => (Some(Arc::new(LineSink::from_writer(w))), None),
        (None, Some(p)) => {
            let path = p.display().to_string();
            let file = match &recovery {
                Some(r) => r.open_dead_letters(cli.process, &path)?,
                None => LineSink::open(&path)?,
            };
            (Some(Arc::new(file)), Some(path))
        }
        (None, None) => (None, None),
    };
    let stats = Arc::new(Stats::default());
    let mut request_topic = None;
    let requests = match (requests, &kafka_job) {
        (Some(mut text), Some(k)) => match k.request_text_and_source(dead.as_deref())? {
            Some((more, bad, source)) => {
                stats.dead_letters.fetch_add(bad, Ordering::Relaxed);
                text.push('\n');
                text.push_str(&more);
                request_topic = Some(source);
                Some(text)
            }
            None => Some(text),
        },
        (requests, _) => requests,
    };
    let store = Arc::new(SnapshotDir::new(cli.snapshots.clone()));
    let finished = Arc::new(AtomicU64::new(0));
    let progress = start_progress(cli.progress, stats.clone(), finished.clone(), window_ms);
    // Sinks writing files (or stdout) are flushed as the job runs; those producing to Kafka
    // deliver on their own (their flush waits for the brokers).
    let files: Vec<Arc<LineSink>> =
        [file_sink.then(|| sink.clone()), dead.clone().filter(|_| dead_path.is_some())].into_iter().flatten().collect();
    let flusher = (!files.is_empty()).then(|| start_flusher(files, finished.clone()));
    let metrics = Arc::new(Metrics::new());
    let linger_ms = parse_duration_ms(&cli.metrics.metrics_linger)?;
    let hub = Arc::new(Hub::new());
    let server = start_metrics(&cli, &metrics, &stats, &sink, hub.clone())?;
    hub.open();
    // Requests produced on the request topic after the start arrive while the job runs.
    let stop_following = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if requests_file == "-" && cli.process == 0 {
        follow_stdin_requests(hub.clone());
    }
    let follower = match (&kafka_job, request_topic) {
        (Some(k), Some(source)) => Some(k.follow_requests(source, hub.clone(), stop_following.clone())),
        _ => None,
    };

    let (builders, others) = match config.communication {
        // Connected here, not by timely: see `cluster` (its progress lines went to stdout, amid
        // the estimations, and it waited a second per retry).
        CommunicationConfig::Cluster { threads, process, addresses, .. } => {
            let timeout = parse_duration_ms(&cli.connect_timeout).map_err(|e| format!("--connect-timeout: {e}"))?;
            let timeout = Duration::from_millis(u64::try_from(timeout).unwrap_or(0));
            crate::cluster::build_cluster(&addresses, process, threads, metrics.hooks(), timeout, cli.network_sched)
                .map_err(|e| format!("process {process} of {}: {e}", addresses.len()))?
        }
        other => other.try_build_with(metrics.hooks()).map_err(|e| format!("timely: {e}"))?,
    };
    let checkpoints = match &recovery {
        None => None,
        Some(r) => Some(Arc::new(CheckpointJob::new(
            CheckpointStore::open(&r.dir, r.keep)?,
            JobShape {
                process: cli.process,
                processes: cli.processes,
                workers: cli.workers,
                window_ms: window_ms as u64,
                script: requests.clone().unwrap_or_default(),
                inputs: inputs.clone(),
                out_path: (file_sink && cli.out != "-").then(|| cli.out.clone()),
                output_offsets: kafka_job.as_ref().filter(|_| !file_sink).and_then(|k| k.answer_offsets()),
                dead: dead.clone().map(|d| (d, dead_path.clone().filter(|p| p != "-"))),
            },
            sink.clone(),
        ))),
    };
    let shared = Shared {
        checkpoints: checkpoints.clone(),
        recovery: recovery.as_ref().map(|r| (r.resume.clone(), r.every, r.first_id)),
        stats: stats.clone(),
        metrics: metrics.clone(),
        sink: sink.clone(),
        dead: dead.clone(),
        hub: hub.clone(),
        kafka_job: kafka_job.clone(),
        requests,
        store,
        generator,
        units,
        stop,
        pacer,
        settings: Settings {
            window_ms,
            lateness_ms,
            no_synopses: cli.no_synopses,
            strict_requests: cli.strict_requests,
            workers_per_process: cli.workers,
        },
    };
    let guards =
        timely::execute::execute_from(builders, others, config.worker, move |worker| worker::work(worker, &shared))
            .map_err(|e| format!("timely: {e}"))?;
    let results = guards.join();
    hub.close();
    stop_following.store(true, Ordering::Relaxed);
    if let Some(f) = follower {
        let _ = f.join();
    }
    finished.store(1, Ordering::Relaxed);
    if let Some((_, stop, handle)) = server {
        std::thread::sleep(Duration::from_millis(linger_ms as u64));
        stop.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
    for r in results {
        r.map_err(|e| format!("worker failed: {e}"))?;
    }
    let end = Instant::now();
    if let Some(h) = progress {
        let _ = h.join();
    }
    if let Some(h) = flusher {
        let _ = h.join();
    }
    sink.release_all();
    sink.flush();
    if let Some(c) = &checkpoints {
        eprintln!("{}", c.report());
    }
    if let Some(d) = &dead {
        d.flush();
    }
    if let Some(k) = &kafka_job {
        k.finish()?.iter().for_each(|l| eprintln!("{l}"));
    }
    let seconds = stats.first.get().map(|t| end.duration_since(*t).as_secs_f64()).unwrap_or(0.0);
    Ok(Summary {
        tuples: stats.tuples.load(Ordering::Relaxed),
        seconds,
        estimations: sink.count(),
        dead_letters: stats.dead_letters.load(Ordering::Relaxed),
        late: stats.late.load(Ordering::Relaxed),
        request_warnings: stats.request_warnings.load(Ordering::Relaxed),
        comm: metrics.comm(),
    })
}
