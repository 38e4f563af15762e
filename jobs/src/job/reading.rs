//! What a worker reads: its input units (byte ranges of files, stdin, generated streams, and
//! the records of its Kafka partitions), each with its pending tuple and its positions at
//! checkpoint boundaries; which units a worker is given, and where a resumed job reads on.

use std::sync::atomic::Ordering;

use saams::checkpoint::SourcePosition;
use saams_datasets::GeneratorSpec;
use saams_operators::Plan;

use crate::checkpoint::marks::SourceMarks;
use crate::checkpoint::resume::Resume;
use crate::sink::file::LineSink;
use crate::source::file::{Input as Unit, UnitReader};
use crate::source::generated::Generated;
use crate::stats::Stats;

use super::generated::{generated_routes, generated_streams_for_worker};

/// Where a unit's tuples come from.
pub(super) enum Source {
    /// Lines of a file, a byte range of one, or stdin.
    Lines(UnitReader),
    /// A generated stream, with the groups it feeds ([`generated_routes`]).
    Generated(Generated, Vec<(u32, usize)>),
    /// Records of the data topic (read by [`KafkaInput`](crate::kafka::KafkaInput),
    /// never fetched through a `Reading`).
    Kafka,
}

/// One input unit as a worker reads it.
pub(super) struct Reading {
    /// The unit's index (a generated stream's), the high bits of its tuples' arrival sequence.
    pub(super) unit: u64,
    /// The high bits of its tuples' arrival sequence: the unit's index, or a striped unit's
    /// file's first unit's (its lines are numbered by byte offset: [`crate::source::stripes`]).
    pub(super) seq_unit: u64,
    pub(super) source: Source,
    /// The tuple of the last line read (the pending one while `pending` is a tuple): every line
    /// of the unit is parsed into it, reusing its strings and fields.
    pub(super) tuple: saams::api::Tuple,
    pub(super) max_time: i64,
    pub(super) pending: Option<Pending>,
    /// Positions at checkpoint boundaries.
    pub(super) marks: SourceMarks,
    /// This worker reports the unit's positions at checkpoint boundaries after this one (ms):
    /// those at or before it are the previous worker's, which read it then
    /// ([`super::handover`]).
    pub(super) after: u64,
    /// The worker the unit goes to once it can ([`super::handover`]); `None`: it stays.
    pub(super) moving_to: Option<usize>,
}

/// A unit this worker no longer reads: it ended here, or it went to another worker
/// ([`super::handover`]). Its positions are reported at the checkpoint boundaries `b` with
/// `after < b <= upto`: where it stood at those it had reached, else `at`.
pub(super) struct Left {
    pub(super) at: SourcePosition,
    pub(super) marks: SourceMarks,
    pub(super) after: u64,
    pub(super) upto: u64,
}

impl Left {
    /// A unit that ended here: reported at every later boundary.
    pub(super) fn ended(at: SourcePosition, marks: SourceMarks, after: u64) -> Left {
        Left { at, marks, after, upto: u64::MAX }
    }

    /// Whether this worker reports the unit at boundary `b`.
    pub(super) fn reports(&self, b: u64) -> bool {
        self.after < b && b <= self.upto
    }
}

/// A unit's next tuple, read but not yet routed.
pub(super) enum Pending {
    /// Line number and event time of the tuple in [`Reading::tuple`].
    Tuple(u64, i64),
    Values(u64, i64, [f64; 6]),
}

impl Pending {
    pub(super) fn time(&self) -> i64 {
        match self {
            Pending::Tuple(_, time) | Pending::Values(_, time, _) => *time,
        }
    }
}

impl Reading {
    /// A unit about to be read from its start.
    pub(super) fn new(unit: u64, source: Source) -> Reading {
        let seq_unit = match &source {
            Source::Lines(r) => unit.saturating_sub(r.units_before()),
            _ => unit,
        };
        Reading {
            unit,
            seq_unit,
            source,
            tuple: saams::api::Tuple::default(),
            max_time: i64::MIN,
            pending: None,
            marks: SourceMarks::default(),
            after: 0,
            moving_to: None,
        }
    }

    /// The oldest event time (ms) the unit can still produce: its newest time minus the
    /// lateness (a unit that has routed nothing yet but holds its first tuple can produce
    /// nothing older than that tuple's time minus the lateness either); 0 before it has read
    /// anything.
    pub(super) fn low(&self, lateness_ms: i64) -> u64 {
        let newest =
            if self.max_time == i64::MIN { self.pending.as_ref().map(Pending::time) } else { Some(self.max_time) };
        newest.map_or(0, |t| t.saturating_sub(lateness_ms).max(0) as u64)
    }

    /// The unit's name in checkpoints.
    pub(super) fn key(&self) -> String {
        match &self.source {
            Source::Lines(_) => format!("unit:{}", self.unit),
            Source::Generated(..) => format!("generator:{}", self.unit),
            Source::Kafka => "kafka".to_string(),
        }
    }

    /// Where the tuple with line number (or generator index) `line` that is being routed
    /// starts, and the newest time before it.
    pub(super) fn position_of(&self, line: u64) -> SourcePosition {
        let (offset, line) = match &self.source {
            Source::Lines(r) => r.line_start(),
            _ => (line.saturating_sub(1), line.saturating_sub(1)),
        };
        let max_time = (self.max_time != i64::MIN).then_some(self.max_time);
        SourcePosition { source: self.key(), offset, line, max_time, done: false }
    }

