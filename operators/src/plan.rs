//! The registry every worker holds: the request script applied in order, compiled into the
//! synopses to maintain, the update groups tuples are routed to, and the queries to answer.
//!
//! Every worker builds its plan from the same broadcast request sequence, so the plans are equal
//! everywhere (a deterministic broadcast registry). Nothing here touches timely or files:
//! snapshot files go through the [`SnapshotStore`] the job passes in.

use std::collections::HashMap;
use std::sync::Arc;

use saams::api::estimation::{Answer, Estimation};
use saams::api::request::{Action, QueryMode, QuerySpec, Request, RequestError, query_spec};
use saams::hash::hash_bytes;
use saams::{Kind, Query, Synopsis, registry};

use crate::ask::{Ask, AskWhat, Origin, reply_line};
use crate::record::SynBox;
use crate::registry_join::{Entry, LiveRegistry};
use serde_json::{Value as Json, json};

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

/// A snapshot store with no files, for the unit tests' plans (every call is an error naming the file).
#[cfg(test)]
pub(crate) struct NoFiles;

#[cfg(test)]
impl SnapshotStore for NoFiles {
    fn load(&self, f: &str) -> Result<Vec<u8>, String> {
        Err(f.into())
    }
    fn save(&self, f: &str, _: &[u8]) -> Result<(), String> {
        Err(f.into())
    }
    fn check(&self, f: &str) -> Result<(), String> {
        Err(f.into())
    }
}

/// True for kinds whose merge gives bit-identical state whatever the merge tree and the update
/// order (linear or idempotent sketches): their partials may be built by any worker in any order.
pub fn merge_is_exact(kind: Kind) -> bool {
    matches!(kind, Kind::CountMin | Kind::HyperLogLog | Kind::BloomFilter | Kind::Ams)
}

/// True for kinds that summarize numbers only (a non-numeric value is bad input for them).
pub fn needs_numbers(kind: Kind) -> bool {
    matches!(kind, Kind::Dft | Kind::GkQuantiles | Kind::Lsh | Kind::WindowSketchQuantiles | Kind::Kll)
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
    /// Registry changes (constructs +1, deletes −1) at the fence, applied to [`Plan::live`].
    pub registry: Vec<(Entry, u64, isize)>,
}

/// Requests as parsed (an error for each that could not be).
type Parsed = Vec<Result<Request, RequestError>>;

/// Requests received while running, in the order every worker applies them: per request epoch,
/// the bodies (who took them, the vetted requests) and, once agreed, their fence.
#[derive(Debug, Default)]
struct Staged {
    bodies: Vec<(Option<Origin>, Parsed)>,
    fence: Option<u64>,
    /// The epoch asks for a checkpoint (its id) at its fence.
    checkpoint: Option<u64>,
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
#[derive(Debug)]
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
    /// The update group feeding it.
    pub group: u32,
    /// The worker holding the merged synopsis and answering its queries.
    pub home: usize,
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
    deleted: bool,
}

impl SynSpec {
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
    /// The worker owning the stream (first worker of a spread).
    pub owner: usize,
    /// The synopses updated from this group (indices into [`Plan::synopses`]).
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

/// The compiled registry.
pub struct Plan {
    /// Every synopsis ever constructed (deleted ones have no group).
    pub synopses: Vec<SynSpec>,
    /// Update groups.
    pub groups: Vec<Group>,
    /// dataset → its groups.
    pub routes: RouteMap<DatasetRoutes>,
    /// Answers produced while applying the script (errors, LOAD acknowledgements): written once,
    /// by worker 0.
    pub script_answers: Vec<Estimation>,
    /// Workers in the computation.
    pub peers: usize,
    /// Workers per process (timely numbers a process' workers contiguously): the tree merge
    /// runs its within-process stages first ([`Plan::merge_target`]). [`Plan::build`] sets it to
    /// `peers` (one process); a multi-process job sets its `-w`.
    pub workers_per_process: usize,
    /// Window length in event-time milliseconds.
    pub window_ms: i64,
    /// Where SAVE writes.
    pub store: Arc<dyn SnapshotStore>,
    /// False for a parse-and-route-only run (`--no-synopses`): values are routed, then dropped.
    pub update: bool,
    /// Queries over pairs of synopses and continuous set-valued queries ([`PairQueryReg`]).
    pub pair_queries: Vec<PairQueryReg>,
    /// The script's registry changes in request order: a construct registers its synopsis (+1),
    /// a delete unregisters it (−1) ([`Plan::registry_updates`]).
    pub registry: Vec<(u32, isize)>,
    /// Which synopses are registered at which window, as the registry collection's changes
    /// arrive ([`crate::registry_join`]).
    pub live: LiveRegistry,
    /// Routing through bins: key → bin ([`BINS`] of them, by the key's hash) → worker. A bin
    /// that a stream's update group is the first to use is placed on the worker owning the fewest
    /// groups then ([`Plan::owner_of_stream`]); the others stay on worker `b mod peers`. A
    /// rescale changes only this map (the keys keep their bins), so owners move with whole bins.
    pub bins: Vec<u32>,
    /// Whether a stream's update group has placed bin `b` ([`Plan::owner_of_stream`]).
    bin_placed: Vec<bool>,
    /// Per worker, the update groups it owns.
    groups_owned: Vec<u32>,
    /// Grows by one whenever live requests change the plan (readers that cache routes recompute them).
    pub version: u64,
    /// Update groups by (dataset, stream, field, mode): a synopsis constructed later joins its group.
    group_index: HashMap<(String, String, String, Mode), u32>,
    /// Live requests received, by request epoch, not applied yet.
    staged: std::collections::BTreeMap<u64, Staged>,
    /// Request epochs before this one are applied.
    applied_before: u64,
    /// What applying them gave, for the job to write and send.
    applied: Vec<Applied>,
    /// Requests applied so far (the script's and live ones): ids for requests without one.
    requests_seen: u64,
    /// Asks made so far (their ids).
    asks_made: u64,
    /// Asks this worker made at once ([`Plan::ask_now`]).
    asked_now: u64,
    /// The fence live requests are being applied at (`None` while the script is applied).
    fence: Option<u64>,
    /// Ad-hoc queries and SAVEs of the live requests being applied: (synopsis, request id, uid,
    /// what), made asks once the new synopses are compiled.
    asked: Vec<(u32, Json, Option<Json>, AskWhat)>,
    /// Checkpoint boundaries agreed, the copies the operators take there, and the states a
    /// restarted job starts from ([`crate::checkpoint`]).
    pub checkpoints: std::cell::RefCell<crate::checkpoint::Checkpointing>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan").field("synopses", &self.synopses.len()).field("groups", &self.groups.len()).finish()
    }
}

