//! The job's configuration: timely's from `-w -n -p -h`, what a process reads and opens before
//! its workers start (settings, request script, inputs, the checkpoint it resumes from, sinks,
//! the connections between processes), how it closes its outputs, and what every worker of the
//! process shares.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use saams_datasets::GeneratorSpec;
use saams_operators::Plan;
use timely::communication::Config as CommunicationConfig;
use timely::communication::allocator::AllocatorBuilder;
use timely::{Config, WorkerConfig};

use crate::checkpoint::CheckpointStore;
use crate::checkpoint::recovery::{Recovery, RecoveryOptions, refuse_what_cannot_be_resumed};
use crate::checkpoint::resume::Resume;
use crate::checkpoint::writer::{CheckpointJob, JobShape};
use crate::cli::Cli;
use crate::control::hub::Hub;
use crate::control::request_log::LiveRequests;
use crate::duration::parse_duration_ms;
use crate::handoff::HandOff;
use crate::kafka::KafkaJob;
use crate::metrics::Metrics;
use crate::sink::file::{LineSink, SnapshotDir};
use crate::source::file::{Input as Unit, RangeLayout, expand_inputs};
use crate::source::stop::StopFlag;
use crate::stats::Stats;
use crate::writer_lock::{WriterLock, lock_what_the_job_writes};

use super::handover::Handover;
use super::request_topic::{refuse_checkpoints_without_topic, script_at_restart};
use saams::api::window::WindowSpec;
use saams_datasets::pace::Pacer;

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
    if let Some(n) = cli.active_workers.filter(|&n| n == 0 || n > cli.workers * cli.processes) {
        return Err(format!(
            "--active-workers {n}: between 1 and the job's {} workers (-w × -n)",
            cli.workers * cli.processes
        ));
    }
    autoscale_settings(cli)?;
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
    let worker = WorkerConfig::default().idle_spin(Duration::from_micros(cli.idle_spin));
    Ok(Config { communication, worker })
}

/// What checkpoint recovery reads of the command line.
fn recovery_options(cli: &Cli) -> RecoveryOptions<'_> {
    RecoveryOptions {
        interval: &cli.checkpoint_interval,
        keep: cli.checkpoint_keep,
        reads_stdin: cli.data.iter().any(|d| d == "-"),
        process: cli.process,
        processes: cli.processes,
        out: &cli.out,
        take_over: cli.take_over,
        at_most: u64::MAX,
    }
}

/// What a process sets up from the command line before anything else: the settings, timely's
/// configuration, the request script, the inputs (in the layout of the checkpoint it resumes
/// from) and the checkpoint recovery.
pub(super) struct Startup {
    pub(super) window_ms: i64,
    pub(super) default_window: WindowSpec,
    pub(super) lateness_ms: i64,
    pub(super) config: Config,
    pub(super) stop: StopFlag,
    pub(super) pacer: Pacer,
    /// `--requests` as given (`-`: live requests on stdin; empty: none).
    pub(super) requests_file: String,
    pub(super) kafka_job: Option<Arc<KafkaJob>>,
    /// The request script (process 0 only).
    pub(super) requests: Option<String>,
    /// A restart reading a request topic: where its script's tail ends (already in `requests`).
    pub(super) script_end: Option<super::request_topic::ScriptEndAt>,
    pub(super) generator: Option<GeneratorSpec>,
    pub(super) units: Vec<Unit>,
    /// The inputs' names in checkpoints.
    pub(super) inputs: Vec<String>,
    pub(super) recovery: Option<Recovery>,
    /// The locks on what this process writes ([`crate::writer_lock`]): held while the job runs.
    pub(super) locks: Vec<WriterLock>,
}

