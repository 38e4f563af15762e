//! The Kafka side of one `saams` process ([`KafkaJob`]): start-up from the flags (broker check
//! with topic creation, producers, signal handler), the stop rule, the dead letters of Kafka records,
//! and the exit report (the request topic is read in `requests`).
//!
//! Why its own file: it is shared by all workers of the process; the per-worker input, and how
//! the process opens it ([`KafkaJob::worker_input`]), are in `input`, which uses this file (not the
//! other way round).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::args::KafkaArgs;
use crate::checkpoint::resume::Resume;
use crate::checkpoint::writer::OutputOffsets;
use crate::duration::parse_duration_ms;
use crate::kafka::admin::{TopicSpec, ensure_topics};
use crate::kafka::consume::records::RecordRef;
use crate::kafka::error::{AdapterError, METADATA_TIMEOUT};
use crate::kafka::lock::lock;
use crate::kafka::options::KafkaOptions;
use crate::kafka::produce::dead_letters::{KafkaDeadLetterSink, RecordOrigin};
use crate::kafka::produce::estimations::KafkaEstimationSink;
use crate::kafka::produce::lines::{DeadLetterLines, EstimationLines};
use crate::sink::file::LineSink;
use saams::checkpoint::{PartitionOffset, TopicOffsets};

/// How long flushes of the estimation and dead-letter producers wait for acknowledgements.
pub(super) const FLUSH_TIMEOUT: Duration = Duration::from_secs(30);

/// The producers' marks ([`KafkaJob::marks`]) an input waits for before committing offsets:
/// the estimation producer's (answers to a topic) and the dead-letter producer's (rejected
/// records to a topic); `None` for one the job does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Awaited {
    pub answers: Option<u64>,
    pub dead: Option<u64>,
}

/// The Kafka side of one `saams` process, shared by its workers: options, the producers of the
/// estimation and dead-letter topics, the stop flag (SIGINT/SIGTERM, `--exit-when-idle`), and the
/// counters of the exit report.
pub struct KafkaJob {
    pub(super) opts: KafkaOptions,
    pub(super) data_topic: Option<String>,
    /// The data topic holds device shipments (`--partials-topic`), not tuples.
    pub partials: bool,
    pub(super) request_topic: Option<String>,
    pub(super) lateness_ms: i64,
    /// How long a partition (with --partials-topic: a device) may be silent before it stops
    /// holding windows open.
    pub idle_timeout: Duration,
    /// With --partials-topic: how long a partition with no device may be silent at its end
    /// before it stops holding windows (the shorter of `--idle-timeout` and
    /// `--device-timeout`; [`crate::kafka::PartitionWatermarks::set_vacant`]).
    pub vacant_timeout: Option<Duration>,
    exit_when_idle: Option<Duration>,
    /// The estimation producer (`--output-topic`); an input flushes it before committing.
    pub(super) out: Option<Arc<Mutex<KafkaEstimationSink>>>,
    pub(super) dead: Option<Arc<Mutex<KafkaDeadLetterSink>>>,
    stop: Arc<AtomicBool>,
    start: Instant,
    first_record_ns: AtomicU64,
    last_record_ns: AtomicU64,
    consumed: AtomicU64,
    /// The newest epoch an active worker reached, which idle workers follow.
    pub(super) epoch_hint: AtomicU64,
    problems: Mutex<Vec<String>>,
    fatal: Mutex<Option<String>>,
}

