//! The Kafka adapters against librdkafka's in-process mock cluster (no broker needed).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use saams_jobs::kafka::{
    AdapterError, KafkaBroadcastSource, KafkaDeadLetterSink, KafkaEstimationSink, KafkaOptions, KafkaRecord,
    KafkaTupleSource, ORIGIN_HEADER, REASON_HEADER, RecordOrigin, StartFrom, TopicSpec, ensure_topics, parse_setting,
    replay_lines,
};

const LONG: Duration = Duration::from_secs(60);

fn options(mc: &MockCluster<'static, DefaultProducerContext>, group: &str) -> KafkaOptions {
    let mut opts = KafkaOptions::new(mc.bootstrap_servers(), group);
    opts.from = StartFrom::Earliest;
    opts.extra.push(parse_setting("session.timeout.ms=2000").unwrap());
    opts.extra.push(parse_setting("heartbeat.interval.ms=500").unwrap());
    opts
}

/// Produces `(partition, key, payload, timestamp)` records and waits for all acknowledgements.
fn produce(mc: &MockCluster<'static, DefaultProducerContext>, topic: &str, records: &[(i32, String, String, i64)]) {
    let producer: ThreadedProducer<DefaultProducerContext> =
        ClientConfig::new().set("bootstrap.servers", mc.bootstrap_servers()).create().unwrap();
    for (partition, key, payload, ts) in records {
        let record = BaseRecord::to(topic).partition(*partition).key(key).payload(payload).timestamp(*ts);
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

/// Polls until every assigned partition is at its end with nothing new for a moment.
fn drain(source: &mut KafkaTupleSource) -> Vec<KafkaRecord> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    while Instant::now() < deadline {
        let batch = source.poll_batch(1000, Duration::from_millis(50)).unwrap();
        let empty = batch.is_empty();
        out.extend(batch);
        if empty && source.at_end() {
            break;
        }
    }
    out
}

fn tuple(stream: &str, i: usize) -> String {
    format!(r#"{{"streamID":"{stream}","dataSetKey":"Forex","price":{i}}}"#)
}

#[test]
fn partitions_spread_by_modulo_and_every_record_read_once() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("data", 5, 1).unwrap();
    let mut records = Vec::new();
    for i in 0..500usize {
        let p = (i % 5) as i32;
        records.push((p, format!("s{i}"), tuple(&format!("s{i}"), i), 1_000 + i as i64));
    }
    produce(&mc, "data", &records);
    let opts = options(&mc, "spread");
    let mut w0 = KafkaTupleSource::new(&opts, "data", 0, 2, 0, LONG).unwrap();
    let mut w1 = KafkaTupleSource::new(&opts, "data", 1, 2, 0, LONG).unwrap();
    assert_eq!(w0.partitions(), &[0, 2, 4]);
    assert_eq!(w1.partitions(), &[1, 3]);
    let r0 = drain(&mut w0);
    let r1 = drain(&mut w1);
    assert!(r0.iter().all(|r| r.partition % 2 == 0));
    assert!(r1.iter().all(|r| r.partition % 2 == 1));
    let mut seen = BTreeSet::new();
    for r in r0.iter().chain(&r1) {
        assert!(seen.insert(r.payload.clone()), "record read twice: {:?}", String::from_utf8_lossy(&r.payload));
        let i: usize = String::from_utf8_lossy(r.key.as_deref().unwrap())[1..].parse().unwrap();
        assert_eq!(r.timestamp_ms, Some(1_000 + i as i64), "record timestamp exposed");
        assert_eq!(r.partition, (i % 5) as i32);
    }
    assert_eq!(seen.len(), 500);
    // a third worker of three gets partition 2 only; a worker beyond the partition count is idle
    let w2 = KafkaTupleSource::new(&opts, "data", 2, 3, 0, LONG).unwrap();
    assert_eq!(w2.partitions(), &[2]);
    let w7 = KafkaTupleSource::new(&opts, "data", 7, 8, 0, LONG).unwrap();
    assert!(w7.partitions().is_empty());
    assert!(w7.is_idle());
}

#[test]
fn watermark_is_min_over_partitions_and_idle_partitions_drop_out() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("data", 4, 1).unwrap();
    // worker 0 of 2 reads partitions 0 and 2; partition 0 is far ahead in event time
    let mut records = Vec::new();
    for i in 0..50i64 {
        records.push((0, "a".to_string(), tuple("a", i as usize), 1_000_000 + i * 10));
        records.push((2, "b".to_string(), tuple("b", i as usize), 2_000 + i * 10));
    }
    produce(&mc, "data", &records);
    let opts = options(&mc, "wm");
    let mut source = KafkaTupleSource::new(&opts, "data", 0, 2, 100, LONG).unwrap();
    let mut late = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = 0;
    while seen < 100 && Instant::now() < deadline {
        for r in source.poll_batch(7, Duration::from_millis(50)).unwrap() {
            let t = r.event_time(None).unwrap();
            if source.is_late(t) {
                late += 1;
            }
            source.observe_event_time(r.partition, t);
            seen += 1;
        }
    }
    assert_eq!(seen, 100);
    assert_eq!(late, 0, "interleaving partitions must not make on-time records late");
    assert_eq!(source.watermark(), Some(2_000 + 490 - 100), "min over partitions minus lateness");

    // A partition that never speaks holds the watermark while it is not idle…
    let mut held = KafkaTupleSource::new(&opts, "data", 1, 2, 0, LONG).unwrap();
    held.observe_event_time(1, 5_000);
    assert_eq!(held.watermark(), None, "partition 3 has not produced yet");
    // …and is left out once read to its end (it is empty) and silent for the timeout.
    let idle = Duration::from_millis(200);
    let mut released = KafkaTupleSource::new(&opts, "data", 1, 2, 0, idle).unwrap();
    assert!(drain(&mut released).is_empty());
    let until = Instant::now() + idle + Duration::from_millis(50);
    while Instant::now() < until {
        assert!(released.poll_batch(10, Duration::from_millis(10)).unwrap().is_empty());
    }
    released.observe_event_time(1, 5_000);
    assert_eq!(released.watermark(), Some(5_000), "idle partition 3 excluded");
    assert!(!released.is_idle());
}