impl Startup {
    /// Check the flags and read what the job starts from.
    ///
    /// # Errors
    /// For bad flags, an unreadable request file or input, or a checkpoint that cannot be
    /// resumed.
    pub(super) fn from_cli(cli: &Cli) -> Result<Startup, String> {
        let window_ms = parse_duration_ms(&cli.window)?;
        if window_ms == 0 {
            return Err("--window must be longer than 0".into());
        }
        let default_window = WindowSpec::from_flag(&cli.window_type, window_ms)?;
        let lateness_ms = parse_duration_ms(&cli.lateness)?;
        let config = timely_config(cli)?;
        let (stop, pacer) = (StopFlag::install()?, Pacer::new(cli.rate, cli.processes, cli.workers, Instant::now())?);
        let requests_file = cli.requests.clone().unwrap_or_default();
        if requests_file == "-" && cli.data.iter().any(|d| d == "-") {
            return Err("--requests - and --data - cannot both read stdin".into());
        }
        if cli.checkpoints.is_some() {
            refuse_what_cannot_be_resumed(&recovery_options(cli))?;
        }
        // Before anything is read, cut or written there: a second job refuses here (a job taking
        // over takes the locks once the running job has let go of them: `crate::handoff`).
        let locks = if cli.take_over {
            crate::handoff::check_take_over(cli)?;
            Vec::new()
        } else {
            lock_what_the_job_writes(cli)?
        };
        let kafka_job = KafkaJob::start(&cli.kafka, lateness_ms)?;
        let requests = request_script(cli, &requests_file)?;
        let (requests, script_end) = script_at_restart(cli, kafka_job.as_ref(), requests)?;
        let generator = if cli.data.is_empty() && cli.kafka.data_topic.is_none() && cli.kafka.partials_topic.is_none() {
            Some(GeneratorSpec::parse(&cli.generate).map_err(|e| format!("--generate: {}", e.0))?)
        } else {
            None
        };
        let mut candidates = input_candidates(cli, generator.as_ref())?;
        // A first start reads its request topic's tail once its dead letters can be written: its
        // script is known then (and no checkpoint may be there to check it against).
        let script = requests.as_deref().filter(|_| cli.kafka.request_topic.is_none() || script_end.is_some());
        let recovery = open_recovery(cli, window_ms, script, &candidates)?;
        refuse_checkpoints_without_topic(
            cli,
            script_end.is_some(),
            recovery.as_ref().is_some_and(|r| r.resume.is_some()),
        )?;
        let layout = recovery.as_ref().and_then(|r| r.resume.as_ref()).map_or(0, |r| r.inputs_at);
        let (units, inputs) = candidates.swap_remove(layout);
        Ok(Startup {
            window_ms,
            default_window,
            lateness_ms,
            config,
            stop,
            pacer,
            requests_file,
            kafka_job,
            requests,
            script_end,
            generator,
            units,
            inputs,
            recovery,
            locks,
        })
    }
}

/// The request script process 0 starts from: `--requests FILE`'s text (none for `-`, whose
/// requests arrive while the job runs). `None` on the other processes.
fn request_script(cli: &Cli, requests_file: &str) -> Result<Option<String>, String> {
    let requests = if cli.process == 0 {
        let text = if requests_file.is_empty() {
            String::new()
        } else if requests_file == "-" {
            // Requests on stdin are live: they arrive while the job runs (follow_stdin_requests).
            String::new()
        } else {
            std::fs::read_to_string(requests_file).map_err(|e| format!("--requests {requests_file}: {e}"))?
        };
        Some(text)
    } else {
        None
    };
    Ok(requests)
}

/// What the job reads, as checkpoints name it: its input units, or the generator spec.
///
/// ```
/// use saams_jobs::job::input_names;
/// assert_eq!(input_names(&[], Some("stocks:3:10")), vec!["generate:stocks:3:10".to_string()]);
/// ```
pub fn input_names(units: &[Unit], generate: Option<&str>) -> Vec<String> {
    let mut names: Vec<String> = units
        .iter()
        .map(|u| match u {
            Unit::File(p, _) => format!("file:{}", p.display()),
            Unit::Range(p, _, start, end) => format!("range:{}@{start}..{end}", p.display()),
            Unit::Stripes(p, _, s) => {
                format!("stripes:{}@{}+{}x{}..{}", p.display(), s.first, s.stride, s.size, s.len)
            }
            Unit::Stdin(_) => "stdin".to_string(),
        })
        .collect();
    names.extend(generate.map(|g| format!("generate:{g}")));
    names
}

