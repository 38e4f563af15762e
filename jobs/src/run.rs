//! The `saams` job: timely configuration from the CLI, the request broadcast, the dataflow
//! (registry join → update → tree merge → fold → answers → set changes → sink), and the reading
//! loop with event-time windows.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use saams::Datum;
use saams::api::request::parse_requests;

use crate::control::fence::Fences;
use crate::control::hub::Hub;
use crate::control::intake::Intake;
use crate::dataflow::RecInput;
use saams_datasets::GeneratorSpec;
use saams_operators::ask::{fence_marker, split_reply, to_every_worker};
use saams_operators::{Plan, Rec, Val};
use timely::communication::Config as CommunicationConfig;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::InputHandle;
use timely::{Config, WorkerConfig};

use crate::checkpoint::CheckpointStore;
use crate::checkpoint::marks::SourceMarks;
use crate::checkpoint::recovery::{Recovery, RecoveryOptions, input_names};
use crate::checkpoint::resume::Resume;
use crate::checkpoint::writer::{CheckpointJob, JobShape};
use crate::cli::{Cli, parse_duration_ms};
use crate::metrics::{CommFigures, LocalCounts, Metrics, Totals, WorkerLabels};
use crate::sink::file::{LineSink, SnapshotDir};
use crate::source::file::{BadLine, Input as Unit, RangeLayout, UnitReader, expand_inputs};
use crate::source::group_batch::GroupBatch;
use crate::source::kafka::{KafkaInput, KafkaJob};
use crate::source::route_cache::RouteCache;
use crate::source::{generated::Generated, pace::Pacer, stop::StopFlag};
use saams::checkpoint::SourcePosition;

pub use crate::stats::Stats;

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
fn recovery_options(cli: &Cli) -> RecoveryOptions<'_> {
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

/// Pseudo field indices of generated streams: synopses over `streamID` / `dataSetKey` (e.g. the
/// distinct vessels of a sea area).
const STREAM_ID_FIELD: usize = usize::MAX;
const DATASET_KEY_FIELD: usize = usize::MAX - 1;

enum Source {
    Lines(UnitReader),
    Generated(Generated, Vec<(u32, usize)>),
    /// Records of the data topic (read by [`KafkaInput`], never fetched through a `Reading`).
    Kafka,
}

struct Reading {
    unit: u64,
    source: Source,
    /// The tuple of the last line read (the pending one while `pending` is a tuple): every line
    /// of the unit is parsed into it, reusing its strings and fields.
    tuple: saams::api::Tuple,
    max_time: i64,
    pending: Option<Pending>,
    /// Positions at checkpoint boundaries.
    marks: SourceMarks,
}

/// A unit's next tuple, read but not yet routed.
enum Pending {
    /// Line number and event time of the tuple in [`Reading::tuple`].
    Tuple(u64, i64),
    Values(u64, i64, [f64; 6]),
}

impl Pending {
    fn time(&self) -> i64 {
        match self {
            Pending::Tuple(_, time) | Pending::Values(_, time, _) => *time,
        }
    }
}

impl Reading {
    /// Read the unit's next tuple into `pending` (bad lines are dead-lettered on the way);
    /// false at the end of the unit.
    fn fetch(&mut self, router: &mut Router, input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>) -> bool {
        loop {
            match &mut self.source {
                Source::Lines(reader) => match reader.next_tuple_into(&mut self.tuple) {
                    None => return false,
                    Some((line, Ok(()))) => {
                        self.pending = Some(Pending::Tuple(line, self.tuple.time_ms.unwrap_or(0)));
                        return true;
                    }
                    Some((line, Err(bad))) => router.route(self, line, Err(bad), input),
                },
                Source::Kafka => return false,
                Source::Generated(g, _) => {
                    let mut values = [0.0; 6];
                    return match g.next_values(&mut values) {
                        None => false,
                        Some((index, time)) => {
                            self.pending = Some(Pending::Values(index, time, values));
                            true
                        }
                    };
                }
            }
        }
    }

    /// The unit's name in checkpoints.
    fn key(&self) -> String {
        match &self.source {
            Source::Lines(_) => format!("unit:{}", self.unit),
            Source::Generated(..) => format!("generator:{}", self.unit),
            Source::Kafka => "kafka".to_string(),
        }
    }

    /// Where the tuple with line number (or generator index) `line` that is being routed
    /// starts, and the newest time before it.
    fn position_of(&self, line: u64) -> SourcePosition {
        let (offset, line) = match &self.source {
            Source::Lines(r) => r.line_start(),
            _ => (line.saturating_sub(1), line.saturating_sub(1)),
        };
        let max_time = (self.max_time != i64::MIN).then_some(self.max_time);
        SourcePosition { source: self.key(), offset, line, max_time, done: false }
    }

    /// Where the unit reads on now: its pending tuple, or the next unread one.
    fn position_now(&self) -> SourcePosition {
        let mut p = match (&self.pending, &self.source) {
            (Some(Pending::Tuple(line, _)), _) => self.position_of(*line),
            (Some(Pending::Values(index, ..)), _) => self.position_of(*index),
            (None, Source::Lines(r)) => {
                let (offset, line) = r.position();
                SourcePosition { source: self.key(), offset, line, max_time: None, done: false }
            }
            (None, Source::Generated(g, _)) => self.position_of(g.index() + 1),
            (None, Source::Kafka) => self.position_of(0),
        };
        p.max_time = (self.max_time != i64::MIN).then_some(self.max_time);
        p
    }

