//! The request topic (`--request-topic`) as one process reads it: its records up to the end
//! (or, for a job with checkpoints, up to where its first start read them) become the request
//! script's tail, and the records after are followed while the job runs, each handed to the
//! hub with its place in the topic ([`TopicRecord`]), which the request log keeps.
//!
//! Why its own file: the process' Kafka side ([`KafkaJob`]) holds the producers and the stop
//! rule; reading requests shares none of that but the dead letters.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use saams::api::request::{Parsed, requests_from_value};

use super::process::KafkaJob;
use crate::control::hub::Hub;
use crate::control::request_log::TopicRecord;
use crate::kafka::consume::broadcast_source::KafkaBroadcastSource;
use crate::sink::file::LineSink;

/// Where the follower of the request topic starts.
pub enum FollowFrom {
    /// Where the reading at start stopped: the topic's end then (a job without checkpoints).
    Source(Box<KafkaBroadcastSource>),
    /// At the offsets this gives, asked once the process' hub takes requests: a job with
    /// checkpoints reads on from where its request log says the topic was read (a job taking
    /// over: once it holds the directory, from where the job it took over from stopped).
    Positions(Box<dyn FnOnce() -> Result<BTreeMap<i32, i64>, String> + Send>),
}

/// What [`KafkaJob::read_requests_at_start`] read.
pub struct ReadAtStart {
    /// The valid records, one JSON request line (or array) each.
    pub text: String,
    /// The malformed records (dead letters when read for the first time).
    pub bad: u64,
    /// The source, positioned after what was read.
    pub source: KafkaBroadcastSource,
    /// Per partition, the offset after the last record read (partitions with none left out).
    pub end: BTreeMap<i32, i64>,
}

impl KafkaJob {
    /// The request topic's name (`--request-topic`).
    pub fn request_topic(&self) -> Option<&str> {
        self.request_topic.as_deref()
    }

    /// Reads the request topic to its end (when `--request-topic` is given) and returns its valid
    /// records as request lines plus the number of malformed records, which go to the dead
    /// letters (the topic's, else `file_dead`).
    ///
    /// # Errors
    /// When the topic cannot be read to its end within 30 s.
    pub fn request_text(&self, file_dead: Option<&LineSink>) -> Result<Option<(String, u64)>, String> {
        Ok(self.read_requests_at_start(file_dead, None)?.map(|r| (r.text, r.bad)))
    }

    /// As [`KafkaJob::request_text`], or, with `until`, the records before those offsets only
    /// (per partition; a partition not named has none): what a job with checkpoints read at its
    /// first start, read again on a restart. Those were dead-lettered then, and are only
    /// counted now. Also returns the source positioned after what was read.
    ///
    /// # Errors
    /// As [`KafkaJob::request_text`].
    pub fn read_requests_at_start(
        &self,
        file_dead: Option<&LineSink>,
        until: Option<&BTreeMap<i32, i64>>,
    ) -> Result<Option<ReadAtStart>, String> {
        let Some(topic) = &self.request_topic else { return Ok(None) };
        let mut source = KafkaBroadcastSource::new(&self.opts, topic, 0).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let (mut text, mut bad, mut end) = (String::new(), 0u64, BTreeMap::new());
        let before = |p: i32, offset: i64| until.is_none_or(|u| offset < u.get(&p).copied().unwrap_or(0));
        let reached = |end: &BTreeMap<i32, i64>| {
            until.is_some_and(|u| u.iter().all(|(p, &o)| o <= 0 || end.get(p).is_some_and(|&e| e >= o)))
        };
        loop {
            let n = source
                .poll_with(1024, Duration::from_millis(50), |r| {
                    if !before(r.partition, r.offset) {
                        return;
                    }
                    end.insert(r.partition, r.offset + 1);
                    match serde_json::from_slice::<serde_json::Value>(r.payload) {
                        Ok(v) => {
                            text.push_str(&v.to_string());
                            text.push('\n');
                        }
                        Err(e) => {
                            bad += 1;
                            if until.is_none() {
                                self.reject(topic, (&r, None), &format!("malformed request JSON: {e}"), file_dead);
                            }
                        }
                    }
                })
                .map_err(|e| e.to_string())?;
            if reached(&end) || (n == 0 && source.at_end()) {
                return Ok(Some(ReadAtStart { text, bad, source, end }));
            }
            if Instant::now() > deadline {
                return Err(format!("kafka: request topic {topic:?} not read to its end within 30 s"));
            }
        }
    }

    /// Keep reading the request topic after the start: every request produced while the job runs
    /// goes to `hub` (it takes effect at the next fence) with its record's place, while the hub
    /// takes requests; while it takes none (a job handing off, or one taking over that has not
    /// yet), the next record waits. Stops when `stop` is set; malformed records are dead letters,
    /// as at the start.
    pub fn follow_requests(self: &Arc<Self>, from: FollowFrom, hub: Arc<Hub>, stop: Arc<AtomicBool>) -> JoinHandle<()> {
        let job = self.clone();
        std::thread::spawn(move || {
            let topic = job.request_topic.clone().unwrap_or_default();
            let Some(mut source) = job.follower_source(from, &hub, &stop) else { return };
            // A record read while the hub took no requests, submitted once it does.
            let mut held: Option<(Parsed, TopicRecord)> = None;
            while !stop.load(Ordering::Relaxed) {
                if let Some((requests, at)) = held.take() {
                    if !hub.submit_detached_if_open(requests.clone(), Some(at)) {
                        held = Some((requests, at));
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    continue;
                }
                // One record a poll: a record is taken from the topic only when it can be held.
                let polled = source.poll_with(1, Duration::from_millis(100), |r| {
                    match serde_json::from_slice::<serde_json::Value>(r.payload) {
                        Ok(v) => {
                            let at = TopicRecord { partition: r.partition, offset: r.offset };
                            held = Some((requests_from_value(&v), at));
                        }
                        Err(e) => job.reject(&topic, (&r, None), &format!("malformed request JSON: {e}"), None),
                    }
                });
                if let Err(e) = polled {
                    job.problem(format!("request topic {topic:?}: {e}"));
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        })
    }

    /// The follower's source: `from`'s, or opened at its positions once `hub` takes requests
    /// (`None`: stopped before, or the topic could not be opened, which is reported).
    fn follower_source(&self, from: FollowFrom, hub: &Hub, stop: &AtomicBool) -> Option<KafkaBroadcastSource> {
        let positions = match from {
            FollowFrom::Source(source) => return Some(*source),
            FollowFrom::Positions(positions) => positions,
        };
        while !hub.is_open() {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let topic = self.request_topic.clone().unwrap_or_default();
        let opened = positions().and_then(|at| {
            let source = KafkaBroadcastSource::open_at(&self.opts, &topic, &at, 0).map_err(|e| e.to_string())?;
            let at: Vec<String> = at.iter().map(|(p, o)| format!("{p}:{o}")).collect();
            eprintln!("saams: request topic {topic:?} followed from partition:offset {}", at.join(", "));
            Ok(source)
        });
        opened.map_err(|e| self.problem(format!("request topic {topic:?} cannot be followed: {e}"))).ok()
    }
}