/// A partition whose broker stalls (answers its fetches, without an error, later than the idle
/// timeout) in the middle of its records is not idle; one read to its high watermark is, after
/// the timeout. The mock broker delays every answer by its round-trip time; each fetch brings
/// one record of the stalled partition (each was produced as a record batch of its own).
#[test]
fn a_stalled_partition_below_its_high_watermark_is_not_idle() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("stall", 2, 1).unwrap();
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", mc.bootstrap_servers())
        .set("batch.num.messages", "1")
        .set("linger.ms", "0")
        .create()
        .unwrap();
    // partition 0: one record, early in event time; partition 1: 200, later
    let send = |p: i32, ts: i64| {
        let payload = tuple("s", ts as usize);
        let record = BaseRecord::<(), _>::to("stall").partition(p).payload(&payload).timestamp(ts);
        producer.send(record).map_err(|(e, _)| e).unwrap();
    };
    send(0, 500);
    for i in 0..200 {
        send(1, 10_000 + i);
    }
    producer.flush(Duration::from_secs(30)).unwrap();
    mc.broker_round_trip_time(1, Duration::from_millis(300)).unwrap();
    let idle = Duration::from_secs(1);
    let mut source = KafkaTupleSource::new(&options(&mc, "stall"), "stall", 0, 1, 0, idle).unwrap();
    let mut read = 0;
    let mut poll = |source: &mut KafkaTupleSource| {
        for r in source.poll_batch(100, Duration::from_millis(20)).unwrap() {
            source.observe_event_time(r.partition, r.event_time(None).unwrap());
            read += 1;
        }
        read
    };
    // partition 0 reaches its end and goes idle; partition 1 (a record a fetch) holds the watermark
    let deadline = Instant::now() + Duration::from_secs(60);
    while source.watermark().is_none_or(|w| w < 10_000) {
        let n = poll(&mut source);
        assert!(Instant::now() < deadline, "partition 0 never went idle at its end ({n} records read)");
    }
    // the broker now answers a fetch only after 3 s: partition 1 is silent below its end
    mc.broker_round_trip_time(1, Duration::from_secs(3)).unwrap();
    let stalled = Instant::now();
    while stalled.elapsed() < Duration::from_secs(4) {
        let n = poll(&mut source);
        assert!(!source.is_idle(), "partition 1 went idle below its end after {n} of 201 records");
        let w = source.watermark().unwrap();
        assert!((10_000..10_200).contains(&w), "watermark {w}: partition 0 idle, partition 1 holds it");
    }
    assert!(poll(&mut source) < 201, "the stall did not leave partition 1 below its end");
    assert_eq!(source.errors().poll_errors, 0, "a stall is no error");
    // back to speed: partition 1 is read to its end, then goes idle after the timeout
    mc.broker_round_trip_time(1, Duration::ZERO).unwrap();
    while poll(&mut source) < 201 || !source.at_end() {
        assert!(Instant::now() < deadline, "not read to the end");
    }
    while !source.is_idle() {
        assert!(Instant::now() < deadline, "partition 1 never went idle at its end");
        poll(&mut source);
    }
    assert!(source.at_end());
}

