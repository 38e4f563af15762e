//! The `saams` job: what one process of it sets up from the command line, the workers it runs,
//! and how it ends. Every worker builds the same dataflow (registry join → update → tree merge →
//! fold → answers → set changes → sink) and reads its share of the input in event-time windows.
//!
//! The rooms:
//! - `config`: timely's configuration, the settings, the inputs and the checkpoint resumed
//!   from, the sinks, the connections between processes, and what the workers share;
//! - `services`: the threads beside the workers (flusher, progress lines, HTTP server,
//!   followers of live requests);
//! - `requests`: the plan built from the request script, live requests applied and answered;
//!   `request_topic`: the request topic's tail of the script, and where it is followed from;
//! - `reading` and `routing`: a worker's input units, and how their tuples become routed
//!   records; `generated`: which worker reads which generated stream, and its routes;
//!   `handover`: units following the active workers (only they read);
//! - `checkpoints`: where the inputs stand at checkpoint boundaries, and the parts written;
//! - `worker`: the loop every worker runs.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::cli::Cli;
use crate::edge::devices::Devices;
use crate::handoff::{HandOff, TakeOver, start_taking_over, watch_for_take_over};
use crate::metrics::CommFigures;
use crate::sink::file::SnapshotDir;
use crate::stats::Stats;

use config::{Outputs, Settings, Shared, Startup, connect, open_checkpoint_job};
use request_topic::with_request_topic;
use services::Services;

mod checkpoints;
mod config;
mod epoch_pace;
mod generated;
mod group_fields;
mod handover;
mod read_units;
mod reading;
mod request_topic;
mod requests;
mod routing;
mod services;
mod worker;

pub use config::{input_names, timely_config};
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
    let mut start = Startup::from_cli(&cli)?;
    // Held until the end of the run (released by the OS when the process ends).
    let (locks, outputs) = (std::mem::take(&mut start.locks), Outputs::open(&cli, &start)?);
    let stats = Arc::new(Stats::for_workers(cli.workers));
    let checkpointing = (cli.checkpoints.as_deref(), start.script_end.take());
    let dead = (outputs.dead.as_deref(), stats.as_ref());
    let (requests, request_topic) =
        with_request_topic(start.requests.take(), start.kafka_job.as_ref(), dead, checkpointing)?;
    let store = Arc::new(SnapshotDir::new(cli.snapshots.clone()));
    let followed = (start.kafka_job.as_ref(), request_topic, start.requests_file == "-" && cli.process == 0);
    let first_ticket = start.recovery.as_ref().map_or(1, |r| r.live.first_ticket);
    let devices = devices_of(start.kafka_job.as_ref(), &cli)?;
    let mut services =
        Services::start(&cli, (start.window_ms, &stats, first_ticket), &outputs, followed, devices.as_ref())?;
    let (builders, others) = connect(&cli, start.config.communication, &services.metrics)?;
    let shape = (start.window_ms, requests.as_deref(), &start.inputs[..]);
    let checkpoints = open_checkpoint_job(&cli, start.recovery.as_ref(), shape, &outputs, start.kafka_job.as_ref())?;
    let known = start.recovery.as_ref().map(|r| r.live.requests.clone()).unwrap_or_default();
    let handoff = start_hand_off(&cli, (known, start.kafka_job.clone()), &outputs, (&services, &stats));
    let shared = Shared {
        checkpoints: checkpoints.clone(),
        recovery: start.recovery.as_ref().map(|r| (r.resume.clone(), r.every, r.first_id, r.live.clone())),
        stats: stats.clone(),
        metrics: services.metrics.clone(),
        sink: outputs.sink.clone(),
        dead: outputs.dead.clone(),
        hub: services.hub.clone(),
        kafka_job: start.kafka_job.clone(),
        devices,
        requests,
        store,
        generator: start.generator,
        units: start.units,
        stop: start.stop,
        pacer: start.pacer,
        handoff: handoff.clone(),
        reader_board: handover::ReaderBoard::for_job(cli.processes, cli.workers, start.kafka_job.is_some()),
        settings: Settings {
            window_ms: start.window_ms,
            default_window: start.default_window,
            lateness_ms: start.lateness_ms,
            no_synopses: cli.no_synopses,
            strict_requests: cli.strict_requests,
            workers_per_process: cli.workers,
            active_workers: cli.active_workers,
            autoscale: cli.autoscale.is_some(),
            rescale_batch: cli.rescale_batch,
        },
    };
    let execute = move |worker: &mut timely::worker::Worker| worker::work(worker, &shared);
    let guards = timely::execute::execute_from(builders, others, start.config.worker, execute)
        .map_err(|e| format!("timely: {e}"))?;
    let results = guards.join();
    if let Some(h) = &handoff {
        // A job taking over whose input ended before it took over writes its answers then.
        h.set_workers_done();
        h.wait_taken_over();
    }
    services.stop_requests_and_server();
    for r in results {
        r.map_err(|e| format!("worker failed: {e}"))?;
    }
    let end = Instant::now();
    services.join_threads();
    outputs.finish(checkpoints.as_deref(), start.kafka_job.as_deref())?;
    // Everything written and flushed: another job may take over.
    drop(locks);
    let seconds = stats.first.get().map(|t| end.duration_since(*t).as_secs_f64()).unwrap_or(0.0);
    Ok(Summary {
        tuples: stats.tuples.load(Ordering::Relaxed),
        seconds,
        estimations: outputs.sink.count(),
        dead_letters: stats.dead_letters.load(Ordering::Relaxed),
        late: stats.late.load(Ordering::Relaxed),
        // The request file's unknown fields, and live requests' (counted by the hub's intake).
        request_warnings: stats.request_warnings.load(Ordering::Relaxed) + services.hub.warnings(),
        comm: services.metrics.comm(),
    })
}