    fn name(&self) -> String {
        match &self.source {
            Source::Lines(r) => r.name().to_string(),
            Source::Generated(g, _) => format!("generator:{}", g.stream_id),
            Source::Kafka => "kafka".to_string(),
        }
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
    let guards = timely::execute::execute_from(builders, others, config.worker, move |worker| work(worker, &shared))
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

/// What every worker of a process shares: counters, sinks, the hub, the inputs to read.
struct Shared {
    /// Checkpoints: the process' writer, and the checkpoint resumed from, the interval and
    /// the first new id.
    checkpoints: Option<Arc<CheckpointJob>>,
    recovery: Option<(Option<Arc<Resume>>, Duration, u64)>,
    stats: Arc<Stats>,
    metrics: Arc<Metrics>,
    sink: Arc<LineSink>,
    dead: Option<Arc<LineSink>>,
    hub: Arc<Hub>,
    kafka_job: Option<Arc<KafkaJob>>,
    requests: Option<String>,
    store: Arc<SnapshotDir>,
    generator: Option<GeneratorSpec>,
    units: Vec<Unit>,
    stop: StopFlag,
    pacer: Pacer,
    settings: Settings,
}

/// The job's settings every worker reads.
#[derive(Clone, Copy)]
struct Settings {
    window_ms: i64,
    lateness_ms: i64,
    no_synopses: bool,
    strict_requests: bool,
    workers_per_process: usize,
}

/// The plan every worker compiles from the same request script; worker 0 speaks for them
/// (unknown-field notes, the script's own answers).
fn build_plan(text: &str, (me, peers): (usize, usize), job: &Shared) -> Rc<RefCell<Plan>> {
    let settings = job.settings;
    let mut intake = Intake::new(settings.strict_requests);
    let (requests, notes) = intake.vet(parse_requests(text));
    if me == 0 {
        notes.iter().for_each(|n| eprintln!("{n}"));
        job.stats.request_warnings.fetch_add(intake.warnings(), Ordering::Relaxed);
    }
    let mut plan = Plan::build(&requests, peers, settings.window_ms, job.store.clone());
    plan.update = !settings.no_synopses;
    plan.workers_per_process = settings.workers_per_process;
    let resume = job.recovery.as_ref().and_then(|(r, ..)| r.clone());
    if me == 0 && resume.is_none() {
        // (A resumed job wrote them before its first checkpoint.)
        let lines: Vec<String> = plan.script_answers.iter().map(|e| e.to_json_line()).collect();
        job.sink.write_all(lines.iter());
    }
    if let Some(resume) = resume {
        let mut intake = Intake::new(settings.strict_requests);
        for r in resume.requests() {
            let (requests, _) = intake.vet(parse_requests(&r.text));
            let applied = plan.extend(&requests, r.fence_ms, None);
            if me == 0 && r.fence_ms > resume.boundary_ms {
                // Acknowledgements after the checkpoint's cut (see `take_applied`).
                job.sink.write_at(r.fence_ms - 1, None, applied.lines.iter().map(|l| split_reply(l).1));
            }
        }
        if let Err(e) = resume.fill(&plan) {
            eprintln!("saams: --checkpoints: {e}");
            std::process::exit(2);
        }
    }
    Rc::new(RefCell::new(plan))
}

/// One worker: receive the request script, build the dataflows, read its units (and Kafka
/// partitions) until the input ends and every live request is answered, then finish.
fn work(worker: &mut timely::worker::Worker, job: &Shared) {
    let Settings { window_ms, lateness_ms, strict_requests, workers_per_process, .. } = job.settings;
    let (stats, sink2, dead2, hub2) = (&job.stats, &job.sink, &job.dead, &job.hub);
    let (kafka_job2, generator, units) = (&job.kafka_job, &job.generator, &job.units);
    let (stop, pacer, requests) = (&job.stop, &job.pacer, &job.requests);
    let me = worker.index();
    let peers = worker.peers();

    // 1. The request script, broadcast from worker 0 to every worker, in order.
    let text = crate::dataflow::receive_script(worker, requests.as_ref());
    let plan = build_plan(&text, (me, peers), job);
    // The process' first worker takes its live requests (HTTP, and later the request topic).
    let intake_hub = me.is_multiple_of(workers_per_process.max(1)).then(|| hub2.clone());
    if let Some(hub) = &intake_hub {
        // The script's synopses are live from the start (GET /synopses, and what HTTP checks
        // queries against).
        hub.set_synopses(registry_rows(&plan.borrow()));
    }
    let mut fences = Fences::build(worker, window_ms as u64, intake_hub, strict_requests);
    let resume = job.recovery.as_ref().and_then(|(r, ..)| r.clone());
    if let Some((_, every, first_id)) = &job.recovery {
        let log = resume.as_ref().map(|r| r.requests().to_vec()).unwrap_or_default();
        fences.checkpoint_every(*every, *first_id, log, resume.is_some());
    }

    // 2. The dataflow.
    let (mut input, probe) = crate::dataflow::build(worker, &plan, sink2.clone(), hub2.clone());

    // 2b. Epoch gossip for Kafka input: every worker's own epoch (while it has active
    //     partitions) reaches every worker of every process, so a process whose partitions are
    //     all idle follows the others instead of holding their windows open.
    let heard = Rc::new(Cell::new(0u64));
    let mut gossip = kafka_job2.is_some().then(|| crate::dataflow::gossip(worker, heard.clone()));
    let mut told = 0u64;

    // 3. Read this worker's units round-robin, a batch at a time; the input's epoch is the
    //    oldest event time (ms) any unit can still produce (its newest time minus the
    //    lateness): the watermark that releases values to their synopses inside a window.
    let mut readers = open_readers(&plan.borrow(), generator.as_ref(), units, (me, peers), dead2.as_deref(), stats);
    let mut ended = Vec::new();
    if let Some(resume) = &resume {
        resume_readers(&mut readers, resume, units, &mut ended, (dead2.as_deref(), stats));
    }
    let mut boundaries_known = 0u64;
    let mut router = Router::new(&plan, me, job);
    if let Some(resume) = &resume {
        // Fences (live requests, checkpoints) fall at or after the boundary resumed from: a
        // checkpoint before it would name the resumed positions with an earlier boundary, and a
        // restart from it would count the values between the two boundaries twice.
        router.newest = router.newest.max((resume.boundary_ms.min(i64::MAX as u64) as i64).saturating_sub(1));
    }
    let checkpointed = job.checkpoints.is_some().then_some(resume.as_deref());
    let mut kafka = kafka_job2.as_ref().and_then(|k| k.worker_input((me, peers), (dead2.clone(), sink2), checkpointed));
    let mut kafka_unit = Reading {
        unit: 0,
        source: Source::Kafka,
        tuple: saams::api::Tuple::default(),
        max_time: i64::MIN,
        pending: None,
        marks: SourceMarks::default(),
    };
    if let Some(resume) = &resume {
        // Values before the checkpoint's boundary were counted before it.
        kafka_unit.marks.skip_before = resume.boundary_ms.min(i64::MAX as u64) as i64;
    }
    let mut epoch = 0u64;
    let mut reading = true;
    loop {
        // Live requests: agree fences, apply them, answer for what this worker took.
        let newest = plan.borrow().window_of(router.newest);
        for (request_epoch, fence) in fences.poll(&plan, newest) {
            if reading {
                // Before any value routed with the new plan: see `control::fence`.
                for copy in to_every_worker(fence_marker(request_epoch, fence, epoch as i64), peers) {
                    input.send(copy);
                }
            }
            plan.borrow_mut().apply_through(request_epoch, fence);
        }
        if take_applied(&plan, me, sink2, hub2, &mut input, epoch) {
            for r in &mut readers {
                if let Source::Generated(g, routes) = &mut r.source {
                    *routes = generated_routes(&plan.borrow(), g);
                }
            }
            router.counts.grow(plan.borrow().groups.len());
        }
        want_boundaries(&plan.borrow(), (&mut readers, kafka.as_mut()), &mut boundaries_known);
        if let Some(c) = &job.checkpoints {
            let at = (&mut readers[..], &mut ended[..], kafka.as_mut(), router.tuples);
            write_checkpoints(&plan, &probe, at, &mut fences, (c, me));
        }
        let active = (!readers.is_empty() || kafka.as_ref().is_some_and(KafkaInput::running)) && !stop.raised();
        if !active && reading {
            // This worker's input ended: stop holding the others' windows back, stop taking
            // requests; keep the input for the asks and fences still to come.
            reading = false;
            fences.stop_forwarding();
            epoch = DONE_EPOCH;
            input.advance_to(epoch);
        }
        if !active {
            if fences.finished(&plan.borrow()) {
                break;
            }
            worker.step_or_park(Some(Duration::from_millis(1)));
            continue;
        }
        let hold_end = fences.hold().map(|h| (h as i64).saturating_add(window_ms));
        let (allowance, routed_before) = (pacer.take(Instant::now()), router.tuples);
        read_units(&mut readers, &mut router, &mut input, (allowance, hold_end), (window_ms, &mut ended));
        let kafka_low = kafka.as_mut().map(|k| {
            if hold_end.is_none() && allowance > router.tuples - routed_before {
                k.poll(allowance - (router.tuples - routed_before), stats, |seq, t| {
                    kafka_unit.max_time = i64::MIN; // lateness is judged per partition by the source
                    let window = plan.borrow().window_of(t.time_ms.unwrap_or(0));
                    let mut t = t;
                    std::mem::swap(&mut kafka_unit.tuple, &mut t);
                    router.route(&mut kafka_unit, seq, Ok(()), &mut input);
                    // The next record parsed on this thread reuses the previous tuple's
                    // allocations.
                    saams_datasets::jsonl::recycle(t);
                    window
                });
                router.send_batch(&mut input);
            }
            k.follow(heard.get());
            let (low, own) = k.low(|t| plan.borrow().window_of(t));
            if let Some(own) = own
                && own > told
                && let Some(g) = gossip.as_mut()
            {
                told = own;
                g.send(own);
                g.flush(); // an input hands data on only when flushed or advanced
            }
            low
        });
        // A unit that has routed nothing yet but holds its first tuple can produce nothing
        // older than that tuple's time minus the lateness either: a byte range of a file that
        // waits for the others to reach its time does not hold every window open (it held the
        // frontier at 0, and every value in the reorder buffers, until each range had started).
        let low = readers
            .iter()
            .map(|r| {
                let newest =
                    if r.max_time == i64::MIN { r.pending.as_ref().map(Pending::time) } else { Some(r.max_time) };
                newest.map_or(0, |t| t.saturating_sub(lateness_ms).max(0) as u64)
            })
            .chain(kafka_low)
            .min();
        // In steps of EPOCH_STEP_MS (or the window): every advance is progress traffic
        // between all workers and processes.
        let step = window_ms.clamp(1, EPOCH_STEP_MS) as u64;
        if let Some(low) = low.map(|l| l - l % step)
            && low > epoch
        {
            epoch = low;
            input.advance_to(epoch);
            stats.epoch.store(plan.borrow().window_of(epoch as i64) as i64, Ordering::Relaxed);
        }
        if router.tuples == routed_before && hold_end.is_none() {
            // Nothing to read right now (a quiet live input): wait for it or for the others.
            worker.step_or_park(Some(Duration::from_millis(1)));
        } else {
            worker.step();
        }
        pacer.settle(allowance, router.tuples - routed_before); // --rate: park until the next batch may be read
        if let Some(wait) = pacer.wait(Instant::now()) {
            worker.step_or_park(Some(wait));
        }
        // Keep a bounded number of windows in flight (each holds its synopses' state until it
        // closes), and a bounded span of event time read but not processed (values queued in
        // the exchanges): park (instead of spinning) while other workers catch up, still taking
        // part in the fences (they may wait for this worker's position). A bound in windows
        // alone let a one-hour window queue 64 hours of values (peak RSS 1.55× that of 60 s).
        let behind = epoch.saturating_sub((64 * window_ms).min(MAX_LAG_MS) as u64);
        if probe.less_than(&behind) {
            worker.step_or_park(Some(Duration::from_millis(1)));
            continue;
        }
        if let Some(k) = kafka.as_mut() {
            // Timestamps are event-time ms and a window's answers travel at its last ms: the
            // windows before the frontier's window are done.
            let done = probe.with_frontier(|f| f.first().copied());
            k.maybe_commit(done.map(|f| if f == u64::MAX { f } else { plan.borrow().window_of(f as i64) }));
        }
    }
    router.flush_stats(0);
    debug_assert!(router.batch.is_empty(), "every read round sends what it routed");
    drop(input);
    drop(gossip);
    while !probe.done() {
        worker.step_or_park(Some(Duration::from_millis(1)));
    }
    if let Some(k) = kafka {
        k.finish();
    }
}

/// Start the `--http` server (if asked for); it stops when the returned flag is set.
fn start_metrics(
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

/// `--requests -`: every JSON value on stdin (a request object or an array of them, on one
/// line or several) goes to the hub as it completes and takes effect at the next fence, like a
/// request posted over HTTP. Malformed JSON ends the reading (the stream cannot be resynchronized)
/// with a message; the job goes on.
fn follow_stdin_requests(hub: Arc<Hub>) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin().lock();
        for value in serde_json::Deserializer::from_reader(stdin).into_iter::<serde_json::Value>() {
            match value {
                Ok(v) => hub.submit_detached(v.to_string()),
                Err(e) => {
                    eprintln!("saams: requests on stdin: {e}; no more requests are read from stdin");
                    return;
                }
            }
        }
    });
}