/// Bins of the key space: a key (a stream, a synopsis' root) hashes to one of them, and
/// [`Plan::bins`] says which worker holds each.
pub const BINS: usize = 4096;

fn spread_hash(parts: &[&str]) -> u64 {
    let mut bytes = Vec::new();
    for p in parts {
        bytes.extend_from_slice(p.as_bytes());
        bytes.push(0);
    }
    hash_bytes(&bytes, 0x5AA5)
}

impl Plan {
    /// Apply a request script in order (construct, delete, query, load, save) and compile it
    /// for `peers` workers. Requests that cannot be carried out become error estimations in
    /// [`Plan::script_answers`]; nothing here fails.
    pub fn build(
        requests: &[Result<Request, RequestError>],
        peers: usize,
        window_ms: i64,
        store: Arc<dyn SnapshotStore>,
    ) -> Plan {
        let peers = peers.max(1);
        let mut plan = Plan {
            synopses: Vec::new(),
            groups: Vec::new(),
            routes: RouteMap::default(),
            script_answers: Vec::new(),
            peers,
            workers_per_process: peers,
            window_ms,
            store,
            update: true,
            pair_queries: Vec::new(),
            registry: Vec::new(),
            live: LiveRegistry::default(),
            version: 0,
            bins: (0..BINS).map(|b| (b % peers) as u32).collect(),
            bin_placed: vec![false; BINS],
            groups_owned: vec![0; peers],
            group_index: HashMap::new(),
            fence: None,
            asked: Vec::new(),
            requests_seen: requests.len() as u64,
            staged: Default::default(),
            applied_before: 0,
            applied: Vec::new(),
            asks_made: 0,
            asked_now: 0,
            checkpoints: Default::default(),
        };
        for (n, r) in requests.iter().enumerate() {
            let generated = json!(format!("req-{}", n + 1));
            match r {
                Err(e) => plan.script_answers.push(Estimation::error(generated, None, 0, e.0.clone())),
                Ok(req) => {
                    let id = req.request_id.clone().unwrap_or(generated);
                    if let Err(msg) = plan.apply(req, id.clone()) {
                        let mut e = Estimation::error(id, req.uid.clone(), req.synopsis_id, msg);
                        e.stream_id = req.stream_id.clone();
                        e.dataset_key = req.dataset_key.clone();
                        plan.script_answers.push(e);
                    }
                }
            }
        }
        plan.compile();
        plan
    }

    fn find(&self, req: &Request, field: Option<&str>) -> Vec<usize> {
        (0..self.synopses.len())
            .filter(|&i| {
                let s = &self.synopses[i];
                !s.deleted
                    && s.dataset == req.dataset_key
                    && s.stream == req.stream_id
                    && (req.synopsis_id == 0 || s.synopsis_id == req.synopsis_id)
                    && field.is_none_or(|f| f == s.field)
            })
            .collect()
    }

    fn describe(req: &Request) -> String {
        format!("synopsisID {} on stream {:?} of dataset {:?}", req.synopsis_id, req.stream_id, req.dataset_key)
    }