/// The inputs in one layout: the units, and their names in checkpoints.
type LayoutInputs = (Vec<Unit>, Vec<String>);

/// The inputs in each layout the job may read them in.
fn input_candidates(cli: &Cli, generator: Option<&GeneratorSpec>) -> Result<Vec<LayoutInputs>, String> {
    // The inputs in each way files can be cut into ranges: this job's own first, then the one a
    // checkpoint of an earlier version may name (a job resumes in the layout it started in).
    let layouts: &[RangeLayout] = if cli.checkpoints.is_some() {
        &[RangeLayout::Striped, RangeLayout::Equal, RangeLayout::Fixed]
    } else {
        &[RangeLayout::Striped]
    };
    let mut candidates = Vec::new();
    for &layout in layouts {
        let units = expand_inputs(&cli.data, cli.format.map(|f| f.parser()), cli.chunk_bytes, layout)?;
        let mut inputs = input_names(&units, generator.map(|_| cli.generate.as_str()));
        inputs.extend(cli.kafka.data_topic.as_ref().map(|t| format!("kafka:{t}")));
        inputs.extend(cli.kafka.partials_topic.as_ref().map(|t| format!("partials:{t}")));
        candidates.push((units, inputs));
    }
    Ok(candidates)
}

/// `--checkpoints`: the directory opened and the checkpoint to resume from found.
fn open_recovery(
    cli: &Cli,
    window_ms: i64,
    script: Option<&str>,
    candidates: &[LayoutInputs],
) -> Result<Option<Recovery>, String> {
    let recovery = match &cli.checkpoints {
        Some(dir) => {
            let names: Vec<Vec<String>> = candidates.iter().map(|(_, inputs)| inputs.clone()).collect();
            // The processes of a job taking over start from the checkpoint its process 0 chose
            // (the running job may complete another between their starts).
            let at_most = crate::handoff::start_checkpoint(cli)?;
            let options = RecoveryOptions { at_most: at_most.unwrap_or(u64::MAX), ..recovery_options(cli) };
            Some(Recovery::open(&options, dir, (window_ms as u64, script, &names))?)
        }
        None => None,
    };
    Ok(recovery)
}

/// Where a process' answers and dead letters go.
pub(super) struct Outputs {
    pub(super) sink: Arc<LineSink>,
    /// Whether the answers go to a file or stdout (not to a Kafka topic).
    pub(super) file_sink: bool,
    pub(super) dead: Option<Arc<LineSink>>,
    /// `dead_path`: the dead letters go to this file (or `-`, stdout), not to a topic.
    pub(super) dead_path: Option<String>,
}

impl Outputs {
    /// Open the answers' sink and the dead letters' (cut back to a checkpoint resumed from).
    ///
    /// # Errors
    /// When a file cannot be opened or cut, or the output topic cannot be read.
    pub(super) fn open(cli: &Cli, start: &Startup) -> Result<Outputs, String> {
        if cli.take_over {
            // Nothing is opened before the running job lets go (`crate::handoff`): its topics'
            // producers are connected, and produce nothing until then.
            let kafka = start.kafka_job.as_deref();
            let (answer_topic, dead_topic) =
                kafka.map_or((false, false), |k| (k.writes_answers(), k.writes_dead_letters()));
            let dead = (dead_topic || cli.dead_letter.is_some()).then(|| Arc::new(LineSink::detached()));
            let dead_path = cli.dead_letter.as_ref().filter(|_| !dead_topic).map(|p| p.display().to_string());
            return Ok(Outputs { sink: Arc::new(LineSink::detached()), file_sink: !answer_topic, dead, dead_path });
        }
        let (kafka_job, recovery) = (&start.kafka_job, &start.recovery);
        let kafka_sink = kafka_job.as_ref().and_then(|k| k.estimation_writer());
        let file_sink = kafka_sink.is_none();
        if let (Some(k), Some(resume)) = (kafka_job, recovery.as_ref().and_then(|r| r.resume.as_ref())) {
            // Answers produced after the checkpoint, before the crash: not produced again.
            let found = k.skip_delivered(resume)?;
            if found > 0 {
                eprintln!(
                    "saams: {found} answers are in the output topic past checkpoint {}: not produced again",
                    resume.id
                );
            }
        }
        let sink = Arc::new(match (kafka_sink, recovery) {
            (Some(w), None) => LineSink::from_writer(w),
            // Answers are produced when the checkpoint after them is written (crate::kafka::produce).
            (Some(w), Some(_)) => LineSink::from_writer(w).hold_until_commit(),
            (None, None) => LineSink::open(&cli.out)?,
            (None, Some(r)) => r.open_output(&recovery_options(cli))?,
        });
        let (dead, dead_path) = Outputs::open_dead_letters(cli, kafka_job.as_ref(), recovery.as_ref())?;
        Ok(Outputs { sink, file_sink, dead, dead_path })
    }