#[test]
fn offsets_are_committed_only_through_flushed_windows() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("data", 1, 1).unwrap();
    // window of record i: 0,0,1,0,1,2 (event time out of order)
    let windows = [0u64, 0, 1, 0, 1, 2];
    let records: Vec<_> =
        windows.iter().enumerate().map(|(i, _)| (0, "k".to_string(), tuple("k", i), i as i64)).collect();
    produce(&mc, "data", &records);
    let opts = options(&mc, "commits");
    let mut source = KafkaTupleSource::new(&opts, "data", 0, 1, 0, LONG).unwrap();
    let got = drain(&mut source);
    assert_eq!(got.len(), 6);
    for r in &got {
        source.mark_processed(r.partition, r.offset, windows[r.offset as usize]);
    }
    assert_eq!(source.commit_through(0).unwrap(), vec![(0, 2)], "offset 2 is in window 1, not flushed");
    wait_committed(&source, 2);
    assert_eq!(source.commit_through(0).unwrap(), vec![], "nothing moved");
    assert_eq!(source.commit_through(1).unwrap(), vec![(0, 5)]);
    wait_committed(&source, 5);
    assert_eq!(source.errors().commit_failures, 0);

    // a restart from the committed offsets re-reads exactly the unflushed record (at-least-once)
    let mut resumed_opts = opts.clone();
    resumed_opts.from = StartFrom::Committed;
    let mut resumed = KafkaTupleSource::new(&resumed_opts, "data", 0, 1, 0, LONG).unwrap();
    let again: Vec<i64> = drain(&mut resumed).iter().map(|r| r.offset).collect();
    assert_eq!(again, vec![5]);

    assert_eq!(source.commit_all().unwrap(), vec![(0, 6)]);
    assert_eq!(source.committed().unwrap(), vec![(0, Some(6))]);
    let mut done = KafkaTupleSource::new(&resumed_opts, "data", 0, 1, 0, LONG).unwrap();
    assert!(drain(&mut done).is_empty());
}

fn wait_committed(source: &KafkaTupleSource, expect: i64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let committed = source.committed().unwrap();
        if committed == vec![(0, Some(expect))] {
            return;
        }
        assert!(Instant::now() < deadline, "commit of {expect} not visible, committed = {committed:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn requests_are_read_by_every_worker_from_all_partitions() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("requests", 3, 1).unwrap();
    let records: Vec<_> = (0..30i32).map(|i| (i % 3, format!("r{i}"), format!("{{\"synopsisID\":{i}}}"), 0)).collect();
    produce(&mc, "requests", &records);
    // Requests are a log of commands: read from its start whatever `--from` says of the data
    // topic (`--from latest` once skipped every construct made before the job started).
    for (worker, from) in [(0, StartFrom::Committed), (1, StartFrom::Latest)] {
        let mut opts = options(&mc, "requests");
        opts.from = from;
        let mut source = KafkaBroadcastSource::new(&opts, "requests", worker).unwrap();
        assert_eq!(source.partitions(), &[0, 1, 2]);
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut payloads = BTreeSet::new();
        while Instant::now() < deadline {
            let batch = source.poll_batch(100, Duration::from_millis(50)).unwrap();
            let empty = batch.is_empty();
            payloads.extend(batch.into_iter().map(|r| r.payload));
            if empty && source.at_end() {
                break;
            }
        }
        assert_eq!(payloads.len(), 30, "worker {worker} (--from {from}) must see every request");
    }
}

fn consume_all(
    mc: &MockCluster<'static, DefaultProducerContext>,
    topic: &str,
    n: usize,
) -> Vec<rdkafka::message::OwnedMessage> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", mc.bootstrap_servers())
        .set("group.id", "check")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, rdkafka::Offset::Beginning).unwrap();
    consumer.assign(&tpl).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < deadline {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
            out.push(m.detach());
        }
    }
    out
}