    fn apply(&mut self, req: &Request, id: Json) -> Result<(), String> {
        match &req.action {
            Action::Construct { field, params, .. } => {
                if !self.find(req, Some(field)).is_empty() {
                    return Ok(()); // duplicate constructs do not duplicate a synopsis
                }
                let fresh = registry::construct(req.synopsis_id, params).map_err(|e| e.to_string())?;
                let kind = fresh.kind();
                let p = req.no_of_p.max(1);
                let mode = if kind.is_order_sensitive() {
                    if p > 1 { Mode::Windowed(p) } else { Mode::Owned }
                } else if merge_is_exact(kind) {
                    let spread = p.min(self.peers as u32);
                    if req.stream_id.is_empty() && self.peers > 1 {
                        Mode::Exact { spread: 0 }
                    } else if spread > 1 {
                        Mode::Exact { spread }
                    } else {
                        Mode::Owned
                    }
                } else if p > 1 {
                    Mode::Binned(p)
                } else {
                    Mode::Owned
                };
                let root = spread_hash(&[&req.dataset_key, &req.stream_id, field, &req.synopsis_id.to_string()]);
                self.synopses.push(SynSpec {
                    request_id: id,
                    kind,
                    synopsis_id: req.synopsis_id,
                    dataset: req.dataset_key.clone(),
                    stream: req.stream_id.clone(),
                    field: field.clone(),
                    params: params.clone(),
                    initial: fresh.clone(),
                    fresh,
                    mode,
                    group: u32::MAX,
                    home: self.worker_of(root),
                    continuous: Vec::new(),
                    adhoc: Vec::new(),
                    saves: Vec::new(),
                    snapshot_to: Vec::new(),
                    loads: Vec::new(),
                    deleted: false,
                });
                self.registry.push((self.synopses.len() as u32 - 1, 1));
                Ok(())
            }
            Action::Delete { field } => {
                let found = self.find(req, field.as_deref());
                if found.is_empty() {
                    return Err(format!("nothing to delete: no {}", Plan::describe(req)));
                }
                for i in found {
                    self.registry.push((i as u32, -1));
                    let s = &mut self.synopses[i];
                    s.deleted = true;
                    if self.fence.is_some() {
                        // While running: its windows before the fence still close and answer.
                        continue;
                    }
                    let why = format!("synopsis deleted by request {id} before the query could be answered");
                    for q in s.continuous.drain(..).chain(s.adhoc.drain(..)) {
                        let mut e = Estimation::error(q.request_id, q.uid, s.synopsis_id, why.clone());
                        e.stream_id = s.stream.clone();
                        e.dataset_key = s.dataset.clone();
                        e.field = s.field.clone();
                        e.query = q.args;
                        self.script_answers.push(e);
                    }
                    s.saves.clear();
                }
                Ok(())
            }
            Action::Query { field, args, mode } => {
                let found = self.find(req, Some(field));
                let Some(&i) = found.first() else {
                    return Err(format!("unknown synopsis: no {} on field {field:?}", Plan::describe(req)));
                };
                let s = &mut self.synopses[i];
                let spec = query_spec(s.kind, args).map_err(|e| e.0)?;
                let from = self.fence.unwrap_or(0);
                let args = Json::Array(args.clone());
                if self.fence.is_some() && *mode == QueryMode::AdHoc {
                    if !matches!(spec, QuerySpec::Single(_)) {
                        return Err("ad-hoc pair queries are answered at the end of the input, from the request \
                                    script only; register it as a continuous query"
                            .into());
                    }
                    self.asked.push((i as u32, id, req.uid.clone(), AskWhat::Query(args)));
                    return Ok(());
                }
                let reg = QueryReg { request_id: id, uid: req.uid.clone(), args, spec, from };
                match mode {
                    QueryMode::Continuous => s.continuous.push(reg),
                    QueryMode::AdHoc => s.adhoc.push(reg),
                }
                Ok(())
            }
            Action::Save { file } => {
                self.store.check(file)?;
                let found = self.find(req, None);
                let Some(&i) = found.first() else {
                    return Err(format!("SAVE: no {}", Plan::describe(req)));
                };
                if self.fence.is_some() {
                    self.asked.push((i as u32, id, req.uid.clone(), AskWhat::Save(file.clone())));
                    return Ok(());
                }
                self.synopses[i].saves.push(SaveReg { request_id: id, uid: req.uid.clone(), file: file.clone() });
                Ok(())
            }
            Action::Load { file } => {
                let bytes = self.store.load(file)?;
                let loaded = registry::decode(&bytes).map_err(|e| format!("LOAD {file}: {e}"))?;
                let found: Vec<usize> =
                    self.find(req, None).into_iter().filter(|&i| self.synopses[i].kind == loaded.kind()).collect();
                let Some(&i) = found.first() else {
                    return Err(format!(
                        "LOAD {file}: construct a {} on stream {:?} of dataset {:?} first (the snapshot is merged into it)",
                        loaded.kind(),
                        req.stream_id,
                        req.dataset_key
                    ));
                };
                let s = &mut self.synopses[i];
                if let Some(from) = self.fence {
                    // Checked now, merged by whoever holds the state when the fence's window closes.
                    s.fresh.clone().merge(loaded.as_ref()).map_err(|e| format!("LOAD {file}: {e}"))?;
                    s.loads.push(LiveLoad {
                        from,
                        request_id: id.clone(),
                        file: file.clone(),
                        state: SynBox::new(loaded),
                    });
                    return Ok(());
                }
                s.initial.merge(loaded.as_ref()).map_err(|e| format!("LOAD {file}: {e}"))?;
                self.script_answers.push(Estimation {
                    request_id: id,
                    uid: req.uid.clone(),
                    synopsis_id: s.synopsis_id,
                    kind: Some(s.kind),
                    stream_id: s.stream.clone(),
                    dataset_key: s.dataset.clone(),
                    field: s.field.clone(),
                    query: Json::Null,
                    window: None,
                    tuples: None,
                    answer: Answer::Loaded { file: file.clone() },
                });
                Ok(())
            }
        }
    }

