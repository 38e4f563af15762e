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
use serde::Deserialize;
use std::borrow::Cow;

/// Answers kept per synopsis unless told otherwise: two hours of one-minute windows.
pub const DEFAULT_CAPACITY: usize = 120;

/// The last continuous answers of every live synopsis, as JSON lines.
///
/// ```
/// use saams_jobs::control::answers::AnswerRings;
/// let rings = AnswerRings::new(2);
/// let row = saams::api::registry::LiveSynopsis {
///     id: 4, request_id: serde_json::json!(1), synopsis_id: 2, kind: saams::Kind::HyperLogLog,
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
    ids: HashMap<String, u32>,
    /// The rings of the live synopses, by id.
    lines: HashMap<u32, VecDeque<String>>,
}

/// The fields of an answer line that say which synopsis wrote it (the rest is skipped unread).
#[derive(Deserialize)]
struct Names<'a> {
    #[serde(rename = "synopsisID")]
    synopsis_id: u64,
    #[serde(rename = "streamID", borrow)]
    stream_id: Cow<'a, str>,
    #[serde(rename = "dataSetKey", borrow)]
    dataset_key: Cow<'a, str>,
    #[serde(borrow)]
    field: Cow<'a, str>,
    window: Option<serde::de::IgnoredAny>,
}

/// One key per live synopsis: the names a request and an answer line carry (live synopses'
/// names are unique: a second construct of the same names constructs nothing).
fn name_key(dataset: &str, stream: &str, synopsis_id: u64, field: &str) -> String {
    format!("{dataset}\u{0}{stream}\u{0}{synopsis_id}\u{0}{field}")
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
        let mut named: Vec<(String, &str)> = Vec::new();
        for line in lines {
            if let Ok(n) = serde_json::from_str::<Names<'_>>(line)
                && n.window.is_some()
            {
                named.push((name_key(&n.dataset_key, &n.stream_id, n.synopsis_id, &n.field), line));
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
            if ring.len() == capacity {
                ring.pop_front();
            }
            ring.push_back(line.to_string());
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
