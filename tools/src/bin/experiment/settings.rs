//! The experiment's command line.

use std::path::PathBuf;

use clap::Parser;

/// Run the paper's experiments on this machine and write TSVs and PNGs.
#[derive(Debug, Parser)]
#[command(name = "experiment", version)]
pub struct Args {
    /// A small version (a few seconds; CI's smoke test).
    #[arg(long)]
    pub quick: bool,
    /// Tuples per run (default 200 000 with --quick, else 5 000 000): 100 streams share them in the
    /// horizontal and federated experiments, 10 → 500 streams in the vertical one.
    #[arg(long)]
    pub tuples: Option<u64>,
    /// Runs per setting (the median is reported); at least 3.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Directory under which the run's directory is created.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// The paper's request workload (100 streams × CountMin + HyperLogLog + DFT).
    #[arg(long, default_value = "datasets/requests/paper-workload.json")]
    pub requests: PathBuf,
    /// Experiments to run (comma separated: horizontal, vertical, federated; `memory`, `ingest`
    /// and `rescale` on request).
    #[arg(long, default_value = "horizontal,vertical,federated")]
    pub only: String,
    /// The `saams` binary (default: next to this executable).
    #[arg(long)]
    pub saams: Option<PathBuf>,
    /// Kafka bootstrap brokers (`host:port`) for the ingest experiment's Kafka setting: a topic of
    /// the same tuples is loaded there (with `replay`) and read at `-w 2`. Without it, no Kafka.
    #[arg(long = "kafka-brokers")]
    pub kafka_brokers: Option<String>,
    /// The broker's pidfile (scripts/start-kafka.sh's KAFKA_PIDFILE): the ingest experiment
    /// reports the broker's CPU seconds during the Kafka runs.
    #[arg(long = "kafka-pidfile", requires = "kafka_brokers")]
    pub kafka_pidfile: Option<PathBuf>,
    /// The shared sample data (its `ais/` NOAA sample feeds the ingest experiment's AIS CSV
    /// setting; without it that setting is skipped and says so). Default: where the build found
    /// it; `$SAAMS_DATASETS` overrides it.
    #[arg(long, env = "SAAMS_DATASETS", default_value = env!("SAAMS_DATASETS_DIR"))]
    pub datasets: PathBuf,
    /// The federated experiment also runs real `saams-edge` devices (2–5) in network namespaces
    /// over shaped links (`scripts/edge-net-run.sh`: root and the broker of `--kafka-brokers`),
    /// adding rows with the links' own byte counters and checking the answers against the raw run.
    #[arg(long, requires = "kafka_brokers")]
    pub netns: bool,
    /// The AIS CSV setting's requests (dataset-wide synopses over the vessels and ship types).
    #[arg(long, default_value = "datasets/requests/ais-workload.json")]
    pub ais_requests: PathBuf,
}