    /// Put every synopsis not compiled yet into its update group (a new group, with its route,
    /// for a new (dataset, stream, field, mode)). Groups only grow: routed values carry group
    /// indices, and a synopsis deleted while running stays in its group (the registry says from
    /// which window it no longer counts).
    fn compile(&mut self) {
        let mut index = std::mem::take(&mut self.group_index);
        for i in 0..self.synopses.len() {
            let s = &self.synopses[i];
            if s.deleted || s.group != u32::MAX {
                continue;
            }
            let key = (s.dataset.clone(), s.stream.clone(), s.field.clone(), s.mode);
            let g = match index.get(&key) {
                Some(&g) => g,
                None => {
                    let g = self.groups.len() as u32;
                    let owner = self.owner_of_stream(spread_hash(&[&key.0, &key.1]));
                    let s = &self.synopses[i];
                    self.groups.push(Group {
                        dataset: s.dataset.clone(),
                        stream: s.stream.clone(),
                        field: s.field.clone(),
                        mode: s.mode,
                        owner,
                        synopses: Vec::new(),
                        ordered: false,
                        numeric: false,
                    });
                    let routes = self.routes.entry(s.dataset.clone()).or_default();
                    if s.stream.is_empty() {
                        routes.wide.push(g);
                    } else {
                        routes.streams.entry(s.stream.clone()).or_default().push(g);
                    }
                    index.insert(key, g);
                    g
                }
            };
            let (kind, mode) = (self.synopses[i].kind, self.synopses[i].mode);
            let group = &mut self.groups[g as usize];
            group.synopses.push(i as u32);
            group.ordered |= !merge_is_exact(kind);
            group.numeric |= needs_numbers(kind);
            if mode == Mode::Owned {
                // The owner holds the merged synopsis and answers it.
                let owner = group.owner;
                self.synopses[i].home = owner;
            }
            self.synopses[i].group = g;
        }
        self.group_index = index;
        self.compile_pairs();
    }

    /// Move pair queries and continuous set-valued queries out of their synopses, resolve their
    /// participants, and tell each participant where to send its state.
    fn compile_pairs(&mut self) {
        let params: Vec<Vec<u8>> = self.synopses.iter().map(|s| s.fresh.encode()).collect();
        for i in 0..self.synopses.len() {
            if self.synopses[i].deleted {
                continue;
            }
            let mut regs = Vec::new();
            for continuous in [true, false] {
                let list = if continuous { &mut self.synopses[i].continuous } else { &mut self.synopses[i].adhoc };
                let (pairs, singles): (Vec<QueryReg>, Vec<QueryReg>) = list
                    .drain(..)
                    .partition(|q| !matches!(q.spec, QuerySpec::Single(_)) || continuous && is_set_valued(&q.spec));
                *list = singles;
                regs.extend(pairs.into_iter().map(|q| (q, continuous)));
            }
            for (reg, continuous) in regs {
                let me = &self.synopses[i];
                let alike = |j: usize| {
                    let o = &self.synopses[j];
                    !o.deleted
                        && o.kind == me.kind
                        && o.dataset == me.dataset
                        && o.field == me.field
                        && params[j] == params[i]
                };
                let mut participants = vec![i as u32];
                let error = match &reg.spec {
                    QuerySpec::PairsAbove { .. } => {
                        participants.extend((0..self.synopses.len()).filter(|&j| j != i && alike(j)).map(|j| j as u32));
                        None
                    }
                    QuerySpec::PairWith { other_stream, .. } => {
                        match (0..self.synopses.len()).find(|&j| alike(j) && &self.synopses[j].stream == other_stream) {
                            Some(j) => {
                                participants.push(j as u32);
                                None
                            }
                            None => Some(format!(
                                "no {} with the same parameters on stream {other_stream:?} of dataset {:?} field {:?}",
                                me.kind, me.dataset, me.field
                            )),
                        }
                    }
                    QuerySpec::Single(_) => None,
                };
                if let Some(msg) = error {
                    let mut e = Estimation::error(reg.request_id, reg.uid, me.synopsis_id, msg);
                    e.stream_id = me.stream.clone();
                    e.dataset_key = me.dataset.clone();
                    e.field = me.field.clone();
                    e.query = reg.args;
                    self.script_answers.push(e);
                    continue;
                }
                let home = me.home;
                for &p in &participants {
                    let to = &mut self.synopses[p as usize].snapshot_to;
                    if !to.contains(&home) {
                        to.push(home);
                    }
                }
                self.pair_queries.push(PairQueryReg { syn: i as u32, reg, continuous, participants, home });
            }
        }
    }

