//! The `saams` command line (clap derive). Timely's own flags are spelled as timely spells
//! them (`-w -n -p -h`), so `--help` is the only help flag.

use std::path::PathBuf;

use clap::{ArgAction, Parser, ValueEnum};

/// Input file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// JSON lines, one tuple per line (reference form, or nested `values`).
    #[value(alias = "jsonl")]
    Json,
    /// The reference stock `.txt` form (`MM/dd/yyyy,HH:mm:ss,price,volume`).
    StockTxt,
    /// Stock CSV with a header (`Date,Time,Price,Volume,…`).
    StockCsv,
    /// AIS CSV with a header (NOAA MarineCadastre columns).
    AisCsv,
    /// Piraeus-style AIS CSV (`t,shipid,lon,lat,…`).
    PiraeusCsv,
}

impl Format {
    /// The parser's format.
    pub fn parser(self) -> saams_datasets::Format {
        match self {
            Format::Json => saams_datasets::Format::JsonLines,
            Format::StockTxt => saams_datasets::Format::StockTxt,
            Format::StockCsv => saams_datasets::Format::StockCsv,
            Format::AisCsv => saams_datasets::Format::AisCsv,
            Format::PiraeusCsv => saams_datasets::Format::PiraeusCsv,
        }
    }
}

/// Scheduling of timely's network threads ([`Cli::network_sched`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NetworkSched {
    /// SCHED_BATCH: no preemption of a running worker when a message wakes the thread.
    Batch,
    /// The default policy of the system (SCHED_OTHER).
    Normal,
}

