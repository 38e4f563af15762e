//! `replay`: read stock or AIS data (reference `.txt`, stock CSV, NOAA or Piraeus AIS CSV, JSON
//! lines, or the seeded generator) and write the reference JSON tuples, one per line, to stdout or a
//! file — as fast as possible, at a fixed rate, or at a multiple of real time.
//!
//! ```text
//! replay "$SAAMS_DATASETS/stocks" --speed 60 > ticks.jsonl
//! replay --generate stocks:100:2000 --rate 50000 --output gen.jsonl
//! replay "$SAAMS_DATASETS/ais" --scale 20000 --rate 100000
//! replay --generate stocks:100:2000 --brokers 127.0.0.1:9092 --topic ticks --partitions 4
//! replay --generate stocks:100:2000 --brokers 127.0.0.1:9092 --topic ticks-batched --batch 1000
//! ```
//!
//! Progress goes to stderr: a bar on a terminal, a plain line every few seconds otherwise, and one
//! final `replay: done tuples=… bytes=… seconds=… rate=… malformed=…` line. Malformed rows are
//! reported (the first few with file:line) and skipped. `--validate` parses and writes nothing (the
//! summary says what a job reading the input would take and skip).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use saams::api::Tuple;
use saams_datasets::generator::GeneratorSpec;
use saams_datasets::jsonl::write_reference_json;
use saams_datasets::pace::{Pace, TuplePacer};
use saams_datasets::scaled::{ScaleSpec, Scaler, collect_bases};
use saams_datasets::{Format, MergedReader, ParseError, TupleReader, read_path};
use saams_jobs::kafka::{KafkaOptions, TopicSpec, TupleProducer, check_brokers, ensure_topics, parse_setting};

/// Replay stock/AIS data as reference JSON lines.
#[derive(Parser, Debug)]
#[command(name = "replay", version)]
struct Args {
    /// Input files or directories (directories are read recursively in sorted order); `-` reads
    /// stdin. Leave out when using --generate.
    inputs: Vec<PathBuf>,

    /// Input format (jsonl, stock-txt, stock-csv, ais-csv, piraeus-csv); detected per file when
    /// left out.
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,

    /// Generate instead of reading: `stocks:N[:T[:seed]]` or `ais:N[:T[:seed]]` (T tuples per
    /// stream; without T, or with T = `unbounded`, until stopped or --limit), merged in event-time
    /// order.
    #[arg(long, value_parser = parse_spec, conflicts_with = "inputs")]
    generate: Option<GeneratorSpec>,

    /// Derive this many streams from the input's streams (seeded time-shifted, value-perturbed
    /// replicas with distinct ids; copy 0 is the real stream).
    #[arg(long)]
    scale: Option<usize>,

    /// Seed of the --scale replicas.
    #[arg(long, default_value_t = 12_345)]
    scale_seed: u64,

    /// Dataset key for every tuple read from stock or AIS files (default: from the file name).
    #[arg(long)]
    dataset_key: Option<String>,

    /// Emit this many tuples per second.
    #[arg(long, conflicts_with = "speed")]
    rate: Option<f64>,

    /// Emit at this multiple of real time, from the tuples' event times (implies --merge).
    #[arg(long)]
    speed: Option<f64>,

    /// Merge the input files by event time (each file must be in time order) instead of reading
    /// them one after the other.
    #[arg(long)]
    merge: bool,

    /// Write to this file instead of stdout (`-` = stdout).
    #[arg(long, short)]
    output: Option<PathBuf>,

    /// Parse every tuple and write nothing: the summary counts the tuples and the malformed rows.
    /// Checks a file before a job reads it, and times the readers and parsers alone (the
    /// `parse-only` setting of `experiment --only ingest`).
    #[arg(long, conflicts_with_all = ["output", "brokers", "rate", "speed"])]
    validate: bool,

    /// Stop after this many tuples.
    #[arg(long)]
    limit: Option<u64>,

    /// Progress display on stderr.
    #[arg(long, value_enum, default_value_t = Progress::Auto)]
    progress: Progress,