    /// The worker holding the bin of a key hash (see [`Plan::bins`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use saams_operators::{Plan, SnapshotStore, plan::BINS};
    /// # struct NoFiles;
    /// # impl SnapshotStore for NoFiles {
    /// #     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    /// #     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    /// #     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
    /// # }
    /// let mut plan = Plan::build(&[], 3, 60_000, Arc::new(NoFiles));
    /// assert_eq!(plan.worker_of(BINS as u64 + 5), 5 % 3);
    /// plan.bins[5] = 0; // a rescale moves whole bins
    /// assert_eq!(plan.worker_of(5), 0);
    /// ```
    pub fn worker_of(&self, hash: u64) -> usize {
        self.bins[(hash % BINS as u64) as usize] as usize % self.peers
    }

    /// The owner of a new update group of the stream whose key hashes to `hash`: the worker of
    /// its bin, which the first group to use the bin places on the worker owning the fewest
    /// groups (the lowest index among equals).
    ///
    /// Why not the default map alone: a hundred streams hashed onto two workers split 56 / 44
    /// (the paper workload; 35 / 25 / 21 / 19 on four), and the worker with more owns that much
    /// more of the synopsis updates, which every other worker waits for at each window. Placed as
    /// they come, groups differ by at most one between workers, as long as no two streams share
    /// a bin. Every worker places the same bins (the script, then the live requests, are applied
    /// in the same order everywhere), and the state lives in the synopses, not the map, so a job
    /// resumed from a checkpoint on other workers places them anew.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use saams_operators::{Plan, SnapshotStore};
    /// # struct NoFiles;
    /// # impl SnapshotStore for NoFiles {
    /// #     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    /// #     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    /// #     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
    /// # }
    /// let mut plan = Plan::build(&[], 3, 60_000, Arc::new(NoFiles));
    /// let owners: Vec<usize> = (0..6).map(|k| plan.owner_of_stream(k * 7)).collect();
    /// assert_eq!(owners, [0, 1, 2, 0, 1, 2], "six streams in six bins: two groups each");
    /// assert_eq!(plan.owner_of_stream(14), 2, "a second group of a stream follows its bin");
    /// assert_eq!(plan.worker_of(14), 2);
    /// ```
    pub fn owner_of_stream(&mut self, hash: u64) -> usize {
        let bin = (hash % BINS as u64) as usize;
        if !self.bin_placed[bin] {
            let fewest = (0..self.peers).min_by_key(|&w| (self.groups_owned[w], w)).unwrap_or(0);
            self.bins[bin] = fewest as u32;
            self.bin_placed[bin] = true;
        }
        let owner = self.worker_of(hash);
        self.groups_owned[owner] += 1;
        owner
    }

    /// Apply requests that arrived while the job runs, all taking effect with the window starting
    /// at `fence` (ms): the boundary every worker agreed on, before which no worker routed a value
    /// with the plan as it was. Every worker applies the same requests in the same order, so the
    /// plans stay equal everywhere; the worker that took the requests writes [`Applied::lines`] and
    /// sends [`Applied::asks`], worker 0 feeds [`Applied::registry`] to the registry collection.
    /// `origin` is who waits for the replies (tagged into the lines, carried by the asks).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use saams_operators::{Plan, SnapshotStore};
    /// struct NoFiles;
    /// impl SnapshotStore for NoFiles {
    ///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    ///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    ///     fn check(&self, f: &str) -> Result<(), String> { Ok(()) }
    /// }
    /// let mut plan = Plan::build(&[], 2, 60_000, Arc::new(NoFiles));
    /// let live = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1],"requestID":1}
    ///        {"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[2.5,"price","Queryable","AdHoc"],"requestID":2}"#,
    /// );
    /// let applied = plan.extend(&live, 120_000, None);
    /// assert!(applied.lines[0].contains(r#""accepted":"construct","effectiveFrom":"1970-01-01T00:02:00Z""#));
    /// assert_eq!((applied.asks.len(), applied.asks[0].syn), (1, 0));
    /// assert_eq!(applied.registry, vec![((("F".to_string(), "A".to_string()), 0), 120_000, 1)]);
    /// assert_eq!(plan.routes("F", "A").0.len(), 1);
    /// ```
    pub fn extend(
        &mut self,
        requests: &[Result<Request, RequestError>],
        fence: u64,
        origin: Option<Origin>,
    ) -> Applied {
        self.fence = Some(fence);
        let (registry_from, answers_from) = (self.registry.len(), self.script_answers.len());
        let mut lines = Vec::new();
        for r in requests {
            self.requests_seen += 1;
            let generated = json!(format!("req-{}", self.requests_seen));
            let req = match r {
                Err(e) => {
                    lines.push(Estimation::error(generated, None, 0, e.0.clone()));
                    continue;
                }
                Ok(req) => req,
            };
            let id = req.request_id.clone().unwrap_or(generated);
            let mut e = match self.apply(req, id.clone()) {
                Err(msg) => Estimation::error(id, req.uid.clone(), req.synopsis_id, msg),
                Ok(()) => {
                    let (action, field) = match &req.action {
                        Action::Construct { field, .. } => ("construct", field.clone()),
                        Action::Delete { field } => ("delete", field.clone().unwrap_or_default()),
                        Action::Query { field, mode: QueryMode::Continuous, .. } => ("query", field.clone()),
                        Action::Load { .. } => ("load", String::new()),
                        // Answered by their ask.
                        Action::Query { .. } | Action::Save { .. } => continue,
                    };
                    let mut e = Estimation::error(id, req.uid.clone(), req.synopsis_id, "");
                    e.field = field;
                    e.answer = Answer::Accepted { action: action.into(), from_window: fence as i64 };
                    e
                }
            };
            e.stream_id = req.stream_id.clone();
            e.dataset_key = req.dataset_key.clone();
            lines.push(e);
        }
        self.compile();
        let mut lines: Vec<String> = lines.iter().map(Estimation::to_json_line).collect();
        lines.extend(self.script_answers.drain(answers_from..).map(|e| e.to_json_line()));
        let asks = self.take_asks(origin, |plan| {
            plan.asks_made += 1;
            plan.asks_made
        });
        let registry: Vec<(Entry, u64, isize)> = self
            .registry
            .drain(registry_from..)
            .map(|(syn, diff)| {
                let s = &self.synopses[syn as usize];
                (((s.dataset.clone(), s.stream.clone()), syn), fence, diff)
            })
            .collect();
        for &((_, syn), at, diff) in &registry {
            self.live.apply(syn, at, diff);
        }
        self.version += 1;
        self.fence = None;
        Applied { origin, fence, lines: lines.into_iter().map(|l| reply_line(origin, l)).collect(), asks, registry }
    }