impl KafkaJob {
    /// Checks the flags, contacts the brokers (a clear error within seconds when none answers),
    /// creates missing topics with `--partitions`, opens the producers and installs the
    /// SIGINT/SIGTERM handler (a second signal ends the process at once). `None` without
    /// `--brokers`.
    ///
    /// # Errors
    /// For a topic flag without `--brokers`, bad durations or `-X` settings, unreachable brokers,
    /// and topics that cannot be created.
    pub fn start(args: &KafkaArgs, lateness_ms: i64) -> Result<Option<Arc<KafkaJob>>, String> {
        let Some(brokers) = &args.brokers else {
            return refuse_topics_without_brokers(args).map(|()| None);
        };
        let (idle_timeout, exit_when_idle) = durations(args)?;
        let opts = KafkaOptions {
            brokers: brokers.clone(),
            group_id: args.group_id.clone(),
            from: args.from,
            extra: args.extra.clone(),
        };
        // Also the broker check: `ensure_topics` fetches the metadata first, with the same
        // clear error when no broker answers; a client of its own for the check alone (its
        // threads, connection and metadata fetch) was a cost of every Kafka run's start.
        ensure_topics(&opts, &topic_specs(args)).map_err(|e| e.to_string())?;
        let out = open_shared(&args.output_topic, |t| KafkaEstimationSink::new(&opts, t))?;
        let dead = open_shared(&args.dead_letter_topic, |t| KafkaDeadLetterSink::new(&opts, t))?;
        let stop = stop_on_signals()?;
        Ok(Some(Arc::new(KafkaJob {
            opts,
            data_topic: args.data_topic.clone().or_else(|| args.partials_topic.clone()),
            partials: args.partials_topic.is_some(),
            request_topic: args.request_topic.clone(),
            lateness_ms,
            idle_timeout,
            vacant_timeout: match &args.partials_topic {
                Some(_) => Some(Duration::from_millis(parse_duration_ms(&args.idle_timeout)? as u64).min(idle_timeout)),
                None => None,
            },
            exit_when_idle,
            out,
            dead,
            stop,
            start: Instant::now(),
            first_record_ns: AtomicU64::new(u64::MAX),
            last_record_ns: AtomicU64::new(0),
            consumed: AtomicU64::new(0),
            epoch_hint: AtomicU64::new(0),
            problems: Mutex::new(Vec::new()),
            fatal: Mutex::new(None),
        })))
    }