    /// Seconds between plain progress lines.
    #[arg(long, default_value_t = 5.0)]
    progress_interval: f64,

    /// How many malformed rows to print (all are counted).
    #[arg(long, default_value_t = 10)]
    show_errors: u64,

    /// Produce to Kafka at these bootstrap brokers (`host:port[,…]`) instead of writing lines;
    /// needs --topic. Records are keyed by stream id.
    #[arg(long, requires = "topic", conflicts_with = "output")]
    brokers: Option<String>,

    /// The Kafka topic to produce to (created when missing).
    #[arg(long, requires = "brokers")]
    topic: Option<String>,

    /// Partition count when --topic has to be created.
    #[arg(long, default_value_t = 4)]
    partitions: i32,

    /// Write N tuples per Kafka record, newline-separated JSON lines (the batched format: one
    /// record, and one message for the brokers and the job's consumer to handle, per N tuples).
    /// Each partition's record fills with the tuples its streams would have had as records of
    /// their own, in order; the last of each may hold fewer. `saams` reads both formats.
    #[arg(long, value_name = "N", requires = "topic")]
    batch: Option<usize>,

    /// A librdkafka setting `key=value` (repeatable), as kcat's -X.
    #[arg(short = 'X', value_parser = parse_setting)]
    extra: Vec<(String, String)>,
}

/// Progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Progress {
    /// A bar when stderr is a terminal, plain lines otherwise.
    Auto,
    /// Always a bar.
    Bar,
    /// Plain periodic lines.
    Plain,
    /// Only the final summary.
    None,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
}

fn parse_spec(s: &str) -> Result<GeneratorSpec, String> {
    GeneratorSpec::parse(s).map_err(|e| e.to_string())
}

/// Where tuples go. A Kafka sink implements the same two calls (keyed by stream id).
trait Sink {
    /// Send one tuple, already encoded as its JSON line (without line end).
    fn send(&mut self, tuple: &Tuple, line: &str) -> io::Result<()>;
    /// Flush buffered output.
    fn flush(&mut self) -> io::Result<()>;
}

/// JSON lines to any writer (stdout, a file).
struct LineSink<W: Write> {
    out: BufWriter<W>,
}