    /// True for requests that only read state (ad-hoc queries and SAVEs): they need no fence
    /// and are answered at once ([`Plan::ask_now`]).
    ///
    /// ```
    /// use saams_operators::Plan;
    /// let adhoc = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[2.5,"price","Queryable","AdHoc"]}"#);
    /// let construct = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}"#);
    /// assert!(Plan::reads_only(&adhoc) && !Plan::reads_only(&construct));
    /// ```
    pub fn reads_only(requests: &[Result<Request, RequestError>]) -> bool {
        !requests.is_empty()
            && requests.iter().all(|r| {
                matches!(
                    r,
                    Ok(Request { action: Action::Query { mode: QueryMode::AdHoc, .. } | Action::Save { .. }, .. })
                )
            })
    }

    /// Ad-hoc queries and SAVEs ([`Plan::reads_only`]) taken by worker `origin.0`, answered now:
    /// only that worker applies them (they change nothing), so their asks are numbered apart
    /// from those every worker makes at fences.
    pub fn ask_now(&mut self, requests: &[Result<Request, RequestError>], origin: Origin) -> Applied {
        self.fence = Some(0);
        let mut lines = Vec::new();
        for r in requests {
            let Ok(req) = r else { continue };
            let id = req.request_id.clone().unwrap_or_else(|| json!(format!("ask-{}", self.asked_now + 1)));
            if let Err(msg) = self.apply(req, id.clone()) {
                let mut e = Estimation::error(id, req.uid.clone(), req.synopsis_id, msg);
                e.stream_id = req.stream_id.clone();
                e.dataset_key = req.dataset_key.clone();
                lines.push(reply_line(Some(origin), e.to_json_line()));
            }
        }
        self.fence = None;
        let asks = self.take_asks(Some(origin), |plan| {
            plan.asked_now += 1;
            (1 << 63) | (u64::from(origin.0) << 40) | plan.asked_now
        });
        Applied { origin: Some(origin), fence: 0, lines, asks, registry: Vec::new() }
    }

    /// The asks of the requests just applied, numbered by `next_id`.
    fn take_asks(&mut self, origin: Option<Origin>, mut next_id: impl FnMut(&mut Plan) -> u64) -> Vec<Ask> {
        std::mem::take(&mut self.asked)
            .into_iter()
            .map(|(syn, request_id, uid, what)| {
                let id = next_id(self);
                let s = &self.synopses[syn as usize];
                Ask { id, syn, home: s.home as u32, spread: s.mode != Mode::Owned, request_id, uid, what, origin }
            })
            .collect()
    }

    /// Keep the requests of request epoch `epoch` (taken by `origin`) until their fence is agreed.
    pub fn receive(&mut self, epoch: u64, origin: Option<Origin>, requests: Vec<Result<Request, RequestError>>) {
        if epoch >= self.applied_before {
            self.staged.entry(epoch).or_default().bodies.push((origin, requests));
        }
    }

    /// Request epoch `epoch` asks for checkpoint `id` at its fence: a boundary every stateful
    /// operator copies its state at ([`crate::checkpoint`]).
    pub fn receive_checkpoint(&mut self, epoch: u64, id: u64) {
        if epoch >= self.applied_before {
            self.staged.entry(epoch).or_default().checkpoint = Some(id);
        }
    }

    /// Request epochs before this one are applied.
    pub fn applied_before(&self) -> u64 {
        self.applied_before
    }

