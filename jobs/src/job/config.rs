//! The job's configuration: timely's from `-w -n -p -h`, what checkpoint recovery reads of the
//! command line, and what every worker of a process shares.

use std::sync::Arc;
use std::time::Duration;

use saams_datasets::GeneratorSpec;
use timely::communication::Config as CommunicationConfig;
use timely::{Config, WorkerConfig};

use crate::checkpoint::recovery::RecoveryOptions;
use crate::checkpoint::resume::Resume;
use crate::checkpoint::writer::CheckpointJob;
use crate::cli::Cli;
use crate::control::hub::Hub;
use crate::metrics::Metrics;
use crate::sink::file::{LineSink, SnapshotDir};
use crate::source::file::Input as Unit;
use crate::source::kafka::KafkaJob;
use crate::source::{pace::Pacer, stop::StopFlag};
use crate::stats::Stats;

/// Build timely's configuration from the CLI's `-w -n -p -h`.
///
/// # Errors
/// For zero workers, a process index out of range, or an unreadable or short hostfile.
pub fn timely_config(cli: &Cli) -> Result<Config, String> {
    if cli.workers == 0 || cli.processes == 0 {
        return Err("-w and -n must be at least 1".into());
    }
    if cli.process >= cli.processes {
        return Err(format!("-p {} is out of range for -n {}", cli.process, cli.processes));
    }
    let communication = if cli.processes == 1 {
        CommunicationConfig::Process(cli.workers)
    } else {
        let addresses: Vec<String> = match &cli.hostfile {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("hostfile {}: {e}", path.display()))?;
                text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
            }
            None => (0..cli.processes).map(|i| format!("127.0.0.1:{}", 2101 + i)).collect(),
        };
        if addresses.len() < cli.processes {
            return Err(format!("hostfile lists {} hosts for -n {}", addresses.len(), cli.processes));
        }
        CommunicationConfig::Cluster {
            threads: cli.workers,
            process: cli.process,
            addresses: addresses[..cli.processes].to_vec(),
            report: false,
            zerocopy: false,
        }
    };
    Ok(Config { communication, worker: WorkerConfig::default() })
}

/// What checkpoint recovery reads of the command line.
pub(super) fn recovery_options(cli: &Cli) -> RecoveryOptions<'_> {
    RecoveryOptions {
        interval: &cli.checkpoint_interval,
        keep: cli.checkpoint_keep,
        reads_stdin: cli.data.iter().any(|d| d == "-"),
        request_topic: cli.kafka.request_topic.is_some(),
        process: cli.process,
        processes: cli.processes,
        out: &cli.out,
    }
}

/// What every worker of a process shares: counters, sinks, the hub, the inputs to read.
pub(super) struct Shared {
    /// Checkpoints: the process' writer, and the checkpoint resumed from, the interval and
    /// the first new id.
    pub(super) checkpoints: Option<Arc<CheckpointJob>>,
    pub(super) recovery: Option<(Option<Arc<Resume>>, Duration, u64)>,
    pub(super) stats: Arc<Stats>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) sink: Arc<LineSink>,
    pub(super) dead: Option<Arc<LineSink>>,
    pub(super) hub: Arc<Hub>,
    pub(super) kafka_job: Option<Arc<KafkaJob>>,
    pub(super) requests: Option<String>,
    pub(super) store: Arc<SnapshotDir>,
    pub(super) generator: Option<GeneratorSpec>,
    pub(super) units: Vec<Unit>,
    pub(super) stop: StopFlag,
    pub(super) pacer: Pacer,
    pub(super) settings: Settings,
}

/// The job's settings every worker reads.
#[derive(Clone, Copy)]
pub(super) struct Settings {
    pub(super) window_ms: i64,
    pub(super) lateness_ms: i64,
    pub(super) no_synopses: bool,
    pub(super) strict_requests: bool,
    pub(super) workers_per_process: usize,
}