    /// Where the unit reads on now: its pending tuple, or the next unread one.
    pub(super) fn position_now(&self) -> SourcePosition {
        let mut p = match (&self.pending, &self.source) {
            (Some(Pending::Tuple(line, _)), _) => self.position_of(*line),
            (Some(Pending::Values(index, ..)), _) => self.position_of(*index),
            (None, Source::Lines(r)) => {
                let (offset, line) = r.position();
                SourcePosition { source: self.key(), offset, line, max_time: None, done: false }
            }
            (None, Source::Generated(g, _)) => self.position_of(g.index() + 1),
            (None, Source::Kafka) => self.position_of(0),
        };
        p.max_time = (self.max_time != i64::MIN).then_some(self.max_time);
        p
    }

    pub(super) fn name(&self) -> String {
        match &self.source {
            Source::Lines(r) => r.name().to_string(),
            Source::Generated(g, _) => format!("generator:{}", g.stream_id),
            Source::Kafka => "kafka".to_string(),
        }
    }
}

/// Whether worker `me` of `peers` reads input unit `u`: standard input is worker 0's (there is
/// one stdin per process, and only the first process' is read), every other unit goes to worker
/// `u mod peers`. Stdin took part in that rotation and was skipped at once: given after a file
/// (`--data f --data -`) with two workers it was unit 1, which worker 1 may not read and
/// worker 0 was not given, so its tuples were lost without a word.
///
/// ```
/// use saams_jobs::job::reads_unit;
/// use saams_jobs::source::file::Input;
/// let (file, stdin) = (Input::File("ticks.jsonl".into(), None), Input::Stdin(None));
/// assert!(reads_unit((1, &stdin), (0, 2)) && !reads_unit((1, &stdin), (1, 2)));
/// assert!(reads_unit((0, &file), (0, 2)) && reads_unit((3, &file), (1, 2)));
/// assert!(!reads_unit((3, &file), (0, 2)));
/// ```
pub fn reads_unit((u, unit): (usize, &Unit), (me, peers): (usize, usize)) -> bool {
    match unit {
        Unit::Stdin(_) => me == 0,
        _ => u % peers == me,
    }
}

/// The units worker `me` of `peers` reads: its generated streams, and the input units
/// [`reads_unit`] gives it. A unit that cannot be opened is a dead letter.
pub(super) fn open_readers(
    plan: &Plan,
    generator: Option<&GeneratorSpec>,
    units: &[Unit],
    (me, peers): (usize, usize),
    dead: Option<&LineSink>,
    stats: &Stats,
) -> Vec<Reading> {
    let mut readers = Vec::new();
    if let Some(spec) = generator {
        for i in generated_streams_for_worker(plan, spec, me, peers) {
            let g = Generated::open(spec, i);
            let routes = generated_routes(plan, &g);
            readers.push(Reading::new(i as u64, Source::Generated(g, routes)));
        }
    }
    for (u, unit) in units.iter().enumerate() {
        if !reads_unit((u, unit), (me, peers)) {
            continue;
        }
        match UnitReader::open(unit) {
            Ok(reader) => readers.push(Reading::new(u as u64, Source::Lines(reader))),
            Err(e) => {
                if let Some(d) = dead {
                    d.write_all(std::iter::once(
                        &serde_json::json!({"source": format!("{unit:?}"), "error": e}).to_string(),
                    ));
                }
                eprintln!("saams: {e}");
                stats.dead_letters.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    readers
}

/// A resumed job's readers read on from the checkpoint's positions and skip values before its
/// boundary; those that had ended stay ended. A unit that cannot be positioned is a dead letter.
pub(super) fn resume_readers(
    readers: &mut Vec<Reading>,
    resume: &Resume,
    units: &[Unit],
    ended: &mut Vec<Left>,
    (dead, stats): (Option<&LineSink>, &Stats),
) {
    readers.retain_mut(|r| {
        r.marks.skip_before = resume.boundary_ms.min(i64::MAX as u64) as i64;
        let Some(at) = resume.position(&r.key()) else { return true };
        if at.done {
            ended.push(Left::ended(at.clone(), SourceMarks::default(), 0));
            return false;
        }
        r.max_time = at.max_time.unwrap_or(i64::MIN);
        let moved = match &mut r.source {
            Source::Lines(reader) => {
                match units.get(r.unit as usize).map(|u| UnitReader::open_at(u, at.offset, at.line)) {
                    Some(Ok(again)) => {
                        *reader = again;
                        Ok(())
                    }
                    Some(Err(e)) => Err(e),
                    None => Err(format!("the checkpoint's input {} is not among this job's inputs", at.source)),
                }
            }
            Source::Generated(g, _) => match g.skip(at.offset) {
                true => Ok(()),
                false => Err(format!("{}: the stream ends before the checkpoint's position {}", at.source, at.offset)),
            },
            Source::Kafka => Ok(()),
        };
        if let Err(e) = moved {
            eprintln!("saams: resuming {}: {e}", at.source);
            stats.dead_letters.fetch_add(1, Ordering::Relaxed);
            if let Some(d) = dead {
                d.write_all(std::iter::once(&serde_json::json!({"source": at.source, "error": e}).to_string()));
            }
            return false;
        }
        true
    });
}