    /// Apply, in epoch order, every received request epoch up to `epoch`, the last one at `fence`
    /// (earlier ones at the fence agreed for them, or `fence`). Applying an epoch twice does
    /// nothing: the job applies as soon as the fence is agreed, and the update operator on
    /// a fence marker ([`crate::ask`]), whichever comes first.
    pub fn apply_through(&mut self, epoch: u64, fence: u64) {
        if epoch < self.applied_before {
            return;
        }
        self.staged.entry(epoch).or_default().fence.get_or_insert(fence);
        while let Some(entry) = self.staged.first_entry() {
            if *entry.key() > epoch {
                break;
            }
            let (e, staged) = entry.remove_entry();
            let at = staged.fence.unwrap_or(fence);
            if let Some(id) = staged.checkpoint {
                // Two checkpoints agreed at one boundary are one.
                self.checkpoints.get_mut().boundaries.entry(at).or_insert(id);
            }
            for (origin, requests) in staged.bodies {
                let applied = self.extend(&requests, at, origin);
                self.applied.push(applied);
            }
            self.applied_before = e + 1;
        }
    }

    /// Queue what [`Plan::ask_now`] gave with what fences gave, for the job to write and send.
    pub fn push_applied(&mut self, applied: Applied) {
        self.applied.push(applied);
    }

    /// What applying live requests gave since the last call.
    pub fn take_applied(&mut self) -> Vec<Applied> {
        std::mem::take(&mut self.applied)
    }

    /// The registry changes of the request script, as updates of the registry collection
    /// ([`crate::registry_join::Entry`]): all at time 0, the script taking effect before the first
    /// window; a synopsis constructed and deleted in the script adds up to nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use saams_operators::{Plan, SnapshotStore};
    /// struct NoFiles;
    /// impl SnapshotStore for NoFiles {
    ///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    ///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    ///     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
    /// }
    /// let script = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":2,"dataSetKey":"F","param":["HLL","price","NotQueryable",0.05]}
    ///        {"streamID":"A","synopsisID":2,"dataSetKey":"F","param":["DELETE_REQUEST","price"]}"#,
    /// );
    /// let plan = Plan::build(&script, 2, 60_000, Arc::new(NoFiles));
    /// let key = ("F".to_string(), "A".to_string());
    /// assert_eq!(plan.registry_updates(), vec![((key.clone(), 0), 0, 1), ((key, 0), 0, -1)]);
    /// ```
    pub fn registry_updates(&self) -> Vec<(Entry, u64, isize)> {
        self.registry
            .iter()
            .map(|&(syn, diff)| {
                let s = &self.synopses[syn as usize];
                (((s.dataset.clone(), s.stream.clone()), syn), 0, diff)
            })
            .collect()
    }

    /// The groups a tuple of `stream` in `dataset` feeds: per-stream ones, then dataset-wide ones.
    #[inline]
    pub fn routes(&self, dataset: &str, stream: &str) -> (&[u32], &[u32]) {
        match self.routes.get(dataset) {
            None => (&[], &[]),
            Some(r) => (r.streams.get(stream).map(Vec::as_slice).unwrap_or(&[]), &r.wide),
        }
    }

    /// The event-time window (its start, ms) of a time.
    #[inline]
    pub fn window_of(&self, time_ms: i64) -> u64 {
        time_ms.div_euclid(self.window_ms).max(0) as u64 * self.window_ms as u64
    }

    /// [`Plan::window_of`] `time_ms`, and every time that falls in that window: a caller that sees
    /// runs of times in one window (a file's tuples, a batch's records) checks the range instead
    /// of dividing again. Why: a 64-bit division is the slowest integer instruction, and the
    /// router divided once a tuple (~1.4 % of a `--no-synopses` JSON-lines ingest's samples).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use saams_operators::{Plan, SnapshotStore};
    /// # struct NoFiles;
    /// # impl SnapshotStore for NoFiles {
    /// #     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    /// #     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    /// #     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
    /// # }
    /// let plan = Plan::build(&[], 1, 60_000, Arc::new(NoFiles));
    /// assert_eq!(plan.window_span(125_000), (120_000, 120_000..180_000));
    /// // Times before 1970 fall in the first window, as in `window_of`.
    /// assert_eq!(plan.window_span(-5), (0, i64::MIN..60_000));
    /// for t in [-60_001, -1, 0, 59_999, 60_000, 119_999, 120_000, i64::MAX - 1] {
    ///     let (w, span) = plan.window_span(t);
    ///     assert_eq!(w, plan.window_of(t));
    ///     assert!(span.contains(&t));
    ///     assert_eq!(plan.window_of(span.start), w);
    ///     assert!(span.end == i64::MAX || plan.window_of(span.end) != w);
    /// }
    /// ```
    #[inline]
    pub fn window_span(&self, time_ms: i64) -> (u64, std::ops::Range<i64>) {
        let w = self.window_of(time_ms);
        let start = if w == 0 { i64::MIN } else { w as i64 };
        (w, start..(w as i64).saturating_add(self.window_ms))
    }

    /// Workers per process and processes, as the tree merge sees them: `workers_per_process` if
    /// it divides `peers`, else one process of `peers` workers.
    fn layout(&self) -> (usize, usize) {
        let k = self.workers_per_process;
        if k == 0 || !self.peers.is_multiple_of(k) { (self.peers, 1) } else { (k, self.peers / k) }
    }

