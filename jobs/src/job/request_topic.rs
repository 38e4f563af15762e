//! The request topic at start (`--request-topic`): its records become the request script's
//! tail, and the later ones are followed while the job runs — with `--checkpoints`, so that a
//! restart or a job taking over applies every record exactly once.
//!
//! A job with checkpoints keeps two facts in its directory:
//! - **where the script ends**: `request-topic.json`, written (atomically, synced) by the first
//!   start, before any record is followed: per partition, the offset after the records read to
//!   the topic's end then. Every later start (a restart, a job taking over) reads exactly those
//!   records as its script's tail, so its script is the checkpoints' script, whatever was
//!   produced since.
//! - **how far the topic was followed**: each live request from the topic is logged with its
//!   record's place ([`TopicRecord`](crate::control::request_log::TopicRecord)) in the request
//!   log, synced before it is acknowledged. A restart applies the logged requests at their
//!   fences (as every logged live request) and follows the topic from after the newest logged
//!   record ([`RequestLog::topic_read`]); a record not yet logged at a crash has no fence yet,
//!   and is taken again as a new live request.
//!
//! A record that is no request to apply (malformed: a dead letter; an ad-hoc query: answered at
//! once) leaves no entry: after a restart it is read again if no logged request follows it (its
//! dead letter and its answer are then written again: at least once, as dead letters are).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use crate::atomic_file::replace_durably;
use crate::checkpoint::TEMP_PREFIX;
use crate::cli::Cli;
use crate::control::request_log::RequestLog;
use crate::kafka::{FollowFrom, KafkaJob};
use crate::sink::file::LineSink;
use crate::stats::Stats;

/// The file in the checkpoint directory that says where the request script's tail ends.
pub const SCRIPT_END_FILE: &str = "request-topic.json";

/// Per partition of the request topic, the offset after the script's last record.
pub(super) type ScriptEndAt = BTreeMap<i32, i64>;

/// What `DIR/request-topic.json` says.
#[derive(Debug, Serialize, Deserialize)]
struct ScriptEnd {
    /// The request topic read.
    topic: String,
    /// Per partition, the offset after the last record of the script (a partition not named
    /// had none).
    #[serde(rename = "scriptEnd")]
    script_end: BTreeMap<i32, i64>,
}

/// A restart (or a job taking over) of a job with checkpoints that reads a request topic: the
/// request script with the topic's tail its first start read (`requests`, process 0's, with
/// the records before the recorded script end after it), and that end. Read before the
/// checkpoint is chosen, so the script is checked against it (and before any output is opened
/// or cut). `(requests, None)` for other jobs and first starts.
///
/// # Errors
/// When the topic cannot be read, the directory was another topic's, or a job taking over
/// finds none recorded.
pub(super) fn script_at_restart(
    cli: &Cli,
    kafka_job: Option<&Arc<KafkaJob>>,
    requests: Option<String>,
) -> Result<(Option<String>, Option<ScriptEndAt>), String> {
    let (Some(dir), Some(k), Some(mut text)) = (&cli.checkpoints, kafka_job, requests.clone()) else {
        return Ok((requests, None));
    };
    let Some(topic) = k.request_topic() else { return Ok((requests, None)) };
    let Some(end) = script_end(dir, topic, cli.take_over)? else { return Ok((requests, None)) };
    let read = k.read_requests_at_start(None, Some(&end))?.ok_or("no request topic")?;
    text.push('\n');
    text.push_str(&read.text);
    Ok((Some(text), Some(end)))
}

/// A first start reading a request topic (`recorded`: no script end in the directory) that
/// would resume from a checkpoint (`resumes`): that checkpoint was written by a job reading no
/// request topic, and its script lacks the topic's tail.
///
/// # Errors
/// The refusal, saying what to do.
pub(super) fn refuse_checkpoints_without_topic(cli: &Cli, recorded: bool, resumes: bool) -> Result<(), String> {
    match (&cli.checkpoints, &cli.kafka.request_topic) {
        (Some(dir), Some(topic)) if cli.process == 0 && !recorded && resumes => Err(format!(
            "--request-topic {topic}: the checkpoints in {} were written by a job reading no request topic: start without --request-topic, or with another --checkpoints directory",
            dir.display()
        )),
        _ => Ok(()),
    }
}

/// The request script with the request topic's requests after it (where this process has the
/// script and the job reads a request topic), and where to follow the topic from while the job
/// runs. The topic's bad records are counted as dead letters. With checkpoints (`dir`), a
/// first start (`recorded` none) records where its script's tail ends; a restart's script has
/// its tail already ([`script_at_restart`]).
///
/// # Errors
/// When the request topic cannot be read or its script end cannot be written.
pub(super) fn with_request_topic(
    requests: Option<String>,
    kafka_job: Option<&Arc<KafkaJob>>,
    (dead, stats): (Option<&LineSink>, &Stats),
    (dir, recorded): (Option<&Path>, Option<BTreeMap<i32, i64>>),
) -> Result<(Option<String>, Option<FollowFrom>), String> {
    let Some((k, topic)) = kafka_job.and_then(|k| Some((k, k.request_topic()?.to_string()))) else {
        return Ok((requests, None));
    };
    // (Only process 0 has the script: it reads the topic, the others hear from it.)
    let Some(mut text) = requests else { return Ok((None, None)) };
    let (script_end, dir) = match (recorded, dir) {
        (Some(end), Some(dir)) => (end, dir),
        (_, dir) => {
            let Some(read) = k.read_requests_at_start(dead, None)? else { return Ok((Some(text), None)) };
            stats.dead_letters.fetch_add(read.bad, Ordering::Relaxed);
            text.push('\n');
            text.push_str(&read.text);
            let Some(dir) = dir else { return Ok((Some(text), Some(FollowFrom::Source(Box::new(read.source))))) };
            let file = ScriptEnd { topic, script_end: read.end };
            let json = serde_json::to_string(&file).map_err(|e| e.to_string())?;
            replace_durably(&dir.join(SCRIPT_END_FILE), TEMP_PREFIX, json.as_bytes())?;
            (file.script_end, dir)
        }
    };
    let dir = dir.to_path_buf();
    let positions = move || {
        let mut at = script_end;
        for (partition, after) in RequestLog::topic_read(&dir)? {
            let from = at.entry(partition).or_insert(0);
            *from = (*from).max(after);
        }
        Ok(at)
    };
    Ok((Some(text), Some(FollowFrom::Positions(Box::new(positions)))))
}

/// Where the script's tail ends on `topic`, as `dir` records it (`None`: a first start, which
/// records it).
///
/// # Errors
/// When the file cannot be read, names another topic, or is missing for a job taking over.
fn script_end(dir: &Path, topic: &str, take_over: bool) -> Result<Option<BTreeMap<i32, i64>>, String> {
    let path = dir.join(SCRIPT_END_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !take_over => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "--take-over --request-topic {topic}: the running job on {} reads no request topic ({} is missing): start this job without --request-topic",
                dir.display(),
                SCRIPT_END_FILE
            ));
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let recorded: ScriptEnd = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if recorded.topic != topic {
        return Err(format!(
            "--request-topic {topic}: the checkpoints in {} were written by a job reading request topic {:?}: give that topic, or another --checkpoints directory",
            dir.display(),
            recorded.topic
        ));
    }
    Ok(Some(recorded.script_end))
}
