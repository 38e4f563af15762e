//! The recent continuous answers of each live synopsis, for `GET /synopses/{id}/answers` and the
//! page at `GET /` ([`super::page`]).
//!
//! The answer lines are already serialized when the job writes them to its sink; the dataflow
//! hands each batch of them here too ([`AnswerRings::record`]), and a ring per live synopsis keeps
//! the last [`AnswerRings::capacity`] of them as they are (no second serialization). Only lines
//! with a `window` are kept: continuous answers, not acknowledgements or ad-hoc replies.
//!
//! Why it costs the data path little: nothing is kept until the HTTP server
//! [enables](AnswerRings::enable) the rings (a job without `--http` pays one atomic load per
//! batch); a batch is read outside the lock (only the names that say which synopsis a line
//! belongs to are decoded) and pushed under one lock per batch, and answers come once per window
//! and query, never per tuple. Memory is bounded by the synopses: at most `capacity` lines per
//! live synopsis, and a ring goes when its synopsis is deleted ([`AnswerRings::set_live`]).
//!
//! A process sees the answers its own workers write: a synopsis' continuous answers are written
//! by the worker that holds its merged state (its `home` in `GET /synopses`), so with `-n > 1`
//! each process' rings hold the synopses homed on its workers, and the others' are empty there.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use saams::api::registry::LiveSynopsis;

/// Answers kept per synopsis unless told otherwise: two hours of one-minute windows.
pub const DEFAULT_CAPACITY: usize = 120;

/// The last continuous answers of every live synopsis, as JSON lines.
///
/// ```
/// use saams_jobs::control::answers::AnswerRings;
/// let rings = AnswerRings::new(2);
/// let row = saams::api::registry::LiveSynopsis {
///     id: 4, request_id: serde_json::json!(1), synopsis_id: 2, kind: Some(saams::Kind::HyperLogLog),
///     stream_id: "A".into(), dataset_key: "F".into(), field: "price".into(), params: vec![],
///     mode: "Owned".into(), home: 0, empty_bytes: 64, effective_from_ms: 0,
/// };
/// rings.set_live(&[row]);
/// rings.enable();
/// let line = |end: u32| format!(
///     r#"{{"requestID":5,"synopsisID":2,"streamID":"A","dataSetKey":"F","field":"price","window":{{"end":"{end}"}},"estimate":3}}"#);
/// rings.record([line(1), line(2), line(3)].iter().map(String::as_str));
/// // Bounded: the oldest went.
/// assert_eq!(rings.answers(4), Some(vec![line(2), line(3)]));
/// // A synopsis no longer live has no ring.
/// rings.set_live(&[]);
/// assert_eq!(rings.answers(4), None);
/// ```
pub struct AnswerRings {
    enabled: AtomicBool,
    capacity: usize,
    rings: Mutex<Rings>,
}

#[derive(Default)]
struct Rings {
    /// The live synopses by [`name_key`] → their id in the plan.
    ids: HashMap<String, u32, foldhash::fast::RandomState>,
    /// The rings of the live synopses, by id.
    lines: HashMap<u32, VecDeque<String>, foldhash::fast::RandomState>,
}

/// One key per live synopsis: the names a request and an answer line carry (live synopses'
/// names are unique: a second construct of the same names constructs nothing).
fn name_key(dataset: &str, stream: &str, synopsis_id: u64, field: &str) -> String {
    let mut key = String::new();
    let names =
        Names { synopsis_id, stream: stream.into(), dataset: dataset.into(), field: field.into(), window: true };
    push_key(&mut key, &names);
    key
}

fn push_key(key: &mut String, n: &Names) {
    use std::fmt::Write as _;
    key.clear();
    let _ = write!(key, "{}\u{0}{}\u{0}{}\u{0}{}", n.dataset, n.stream, n.synopsis_id, n.field);
}

/// The names of an answer line that say which synopsis wrote it.
#[derive(Default)]
struct Names {
    synopsis_id: u64,
    stream: String,
    dataset: String,
    field: String,
    /// The line has a `window`: it is a continuous answer.
    window: bool,
}

/// Why reading a line stopped early: it has a `window` (a continuous answer), and the names,
/// written before it, are read.
const AT_WINDOW: &str = "stopped at the window";

/// Read `line`'s names into `names` (its buffers reused) and say whether it is a continuous
/// answer (it has a `window`). The names come first in an answer line, so reading stops at
/// `window`: the estimate (a DFT's coefficients, a sketch's items) is never read.
fn read_names(line: &str, names: &mut Names) -> bool {
    use serde::Deserializer as _;
    names.window = false;
    let mut de = serde_json::Deserializer::from_str(line);
    // The visitor stops with an error at `window`, having noted it: the error says nothing more.
    let _ = de.deserialize_map(NamesVisitor(names));
    names.window
}

struct NamesVisitor<'n>(&'n mut Names);