#[test]
fn dead_letters_carry_raw_bytes_and_reason() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("dead", 1, 1).unwrap();
    let opts = options(&mc, "dl");
    let mut sink = KafkaDeadLetterSink::new(&opts, "dead").unwrap();
    let raw: &[u8] = b"{\"streamID\":\xff\xfe broken";
    let origin = RecordOrigin { topic: "data", partition: 3, offset: 42, line: None };
    sink.send(raw, Some(b"EURTRY"), "malformed JSON at byte 12", Some(origin)).unwrap();
    sink.send(b"", None, "empty record", None).unwrap();
    let report = sink.flush(Duration::from_secs(30)).unwrap();
    assert_eq!((report.sent, report.delivered, report.failed), (2, 2, 0));
    let got = consume_all(&mc, "dead", 2);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].payload(), Some(raw));
    assert_eq!(got[0].key(), Some(&b"EURTRY"[..]));
    let headers = got[0].headers().unwrap();
    let find = |name: &str| headers.iter().find(|h| h.key == name).and_then(|h| h.value.map(<[u8]>::to_vec));
    assert_eq!(find(REASON_HEADER), Some(b"malformed JSON at byte 12".to_vec()));
    assert_eq!(find(ORIGIN_HEADER), Some(b"data/3/42".to_vec()));
    assert_eq!(got[1].payload().unwrap_or(&[]), b"");
    let h1 = got[1].headers().unwrap();
    assert_eq!(h1.count(), 1);
    assert_eq!(h1.get(0).value, Some(&b"empty record"[..]));
}

#[test]
fn estimations_are_keyed_by_stream_and_dataset() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("out", 1, 1).unwrap();
    let opts = options(&mc, "est");
    let mut sink = KafkaEstimationSink::new(&opts, "out").unwrap();
    let line = r#"{"requestID":7,"streamID":"EURTRY","dataSetKey":"Forex","estimate":37}"#;
    sink.send_estimation_line(line).unwrap();
    sink.send_estimation_line(r#"{"requestID":8,"error":"unknown synopsisID 42"}"#).unwrap();
    sink.send_estimation("a,b", "c\\d", "{}").unwrap();
    assert!(matches!(sink.send_estimation_line("not json"), Err(AdapterError::Setting(_))));
    let report = sink.flush(Duration::from_secs(30)).unwrap();
    assert_eq!((report.sent, report.delivered, report.failed), (3, 3, 0));
    let got = consume_all(&mc, "out", 3);
    let keys: Vec<_> = got.iter().map(|m| String::from_utf8_lossy(m.key().unwrap()).into_owned()).collect();
    assert_eq!(keys, vec!["EURTRY,Forex", ",", "a\\,b,c\\\\d"]);
    assert_eq!(got[0].payload(), Some(line.as_bytes()));
}

#[test]
fn delivery_failures_are_counted_and_reported() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("out", 1, 1).unwrap();
    let mut opts = options(&mc, "fail");
    opts.extra.push(parse_setting("message.timeout.ms=300").unwrap());
    let mut sink = KafkaEstimationSink::new(&opts, "out").unwrap();
    mc.broker_down(1).unwrap();
    for i in 0..5 {
        sink.send_estimation("s", "d", &format!("{{\"i\":{i}}}")).unwrap();
    }
    let err = sink.flush(Duration::from_secs(30)).unwrap_err();
    match err {
        AdapterError::Delivery { failed, ref topic, .. } => {
            assert_eq!(failed, 5);
            assert_eq!(topic, "out");
        }
        other => panic!("expected a delivery error, got {other}"),
    }
    let report = sink.report();
    assert_eq!((report.sent, report.delivered, report.failed), (5, 0, 5));
    assert!(report.first_error.is_some());
    // reported once: the next flush has nothing new to complain about
    assert!(sink.flush(Duration::from_secs(5)).is_ok());
}

