//! The Kafka adapters against a real Kafka-protocol broker at `SAAMS_KAFKA_BROKERS`
//! (`scripts/test.sh` starts one and sets it). Where the variable was unset at build time the test
//! shows as ignored.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[allow(dead_code)]
mod kafka_common;
use kafka_common::declared_broker;
use saams_jobs::kafka::{
    KafkaBroadcastSource, KafkaDeadLetterSink, KafkaEstimationSink, KafkaOptions, KafkaTupleSource, StartFrom,
    TopicSpec, check_brokers, ensure_topics, parse_setting, replay_lines,
};

const RECORDS: usize = 200_000;
const PARTITIONS: i32 = 4;

fn options(brokers: &str, group: &str) -> KafkaOptions {
    let mut opts = KafkaOptions::new(brokers, group);
    opts.from = StartFrom::Earliest;
    opts.extra.push(parse_setting("session.timeout.ms=2000").unwrap());
    opts.extra.push(parse_setting("heartbeat.interval.ms=500").unwrap());
    opts
}

/// Reads this worker's share to the end; marks every record processed in a window and commits all.
fn consume(opts: &KafkaOptions, topic: &str, worker: usize, peers: usize) -> (Vec<u32>, Vec<(i32, i64)>, Duration) {
    let mut source = KafkaTupleSource::new(opts, topic, worker, peers, 0, Duration::from_secs(60)).unwrap();
    assert_eq!(source.partitions(), (0..PARTITIONS).filter(|p| *p as usize % peers == worker).collect::<Vec<_>>());
    let start = Instant::now();
    let deadline = start + Duration::from_secs(120);
    let mut ids = Vec::new();
    let mut marks = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "worker {worker} did not reach the end: {} records", ids.len());
        let n = source
            .poll_with(10_000, Duration::from_millis(20), |r| {
                let text = std::str::from_utf8(r.payload).unwrap();
                let i: u32 = text.rsplit_once("\"seq\":").unwrap().1.trim_end_matches('}').parse().unwrap();
                ids.push(i);
                marks.push((r.partition, r.offset, (i / 10_000) as u64));
            })
            .unwrap();
        for (p, o, w) in marks.drain(..) {
            source.mark_processed(p, o, w);
        }
        if n == 0 && source.at_end() {
            break;
        }
    }
    let elapsed = start.elapsed();
    let committed = source.commit_all().unwrap();
    assert_eq!(source.errors().commit_failures, 0);
    (ids, committed, elapsed)
}

#[test]
#[cfg_attr(saams_no_kafka, ignore = "needs a Kafka broker: set SAAMS_KAFKA_BROKERS (scripts/test.sh starts one)")]
fn replay_then_two_workers_read_every_record_exactly_once() {
    let brokers = declared_broker("SAAMS_KAFKA_BROKERS");
    let run = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    let data = format!("saams-test-data-{run}");
    let out = format!("saams-test-out-{run}");
    let dead = format!("saams-test-dead-{run}");
    let requests = format!("saams-test-requests-{run}");
    let opts = options(&brokers, &format!("saams-test-{run}"));
    assert!(check_brokers(&opts).unwrap() >= 1);

    let mut out_spec = TopicSpec::new(&out, 2);
    out_spec.compacted = true;
    let specs = [TopicSpec::new(&data, PARTITIONS), out_spec, TopicSpec::new(&dead, 1), TopicSpec::new(&requests, 3)];
    assert_eq!(ensure_topics(&opts, &specs).unwrap(), vec![true; 4]);
    assert_eq!(ensure_topics(&opts, &specs).unwrap(), vec![false; 4], "existing topics are kept");

    let lines = (0..RECORDS as u32)
        .map(|i| format!(r#"{{"streamID":"S{}","dataSetKey":"Forex","price":{}.5,"seq":{i}}}"#, i % 97, i % 1000));
    let report = replay_lines(&opts, &data, lines, None).unwrap();
    assert_eq!((report.sent, report.delivered, report.failed), (RECORDS as u64, RECORDS as u64, 0));
    println!("produced {} records in {:.2?}: {:.0} records/s", report.delivered, report.elapsed, report.rate());

    let (a, b) = std::thread::scope(|s| {
        let w0 = s.spawn(|| consume(&opts, &data, 0, 2));
        let w1 = s.spawn(|| consume(&opts, &data, 1, 2));
        (w0.join().unwrap(), w1.join().unwrap())
    });
    let slowest = a.2.max(b.2);
    println!(
        "consumed {} + {} records with 2 workers in {:.2?}: {:.0} records/s",
        a.0.len(),
        b.0.len(),
        slowest,
        (a.0.len() + b.0.len()) as f64 / slowest.as_secs_f64()
    );
    let mut seen = vec![0u8; RECORDS];
    for &i in a.0.iter().chain(&b.0) {
        seen[i as usize] += 1;
    }
    let missing = seen.iter().filter(|&&c| c == 0).count();
    let twice = seen.iter().filter(|&&c| c > 1).count();
    assert_eq!((missing, twice), (0, 0), "every record exactly once across the two workers");
    assert!(!a.0.is_empty() && !b.0.is_empty(), "both workers got a share");
    let committed: i64 = a.1.iter().chain(&b.1).map(|&(_, o)| o).sum();
    assert_eq!(committed, RECORDS as i64, "committed positions cover every record");

    // a restart of worker 0 from the committed offsets finds nothing left to read
    let mut resumed = opts.clone();
    resumed.from = StartFrom::Committed;
    let (again, _, _) = consume(&resumed, &data, 0, 2);
    assert!(again.is_empty(), "{} records re-read after a full commit", again.len());

    let mut sink = KafkaEstimationSink::new(&opts, &out).unwrap();
    sink.send_estimation_line(r#"{"streamID":"S1","dataSetKey":"Forex","estimate":1}"#).unwrap();
    let mut dead_sink = KafkaDeadLetterSink::new(&opts, &dead).unwrap();
    dead_sink.send(b"\xffnot json", None, "malformed", None).unwrap();
    assert_eq!(sink.flush(Duration::from_secs(30)).unwrap().delivered, 1);
    assert_eq!(dead_sink.flush(Duration::from_secs(30)).unwrap().delivered, 1);

    // every worker reads every request, from all partitions
    let request_lines: Vec<String> =
        (0..20).map(|i| format!(r#"{{"streamID":"R{i}","synopsisID":1,"dataSetKey":"Forex"}}"#)).collect();
    assert_eq!(replay_lines(&opts, &requests, &request_lines, Some(1_000.0)).unwrap().delivered, 20);
    for worker in 0..2 {
        let mut source = KafkaBroadcastSource::new(&opts, &requests, worker).unwrap();
        assert_eq!(source.partitions(), &[0, 1, 2]);
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut got = Vec::new();
        while Instant::now() < deadline {
            let batch = source.poll_batch(100, Duration::from_millis(20)).unwrap();
            let empty = batch.is_empty();
            got.extend(batch.into_iter().map(|r| String::from_utf8(r.payload).unwrap()));
            if empty && source.at_end() {
                break;
            }
        }
        got.sort();
        let mut expected = request_lines.clone();
        expected.sort();
        assert_eq!(got, expected, "worker {worker} sees every request");
    }
}
