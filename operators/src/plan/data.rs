//! The plan's plain data: what a synopsis, an update group, a registered query are, how a
//! synopsis is parallelized, what applying live requests gave, and where snapshot files go.
//! Nothing here computes routes or applies requests; the routing tables ([`super::Routing`]) and
//! the request sequencer ([`super::Sequencer`]) are made of these.

use std::collections::HashMap;

use saams::api::request::QuerySpec;
use saams::api::window::WindowSpec;
use saams::{Kind, Query, Synopsis};
use serde_json::Value as Json;

use crate::ask::{Ask, Origin};
use crate::record::SynBox;
use crate::registry::Entry;
use crate::window::Windowing;

/// Where snapshot files are read and written (the job confines them to one directory).
pub trait SnapshotStore: Send + Sync {
    /// The bytes of a snapshot file.
    ///
    /// # Errors
    /// When the name leaves the snapshot directory, no directory was configured, or the read fails.
    fn load(&self, file: &str) -> Result<Vec<u8>, String>;
    /// Write a snapshot file.
    ///
    /// # Errors
    /// As [`SnapshotStore::load`], for writing.
    fn save(&self, file: &str, bytes: &[u8]) -> Result<(), String>;
    /// Check a name before anything is computed for it.
    ///
    /// # Errors
    /// As [`SnapshotStore::load`], without touching the file.
    fn check(&self, file: &str) -> Result<(), String>;
}

/// How a synopsis is parallelized (the paper's three schemes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Key-based, one owner: the worker owning the stream (or dataset) holds the synopsis and
    /// answers it; no merge.
    Owned,
    /// Exact-merge kinds spread over workers: per-stream over `spread` workers (key + sub-partition
    /// by arrival sequence), or dataset-wide partition-based (`spread == 0`: each worker keeps a
    /// partial of the tuples it read, no shuffle). Partials meet in the tree merge.
    Exact {
        /// Workers per stream; 0 = partition-based (the reading worker).
        spread: u32,
    },
    /// Other order-insensitive kinds with `noOfP` = P > 1: P bins by hash of the arrival
    /// sequence, each built in event-time order, merged at the root in bin order (the bins do
    /// not depend on the number of workers, so neither does the answer).
    Binned(u32),
    /// Order-sensitive kinds with `noOfP` = P > 1, window-based: each window of the stream is
    /// built by one of P workers in event-time order; the root merges windows in time order.
    Windowed(u32),
}

/// A registered query.
#[derive(Clone, Debug)]
pub struct QueryReg {
    /// The query request's id (given or generated).
    pub request_id: Json,
    /// The query request's `uid`.
    pub uid: Option<Json>,
    /// The query arguments as given.
    pub args: Json,
    /// What to ask.
    pub spec: QuerySpec,
    /// The first window (start, ms) it answers: 0 for the request script, the fence of a query
    /// registered while the job runs.
    pub from: u64,
}

/// A snapshot LOADed while the job runs: merged into the synopsis' state by whoever holds it,
/// before it answers the window `from` (the fence).
#[derive(Clone, Debug)]
pub struct LiveLoad {
    /// The first window it counts in.
    pub from: u64,
    /// The LOAD request's id.
    pub request_id: Json,
    /// The file it came from.
    pub file: String,
    /// The loaded synopsis.
    pub state: SynBox,
}

/// What applying live requests at a fence gave: lines for the output (acknowledgements, errors,
/// tagged for whoever waits), asks to answer now, and registry changes at the fence.
#[derive(Debug, Default)]
pub struct Applied {
    /// The worker that took the requests and its ticket (`None`: the request script).
    pub origin: Option<Origin>,
    /// The window (start, ms) they take effect with.
    pub fence: u64,
    /// Acknowledgements and errors, in request order.
    pub lines: Vec<String>,
    /// Ad-hoc queries and SAVEs to answer from the current state ([`crate::ask`]).
    pub asks: Vec<Ask>,
    /// Registry changes (constructs +1, deletes −1) at the fence, applied to [`super::Plan::live`].
    pub registry: Vec<(Entry, u64, isize)>,
    /// Whether a monitored stream ([`crate::monitor`]) was constructed or deleted: the live
    /// registry's rows changed though [`Applied::registry`] may be empty.
    pub monitors_changed: bool,
}