#[test]
fn replay_keys_lines_by_stream_id() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("data", 1, 1).unwrap();
    let opts = options(&mc, "replay");
    let mut lines: Vec<String> = (0..300).map(|i| tuple(&format!("S{}", i % 7), i)).collect();
    lines.push("not json at all".into());
    lines.push(String::new());
    let report = replay_lines(&opts, "data", &lines, None).unwrap();
    assert_eq!((report.sent, report.delivered, report.failed), (301, 301, 0));
    let paced = replay_lines(&opts, "data", lines.iter().take(50), Some(5_000.0)).unwrap();
    assert_eq!(paced.delivered, 50);
    let got = consume_all(&mc, "data", 351);
    assert_eq!(got.len(), 351);
    let mut by_key: BTreeMap<Option<String>, usize> = BTreeMap::new();
    for m in &got {
        *by_key.entry(m.key().map(|k| String::from_utf8_lossy(k).into_owned())).or_default() += 1;
    }
    assert_eq!(by_key.get(&None), Some(&1), "the non-JSON line is unkeyed");
    assert_eq!(by_key.get(&Some("S0".into())), Some(&(43 + 8)));
    assert!(matches!(replay_lines(&opts, "data", &lines, Some(0.0)), Err(AdapterError::Setting(_))));
    assert!(matches!(replay_lines(&opts, "data", &lines, Some(f64::NAN)), Err(AdapterError::Setting(_))));
}

#[test]
fn bad_settings_and_missing_topics_are_clear_errors() {
    let mc = MockCluster::new(1).unwrap();
    let mut opts = options(&mc, "bad");
    assert!(matches!(
        KafkaTupleSource::new(&opts, "nope", 0, 1, 0, LONG),
        Err(AdapterError::MissingTopic { ref topic }) if topic == "nope"
    ));
    assert!(matches!(KafkaEstimationSink::new(&opts, "nope"), Err(AdapterError::MissingTopic { .. })));
    mc.create_topic("data", 2, 1).unwrap();
    assert_eq!(ensure_topics(&opts, &[TopicSpec::new("data", 2)]).unwrap(), vec![false], "exists already");
    let err = ensure_topics(&opts, &[TopicSpec::new("other", 0)]).unwrap_err();
    assert!(matches!(err, AdapterError::Setting(_)) && err.to_string().contains("other"), "{err}");
    assert!(matches!(KafkaTupleSource::new(&opts, "data", 2, 2, 0, LONG), Err(AdapterError::Setting(_))));
    opts.extra.push(("fetch.wait.max.ms".into(), "not a number".into()));
    let err = KafkaTupleSource::new(&opts, "data", 0, 1, 0, LONG).err().unwrap();
    assert!(matches!(err, AdapterError::Setting(_)), "{err}");
    assert!(err.to_string().contains("fetch.wait.max.ms"), "{err}");
    for bad in ["novalue", "=x", "a b=c"] {
        let err = parse_setting(bad).unwrap_err().to_string();
        assert!(err.contains(bad), "{err}");
    }
}

#[test]
fn unreachable_broker_fails_within_seconds() {
    let opts = KafkaOptions::new("127.0.0.1:1", "nobody");
    let start = Instant::now();
    // the three checks run side by side: each waits for the metadata timeout
    std::thread::scope(|s| {
        let source = s.spawn(|| KafkaTupleSource::new(&opts, "data", 0, 1, 0, LONG).err());
        let sink = s.spawn(|| KafkaDeadLetterSink::new(&opts, "dead").err());
        let check = s.spawn(|| saams_jobs::kafka::check_brokers(&opts).err());
        let err = source.join().unwrap().unwrap();
        assert!(matches!(err, AdapterError::Unreachable { .. }), "{err}");
        assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
        assert!(matches!(sink.join().unwrap(), Some(AdapterError::Unreachable { .. })));
        assert!(matches!(check.join().unwrap(), Some(AdapterError::Unreachable { .. })));
    });
    eprintln!("unreachable-broker errors after {:?}", start.elapsed());
}

#[test]
fn latest_skips_what_was_there_and_reads_what_comes() {
    let mc = MockCluster::new(1).unwrap();
    mc.create_topic("data", 2, 1).unwrap();
    let old: Vec<_> = (0..10).map(|i| (i % 2, "k".to_string(), format!("old{i}"), 0)).collect();
    produce(&mc, "data", &old);
    let mut opts = options(&mc, "latest");
    opts.from = StartFrom::Latest;
    let mut source = KafkaTupleSource::new(&opts, "data", 0, 1, 0, LONG).unwrap();
    assert!(drain(&mut source).is_empty(), "records produced before the start are skipped");
    let new: Vec<_> = (0..6).map(|i| (i % 2, "k".to_string(), format!("new{i}"), 0)).collect();
    produce(&mc, "data", &new);
    // at_end() still holds from before: poll until the new records arrive
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    while got.len() < 6 && Instant::now() < deadline {
        for r in source.poll_batch(100, Duration::from_millis(50)).unwrap() {
            got.push(String::from_utf8(r.payload).unwrap());
        }
    }
    assert!(drain(&mut source).is_empty());
    got.sort();
    assert_eq!(got, vec!["new0", "new1", "new2", "new3", "new4", "new5"]);
}