    /// Stages of the tree merge: ceil(log2 k) within each process of k workers, then
    /// ceil(log2 n) across the n processes (ceil(log2 W) for one process).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use saams_operators::{Plan, SnapshotStore};
    /// # struct NoFiles;
    /// # impl SnapshotStore for NoFiles {
    /// #     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    /// #     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    /// #     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
    /// # }
    /// let mut plan = Plan::build(&[], 4, 60_000, Arc::new(NoFiles));
    /// assert_eq!(plan.merge_stages(), 2);
    /// plan.workers_per_process = 2; // -n 2 -w 2
    /// assert_eq!(plan.merge_stages(), 2);
    /// let plan = Plan::build(&[], 1, 60_000, Arc::new(NoFiles));
    /// assert_eq!(plan.merge_stages(), 0);
    /// ```
    pub fn merge_stages(&self) -> u32 {
        let (k, n) = self.layout();
        crate::merge_stages(k) + crate::merge_stages(n)
    }

    /// Where worker `me` sends a partial of a synopsis whose home is `root` at tree-merge stage
    /// `stage` (1-based, up to [`Plan::merge_stages`]).
    ///
    /// Within-process stages come first, for every root: in each process the partials meet at the
    /// worker with the root's local index (a binomial tree over local indices relative to it), then
    /// those workers, one per process, meet at the root (the same tree over process indices). So a
    /// merge sends n − 1 partials between n processes, the least possible, and each stage halves
    /// the partials in flight.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use saams_operators::{Plan, SnapshotStore};
    /// # struct NoFiles;
    /// # impl SnapshotStore for NoFiles {
    /// #     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    /// #     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    /// #     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
    /// # }
    /// let mut plan = Plan::build(&[], 4, 60_000, Arc::new(NoFiles));
    /// plan.workers_per_process = 2; // processes {0, 1} and {2, 3}
    /// // Root 1: stage 1 stays in each process (0 -> 1, 2 -> 3), stage 2 crosses once (3 -> 1).
    /// assert_eq!((plan.merge_target(1, 0, 1), plan.merge_target(1, 2, 1)), (1, 3));
    /// assert_eq!(plan.merge_target(1, 3, 2), 1);
    /// ```
    pub fn merge_target(&self, root: usize, me: usize, stage: u32) -> usize {
        let (k, n) = self.layout();
        let local_stages = crate::merge_stages(k);
        let (my_proc, my_local) = (me / k, me % k);
        let (root_proc, root_local) = ((root % self.peers) / k, (root % self.peers) % k);
        if stage <= local_stages {
            let rel = (my_local + k - root_local) % k;
            my_proc * k + (root_local + ((rel >> stage) << stage)) % k
        } else {
            let s = stage - local_stages;
            let rel = (my_proc + n - root_proc) % n;
            ((root_proc + ((rel >> s) << s)) % n) * k + my_local
        }
    }

    /// The timestamp a window's output (answers, partials, snapshots) travels at: its last
    /// millisecond. Timestamps are event-time milliseconds, so a value (sent at a timestamp no later
    /// than its event time) is always at or before its window's close time, and the frontier passing
    /// the close time means the whole window has been seen.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use saams_operators::{Plan, SnapshotStore};
    /// # struct NoFiles;
    /// # impl SnapshotStore for NoFiles {
    /// #     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    /// #     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    /// #     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
    /// # }
    /// let plan = Plan::build(&[], 1, 60_000, Arc::new(NoFiles));
    /// assert_eq!(plan.close_time(120_000), 179_999);
    /// assert_eq!(plan.window_of(plan.close_time(120_000) as i64), 120_000);
    /// ```
    #[inline]
    pub fn close_time(&self, window: u64) -> u64 {
        window.saturating_add(self.window_ms.max(1) as u64 - 1)
    }

    /// The worker a tuple of `group` with arrival sequence `seq` in `window` goes to, read by
    /// worker `me`.
    #[inline]
    pub fn target(&self, group: u32, seq: u64, window: u64, me: usize) -> u32 {
        let g = &self.groups[group as usize];
        let w = self.peers as u64;
        let t = match g.mode {
            Mode::Owned => g.owner as u64,
            Mode::Exact { spread: 0 } => me as u64,
            Mode::Exact { spread } => g.owner as u64 + seq % u64::from(spread),
            Mode::Binned(p) => g.owner as u64 + saams::hash::hash_u64(seq, 0xB1A5) % u64::from(p),
            Mode::Windowed(p) => g.owner as u64 + (window / self.window_ms as u64) % u64::from(p),
        };
        (t % w) as u32
    }

    /// The bin of a tuple of `group` (Binned mode): partials are built per bin and merged at the
    /// root in bin order; 0 for the other modes (windows are merged in time order).
    #[inline]
    pub fn bin(&self, group: u32, seq: u64) -> u64 {
        match self.groups[group as usize].mode {
            Mode::Owned | Mode::Exact { .. } => 0,
            Mode::Binned(p) => saams::hash::hash_u64(seq, 0xB1A5) % u64::from(p),
            Mode::Windowed(_) => 0,
        }
    }
}