    /// The dead letters' sink: the Kafka job's topic, or `--dead-letter`'s file, or none.
    fn open_dead_letters(
        cli: &Cli,
        kafka_job: Option<&Arc<KafkaJob>>,
        recovery: Option<&Recovery>,
    ) -> Result<(Option<Arc<LineSink>>, Option<String>), String> {
        let dead_letters = match (kafka_job.and_then(|k| k.dead_letter_writer()), &cli.dead_letter) {
            (Some(w), _) => (Some(Arc::new(LineSink::from_writer(w))), None),
            (None, Some(p)) => {
                let path = p.display().to_string();
                let file = match recovery {
                    Some(r) => r.open_dead_letters(cli.process, &path)?,
                    None => LineSink::open(&path)?,
                };
                (Some(Arc::new(file)), Some(path))
            }
            (None, None) => (None, None),
        };
        Ok(dead_letters)
    }

    /// After the workers: the answers released and flushed, the checkpoints' report, the dead
    /// letters flushed, and the Kafka job's closing lines.
    ///
    /// # Errors
    /// When the Kafka job cannot deliver what it holds.
    pub(super) fn finish(
        &self,
        checkpoints: Option<&CheckpointJob>,
        kafka_job: Option<&KafkaJob>,
    ) -> Result<(), String> {
        self.sink.release_all();
        self.sink.flush();
        if let Some(c) = checkpoints {
            eprintln!("{}", c.report());
        }
        if let Some(d) = &self.dead {
            d.flush();
        }
        if let Some(k) = kafka_job {
            k.finish()?.iter().for_each(|l| eprintln!("{l}"));
        }
        Ok(())
    }
}