/// A reference-form tuple of EURTRY at second `s` of 2 January 2019.
fn tick(s: usize) -> String {
    format!(
        r#"{{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:{:02}:{:02}","price":{}.5}}"#,
        s / 60,
        s % 60,
        s % 9
    )
}

/// The offset group `group` committed for partition 0 of `topic` (`None`: nothing yet).
fn committed(mc: &MockCluster<'static, DefaultProducerContext>, group: &str, topic: &str) -> Option<i64> {
    let consumer: BaseConsumer =
        ClientConfig::new().set("bootstrap.servers", mc.bootstrap_servers()).set("group.id", group).create().unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition(topic, 0);
    let got = consumer.committed_offsets(tpl, Duration::from_secs(10)).unwrap();
    match got.find_partition(topic, 0).unwrap().offset() {
        rdkafka::Offset::Offset(o) => Some(o),
        _ => None,
    }
}

/// At-least-once for rejected records: the job commits an input offset only once the dead
/// letters of the records before it are in the dead-letter topic. The dead-letter topic's
/// leader (broker 2) goes down before a malformed record arrives; windows after it close (their
/// answers are written) but the group's committed offset stays at or before the malformed
/// record until the broker is back — committed, a crash would lose that record for good (a
/// restart reads from the committed offset). Once it is back, the dead letter is delivered and
/// the offsets committed through the end.
#[test]
fn offsets_wait_for_the_dead_letters_of_their_records() {
    let mc = MockCluster::new(2).unwrap();
    mc.create_topic("data", 1, 1).unwrap();
    mc.create_topic("dead", 1, 1).unwrap();
    mc.partition_leader("data", 0, Some(1)).unwrap();
    mc.partition_leader("dead", 0, Some(2)).unwrap();
    mc.coordinator(rdkafka::mocking::MockCoordinator::Group("dl-wait".into()), 1).unwrap();
    let record = |s: String| (0, "EURTRY".to_string(), s, 0);
    produce(&mc, "data", &(0..50).map(|s| record(tick(s))).collect::<Vec<_>>());

    let dir = std::env::temp_dir().join(format!("saams-kafka-mock-dl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("answers.json");
    let requests = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/requests/paper-workload.json");
    let job = std::process::Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["-w", "1", "--requests", requests, "--brokers", &mc.bootstrap_servers()])
        .args(["--data-topic", "data", "--dead-letter-topic", "dead", "--group-id", "dl-wait", "--from", "earliest"])
        .args(["--window", "1s", "--lateness", "0s", "--exit-when-idle", "8s", "--progress", "0", "--out"])
        .arg(&out)
        .args(["-X", "session.timeout.ms=2000", "-X", "heartbeat.interval.ms=500"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Answers of window `s` (one tuple a second, one window a second) have been written.
    // (A landmark answer's window ends at the close of the job window that answered it.)
    let answered = |s: usize| {
        let window = format!(r#""end":"2019-01-02T00:{:02}:{:02}Z""#, (s + 1) / 60, (s + 1) % 60);
        std::fs::read_to_string(&out).is_ok_and(|t| t.contains(&window))
    };
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("the first windows' answers", &|| answered(40));

    mc.broker_down(2).unwrap();
    let mut rest = vec![record("{not json".to_string())];
    rest.extend((50..200).map(|s| record(tick(s))));
    produce(&mc, "data", &rest);
    wait_for("answers of windows after the malformed record", &|| answered(150));
    // Two commit intervals more: windows through 150 are closed and their answers written.
    std::thread::sleep(Duration::from_millis(2_500));
    let held = committed(&mc, "dl-wait", "data");
    assert!(held.is_none_or(|o| o <= 50), "offset {held:?} committed past the malformed record at 50");

    mc.broker_up(2).unwrap();
    wait_for("the offsets of every record to be committed", &|| committed(&mc, "dl-wait", "data") == Some(201));
    let finished = job.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&finished.stderr);
    assert!(finished.status.success(), "{stderr}");
    assert!(stderr.contains("kafka dead_letters sent=1 delivered=1 failed=0"), "{stderr}");
    let dead = consume_all(&mc, "dead", 1);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].payload(), Some(&b"{not json"[..]));
    let _ = std::fs::remove_dir_all(&dir);
}