/// How often a file or stdout sink is flushed while the job runs: a service's answers (and the
/// acknowledgements of live requests) and its dead letters reach readers within this, not at
/// the end (a dead-letter file of a long run with few bad lines was written only when its
/// buffer filled).
const FLUSH_EVERY: Duration = Duration::from_millis(200);

fn start_flusher(sinks: Vec<Arc<LineSink>>, finished: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
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

/// Tuples between two flushes of a worker's counts into the metrics registry.
const METRICS_EVERY: u64 = 1 << 16;

impl Router {
    fn new(plan: &Rc<RefCell<Plan>>, me: usize, job: &Shared) -> Router {
        Router {
            plan: plan.clone(),
            lateness_ms: job.settings.lateness_ms,
            stats: job.stats.clone(),
            dead: job.dead.clone(),
            recs: Vec::new(),
            batch: GroupBatch::default(),
            tuples: 0,
            reported: 0,
            route_cache: RouteCache::default(),
            last_window: LastWindow::default(),
            counts: LocalCounts::new(&job.metrics, me, plan.borrow().groups.len()),
            newest: 0,
            syn_labels: plan
                .borrow()
                .synopses
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    vec![
                        ("synopsis".to_string(), i.to_string()),
                        ("kind".to_string(), s.kind.to_string()),
                        ("stream".to_string(), format!("{}/{}", s.dataset, s.stream)),
                    ]
                })
                .collect(),
            metrics: job.metrics.clone(),
        }
    }
}