    /// A job merging devices (`--partials-topic P`): what writes its control records to
    /// `P.control` (one partition, created if missing; [`crate::edge::control`]), through an
    /// idempotent producer so the devices read them in the order written. `None` otherwise.
    ///
    /// # Errors
    /// When the topic cannot be created or the producer opened.
    pub fn control_publisher(&self) -> Result<Option<crate::edge::control::Publish>, String> {
        use rdkafka::producer::{BaseRecord, DefaultProducerContext, ThreadedProducer};
        let (true, Some(partials)) = (self.partials, &self.data_topic) else { return Ok(None) };
        let topic = crate::edge::control::control_topic(partials);
        ensure_topics(&self.opts, &[TopicSpec::new(&topic, 1)]).map_err(|e| e.to_string())?;
        let producer: ThreadedProducer<DefaultProducerContext> = self
            .opts
            .client_config_with(&[("acks", "all"), ("enable.idempotence", "true"), ("linger.ms", "0")])
            .create()
            .map_err(|e| format!("kafka producer for {topic}: {e}"))?;
        Ok(Some(Box::new(move |record| {
            let line = record.to_line();
            let mut next = BaseRecord::<(), _>::to(&topic).partition(0).payload(&line);
            // A full queue drains by itself (the producer's thread polls it): wait, never drop a
            // record the devices wait for.
            while let Err((e, back)) = ThreadedProducer::send(&producer, next) {
                if !matches!(e.rdkafka_error_code(), Some(rdkafka::types::RDKafkaErrorCode::QueueFull)) {
                    eprintln!("saams: control topic {topic}: {e}");
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
                next = back;
            }
        })))
    }

    /// The line sink writer for estimations when `--output-topic` is given.
    pub fn estimation_writer(&self) -> Option<Box<dyn std::io::Write + Send>> {
        self.out
            .as_ref()
            .map(|s| Box::new(EstimationLines::new(s.clone(), FLUSH_TIMEOUT)) as Box<dyn std::io::Write + Send>)
    }

    /// Whether the answers go to a topic (`--output-topic`).
    pub fn writes_answers(&self) -> bool {
        self.out.is_some()
    }

    /// Whether the dead letters go to a topic (`--dead-letter-topic`).
    pub fn writes_dead_letters(&self) -> bool {
        self.dead.is_some()
    }

    /// With `--output-topic` and `--checkpoints`: what reads the answer topic's end offsets into
    /// each checkpoint's manifest, after the checkpoint's answers were delivered.
    pub fn answer_offsets(&self) -> Option<OutputOffsets> {
        let out = self.out.clone()?;
        Some(Box::new(move || {
            let sink = lock(&out);
            let offsets = sink.end_offsets(METADATA_TIMEOUT).map_err(|e| e.to_string())?;
            Ok(TopicOffsets {
                topic: sink.topic().to_string(),
                offsets: offsets.into_iter().map(|(partition, offset)| PartitionOffset { partition, offset }).collect(),
            })
        }))
    }

    /// A job resumed from `resume` with `--output-topic`: the answers already in the topic past the
    /// checkpoint's offsets (produced before the crash) are not produced again. Returns how many
    /// were found.
    ///
    /// # Errors
    /// When the checkpoint recorded another answer topic, or the topic cannot be read.
    pub fn skip_delivered(&self, resume: &Resume) -> Result<u64, String> {
        self.skip_delivered_after(resume.id, resume.output_offsets())
    }

    /// As [`KafkaJob::skip_delivered`], after checkpoint `id` whose manifests recorded the answer
    /// topic's end offsets `offsets` ([`crate::checkpoint::resume::output_offsets`]): a job
    /// taking over another's answer topic (`crate::handoff`) skips what that job produced past
    /// its last checkpoint.
    ///
    /// # Errors
    /// As [`KafkaJob::skip_delivered`].
    pub fn skip_delivered_after(&self, id: u64, offsets: Option<(String, Vec<(i32, i64)>)>) -> Result<u64, String> {
        let Some(out) = &self.out else { return Ok(0) };
        let mut sink = lock(out);
        let from = match offsets {
            Some((topic, _)) if topic != sink.topic() => {
                return Err(format!(
                    "checkpoint {id} wrote its answers to topic {topic:?}, this job to {:?}: start with the same --output-topic, or another --checkpoints directory",
                    sink.topic()
                ));
            }
            Some((_, from)) => from,
            // Answers went elsewhere then (a file): none of them are in the topic.
            None => return Ok(0),
        };
        sink.skip_delivered(&self.opts, &from).map_err(|e| e.to_string())
    }

    /// The line sink writer for dead letters when `--dead-letter-topic` is given.
    pub fn dead_letter_writer(&self) -> Option<Box<dyn std::io::Write + Send>> {
        self.dead
            .as_ref()
            .map(|s| Box::new(DeadLetterLines::new(s.clone(), FLUSH_TIMEOUT)) as Box<dyn std::io::Write + Send>)
    }

    /// Dead-letters record `r` (its line `line` when it is a line of a batched record, whose
    /// payload `r` then holds) with `reason`: to the dead-letter topic, else to `file_dead`.
    pub(super) fn reject(
        &self,
        topic: &str,
        (r, line): (&RecordRef<'_>, Option<u64>),
        reason: &str,
        file_dead: Option<&LineSink>,
    ) {
        if let Some(dead) = &self.dead {
            let origin = RecordOrigin { topic, partition: r.partition, offset: r.offset, line };
            if let Err(e) = lock(dead).send(r.payload, r.key, reason, Some(origin)) {
                self.problem(e.to_string());
            }
        } else if let Some(d) = file_dead {
            let mut source = format!("kafka:{topic}/{}/{}", r.partition, r.offset);
            if let Some(line) = line {
                source = format!("{source}/{line}");
            }
            let j = serde_json::json!({
                "source": source,
                "error": reason,
                "input": String::from_utf8_lossy(r.payload),
            });
            d.write_all(std::iter::once(&j.to_string()));
        }
    }

    pub(super) fn problem(&self, msg: String) {
        let mut p = lock(&self.problems);
        if p.len() < 20 {
            p.push(msg);
        }
    }

    /// The producers' marks now: what [`acknowledged`](Self::acknowledged) waits for before an
    /// input commits the offsets of the records handled so far.
    pub(super) fn marks(&self) -> Awaited {
        Awaited { answers: self.out.as_ref().map(|o| lock(o).mark()), dead: self.dead.as_ref().map(|d| lock(d).mark()) }
    }

    /// Without waiting: whether the producers acknowledged everything they were handed before
    /// `awaited` ([`marks`](Self::marks)).
    ///
    /// # Errors
    /// When records of either producer failed since its previous report.
    pub(super) fn acknowledged(&self, awaited: Awaited) -> Result<bool, AdapterError> {
        let answers = match (awaited.answers, &self.out) {
            (Some(mark), Some(out)) => lock(out).delivered_before(mark)?,
            _ => true,
        };
        let dead = match (awaited.dead, &self.dead) {
            (Some(mark), Some(dead)) => lock(dead).delivered_before(mark)?,
            _ => true,
        };
        Ok(answers && dead)
    }

    /// Waits (up to [`FLUSH_TIMEOUT`] each) for the estimation and dead-letter producers to
    /// deliver everything they were handed.
    ///
    /// # Errors
    /// When a producer did not drain in time or records failed.
    pub(super) fn flush_producers(&self) -> Result<(), AdapterError> {
        if let Some(out) = &self.out {
            lock(out).flush(FLUSH_TIMEOUT)?;
        }
        if let Some(dead) = &self.dead {
            lock(dead).flush(FLUSH_TIMEOUT)?;
        }
        Ok(())
    }

    pub(super) fn set_fatal(&self, msg: String) {
        lock(&self.fatal).get_or_insert(msg);
        self.stop.store(true, Ordering::Relaxed);
    }

    pub(super) fn touch(&self, n: usize) {
        let now = self.start.elapsed().as_nanos() as u64;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        self.first_record_ns.fetch_min(now, Ordering::Relaxed);
        self.last_record_ns.fetch_max(now, Ordering::Relaxed);
    }

    /// True once a signal or a fatal consumer error stopped the job (not `--exit-when-idle`).
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// False once the job should close its windows and stop reading Kafka: a signal, a fatal
    /// consumer error, or `--exit-when-idle` elapsed since the last record (or the start).
    pub fn running(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return false;
        }
        match self.exit_when_idle {
            Some(idle) => {
                let last = Duration::from_nanos(self.last_record_ns.load(Ordering::Relaxed));
                self.start.elapsed().saturating_sub(last) < idle
            }
            None => true,
        }
    }

    /// The exit report lines (consumed records and their rate, producer deliveries, errors met).
    ///
    /// # Errors
    /// When a worker failed fatally or records could not be delivered.
    pub fn finish(&self) -> Result<Vec<String>, String> {
        let mut lines = Vec::new();
        let consumed = self.consumed.load(Ordering::Relaxed);
        if self.data_topic.is_some() {
            let first = self.first_record_ns.load(Ordering::Relaxed);
            let last = self.last_record_ns.load(Ordering::Relaxed);
            let secs = if consumed > 0 { last.saturating_sub(first) as f64 / 1e9 } else { 0.0 };
            let rate = if secs > 0.0 { consumed as f64 / secs } else { 0.0 };
            lines.push(format!("kafka consumed={consumed} first_to_last_s={secs:.3} records_per_s={rate:.0}"));
        }
        let mut failed = 0;
        for (name, report) in [
            ("estimations", self.out.as_ref().map(|s| lock(s).report())),
            ("dead_letters", self.dead.as_ref().map(|s| lock(s).report())),
        ] {
            if let Some(r) = report {
                failed += r.failed;
                lines.push(format!(
                    "kafka {name} sent={} delivered={} failed={}{}",
                    r.sent,
                    r.delivered,
                    r.failed,
                    r.first_error.map(|e| format!(" first_error={e:?}")).unwrap_or_default()
                ));
            }
        }
        if let Some(skipped) = self.out.as_ref().map(|s| lock(s).skipped()).filter(|&n| n > 0) {
            lines.push(format!(
                "kafka estimations already in the topic after the checkpoint (not produced again)={skipped}"
            ));
        }
        for p in lock(&self.problems).iter() {
            lines.push(format!("kafka problem: {p}"));
        }
        if let Some(f) = lock(&self.fatal).clone() {
            return Err(format!("{f}\n{}", lines.join("\n")));
        }
        if failed > 0 {
            return Err(format!("kafka: {failed} record(s) could not be delivered\n{}", lines.join("\n")));
        }
        Ok(lines)
    }
}

/// Without `--brokers`, no Kafka flag may be given: a topic flag or `--exit-when-idle` alone would
/// otherwise be ignored silently.
fn refuse_topics_without_brokers(args: &KafkaArgs) -> Result<(), String> {
    let topics =
        [&args.data_topic, &args.partials_topic, &args.request_topic, &args.output_topic, &args.dead_letter_topic];
    if topics.iter().any(|t| t.is_some()) || args.exit_when_idle.is_some() {
        return Err("--data-topic, --partials-topic, --request-topic, --output-topic, --dead-letter-topic and \
                    --exit-when-idle need --brokers HOST:PORT"
            .into());
    }
    Ok(())
}

/// `--idle-timeout` and `--exit-when-idle`, parsed.
fn durations(args: &KafkaArgs) -> Result<(Duration, Option<Duration>), String> {
    let idle = args.device_timeout.as_deref().unwrap_or(&args.idle_timeout);
    let idle_timeout = Duration::from_millis(parse_duration_ms(idle)? as u64);
    let exit_when_idle = match &args.exit_when_idle {
        Some(d) => Some(Duration::from_millis(parse_duration_ms(d)? as u64)),
        None => None,
    };
    Ok((idle_timeout, exit_when_idle))
}

/// The topics to create when missing, with `--partitions` each, except the request topic, which
/// gets one partition: requests are a script whose order matters.
fn topic_specs(args: &KafkaArgs) -> Vec<TopicSpec> {
    [&args.data_topic, &args.partials_topic, &args.request_topic, &args.output_topic, &args.dead_letter_topic]
        .into_iter()
        .filter_map(|t| t.as_ref())
        .map(|t| TopicSpec::new(t, if Some(t) == args.request_topic.as_ref() { 1 } else { args.partitions }))
        .collect()
}

/// Opens the producer `open` makes for `topic`, if given, to be shared by all workers.
fn open_shared<S>(
    topic: &Option<String>,
    open: impl FnOnce(&str) -> Result<S, AdapterError>,
) -> Result<Option<Arc<Mutex<S>>>, String> {
    match topic {
        Some(t) => Ok(Some(Arc::new(Mutex::new(open(t).map_err(|e| e.to_string())?)))),
        None => Ok(None),
    }
}

/// The stop flag SIGINT and SIGTERM raise (the job then closes its windows and flushes); a second
/// signal ends the process at once.
fn stop_on_signals() -> Result<Arc<AtomicBool>, String> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, stop.clone())
            .and_then(|_| signal_hook::flag::register(signal, stop.clone()))
            .map_err(|e| format!("cannot install the signal handler: {e}"))?;
    }
    Ok(stop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        kafka: KafkaArgs,
    }

    fn args(flags: &[&str]) -> KafkaArgs {
        Cli::try_parse_from(std::iter::once("saams").chain(flags.iter().copied())).unwrap().kafka
    }

    #[test]
    fn kafka_flags_without_brokers_are_refused_and_no_flags_mean_no_kafka() {
        assert!(KafkaJob::start(&args(&[]), 0).unwrap().is_none());
        for flags in [&["--data-topic", "t"][..], &["--output-topic", "o"], &["--exit-when-idle", "3s"]] {
            let err = KafkaJob::start(&args(flags), 0).err().unwrap();
            assert!(err.contains("need --brokers"), "{flags:?}: {err}");
        }
    }

    #[test]
    fn durations_and_topic_specs_follow_the_flags() {
        let a = args(&["--brokers", "b:9092", "--data-topic", "d", "--request-topic", "r", "--dead-letter-topic", "x"]);
        assert_eq!(durations(&a).unwrap(), (Duration::from_secs(5), None));
        let names: Vec<(String, i32)> = topic_specs(&a).into_iter().map(|s| (s.name, s.partitions)).collect();
        assert_eq!(
            names,
            [("d".to_string(), 4), ("r".to_string(), 1), ("x".to_string(), 4)],
            "requests: one partition"
        );
        let a =
            args(&["--idle-timeout", "250ms", "--exit-when-idle", "2m", "--partitions", "8", "--output-topic", "o"]);
        assert_eq!(durations(&a).unwrap(), (Duration::from_millis(250), Some(Duration::from_secs(120))));
        assert_eq!(topic_specs(&a), [TopicSpec::new("o", 8)]);
        assert!(durations(&args(&["--idle-timeout", "soon"])).unwrap_err().contains("bad duration"));
    }
}