/// A registered SAVE.
#[derive(Clone, Debug)]
pub struct SaveReg {
    /// The SAVE request's id.
    pub request_id: Json,
    /// Its `uid`.
    pub uid: Option<Json>,
    /// File inside the snapshot directory.
    pub file: String,
}

/// One maintained synopsis.
#[derive(Clone, Debug)]
pub struct SynSpec {
    /// The construct request's id.
    pub request_id: Json,
    /// The kind.
    pub kind: Kind,
    /// The API's id of the kind.
    pub synopsis_id: u64,
    /// Dataset.
    pub dataset: String,
    /// Stream ("" = every stream of the dataset).
    pub stream: String,
    /// Field.
    pub field: String,
    /// The construct parameters as the request gave them (`param[3..]`).
    pub params: Vec<Json>,
    /// An empty synopsis with the construct parameters: every partial starts from a clone.
    pub fresh: Box<dyn Synopsis>,
    /// The state the merged synopsis starts from (`fresh` plus any LOADed snapshot).
    pub initial: Box<dyn Synopsis>,
    /// How it is parallelized.
    pub mode: Mode,
    /// Which tuples it summarizes, and so what its answers cover ([`crate::window`]).
    pub window: WindowSpec,
    /// Where its tumbling windows and panes are aligned: 0 for the request script's synopses,
    /// a live construct's fence (its first window starts there).
    pub window_origin: u64,
    /// The update group feeding it.
    pub group: u32,
    /// The worker holding the merged synopsis and answering its queries.
    pub home: usize,
    /// Homes before rescales moved it: (fence, the home of the windows before it), in fence
    /// order ([`SynSpec::home_at`]).
    pub moved: Vec<(u64, usize)>,
    /// Continuous queries.
    pub continuous: Vec<QueryReg>,
    /// Ad-hoc queries (answered once, at the end of the input, from the final merged state).
    pub adhoc: Vec<QueryReg>,
    /// SAVE requests (carried out at the end of the input).
    pub saves: Vec<SaveReg>,
    /// Workers answering pair queries this synopsis takes part in: its merged state is sent
    /// there at every window close in which it changed.
    pub snapshot_to: Vec<usize>,
    /// Snapshots LOADed while the job runs, in fence order.
    pub loads: Vec<LiveLoad>,
    /// Deleted (read it with [`SynSpec::is_deleted`]).
    pub(crate) deleted: bool,
}

/// The holder of window `w` given the holder now and the holders before each move.
fn holder_at(now: usize, moved: &[(u64, usize)], w: u64) -> usize {
    moved.iter().find(|&&(fence, _)| w < fence).map_or(now, |&(_, before)| before)
}

impl Group {
    /// The owner of the group's values of window `w` (start, ms): rescales move owned groups at
    /// their fences.
    ///
    /// ```
    /// use saams_operators::plan::{Group, Mode};
    /// let g = Group { dataset: "F".into(), stream: "A".into(), field: "price".into(), mode: Mode::Owned,
    ///     unit_ms: 0, unit_origin: 0, owner: 2, moved: vec![(60_000, 0), (120_000, 1)], synopses: vec![],
    ///     ordered: true, numeric: false };
    /// assert_eq!((g.owner_at(0), g.owner_at(60_000), g.owner_at(120_000)), (0, 1, 2));
    /// ```
    #[inline]
    pub fn owner_at(&self, w: u64) -> usize {
        holder_at(self.owner, &self.moved, w)
    }
}

impl SynSpec {
    /// The worker holding the merged state of window `w` ([`Group::owner_at`] for owned ones).
    #[inline]
    pub fn home_at(&self, w: u64) -> usize {
        holder_at(self.home, &self.moved, w)
    }

    /// Its window and empty state, as its held state needs them ([`crate::window::Held`]).
    pub fn windowing(&self) -> Windowing<'_> {
        Windowing { window: self.window, fresh: self.fresh.as_ref(), origin: self.window_origin }
    }

    /// Deleted (by the script, or while the job runs: then only from its fence on).
    pub fn is_deleted(&self) -> bool {
        self.deleted
    }
}

