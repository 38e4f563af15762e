//! The job's line sinks written to Kafka: `std::io::Write` adapters that turn every complete line
//! into one record of the estimation producer ([`EstimationLines`]) or of the dead-letter producer
//! ([`DeadLetterLines`]).

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;

use super::dead_letters::KafkaDeadLetterSink;
use super::estimations::KafkaEstimationSink;
use crate::kafka::error::AdapterError;
use crate::kafka::lock::lock;

/// Adapts [`KafkaEstimationSink`] to `std::io::Write` for the job's line sink: every complete line
/// written (one JSON estimation) becomes one record keyed by `streamID,dataSetKey`; `flush` waits
/// for the acknowledgements. Failures are kept in the shared sink's counters (see
/// [`KafkaEstimationSink::report`]) and returned as `io::Error`s.
pub struct EstimationLines {
    sink: Arc<Mutex<KafkaEstimationSink>>,
    buf: Vec<u8>,
    flush_timeout: Duration,
}

impl EstimationLines {
    /// Lines into `sink`; `flush` waits up to `flush_timeout` for acknowledgements.
    pub fn new(sink: Arc<Mutex<KafkaEstimationSink>>, flush_timeout: Duration) -> Self {
        EstimationLines { sink, buf: Vec::new(), flush_timeout }
    }
}

fn io_err(e: AdapterError) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Splits `buf` into complete lines, handing each non-blank one to `f`; keeps the partial tail.
fn drain_lines(buf: &mut Vec<u8>, mut f: impl FnMut(&str) -> Result<(), AdapterError>) -> std::io::Result<()> {
    let Some(last) = buf.iter().rposition(|&b| b == b'\n') else { return Ok(()) };
    let mut result = Ok(());
    for line in buf[..last].split(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if text.trim().is_empty() {
            continue;
        }
        if let Err(e) = f(&text)
            && result.is_ok()
        {
            result = Err(io_err(e));
        }
    }
    buf.drain(..=last);
    result
}

impl std::io::Write for EstimationLines {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if data.contains(&b'\n') {
            let mut sink = lock(&self.sink);
            drain_lines(&mut self.buf, |line| sink.send_estimation_line(line))?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        lock(&self.sink).flush(self.flush_timeout).map(|_| ()).map_err(io_err)
    }
}

/// Adapts [`KafkaDeadLetterSink`] to `std::io::Write` for the job's dead-letter line sink, whose
/// lines are JSON objects `{"source", "error", "input"}`: the record value is `input` (the rejected
/// tuple's text), the [`REASON_HEADER`] is `error`. A line that is not such an object is sent as is,
/// with the reason "unstructured dead letter".
pub struct DeadLetterLines {
    sink: Arc<Mutex<KafkaDeadLetterSink>>,
    buf: Vec<u8>,
    flush_timeout: Duration,
}

impl DeadLetterLines {
    /// Lines into `sink`; `flush` waits up to `flush_timeout` for acknowledgements.
    pub fn new(sink: Arc<Mutex<KafkaDeadLetterSink>>, flush_timeout: Duration) -> Self {
        DeadLetterLines { sink, buf: Vec::new(), flush_timeout }
    }
}

#[derive(Deserialize)]
struct RejectLine<'a> {
    #[serde(borrow, default)]
    error: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<Cow<'a, str>>,
}

impl std::io::Write for DeadLetterLines {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if data.contains(&b'\n') {
            let mut sink = lock(&self.sink);
            drain_lines(&mut self.buf, |line| match serde_json::from_str::<RejectLine<'_>>(line) {
                Ok(RejectLine { error: Some(error), input }) => {
                    sink.send(input.as_deref().unwrap_or("").as_bytes(), None, &error, None)
                }
                _ => sink.send(line.as_bytes(), None, "unstructured dead letter", None),
            })?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        lock(&self.sink).flush(self.flush_timeout).map(|_| ()).map_err(io_err)
    }
}