/// Stream synopses as a service: maintain synopses over tuple streams and answer queries.
#[derive(Clone, Debug, Parser)]
#[command(name = "saams", version, disable_help_flag = true)]
pub struct Cli {
    /// Print help (every flag with its default).
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
    /// Worker threads per process (timely's -w); every process needs the same value.
    #[arg(short = 'w', long = "workers", default_value_t = 1)]
    pub workers: usize,
    /// Number of processes (timely's -n).
    #[arg(short = 'n', long = "processes", default_value_t = 1)]
    pub processes: usize,
    /// Workers holding the synopses at the start (default every worker of the job, -w × -n); `POST /rescale` changes it while the job runs.
    #[arg(long = "active-workers")]
    pub active_workers: Option<usize>,
    /// A rescale moves the owned state of this many bins (those holding update groups) per window from its fence on, not all at the fence (fluid migration: no window waits for the whole state); 0 moves every bin at the fence. A rescale request's `binsPerFence` overrides it.
    #[arg(long = "rescale-batch", default_value_t = 0, value_name = "BINS")]
    pub rescale_batch: u32,
    /// Change the active workers between MIN and MAX (e.g. 2..8) from measured load: the input's lag behind the dataflow or --rate, and the active workers' busy fraction; with hysteresis and a cool-down. Each change is a rescale (as `POST /rescale`), logged with its reason, counted in /metrics and shown in GET /status.
    #[arg(long = "autoscale", value_name = "MIN..MAX")]
    pub autoscale: Option<String>,
    /// Time between two load samples of --autoscale.
    #[arg(long = "autoscale-interval", default_value = "1s", value_name = "DURATION")]
    pub autoscale_interval: String,
    /// After a change, --autoscale holds for this long (so one burst cannot flap the job).
    #[arg(long = "autoscale-cooldown", default_value = "10s", value_name = "DURATION")]
    pub autoscale_cooldown: String,
    /// This process' index, 0-based (timely's -p).
    #[arg(short = 'p', long = "process", default_value_t = 0)]
    pub process: usize,
    /// Hostfile: one `host:port` per process (timely's -h); default 127.0.0.1:2101+i.
    #[arg(short = 'h', long = "hostfile")]
    pub hostfile: Option<PathBuf>,
    /// How long a process of a multi-process job waits for the others to connect before it gives
    /// up (e.g. `300s`, `10m`).
    #[arg(long, default_value = "5m")]
    pub connect_timeout: String,
    /// How timely's network threads of a multi-process job (a send and a receive thread per
    /// other process) are scheduled: `batch` (Linux's SCHED_BATCH) lets a thread woken by a
    /// message wait for a core's next time slice instead of preempting the worker running there;
    /// `normal` wakes it at once (at most a few ms sooner while every core is busy, at the cost of
    /// thousands of preemptions a second). Ignored off Linux and in one-process jobs.
    #[arg(long, value_enum, default_value_t = NetworkSched::Batch)]
    pub network_sched: NetworkSched,
    /// Microseconds an idle worker polls its channels before it parks its thread (timely's
    /// `idle_spin`, 10 µs by default there). A streaming job's rounds are batched, not barrier
    /// steps, so the default is 0: an idle worker parks at once and leaves the core to the
    /// workers, network threads and broker that have work (on 2 cores, 12 threads of which 3
    /// active used twice the CPU with timely's 10 µs). Raise it for tightly coupled workers on
    /// dedicated cores.
    #[arg(long, default_value_t = 0, value_name = "MICROS")]
    pub idle_spin: u64,
    /// Request JSON file (an array, one object per line, or one array per line): the job's initial
    /// requests, in effect from the first window (its ad-hoc queries answered at the end of the
    /// input). `-`: requests read from stdin while the job runs, each taking effect at the next
    /// fence, like requests over HTTP or the request topic. Without it the job starts with no
    /// synopsis and takes its requests from HTTP, stdin (`-`) or the request topic.
    #[arg(long)]
    pub requests: Option<String>,
    /// Refuse requests carrying fields outside the reference's request class (default: ignore
    /// such fields, name each once on stderr and count them as request_warnings).
    #[arg(long = "strict-requests")]
    pub strict_requests: bool,
    /// Tuple input: files or directories, `-` for stdin (repeatable).
    #[arg(long)]
    pub data: Vec<String>,
    /// Format of --data inputs (default: detected per file: .json/.jsonl or a `{` line → JSON
    /// lines, .txt → stock text, .csv → stock or AIS CSV by its header).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Files longer than this many bytes are split into as many units as the fewest byte ranges
    /// of equal length up to it, read by different workers (0 = never split); where those ranges
    /// are longer than a stripe (at most ~1 MiB), each unit reads every n-th stripe of the file instead,
    /// so the workers read side by side in event time.
    #[arg(long = "chunk-bytes", default_value_t = 64 << 20)]
    pub chunk_bytes: u64,
    /// Seeded generator used when no --data is given: `stocks:N[:T]` or `ais:N[:T]` (N streams of
    /// T tuples each; without T the streams do not end: the job runs until SIGINT/SIGTERM, then
    /// closes its windows and prints its summary).
    #[arg(long, default_value = "stocks:100:2000")]
    pub generate: String,
    /// Read at most this many tuples per second over the whole job, from any input (each process
    /// reads its share from a token bucket its workers share: R / processes, or with files and the
    /// generator, whose readers are the active workers, R times its part of them). Generated
    /// event times stay synthetic: they advance by the generator's own gaps, not by wall-clock
    /// time. Default: as fast as possible.
    #[arg(long, value_name = "R", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Where estimations go, as JSON lines (`-` = stdout).
    #[arg(long, default_value = "-")]
    pub out: String,
    /// File receiving rejected input lines (malformed, late) with the reason.
    #[arg(long = "dead-letter")]
    pub dead_letter: Option<PathBuf>,
    /// Directory SAVE writes to and LOAD reads from (requests cannot name files outside it).
    #[arg(long)]
    pub snapshots: Option<PathBuf>,
    /// Directory of checkpoints: every `--checkpoint-interval` the job writes its state there at
    /// a window boundary, and the same command started again resumes from the newest complete
    /// one (any `-w`/`-n`): answers are then exactly those of a run without the crash. With it,
    /// the output file gets each answer once the checkpoint after it is written.
    #[arg(long)]
    pub checkpoints: Option<PathBuf>,
    /// Take over from the job running on the same `--checkpoints` directory and outputs (with
    /// the same requests and inputs, any `-w`/`-n`): resume from its newest checkpoint writing
    /// nothing, catch up, then ask it to hand off: it answers the windows before the boundary
    /// they agree on and exits, this job answers from there on. Refused when no job runs there
    /// or the directory holds no checkpoint.
    #[arg(long = "take-over", requires = "checkpoints")]
    pub take_over: bool,
    /// Wall-clock time between checkpoints (each at the next window boundary).
    #[arg(long = "checkpoint-interval", default_value = "10s")]
    pub checkpoint_interval: String,
    /// Complete checkpoints kept (older ones are removed).
    #[arg(long = "checkpoint-keep", default_value_t = 3)]
    pub checkpoint_keep: usize,
    /// The job's event-time window (e.g. 500ms, 60s, 5m, 1h): fences, checkpoints and
    /// answers happen at its boundaries; landmark synopses are answered at every one.
    #[arg(long, default_value = "60s")]
    pub window: String,
    /// The window of synopses whose construct request names none: landmark (from the
    /// synopsis' construction on, the reference system's behaviour), tumbling (windows of
    /// --window) or sliding:SIZE (SIZE long, every --window).
    #[arg(long = "window-type", default_value = "landmark")]
    pub window_type: String,
    /// Allowed event-time lateness; older tuples are counted and dead-lettered.
    #[arg(long, default_value = "0s")]
    pub lateness: String,
    /// Parse and route tuples but update no synopsis (to measure the input side alone).
    #[arg(long = "no-synopses")]
    pub no_synopses: bool,
    /// Seconds between progress lines on stderr (0 = none).
    #[arg(long = "progress", default_value_t = 5)]
    pub progress: u64,
    /// Kafka sources and sinks.
    #[command(flatten)]
    pub kafka: crate::kafka::KafkaArgs,
    /// Live metrics.
    #[command(flatten)]
    pub metrics: crate::metrics::MetricsArgs,
    /// The HTTP interface.
    #[command(flatten)]
    pub control: crate::control::ControlArgs,
}

pub use crate::duration::parse_duration_ms;

/// Parse `--rate`: a positive number of tuples per second (`_` allowed as a digit separator).
///
/// ```
/// use saams_jobs::cli::parse_rate;
/// assert_eq!(parse_rate("2000"), Ok(2000.0));
/// assert_eq!(parse_rate("1_000_000"), Ok(1e6));
/// assert_eq!(parse_rate("0.5"), Ok(0.5));
/// assert!(parse_rate("0").unwrap_err().contains("positive"));
/// assert!(parse_rate("abc").unwrap_err().contains("tuples per second"));
/// assert!(parse_rate("inf").is_err());
/// ```
///
/// # Errors
/// For text that is not a positive finite number.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    match s.trim().replace('_', "").parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!("expected a positive number of tuples per second (e.g. 2000), got {s:?}")),
    }
}