/// True for queries whose answer is a set (correlated or similar stream pairs, frequent items):
/// answered continuously, they are emitted as changes of that set ([`crate::changes`]).
///
/// ```
/// use saams::api::request::QuerySpec;
/// use saams::{PairQuery, Query};
/// use saams_operators::plan::is_set_valued;
/// assert!(is_set_valued(&QuerySpec::PairsAbove { query: PairQuery::Correlation, threshold: 0.9 }));
/// assert!(is_set_valued(&QuerySpec::Single(Query::FrequentItems { support: 0.01 })));
/// assert!(!is_set_valued(&QuerySpec::Single(Query::Distinct)));
/// ```
pub fn is_set_valued(spec: &QuerySpec) -> bool {
    matches!(spec, QuerySpec::PairsAbove { .. } | QuerySpec::Single(Query::FrequentItems { .. }))
}

/// A query answered at its home worker from the merged states of its participants: a query over
/// pairs of synopses (DFT correlation, LSH similarity, AMS inner product), or a continuous
/// set-valued query of one synopsis (frequent items), whose answers become set changes there.
#[derive(Clone, Debug)]
pub struct PairQueryReg {
    /// The synopsis the request named.
    pub syn: u32,
    /// The query.
    pub reg: QueryReg,
    /// Answered at every window close (else once, at the end).
    pub continuous: bool,
    /// The synopses whose states the answer needs (the named one first).
    pub participants: Vec<u32>,
    /// The worker answering it (the named synopsis' home).
    pub home: usize,
}

/// Tuples of one stream (or dataset) and field, routed the same way, feeding some synopses.
#[derive(Clone, Debug)]
pub struct Group {
    /// Dataset.
    pub dataset: String,
    /// Stream ("" = dataset-wide).
    pub stream: String,
    /// The field whose values the synopses take.
    pub field: String,
    /// Routing.
    pub mode: Mode,
    /// Window-based groups ([`Mode::Windowed`]): the event-time span (ms) one worker builds, a
    /// tumbling synopsis' window or else the job's window; 0 for the other modes.
    pub unit_ms: u64,
    /// Where those spans are aligned (a tumbling synopsis' origin).
    pub unit_origin: u64,
    /// The worker owning the stream (first worker of a spread).
    pub owner: usize,
    /// Owners before rescales moved the group: (fence, the owner of the windows before it), in
    /// fence order ([`Group::owner_at`]).
    pub moved: Vec<(u64, usize)>,
    /// The synopses updated from this group (indices into [`super::Routing::synopses`]).
    pub synopses: Vec<u32>,
    /// Some synopsis depends on update order: sort each window by (event time, arrival sequence).
    pub ordered: bool,
    /// Some synopsis takes numbers only.
    pub numeric: bool,
}

/// Groups a dataset's tuples feed: per stream and dataset-wide.
#[derive(Clone, Debug, Default)]
pub struct DatasetRoutes {
    /// Per-stream groups.
    pub streams: RouteMap<Vec<u32>>,
    /// Dataset-wide groups (empty streamID).
    pub wide: Vec<u32>,
}

/// Maps looked up by dataset and stream name for every tuple read: foldhash instead of the
/// standard SipHash (DoS resistance buys nothing for names of the job's own registry, and SipHash
/// of two short names per tuple was ~5 % of a JSON-lines ingest).
pub type RouteMap<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// A rescale the plan applied: how many workers hold bins from `fence` on, and how many bins
/// changed worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RescaleApplied {
    /// Workers holding bins from the fence on.
    pub active_workers: usize,
    /// The window (start, ms) the new map takes effect in.
    pub fence: u64,
    /// Bins whose worker changed.
    pub moves: usize,
    /// The fence of the last batch of moved bins (window start, ms): `fence` when every bin
    /// moves at the fence; with `binsPerFence` B, the moving bins that hold update groups go B
    /// a window, the last of them at `until` ([`crate::plan::rescale`]).
    pub until: u64,
}