/// Timely's allocators for this process' workers (and what keeps its network threads).
///
/// # Errors
/// When the processes of a cluster cannot connect.
pub(super) fn connect(
    cli: &Cli,
    communication: CommunicationConfig,
    metrics: &Arc<Metrics>,
) -> Result<(Vec<AllocatorBuilder>, Box<dyn Any + Send>), String> {
    let allocators = match communication {
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
    Ok(allocators)
}

/// The process' checkpoint writer, when the job writes checkpoints: the job's shape (window,
/// script `requests`, input names) and its outputs, as a restart checks and cuts them.
///
/// # Errors
/// When the checkpoint directory cannot be opened.
pub(super) fn open_checkpoint_job(
    cli: &Cli,
    recovery: Option<&Recovery>,
    (window_ms, requests, inputs): (i64, Option<&str>, &[String]),
    outputs: &Outputs,
    kafka_job: Option<&Arc<KafkaJob>>,
) -> Result<Option<Arc<CheckpointJob>>, String> {
    let Outputs { sink, file_sink, dead, dead_path } = outputs;
    let checkpoints = match recovery {
        None => None,
        Some(r) => Some(Arc::new(CheckpointJob::new(
            CheckpointStore::open(&r.dir, r.keep)?,
            JobShape {
                process: cli.process,
                processes: cli.processes,
                workers: cli.workers,
                window_ms: window_ms as u64,
                script: requests.map(str::to_string).unwrap_or_default(),
                inputs: inputs.to_vec(),
                out_path: (*file_sink && cli.out != "-").then(|| cli.out.clone()),
                output_offsets: kafka_job.filter(|_| !file_sink).and_then(|k| k.answer_offsets()),
                dead: dead.clone().map(|d| (d, dead_path.clone().filter(|p| p != "-"))),
            },
            sink.clone(),
        ))),
    };
    Ok(checkpoints)
}

/// With checkpoints: the checkpoint resumed from (if any), the interval, the first new id, and
/// the live requests to apply before reading on (with the process' request log).
pub(super) type ResumeSettings = (Option<Arc<Resume>>, Duration, u64, Arc<LiveRequests>);

/// What every worker of a process shares: counters, sinks, the hub, the inputs to read.
pub(super) struct Shared {
    /// Checkpoints: the process' writer, and the checkpoint resumed from, the interval and
    /// the first new id.
    pub(super) checkpoints: Option<Arc<CheckpointJob>>,
    pub(super) recovery: Option<ResumeSettings>,
    pub(super) stats: Arc<Stats>,
    pub(super) metrics: Arc<Metrics>,
    pub(super) sink: Arc<LineSink>,
    pub(super) dead: Option<Arc<LineSink>>,
    pub(super) hub: Arc<Hub>,
    pub(super) kafka_job: Option<Arc<KafkaJob>>,
    /// The devices heard from over the partials topic (`--partials-topic`).
    pub(super) devices: Option<Arc<crate::edge::devices::Devices>>,
    pub(super) requests: Option<String>,
    pub(super) store: Arc<SnapshotDir>,
    pub(super) generator: Option<GeneratorSpec>,
    pub(super) units: Vec<Unit>,
    pub(super) stop: StopFlag,
    pub(super) pacer: Pacer,
    pub(super) settings: Settings,
    /// With checkpoints: a hand-off to or from another job (`crate::handoff`).
    pub(super) handoff: Option<Arc<HandOff>>,
    /// A job reading files or the generator: its units on their way between the process'
    /// workers (`super::handover`); only the active workers read.
    pub(super) reader_board: Option<Arc<super::handover::ReaderBoard>>,
}

impl Shared {
    /// Worker `worker`'s side of the units' moves, if they follow the active workers
    /// (`super::handover`).
    pub(super) fn handover(&self, worker: &mut timely::worker::Worker, plan: &Plan) -> Option<Handover> {
        let job = super::handover::JobInputs {
            workers_per_process: self.settings.workers_per_process,
            inputs: (self.generator, self.units.clone()),
            counts: (self.metrics.clone(), self.stats.clone()),
            pacer: self.pacer.clone(),
        };
        self.reader_board.clone().map(|board| Handover::new(board, worker, plan, job))
    }
}

/// The job's settings every worker reads.
#[derive(Clone, Copy)]
pub(super) struct Settings {
    pub(super) window_ms: i64,
    /// The window of synopses whose construct names none (`--window-type`).
    pub(super) default_window: WindowSpec,
    pub(super) lateness_ms: i64,
    pub(super) no_synopses: bool,
    pub(super) strict_requests: bool,
    pub(super) workers_per_process: usize,
    /// Workers holding the synopses at the start (`--active-workers`; `None`: all).
    pub(super) active_workers: Option<usize>,
    /// `--autoscale`: every worker reports its load to worker 0.
    pub(super) autoscale: bool,
    /// Bins whose owned state a rescale moves per window (`--rescale-batch`; 0: all at its fence).
    pub(super) rescale_batch: u32,
}

/// `--autoscale`'s settings from the command line (`None` without the flag).
///
/// # Errors
/// A bad `--autoscale`, `--autoscale-interval` or `--autoscale-cooldown`.
pub(super) fn autoscale_settings(cli: &Cli) -> Result<Option<crate::control::autoscale::AutoscaleSettings>, String> {
    crate::control::autoscale::settings(
        cli.autoscale.as_deref(),
        cli.workers * cli.processes,
        &cli.autoscale_interval,
        &cli.autoscale_cooldown,
    )
}
