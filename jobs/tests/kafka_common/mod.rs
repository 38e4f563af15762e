//! Helpers shared by the tests that run `saams` and `replay` against a real broker
//! (`kafka_job.rs`, `kafka_restart.rs`).

use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use saams_jobs::kafka::{KafkaBroadcastSource, KafkaOptions, StartFrom};

const REPLAY: &str = env!("CARGO_BIN_EXE_replay");

/// The brokers the test environment declares in `var` (`SAAMS_KAFKA_BROKERS`, or
/// `SAAMS_KAFKA_DURABLE_BROKERS`). The tests calling this are ignored at build time when the
/// variable is unset (`build/test_env.rs`); a declared broker that does not answer fails the test.
pub fn declared_broker(var: &str) -> String {
    let brokers = std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set (it was when this test was built): start a broker with scripts/start-kafka.sh and set it"
        )
    });
    let first = brokers.split(',').next().unwrap_or_default().trim().to_string();
    let addr = first.to_socket_addrs().ok().and_then(|mut a| a.next());
    match addr.map(|a| TcpStream::connect_timeout(&a, Duration::from_secs(1))) {
        Some(Ok(_)) => brokers,
        other => panic!("{var}={brokers} is set but no broker answers there: {other:?}"),
    }
}

/// A name no other test run uses (topics and groups outlive a test on the broker).
pub fn unique(what: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_nanos();
    format!("saams-test-{what}-{}-{nanos}", std::process::id())
}

/// A path in the repository.
pub fn repo(rel: &str) -> String {
    format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// `out`, after asserting the command succeeded (its stderr in the message).
pub fn check(out: Output, what: &str) -> Output {
    assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Replays a JSON lines file into `topic` (created with `partitions` when missing).
pub fn replay_into(brokers: &str, topic: &str, file: &Path, partitions: u32) {
    check(
        Command::new(REPLAY)
            .arg(file)
            .args(["--brokers", brokers, "--topic", topic, "--partitions", &partitions.to_string()])
            .args(["--progress", "none"])
            .output()
            .expect("run replay"),
        "replay --brokers",
    );
}

/// Produces `values` to `topic` as records without key, in order, and waits until delivered.
pub fn produce_raw(brokers: &str, topic: &str, values: &[Vec<u8>]) {
    use rdkafka::config::ClientConfig;
    use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
    let producer: ThreadedProducer<DefaultProducerContext> =
        ClientConfig::new().set("bootstrap.servers", brokers).create().expect("producer");
    for v in values {
        producer.send(BaseRecord::<(), [u8]>::to(topic).payload(v.as_slice())).expect("enqueue");
    }
    producer.flush(Duration::from_secs(30)).expect("flush");
}

/// Every record value of `topic`, read from the start to its end.
pub fn read_topic(brokers: &str, topic: &str) -> Vec<Vec<u8>> {
    let mut opts = KafkaOptions::new(brokers, unique("reader"));
    opts.from = StartFrom::Earliest;
    let mut source = KafkaBroadcastSource::new(&opts, topic, 0).expect("reader");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "topic {topic} not read to its end");
        let batch = source.poll_batch(10_000, Duration::from_millis(20)).expect("poll");
        let empty = batch.is_empty();
        got.extend(batch.into_iter().map(|r| r.payload));
        if empty && source.at_end() {
            return got;
        }
    }
}

/// The newest complete checkpoint's id in the checkpoint directory `dir` (0: none), for tests
/// that kill a job once it has written some.
#[allow(dead_code)] // Not every test that includes this module kills jobs.
pub fn newest_checkpoint(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().join("manifest-p0.json").exists())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .max()
        .unwrap_or(0)
}
