//! A line sink's side of a hand-off (`crate::handoff`): the job taking over holds its answers
//! while it catches up, writing nothing, and writes from the agreed boundary on once it holds
//! the output; the job handing off drops its answers from that boundary on.
//!
//! ```
//! use saams_jobs::sink::file::LineSink;
//! let path = std::env::temp_dir().join(format!("saams-doc-take-over-{}.jsonl", std::process::id()));
//! std::fs::write(&path, "old window 0\nold window 1\nnot cut\n").unwrap();
//! // The new job catches up: nothing reaches the file.
//! let sink = LineSink::detached();
//! sink.write_at(59_999, None, ["window 0"]);
//! sink.write_at(119_999, None, ["window 1"]);
//! sink.write_at(179_999, None, ["window 2"]);
//! assert_eq!(sink.held_lines(), 3);
//! // The old job's last checkpoint: boundary 120 000, the file cut at 26 bytes.
//! sink.attach(&path.display().to_string(), Some(26), 120_000).unwrap();
//! sink.write_at(100_000, None, ["window 1 again"]);
//! sink.write_at(239_999, None, ["window 3"]);
//! sink.flush();
//! let text = std::fs::read_to_string(&path).unwrap();
//! assert_eq!(text, "old window 0\nold window 1\nwindow 2\nwindow 3\n");
//! # std::fs::remove_file(&path).unwrap();
//! ```

use std::io::{BufWriter, Write};
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use super::{Held, LineSink, lock};

impl LineSink {
    /// A sink of a job that takes over another's output (`saams --take-over`): every line is
    /// held (none is written) until [`LineSink::attach`] names the output and the boundary the
    /// other job wrote up to.
    pub fn detached() -> LineSink {
        let mut sink = LineSink::discard();
        let mut held = Held::default();
        // Boundary 0 holds every line: it is removed when the sink is attached.
        held.uncommitted.insert(0);
        sink.held = Some(Mutex::new(held));
        sink
    }

    /// Lines before `time` (ms) are another job's, written by it: drop those held and those to
    /// come (a job taking over drops what precedes the newest checkpoint of the job it takes
    /// over from, which is at or before the boundary it takes over at).
    pub fn drop_before(&self, time: u64) {
        self.span.0.fetch_max(time, Ordering::Relaxed);
        if let Some(held) = &self.held {
            lock(held).lines.retain(|(t, _)| *t >= time);
        }
    }

    /// The job hands off at `boundary`: lines at or after it are the new job's to write, and
    /// dropped here from now on (held ones too, as [`LineSink::release_all`] would write them).
    pub fn end_at(&self, boundary: u64) {
        self.span.1.fetch_min(boundary, Ordering::Relaxed);
    }

    /// Whether a line of event time `time` is this sink's to write. With no hand-off the end
    /// is `u64::MAX`, meaning none: lines written at the end of the input (ad-hoc answers and
    /// SAVEs of a request file) travel at `u64::MAX` and are written too.
    pub(super) fn writes(&self, time: u64) -> bool {
        let end = self.span.1.load(Ordering::Relaxed);
        time >= self.span.0.load(Ordering::Relaxed) && (end == u64::MAX || time < end)
    }

    /// The job has taken over at `from` (ms): the output is `target` (`-` for stdout), cut back
    /// to `keep` bytes (the length the other job's last checkpoint recorded; `None`: as long as
    /// it is, e.g. a dead-letter file the checkpoint did not record). The lines held before
    /// `from` are dropped, the rest written in the order they came; lines come through at once
    /// from now on (or wait for this job's own checkpoints).
    ///
    /// # Errors
    /// When the file cannot be opened, or is shorter than `keep`.
    pub fn attach(&self, target: &str, keep: Option<u64>, from: u64) -> Result<(), String> {
        let opened = if target == "-" {
            None
        } else {
            let len = std::fs::metadata(target).map_or(0, |m| m.len());
            Some(LineSink::open_at(target, Some(keep.unwrap_or(len)))?)
        };
        match opened {
            Some(file) => {
                let out = file.out.into_inner().unwrap_or_else(|p| p.into_inner());
                self.attach_with(out, Some(file.bytes.load(Ordering::Relaxed)), file.file.into_inner(), from)
            }
            None => self.attach_with(Box::new(BufWriter::new(std::io::stdout())), None, None, from),
        }
    }

    /// As [`LineSink::attach`], to any writer: a Kafka answer topic's producer (whose
    /// deduplication of what the other job produced past its last checkpoint is the writer's,
    /// see `crate::kafka::produce`).
    ///
    /// ```
    /// use saams_jobs::sink::file::LineSink;
    /// let sink = LineSink::detached();
    /// sink.write_at(59_999, None, ["window 0"]);
    /// sink.write_at(119_999, None, ["window 1"]);
    /// sink.attach_writer(Box::new(std::io::sink()), 60_000).unwrap();
    /// assert_eq!((sink.held_lines(), sink.count()), (0, 1));
    /// ```
    ///
    /// # Errors
    /// When the sink was not detached.
    pub fn attach_writer(&self, out: Box<dyn Write + Send>, from: u64) -> Result<(), String> {
        self.attach_with(out, None, None, from)
    }

    /// Write to `out` from now on (`bytes` already in it, `file` behind it to sync), and the
    /// held lines from `from` on.
    fn attach_with(
        &self,
        out: Box<dyn Write + Send>,
        bytes: Option<u64>,
        file: Option<std::fs::File>,
        from: u64,
    ) -> Result<(), String> {
        let Some(held) = &self.held else { return Err("a sink that was not detached cannot be attached".into()) };
        let mut held = lock(held);
        self.span.0.fetch_max(from, Ordering::Relaxed);
        *lock(&self.out) = out;
        if let Some(bytes) = bytes {
            self.bytes.store(bytes, Ordering::Relaxed);
        }
        if let Some(f) = file {
            let _ = self.file.set(f);
        }
        held.uncommitted.remove(&0);
        let before = held.uncommitted.first().copied().unwrap_or(u64::MAX);
        let (ready, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut held.lines).into_iter().filter(|(t, _)| *t >= from).partition(|(t, _)| *t < before);
        held.lines = later;
        self.write_now(ready.into_iter().map(|(_, l)| l));
        Ok(())
    }
}