/// A job reading a partials topic: the devices it hears from (its workers' intakes fill it),
/// with the control topic its workers tell them the live requests on. With checkpoints, the
/// process' workers copy its table of devices' replies at every boundary
/// ([`saams_operators::device_replies::DeviceReplies::copied_by`]).
///
/// # Errors
/// When the control topic cannot be created or written.
fn devices_of(kafka_job: Option<&Arc<crate::kafka::KafkaJob>>, cli: &Cli) -> Result<Option<Arc<Devices>>, String> {
    let Some(k) = kafka_job.filter(|k| k.partials) else { return Ok(None) };
    let devices = Arc::new(Devices::new(k.idle_timeout).of_process(cli.process));
    if cli.checkpoints.is_some() {
        devices.relay().replies().copied_by(cli.workers);
    }
    if let Some(publish) = k.control_publisher()? {
        devices.set_control(publish);
    }
    Ok(Some(devices))
}

/// With checkpoints: the thread that watches for a job taking over from this one, and, with
/// `--take-over`, the one that takes over from the running job (`crate::handoff`).
fn start_hand_off(
    cli: &Cli,
    (known, kafka): (Vec<saams::checkpoint::LoggedRequest>, Option<Arc<crate::kafka::KafkaJob>>),
    outputs: &Outputs,
    (services, stats): (&Services, &Arc<Stats>),
) -> Option<Arc<HandOff>> {
    let dir = cli.checkpoints.clone()?;
    let handoff = HandOff::new(cli.take_over);
    // Detached: it ends when asked, or with the process.
    let _ = watch_for_take_over(dir, (services.hub.clone(), stats.clone()), handoff.clone(), cli.process == 0);
    if cli.take_over {
        let take = TakeOver {
            cli: cli.clone(),
            sink: outputs.sink.clone(),
            dead: outputs.dead.clone(),
            hub: services.hub.clone(),
            stats: stats.clone(),
            known,
            kafka,
        };
        let _ = start_taking_over(take, handoff.clone());
    }
    Some(handoff)
}