impl<W: Write> Sink for LineSink<W> {
    fn send(&mut self, _tuple: &Tuple, line: &str) -> io::Result<()> {
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Tuples into a Kafka topic, keyed by stream id; `flush` waits for every acknowledgement.
struct KafkaSink {
    producer: TupleProducer,
}

impl KafkaSink {
    fn open(args: &Args, brokers: &str, topic: &str) -> Result<KafkaSink, String> {
        let mut opts = KafkaOptions::new(brokers, "saams-replay");
        opts.extra = args.extra.clone();
        check_brokers(&opts).map_err(|e| e.to_string())?;
        ensure_topics(&opts, &[TopicSpec::new(topic, args.partitions)]).map_err(|e| e.to_string())?;
        let producer = match args.batch {
            Some(lines) => TupleProducer::batched(&opts, topic, lines),
            None => TupleProducer::new(&opts, topic),
        };
        Ok(KafkaSink { producer: producer.map_err(|e| e.to_string())? })
    }
}

impl Sink for KafkaSink {
    fn send(&mut self, tuple: &Tuple, line: &str) -> io::Result<()> {
        self.producer.send(&tuple.stream_id, line).map_err(|e| io::Error::other(e.to_string()))
    }

    fn flush(&mut self) -> io::Result<()> {
        let report = self.producer.flush(Duration::from_secs(120)).map_err(|e| io::Error::other(e.to_string()))?;
        eprintln!("replay: kafka sent={} delivered={} failed={}", report.sent, report.delivered, report.failed);
        Ok(())
    }
}

/// Progress reporting on stderr.
enum Reporter {
    Bar(ProgressBar),
    Plain { interval: Duration, last: Instant },
    Quiet,
}

impl Reporter {
    fn new(mode: Progress, interval_s: f64, total: Option<u64>) -> Reporter {
        let bar = match mode {
            Progress::Auto => io::stderr().is_terminal(),
            Progress::Bar => true,
            Progress::Plain | Progress::None => false,
        };
        if bar {
            let pb = match total {
                Some(n) => ProgressBar::new(n),
                None => ProgressBar::new_spinner(),
            };
            let template = if total.is_some() {
                "{elapsed_precise} [{bar:40}] {human_pos}/{human_len} tuples {per_sec} eta {eta} {msg}"
            } else {
                "{elapsed_precise} {spinner} {human_pos} tuples {per_sec} {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                pb.set_style(style.progress_chars("=> "));
            }
            Reporter::Bar(pb)
        } else if mode == Progress::None {
            Reporter::Quiet
        } else {
            Reporter::Plain { interval: Duration::from_secs_f64(interval_s.max(0.1)), last: Instant::now() }
        }
    }

    fn update(&mut self, tuples: u64, bytes: u64, start: Instant) {
        match self {
            Reporter::Bar(pb) => pb.set_position(tuples),
            Reporter::Plain { interval, last } => {
                if last.elapsed() >= *interval {
                    *last = Instant::now();
                    let secs = start.elapsed().as_secs_f64();
                    eprintln!(
                        "replay: progress tuples={tuples} bytes={bytes} seconds={secs:.1} rate={:.0}",
                        tuples as f64 / secs.max(1e-9)
                    );
                }
            }
            Reporter::Quiet => {}
        }
    }

    fn finish(&self) {
        if let Reporter::Bar(pb) = self {
            pb.finish_and_clear();
        }
    }

    fn println(&self, msg: &str) {
        match self {
            Reporter::Bar(pb) => pb.println(msg),
            _ => eprintln!("{msg}"),
        }
    }
}

type Source = Box<dyn Iterator<Item = Result<Tuple, ParseError>>>;

/// The readers of the inputs, chained.
fn file_source(args: &Args) -> Result<Source, ParseError> {
    let mut readers = Vec::new();
    for input in &args.inputs {
        if input.as_os_str() == "-" {
            let mut r = TupleReader::from_reader("<stdin>", Box::new(BufReader::new(io::stdin())), args.format);
            if let Some(key) = &args.dataset_key {
                r = r.with_dataset_key(key);
            }
            readers.push(r);
        } else {
            let mut r = read_path(input, args.format)?;
            if let Some(key) = &args.dataset_key {
                r = r.with_dataset_key(key);
            }
            if args.merge || args.speed.is_some() {
                // One reader per file, so the files can be merged by event time.
                for f in r.files().to_vec() {
                    let mut one = read_path(&f, args.format)?;
                    if let Some(key) = &args.dataset_key {
                        one = one.with_dataset_key(key);
                    }
                    readers.push(one);
                }
            } else {
                readers.push(r);
            }
        }
    }
    if args.merge || args.speed.is_some() {
        return Ok(Box::new(MergedReader::new(readers)));
    }
    Ok(Box::new(readers.into_iter().flatten()))
}

fn source(args: &Args) -> Result<(Source, Option<u64>), String> {
    let (base, total): (Source, Option<u64>) = match (&args.generate, args.inputs.is_empty()) {
        (Some(spec), _) => (Box::new(spec.interleaved(0, 1).map(Ok)), spec.total_tuples()),
        (None, false) => (file_source(args).map_err(|e| e.to_string())?, None),
        (None, true) => return Err("give input files or directories (`-` for stdin), or --generate".into()),
    };
    let Some(n) = args.scale else { return Ok((base, total)) };
    // The bases come from a first pass over the input (the generator is cheap to run twice).
    let bases: Vec<(String, String)> = match &args.generate {
        Some(spec) => (0..spec.streams).map(|i| (spec.dataset_key(i).to_string(), spec.stream_id(i))).collect(),
        None => {
            if args.inputs.iter().any(|p| p.as_os_str() == "-") {
                return Err("--scale needs files, not stdin (it reads the input twice)".into());
            }
            collect_bases(file_source(args).map_err(|e| e.to_string())?)
        }
    };
    let bases_len = bases.len();
    let scaler =
        Scaler::new(&ScaleSpec { seed: args.scale_seed, ..ScaleSpec::new(n) }, bases).map_err(|e| e.to_string())?;
    let total = total.map(|t| if n >= bases_len { t * n.div_ceil(bases_len) as u64 } else { t });
    let mut buffer: Vec<Tuple> = Vec::new();
    let mut base = base;
    let scaled = std::iter::from_fn(move || {
        loop {
            if let Some(t) = buffer.pop() {
                return Some(Ok(t));
            }
            match base.next()? {
                Err(e) => return Some(Err(e)),
                Ok(t) => {
                    scaler.replicate(&t, &mut buffer);
                    buffer.reverse();
                }
            }
        }
    });
    Ok((Box::new(scaled), total.map(|t| t.min(args.limit.unwrap_or(u64::MAX)))))
}

/// Where the tuples go: the Kafka topic (with `--brokers` and `--topic`), else `--output`'s
/// file, else stdout.
fn open_sink(args: &Args) -> Result<Box<dyn Sink>, String> {
    let sink: Box<dyn Sink> = match (&args.output, &args.brokers, &args.topic) {
        (_, Some(brokers), Some(topic)) => Box::new(KafkaSink::open(args, brokers, topic)?),
        (Some(path), _, _) if path.as_os_str() != "-" => {
            let f = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            Box::new(LineSink { out: BufWriter::with_capacity(1 << 16, f) })
        }
        _ => Box::new(LineSink { out: BufWriter::with_capacity(1 << 16, io::stdout().lock()) }),
    };
    Ok(sink)
}

fn run(args: &Args) -> Result<(), String> {
    let pace = match (args.rate, args.speed) {
        (Some(r), _) => Pace::Rate(r),
        (None, Some(x)) => Pace::Speed(x),
        (None, None) => Pace::Unlimited,
    };
    let mut pacer = TuplePacer::new(pace)?;
    let mut sink = open_sink(args)?;
    let (source, total) = source(args)?;
    let total = match (total, args.limit) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    };
    let mut reporter = Reporter::new(args.progress, args.progress_interval, total);
    let limit = args.limit.unwrap_or(u64::MAX);
    let (mut tuples, mut bytes, mut malformed) = (0u64, 0u64, 0u64);
    let mut line = String::with_capacity(256);
    let start = Instant::now();
    let mut broken_pipe = false;
    for item in source {
        if tuples >= limit {
            break;
        }
        let t = match item {
            Ok(t) => t,
            Err(e) => {
                malformed += 1;
                if malformed <= args.show_errors {
                    reporter.println(&format!("replay: skipped {e}"));
                }
                continue;
            }
        };
        if args.validate {
            tuples += 1;
            // The next row parsed reuses this tuple's buffers, as in a job's reader.
            saams_datasets::jsonl::recycle(t);
            if tuples % 1024 == 0 {
                reporter.update(tuples, bytes, start);
            }
            continue;
        }
        pacer.wait(t.time_ms);
        line.clear();
        write_reference_json(&t, &mut line);
        if let Err(e) = sink.send(&t, &line) {
            if e.kind() == io::ErrorKind::BrokenPipe {
                broken_pipe = true;
                break;
            }
            return Err(format!("write failed: {e}"));
        }
        tuples += 1;
        bytes += line.len() as u64 + 1;
        if tuples % 1024 == 0 {
            reporter.update(tuples, bytes, start);
        }
    }
    if !broken_pipe
        && let Err(e) = sink.flush()
        && e.kind() != io::ErrorKind::BrokenPipe
    {
        return Err(format!("write failed: {e}"));
    }
    reporter.finish();
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "replay: done tuples={tuples} bytes={bytes} seconds={secs:.3} rate={:.0} malformed={malformed}",
        tuples as f64 / secs.max(1e-9)
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("replay: {e}");
            ExitCode::FAILURE
        }
    }
}