/// Count a rejected input line (malformed, late) and write it to the dead letters, if kept.
fn reject_line(
    (stats, dead): (&Stats, Option<&LineSink>),
    unit: &Reading,
    line: u64,
    raw: &str,
    error: &str,
    late: bool,
) {
    stats.dead_letters.fetch_add(1, Ordering::Relaxed);
    if late {
        stats.late.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(d) = dead {
        let j = serde_json::json!({"source": format!("{}:{line}", unit.name()), "error": error, "input": raw});
        d.write_all(std::iter::once(&j.to_string()));
    }
}

/// The window a router last routed to, the times in it and the plan's window length then:
/// tuples come in runs of one window, and [`Plan::window_of`]'s 64-bit division for every tuple
/// drew ~1.4 % of a `--no-synopses` JSON-lines ingest's `perf` samples (6 % of the router's).
#[derive(Default)]
struct LastWindow {
    window: u64,
    span: std::ops::Range<i64>,
    window_ms: i64,
}

impl LastWindow {
    /// [`Plan::window_of`] `time`, dividing only when it leaves the last window.
    #[inline]
    fn of(&mut self, plan: &Plan, time: i64) -> u64 {
        if !self.span.contains(&time) || self.window_ms != plan.window_ms {
            (self.window, self.span) = plan.window_span(time);
            self.window_ms = plan.window_ms;
        }
        self.window
    }
}

/// Turns parsed tuples into routed records (the reading side of the routing pacts).
struct Router {
    plan: Rc<RefCell<Plan>>,
    /// Newest event time routed (ms): the fences start after its window.
    newest: i64,
    lateness_ms: i64,
    stats: Arc<Stats>,
    dead: Option<Arc<LineSink>>,
    recs: Vec<Rec>,
    /// Records routed this round, sent grouped ([`GroupBatch`]).
    batch: GroupBatch,
    tuples: u64,
    reported: u64,
    /// The groups a (dataset, stream) pair feeds, kept per dataset for the current plan version.
    route_cache: RouteCache,
    /// The window last routed to.
    last_window: LastWindow,
    counts: LocalCounts,
    syn_labels: Vec<WorkerLabels>,
    metrics: Arc<Metrics>,
}

impl Router {
    fn reject(&self, unit: &Reading, line: u64, raw: &str, error: &str, late: bool) {
        reject_line((&*self.stats, self.dead.as_deref()), unit, line, raw, error, late);
    }

    /// Route the tuple `parsed` says is in `unit.tuple` (line `line`), or dead-letter the bad
    /// line it carries.
    fn route(
        &mut self,
        unit: &mut Reading,
        line: u64,
        parsed: Result<(), BadLine>,
        input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>,
    ) {
        if self.tuples == 0 {
            self.stats.first.get_or_init(Instant::now);
        }
        if let Err((raw, e)) = parsed {
            return self.reject(unit, line, &raw, &e, false);
        }
        // Borrowed until the records are made; the unit is changed only after (`accept`).
        let t = &unit.tuple;
        let time = t.time_ms.unwrap_or(0);
        if time < unit.marks.skip_before {
            // Counted (or found late) before the checkpoint this unit resumed from.
            return;
        }
        if time < 0 {
            return self.reject(unit, line, &t.to_json(), "event time before 1970", false);
        }
        if unit.max_time != i64::MIN && time < unit.max_time.saturating_sub(self.lateness_ms) {
            let msg = format!(
                "late: {} ms older than the newest tuple of its input (lateness bound {} ms)",
                unit.max_time - time,
                self.lateness_ms
            );
            return self.reject(unit, line, &t.to_json(), &msg, true);
        }
        let plan = self.plan.borrow();
        let window = self.last_window.of(&plan, time);
        let seq = (unit.unit << 40) | line;
        self.recs.clear();
        for &g in self.route_cache.groups(&plan, &t.dataset_key, &t.stream_id) {
            let group = &plan.groups[g as usize];
            let datum = match group.field.as_str() {
                "streamID" => Some(Datum::Str(&t.stream_id)),
                "dataSetKey" => Some(Datum::Str(&t.dataset_key)),
                f => t.field(f),
            };
            let val = match datum {
                None => continue,
                Some(Datum::Num(x)) => Val::Num(x),
                // Text that reads as a number is one (vessel ids): `parse_f64` is `str::parse`'s
                // value without its general machinery (~2 % of an AIS ingest).
                Some(Datum::Str(s)) => match saams_datasets::parse_f64(saams_datasets::trim(s)) {
                    Some(x) if x.is_finite() => Val::Num(x),
                    _ if group.numeric => {
                        let msg = format!("field `{}` is not numeric: {s:?}", group.field);
                        let to = (&*self.stats, self.dead.as_deref());
                        return reject_line(to, unit, line, &t.to_json(), &msg, false);
                    }
                    _ => Val::Str(s.into()),
                },
            };
            self.recs.push(Rec { group: g, time, seq, val });
        }
        drop(plan);
        self.accept(unit, (line, time), window, input);
    }

    fn check_time(&self, unit: &Reading, time: i64) -> Result<(), (String, bool)> {
        if time < 0 {
            return Err(("event time before 1970".into(), false));
        }
        if unit.max_time != i64::MIN && time < unit.max_time.saturating_sub(self.lateness_ms) {
            let msg = format!(
                "late: {} ms older than the newest tuple of its input (lateness bound {} ms)",
                unit.max_time - time,
                self.lateness_ms
            );
            return Err((msg, true));
        }
        Ok(())
    }

    fn accept(
        &mut self,
        unit: &mut Reading,
        (line, time): (u64, i64),
        window: u64,
        input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>,
    ) {
        if unit.marks.reached(time) {
            let at = unit.position_of(line);
            unit.marks.mark(time, at);
        }
        unit.max_time = unit.max_time.max(time);
        self.newest = self.newest.max(time);
        self.tuples += 1;
        // The metrics registry (labelled counters behind a lock, ~600 instructions per synopsis
        // touched) less often than the progress counters: ~1 % of the paper workload at every
        // 4096 tuples.
        if self.tuples.is_multiple_of(METRICS_EVERY) {
            self.flush_stats(window);
        } else if self.tuples.is_multiple_of(4096) {
            self.flush_progress(window);
        }
        for r in self.recs.drain(..) {
            self.counts.record(&r);
            if self.batch.push(r) {
                self.batch.send_grouped(|r| input.send(r));
            }
        }
    }

    /// Send the records routed since the last send (at the end of every read round: before the
    /// worker sends a fence or an ask, advances its epoch, or writes a checkpoint).
    fn send_batch(&mut self, input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>) {
        self.batch.send_grouped(|r| input.send(r));
    }

    /// Publish the tuples read and the newest window (progress line, metrics server).
    fn flush_progress(&mut self, window: u64) {
        self.stats.newest.fetch_max(window as i64, Ordering::Relaxed);
        self.stats.tuples.fetch_add(self.tuples - self.reported, Ordering::Relaxed);
        self.reported = self.tuples;
    }

    fn flush_stats(&mut self, window: u64) {
        self.flush_progress(window);
        let plan = self.plan.borrow();
        let labels = &self.syn_labels;
        self.counts.flush(&self.metrics, self.tuples, |g| match plan.update {
            true => plan.groups[g].synopses.iter().filter_map(|&s| labels.get(s as usize)).collect(),
            false => Vec::new(),
        });
    }

    /// The generator's path: values of known fields, routes resolved once per stream.
    fn route_values(
        &mut self,
        unit: &mut Reading,
        index: u64,
        time: i64,
        values: &[f64; 6],
        input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>,
    ) {
        if self.tuples == 0 {
            self.stats.first.get_or_init(Instant::now);
        }
        if time < unit.marks.skip_before {
            return;
        }
        if let Err((msg, late)) = self.check_time(unit, time) {
            return self.reject(unit, index, &format!("time {time}"), &msg, late);
        }
        let window = self.last_window.of(&self.plan.borrow(), time);
        let seq = (unit.unit << 40) | index;
        self.recs.clear();
        if let Source::Generated(gen_stream, routes) = &unit.source {
            for &(g, k) in routes {
                let val = match k {
                    STREAM_ID_FIELD => Val::Str(gen_stream.stream_id.as_str().into()),
                    DATASET_KEY_FIELD => Val::Str(gen_stream.dataset_key.as_str().into()),
                    k => Val::Num(values[k]),
                };
                self.recs.push(Rec { group: g, time, seq, val });
            }
        }
        self.accept(unit, (index, time), window, input);
    }
}

/// One round of reading this worker's units: each up to a little past the unit furthest behind
/// in event time, at most `allowance` tuples in all (`--rate`), nothing past `hold_end` while a
/// fence is agreed. Units that ended are dropped (a quiet live stdin stays).
fn read_units(
    readers: &mut Vec<Reading>,
    router: &mut Router,
    input: &mut RecInput,
    (allowance, hold_end): (u64, Option<i64>),
    (window_ms, ended): (i64, &mut Vec<(SourcePosition, SourceMarks)>),
) {
    let routed_before = router.tuples;
    // Read in event-time step: every unit up to a little past the unit that is furthest
    // behind (2 windows, at most READ_STEP_MS), so the watermark follows the input closely
    // and the values waiting for it (the update operator's reorder buffers) stay few,
    // whatever the window length.
    // A unit with nothing pending (it read its whole batch) is where its newest tuple is:
    // ignoring it let every other unit run ahead, and the reorder buffers held all of them.
    // A unit not read yet shows where it starts first: byte ranges of one file start at other
    // times, and routing the first tuples of each at once opened windows all over the file
    // (and put checkpoint boundaries and live requests' fences near its end).
    for r in readers.iter_mut() {
        if r.pending.is_none() && r.max_time == i64::MIN {
            r.fetch(router, input);
        }
    }
    let position =
        |r: &Reading| r.pending.as_ref().map(Pending::time).or((r.max_time != i64::MIN).then_some(r.max_time));
    let horizon = readers.iter().filter_map(position).min();
    let horizon = horizon.map_or(i64::MIN, |t| t.saturating_add((2 * window_ms).min(READ_STEP_MS)));
    // While a fence is being agreed, nothing past the window this worker announced.
    let horizon = match hold_end {
        Some(end) if horizon == i64::MIN || horizon > end => end,
        _ => horizon,
    };
    // Under --rate, every unit gets its share of the allowance: a unit never read would
    // hold the epoch (the oldest time any unit can still produce) back for good.
    let share = allowance.div_ceil(readers.len().max(1) as u64).min(4096);
    if share < 4096 && !readers.is_empty() {
        // Too little for every unit this round: the next round starts with the next unit.
        readers.rotate_left(1);
    }
    readers.retain_mut(|r| {
        for _ in 0..share.min(allowance.saturating_sub(router.tuples - routed_before)) {
            if r.pending.is_none() && !r.fetch(router, input) {
                // The end, or (a live stdin) nothing yet: keep it and read on later.
                let waiting = match &mut r.source {
                    Source::Lines(reader) => reader.take_waiting(),
                    _ => false,
                };
                if !waiting {
                    // Checkpoints at later boundaries say it ended; at those it had reached
                    // before, where it was.
                    let mut at = r.position_now();
                    at.done = true;
                    ended.push((at, std::mem::take(&mut r.marks)));
                }
                return waiting;
            }
            match r.pending.take() {
                Some(p)
                    if p.time() < horizon || horizon == i64::MIN && r.max_time == i64::MIN && hold_end.is_none() =>
                {
                    match p {
                        Pending::Tuple(line, _) => router.route(r, line, Ok(()), input),
                        Pending::Values(index, time, values) => router.route_values(r, index, time, &values, input),
                    }
                }
                other => {
                    r.pending = other;
                    return true;
                }
            }
        }
        true
    });
    router.send_batch(input);
}

/// Whether worker `me` of `peers` reads input unit `u`: standard input is worker 0's (there is
/// one stdin per process, and only the first process' is read), every other unit goes to worker
/// `u mod peers`. Stdin took part in that rotation and was skipped at once: given after a file
/// (`--data f --data -`) with two workers it was unit 1, which worker 1 may not read and
/// worker 0 was not given, so its tuples were lost without a word.
///
/// ```
/// use saams_jobs::run::reads_unit;
/// use saams_jobs::source::file::Input;
/// let (file, stdin) = (Input::File("ticks.jsonl".into(), None), Input::Stdin(None));
/// assert!(reads_unit((1, &stdin), (0, 2)) && !reads_unit((1, &stdin), (1, 2)));
/// assert!(reads_unit((0, &file), (0, 2)) && reads_unit((3, &file), (1, 2)));
/// assert!(!reads_unit((3, &file), (0, 2)));
/// ```
pub fn reads_unit((u, unit): (usize, &Unit), (me, peers): (usize, usize)) -> bool {
    match unit {
        Unit::Stdin(_) => me == 0,
        _ => u % peers == me,
    }
}

/// The units worker `me` of `peers` reads: its generated streams, and the input units
/// [`reads_unit`] gives it. A unit that cannot be opened is a dead letter.
fn open_readers(
    plan: &Plan,
    generator: Option<&GeneratorSpec>,
    units: &[Unit],
    (me, peers): (usize, usize),
    dead: Option<&LineSink>,
    stats: &Stats,
) -> Vec<Reading> {
    let mut readers = Vec::new();
    if let Some(spec) = generator {
        for i in generated_streams_for_worker(plan, spec, me, peers) {
            let g = Generated::open(spec, i);
            let routes = generated_routes(plan, &g);
            readers.push(Reading {
                unit: i as u64,
                source: Source::Generated(g, routes),
                max_time: i64::MIN,
                tuple: saams::api::Tuple::default(),
                pending: None,
                marks: SourceMarks::default(),
            });
        }
    }
    for (u, unit) in units.iter().enumerate() {
        if !reads_unit((u, unit), (me, peers)) {
            continue;
        }
        match UnitReader::open(unit) {
            Ok(reader) => readers.push(Reading {
                unit: u as u64,
                source: Source::Lines(reader),
                max_time: i64::MIN,
                tuple: saams::api::Tuple::default(),
                pending: None,
                marks: SourceMarks::default(),
            }),
            Err(e) => {
                if let Some(d) = dead {
                    d.write_all(std::iter::once(
                        &serde_json::json!({"source": format!("{unit:?}"), "error": e}).to_string(),
                    ));
                }
                eprintln!("saams: {e}");
                stats.dead_letters.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    readers
}

/// A resumed job's readers read on from the checkpoint's positions and skip values before its
/// boundary; those that had ended stay ended. A unit that cannot be positioned is a dead letter.
fn resume_readers(
    readers: &mut Vec<Reading>,
    resume: &Resume,
    units: &[Unit],
    ended: &mut Vec<(SourcePosition, SourceMarks)>,
    (dead, stats): (Option<&LineSink>, &Stats),
) {
    readers.retain_mut(|r| {
        r.marks.skip_before = resume.boundary_ms.min(i64::MAX as u64) as i64;
        let Some(at) = resume.position(&r.key()) else { return true };
        if at.done {
            ended.push((at.clone(), SourceMarks::default()));
            return false;
        }
        r.max_time = at.max_time.unwrap_or(i64::MIN);
        let moved = match &mut r.source {
            Source::Lines(reader) => {
                match units.get(r.unit as usize).map(|u| UnitReader::open_at(u, at.offset, at.line)) {
                    Some(Ok(again)) => {
                        *reader = again;
                        Ok(())
                    }
                    Some(Err(e)) => Err(e),
                    None => Err(format!("the checkpoint's input {} is not among this job's inputs", at.source)),
                }
            }
            Source::Generated(g, _) => match g.skip(at.offset) {
                true => Ok(()),
                false => Err(format!("{}: the stream ends before the checkpoint's position {}", at.source, at.offset)),
            },
            Source::Kafka => Ok(()),
        };
        if let Err(e) = moved {
            eprintln!("saams: resuming {}: {e}", at.source);
            stats.dead_letters.fetch_add(1, Ordering::Relaxed);
            if let Some(d) = dead {
                d.write_all(std::iter::once(&serde_json::json!({"source": at.source, "error": e}).to_string()));
            }
            return false;
        }
        true
    });
}

/// Checkpoint boundaries agreed since the last call: every reader (and Kafka partition) marks
/// where it reaches them.
fn want_boundaries(plan: &Plan, (readers, mut kafka): (&mut [Reading], Option<&mut KafkaInput>), known: &mut u64) {
    let checkpoints = plan.checkpoints.borrow();
    // Called on every turn of the reading loop: nothing to allocate when nothing is new.
    if checkpoints.boundaries.keys().next_back().is_none_or(|&b| b <= *known) {
        return;
    }
    let new: Vec<u64> = checkpoints.boundaries.keys().copied().filter(|&b| b > *known).collect();
    for b in new {
        for r in readers.iter_mut() {
            r.marks.want(b);
        }
        if let Some(k) = kafka.as_deref_mut() {
            k.want(b);
        }
        *known = b;
    }
}

/// Where a worker's inputs stand: its readers, those that ended (with their marks), its Kafka
/// partitions, and the tuples it has routed.
type Positions<'a> = (&'a mut [Reading], &'a mut [(SourcePosition, SourceMarks)], Option<&'a mut KafkaInput>, u64);

/// Write this worker's part of every checkpoint its operators have copied their state for and
/// its probe has passed (every answer before the boundary is in the process' sink).
fn write_checkpoints(
    plan: &RefCell<Plan>,
    probe: &timely::dataflow::ProbeHandle<u64>,
    (readers, ended, mut kafka, tuples): Positions<'_>,
    fences: &mut Fences,
    (job, me): (&CheckpointJob, usize),
) {
    loop {
        let ready = {
            let plan = plan.borrow();
            let checkpoints = plan.checkpoints.borrow();
            checkpoints.taken.first_key_value().is_some_and(|(&b, taken)| {
                taken.operators >= saams_operators::checkpoint::STATEFUL_OPERATORS && !probe.less_than(&b)
            })
        };
        if !ready {
            return;
        }
        let plan = plan.borrow();
        let Some((b, id, taken)) = plan.checkpoints.borrow_mut().take_complete() else { return };
        job.begin(b);
        let sources: Vec<SourcePosition> = readers
            .iter_mut()
            .map(|r| r.marks.take(b).unwrap_or_else(|| r.position_now()))
            .chain(ended.iter_mut().map(|(done, marks)| marks.take(b).unwrap_or_else(|| done.clone())))
            .chain(kafka.as_deref_mut().map(|k| k.positions(b)).unwrap_or_default())
            .collect();
        let mut part = job.part(&plan, (id, b, me), taken, sources);
        part.tuples = tuples;
        if let Err(e) = job.write(&part, fences.request_log()) {
            eprintln!("saams: checkpoint {id}: {e} (a restart resumes from the one before)");
        }
        if me == 0 {
            fences.checkpoint_written();
        }
    }
}

/// The input's epoch once a worker's input has ended while the job still takes requests: far
/// past any event time, so it holds nobody's windows back, yet a time asks can still be sent at.
const DONE_EPOCH: u64 = 1 << 62;

/// Write and send what applying live requests gave, for the requests this worker took (worker 0
/// also for the script's): acknowledgements and errors to the output and back to whoever waits,
/// asks into the tuple input (they reach every worker). True if synopses were constructed or
/// deleted (routes and the registry rows change).
fn take_applied(plan: &RefCell<Plan>, me: usize, sink: &LineSink, hub: &Hub, input: &mut RecInput, epoch: u64) -> bool {
    let applied = plan.borrow_mut().take_applied();
    if applied.is_empty() {
        return false;
    }
    let changed = applied.iter().any(|a| !a.registry.is_empty());
    for a in applied {
        if a.origin.map_or(me != 0, |(worker, _)| worker as usize != me) {
            continue;
        }
        for line in &a.lines {
            let (origin, body) = split_reply(line);
            // Just before the request's fence: with checkpoints, the cut of a checkpoint at a
            // boundary after it holds the acknowledgement and its request log the request; a
            // job resumed from one at or before it applies the request again and acknowledges it
            // again (the cut did not hold it).
            let open = plan.borrow().checkpoints.borrow().boundaries.keys().next().copied();
            sink.write_at(a.fence.saturating_sub(1), open, std::iter::once(body));
            if let Some((_, ticket)) = origin {
                hub.reply(ticket, body.to_string());
            }
        }
        for ask in a.asks {
            let peers = plan.borrow().peers;
            for copy in to_every_worker(ask.into_rec(epoch.min(i64::MAX as u64) as i64), peers) {
                input.send(copy);
            }
        }
    }
    input.flush();
    if changed && me.is_multiple_of(plan.borrow().workers_per_process.max(1)) {
        hub.set_synopses(registry_rows(&plan.borrow()));
    }
    changed
}

/// The live registry as `GET /synopses` lists it.
fn registry_rows(plan: &Plan) -> Vec<serde_json::Value> {
    plan.synopses
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.is_deleted() && s.group != u32::MAX)
        .map(|(i, s)| {
            serde_json::json!({
                "id": i,
                "requestID": s.request_id,
                "synopsisID": s.synopsis_id,
                "kind": s.kind.name(),
                "streamID": s.stream,
                "dataSetKey": s.dataset,
                "field": s.field,
                "params": s.params,
                "mode": format!("{:?}", s.mode),
                "home": s.home,
                "emptyBytes": s.fresh.size_bytes(),
                "effectiveFrom": saams::api::time::format_timestamp(plan.live.registered_from(i as u32).unwrap_or(0)),
            })
        })
        .collect()
}

/// The groups a generated stream feeds, with the index of the value each takes.
fn generated_routes(plan: &Plan, g: &Generated) -> Vec<(u32, usize)> {
    let (per_stream, wide) = plan.routes(&g.dataset_key, &g.stream_id);
    per_stream
        .iter()
        .chain(wide)
        .filter_map(|&grp| {
            let field = &plan.groups[grp as usize].field;
            match field.as_str() {
                "streamID" => Some((grp, STREAM_ID_FIELD)),
                "dataSetKey" => Some((grp, DATASET_KEY_FIELD)),
                _ => g.fields.iter().position(|f| f == field).map(|k| (grp, k)),
            }
        })
        .collect()
}

/// Granularity (event-time ms) of the input's epoch when windows are longer: the watermark
/// that releases values inside a window moves in these steps.
const EPOCH_STEP_MS: i64 = 60_000;

/// The most event time (ms) the reading loop runs ahead of what the dataflow has processed.
const MAX_LAG_MS: i64 = 4 * EPOCH_STEP_MS;

/// How far (event-time ms) any input is read past the one furthest behind: the reorder buffers
/// of order-sensitive synopses hold about this much of the input (plus the lateness).
const READ_STEP_MS: i64 = 120_000;

/// Work a worker does for each tuple of a synopsis it owns, relative to generating and routing
/// the tuple. Fitted on the paper workload at `-w 2` (per-thread instruction counts under
/// callgrind for two reading splits): a stream costs its reader ~8.6 and the owner of its three
/// synopses ~4.1 (M instructions per 10,000 tuples).
const SYNOPSIS_UPDATE_COST: f64 = 0.16;

/// The generated streams worker `me` of `peers` reads.
///
/// A stream whose synopses all have one owner is read by that owner when this keeps the
/// workers' loads (reading plus owned update work) balanced, so its records never cross
/// workers; the other streams go to the least loaded worker. Every worker computes the same
/// assignment (it depends on the plan and the spec only), and what a stream produces does not
/// depend on who reads it (its unit and arrival sequence are the stream's index and position).
/// With owners hashed, the plain `i mod peers` split made ~half the records cross workers and
/// left the update work unbalanced (56/44 for the paper workload's 100 streams at `-w 2`).
fn generated_streams_for_worker(plan: &Plan, spec: &GeneratorSpec, me: usize, peers: usize) -> Vec<usize> {
    use saams_operators::plan::Mode;
    let peers = peers.max(1);
    let owner_and_work: Vec<(Option<usize>, f64)> = (0..spec.streams)
        .map(|i| {
            let (per_stream, wide) = plan.routes(spec.dataset_key(i), &spec.stream_id(i));
            let groups: Vec<_> = per_stream.iter().chain(wide).map(|&g| &plan.groups[g as usize]).collect();
            let owned = groups.iter().all(|g| g.mode == Mode::Owned);
            let owner = match groups.first() {
                Some(g) if owned && groups.iter().all(|o| o.owner == g.owner) => Some(g.owner % peers),
                _ => None,
            };
            let synopses: usize = groups.iter().filter(|g| g.mode == Mode::Owned).map(|g| g.synopses.len()).sum();
            let work = if plan.update { synopses as f64 * SYNOPSIS_UPDATE_COST } else { 0.0 };
            (owner, work)
        })
        .collect();
    let mut load = vec![0.0; peers];
    for &(owner, work) in &owner_and_work {
        if let Some(o) = owner {
            load[o] += work;
        }
    }
    let total: f64 = owner_and_work.iter().map(|&(owner, work)| 1.0 + if owner.is_some() { 0.0 } else { work }).sum();
    let target = (total + load.iter().sum::<f64>()) / peers as f64;
    let mut reader = vec![usize::MAX; owner_and_work.len()];
    for (i, &(owner, _)) in owner_and_work.iter().enumerate() {
        if let Some(o) = owner
            && load[o] + 1.0 <= target + 0.5
        {
            load[o] += 1.0;
            reader[i] = o;
        }
    }
    for (i, &(owner, work)) in owner_and_work.iter().enumerate() {
        if reader[i] == usize::MAX {
            let least = (0..peers).min_by(|&a, &b| load[a].total_cmp(&load[b])).unwrap_or(0);
            load[least] += 1.0 + if owner.is_some() { 0.0 } else { work };
            reader[i] = least;
        }
    }
    (0..owner_and_work.len()).filter(|&i| reader[i] == me).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(requests: &str, peers: usize, update: bool) -> Plan {
        let store = Arc::new(SnapshotDir::new(None));
        let mut plan = Plan::build(&parse_requests(requests), peers, 60_000, store);
        plan.update = update;
        plan
    }

    #[test]
    fn every_generated_stream_is_read_once_and_the_loads_balance() {
        let paper = include_str!("../../datasets/requests/paper-workload.json");
        let spec = GeneratorSpec::parse("stocks:100:10").expect("spec");
        for peers in 1..=5 {
            for update in [true, false] {
                let plan = plan(paper, peers, update);
                let split: Vec<Vec<usize>> =
                    (0..peers).map(|me| generated_streams_for_worker(&plan, &spec, me, peers)).collect();
                let mut all: Vec<usize> = split.iter().flatten().copied().collect();
                all.sort_unstable();
                assert_eq!(all, (0..100).collect::<Vec<_>>(), "{peers} workers");
                // Reading (1 per stream) plus owned update work (0.48 per stream) per worker.
                let work = if update { 3.0 * SYNOPSIS_UPDATE_COST } else { 0.0 };
                let mut load = vec![0.0; peers];
                let mut local = 0;
                for (me, streams) in split.iter().enumerate() {
                    load[me] += streams.len() as f64;
                    for &i in streams {
                        let (groups, _) = plan.routes(spec.dataset_key(i), &spec.stream_id(i));
                        let owner = plan.groups[groups[0] as usize].owner;
                        load[owner] += work;
                        local += usize::from(owner == me);
                    }
                }
                let (lo, hi) = load.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &l| (lo.min(l), hi.max(l)));
                assert!(hi - lo <= 1.0 + work, "{peers} workers, update {update}: loads {load:?}");
                assert!(local >= 80, "{peers} workers, update {update}: only {local} streams read by their owner");
            }
        }
        let other = plan("", 2, true);
        assert_eq!(generated_streams_for_worker(&other, &spec, 0, 2).len(), 50, "no synopses: an even split");
    }
}