impl<'de> serde::de::Visitor<'de> for NamesVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an answer line")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        use serde::de::Error as _;
        let names = self.0;
        // Keys are plain ASCII (borrowed); an escaped one fails the line, which is then not kept.
        while let Some(key) = map.next_key::<&str>()? {
            match key {
                "synopsisID" => names.synopsis_id = map.next_value()?,
                "streamID" => map.next_value_seed(StrInto(&mut names.stream))?,
                "dataSetKey" => map.next_value_seed(StrInto(&mut names.dataset))?,
                "field" => map.next_value_seed(StrInto(&mut names.field))?,
                "window" => {
                    names.window = true;
                    return Err(M::Error::custom(AT_WINDOW));
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Deserializes a string into a buffer, reusing it.
struct StrInto<'s>(&'s mut String);

impl<'de> serde::de::DeserializeSeed<'de> for StrInto<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for StrInto<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.0.clear();
        self.0.push_str(v);
        Ok(())
    }
}

impl Default for AnswerRings {
    fn default() -> Self {
        AnswerRings::new(DEFAULT_CAPACITY)
    }
}

impl AnswerRings {
    /// Empty rings keeping `capacity` answers per synopsis (at least one), disabled.
    pub fn new(capacity: usize) -> AnswerRings {
        AnswerRings { enabled: AtomicBool::new(false), capacity: capacity.max(1), rings: Mutex::default() }
    }

    /// Answers kept per synopsis.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Start keeping answers (the HTTP server does, when it starts).
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// Whether answers are kept.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Rings> {
        // Every operation leaves the rings consistent (a push, a pop, a map change).
        self.rings.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live synopses changed: keep a ring for each of `rows`, drop the rings of the others.
    pub fn set_live(&self, rows: &[LiveSynopsis]) {
        let mut r = self.lock();
        r.ids = rows
            .iter()
            .map(|row| (name_key(&row.dataset_key, &row.stream_id, row.synopsis_id, &row.field), row.id))
            .collect();
        let live: std::collections::HashSet<u32> = rows.iter().map(|row| row.id).collect();
        r.lines.retain(|id, _| live.contains(id));
    }

    /// Keep the continuous answers among `lines` (answer lines as the sink writes them; others,
    /// and lines of synopses not live, are passed over).
    pub fn record<'a>(&self, lines: impl IntoIterator<Item = &'a str>) {
        if !self.is_enabled() {
            return;
        }
        let (mut names, mut key) = (Names::default(), String::new());
        let mut named: Vec<(String, &str)> = Vec::new();
        for line in lines {
            if read_names(line, &mut names) {
                push_key(&mut key, &names);
                named.push((std::mem::take(&mut key), line));
            }
        }
        if named.is_empty() {
            return;
        }
        let capacity = self.capacity;
        let mut r = self.lock();
        let Rings { ids, lines } = &mut *r;
        for (key, line) in named {
            let Some(&id) = ids.get(&key) else { continue };
            let ring = lines.entry(id).or_insert_with(|| VecDeque::with_capacity(capacity.min(16)));
            // A full ring reuses its oldest line's buffer.
            let mut kept = if ring.len() == capacity { ring.pop_front().unwrap_or_default() } else { String::new() };
            kept.clear();
            kept.push_str(line);
            ring.push_back(kept);
        }
    }

    /// The answers kept for synopsis `id`, oldest first; `None` when it is not live.
    pub fn answers(&self, id: u32) -> Option<Vec<String>> {
        let r = self.lock();
        if !r.ids.values().any(|&live| live == id) {
            return None;
        }
        Some(r.lines.get(&id).map(|ring| ring.iter().cloned().collect()).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = r#"{"requestID":4,"synopsisID":1,"kind":"CountMin","streamID":"EURTRY","dataSetKey":"Forex","field":"price","query":[3.2478],"window":{"start":"2019-01-02T00:00:00Z","end":"2019-01-02T00:01:00Z"},"estimate":1,"lower":0,"upper":1,"confidence":0.99,"tuples":625}"#;

    fn names(line: &str) -> Option<(u64, String, String, String)> {
        let mut n = Names::default();
        read_names(line, &mut n).then_some((n.synopsis_id, n.stream, n.dataset, n.field))
    }

    #[test]
    fn continuous_answers_are_named_and_other_lines_passed_over() {
        let named = |s: &str, d: &str| Some((1, s.to_string(), d.to_string(), "price".to_string()));
        assert_eq!(names(ANSWER), named("EURTRY", "Forex"));
        // Escaped names, a dataset-wide synopsis, a vector estimate after the window: all read.
        let escaped = ANSWER.replace(r#""EURTRY""#, r#""EUR\"TRY""#).replace(r#""Forex""#, r#""""#);
        assert_eq!(names(&escaped), named("EUR\"TRY", ""));
        let vector = ANSWER.replace(r#""estimate":1"#, r#""estimate":[1,2,[3,{"x":4}]]"#);
        assert_eq!(names(&vector), named("EURTRY", "Forex"));
        // Acknowledgements, ad-hoc replies and errors have no window.
        let ack = r#"{"requestID":"a","synopsisID":2,"kind":"HyperLogLog","streamID":"EURTRY","dataSetKey":"Forex","field":"price","accepted":"construct","effectiveFrom":"2019-01-02T00:48:49Z"}"#;
        assert_eq!(names(ack), None);
        assert_eq!(names("not json"), None);
        assert_eq!(
            names(r#"{"window":{},"synopsisID":"one"}"#),
            Some((0, String::new(), String::new(), String::new()))
        );
    }
}
