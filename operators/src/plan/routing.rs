//! The compiled routing tables of one plan version: the synopses, the update groups tuples are
//! routed to, which worker holds which bin of the key space, and the window and tree-merge
//! arithmetic. They change only when requests are applied ([`super::apply`] and
//! [`super::compile`] make the next version); between versions every tuple reads them, so the
//! lookups here are the per-tuple hot path.

use std::collections::HashMap;

use saams::api::window::WindowSpec;
use saams::hash::hash_bytes;

use super::data::{DatasetRoutes, Group, Mode, PairQueryReg, RescaleApplied, RouteMap, SynSpec};
use crate::registry::Entry;

/// Bins of the key space: a key (a stream, a synopsis' root) hashes to one of them, and
/// [`Routing::bins`] says which worker holds each.
pub const BINS: usize = 4096;

/// Number of tree-merge stages for `peers` workers: ceil(log2 peers).
///
/// ```
/// assert_eq!(saams_operators::merge_stages(1), 0);
/// assert_eq!(saams_operators::merge_stages(2), 1);
/// assert_eq!(saams_operators::merge_stages(3), 2);
/// assert_eq!(saams_operators::merge_stages(8), 3);
/// ```
pub fn merge_stages(peers: usize) -> u32 {
    if peers <= 1 { 0 } else { usize::BITS - (peers - 1).leading_zeros() }
}

/// The hash a key (stream, synopsis root) is placed by: its parts, each ended by a zero byte.
pub(crate) fn spread_hash(parts: &[&str]) -> u64 {
    let mut bytes = Vec::new();
    for p in parts {
        bytes.extend_from_slice(p.as_bytes());
        bytes.push(0);
    }
    hash_bytes(&bytes, 0x5AA5)
}

/// What makes an update group: dataset, stream, field, mode, and for window-based groups the
/// span one worker builds and where it is aligned ([`Group::unit_ms`], [`Group::unit_origin`]).
pub(super) type GroupKey = (String, String, String, Mode, (u64, u64));

/// The compiled routing tables.
#[derive(Clone)]
pub struct Routing {
    /// Every synopsis ever constructed (deleted ones have no group).
    pub synopses: Vec<SynSpec>,
    /// Update groups.
    pub groups: Vec<Group>,
    /// dataset → its groups.
    pub routes: RouteMap<DatasetRoutes>,
    /// Queries over pairs of synopses and continuous set-valued queries ([`PairQueryReg`]).
    pub pair_queries: Vec<PairQueryReg>,
    /// Workers in the computation.
    pub peers: usize,
    /// Workers per process (timely numbers a process' workers contiguously): the tree merge
    /// runs its within-process stages first ([`Routing::merge_target`]). [`Routing::new`] sets
    /// it to `peers` (one process); a multi-process job sets its `-w`.
    pub workers_per_process: usize,
    /// Window length in event-time milliseconds: the job's window, the cadence everything
    /// closes in (landmark synopses are answered at every close).
    pub window_ms: i64,
    /// The window of a synopsis whose construct request names none (`--window-type`).
    pub default_window: WindowSpec,
    /// Routing through bins: key → bin ([`BINS`] of them, by the key's hash) → worker. A bin
    /// that a stream's update group is the first to use is placed on the worker owning the fewest
    /// groups then ([`Routing::owner_of_stream`]); the others stay on worker `b mod peers`. A
    /// rescale changes only this map (the keys keep their bins), so owners move with whole bins.
    pub bins: Vec<u32>,
    /// Whether a stream's update group has placed bin `b` ([`Routing::owner_of_stream`]).
    bin_placed: Vec<bool>,
    /// Per worker, the update groups it owns.
    pub(super) groups_owned: Vec<u32>,
    /// Update groups by (dataset, stream, field, mode): a synopsis constructed later joins its group.
    pub(super) group_index: HashMap<GroupKey, u32>,
    /// The workers holding bins at the start (`--active-workers`, default all).
    pub(super) first_active: usize,
    /// Rescales applied, in fence order ([`super::rescale`]). Values are routed with the map of
    /// their window.
    pub(super) rescales: Vec<RescaleApplied>,
    /// Bins holding update groups whose state a rescale moves per fence when its request names
    /// none (`--rescale-batch`; 0: every bin at the rescale's fence).
    pub rescale_batch: u32,
    /// Grows by one whenever live requests change the tables (readers that cache routes
    /// recompute them).
    pub version: u64,
}

impl std::fmt::Debug for Routing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routing").field("synopses", &self.synopses.len()).field("groups", &self.groups.len()).finish()
    }
}

impl Routing {
    /// Empty tables for `peers` workers (at least one) and windows of `window_ms`.
    pub fn new(peers: usize, window_ms: i64) -> Routing {
        let peers = peers.max(1);
        Routing {
            synopses: Vec::new(),
            groups: Vec::new(),
            routes: RouteMap::default(),
            pair_queries: Vec::new(),
            peers,
            workers_per_process: peers,
            window_ms,
            default_window: WindowSpec::Landmark,
            bins: (0..BINS).map(|b| (b % peers) as u32).collect(),
            bin_placed: vec![false; BINS],
            groups_owned: vec![0; peers],
            group_index: HashMap::new(),
            first_active: peers,
            rescales: Vec::new(),
            rescale_batch: 0,
            version: 0,
        }
    }

    /// The groups a tuple of `stream` in `dataset` feeds: per-stream ones, then dataset-wide ones.
    #[inline]
    pub fn routes(&self, dataset: &str, stream: &str) -> (&[u32], &[u32]) {
        match self.routes.get(dataset) {
            None => (&[], &[]),
            Some(r) => (r.streams.get(stream).map(Vec::as_slice).unwrap_or(&[]), &r.wide),
        }
    }

    /// The registry entry of synopsis `syn`: its (dataset, stream) and itself.
    pub fn entry(&self, syn: u32) -> Entry {
        let s = &self.synopses[syn as usize];
        ((s.dataset.clone(), s.stream.clone()), syn)
    }

    /// True when synopsis `syn` has its home (its merged state) on worker `me`.
    pub fn is_home(&self, syn: u32, me: usize) -> bool {
        self.synopses.get(syn as usize).is_some_and(|spec| spec.home == me)
    }

    /// True when synopsis `syn`'s merged state of window `w` is on worker `me` (rescales move
    /// owned synopses at their fences).
    pub fn is_home_at(&self, syn: u32, me: usize, w: u64) -> bool {
        self.synopses.get(syn as usize).is_some_and(|spec| spec.home_at(w) == me)
    }

    /// The event-time window (its start, ms) of a time.
    #[inline]
    pub fn window_of(&self, time_ms: i64) -> u64 {
        time_ms.div_euclid(self.window_ms).max(0) as u64 * self.window_ms as u64
    }

    /// [`Routing::window_of`] `time_ms`, and every time that falls in that window: a caller that
    /// sees runs of times in one window (a file's tuples, a batch's records) checks the range
    /// instead of dividing again. Why: a 64-bit division is the slowest integer instruction, and
    /// the router divided once a tuple (~1.4 % of a `--no-synopses` JSON-lines ingest's samples).
    ///
    /// ```
    /// use saams_operators::plan::Routing;
    /// let routing = Routing::new(1, 60_000);
    /// assert_eq!(routing.window_span(125_000), (120_000, 120_000..180_000));
    /// // Times before 1970 fall in the first window, as in `window_of`.
    /// assert_eq!(routing.window_span(-5), (0, i64::MIN..60_000));
    /// for t in [-60_001, -1, 0, 59_999, 60_000, 119_999, 120_000, i64::MAX - 1] {
    ///     let (w, span) = routing.window_span(t);
    ///     assert_eq!(w, routing.window_of(t));
    ///     assert!(span.contains(&t));
    ///     assert_eq!(routing.window_of(span.start), w);
    ///     assert!(span.end == i64::MAX || routing.window_of(span.end) != w);
    /// }
    /// ```
    #[inline]
    pub fn window_span(&self, time_ms: i64) -> (u64, std::ops::Range<i64>) {
        let w = self.window_of(time_ms);
        let start = if w == 0 { i64::MIN } else { w as i64 };
        (w, start..(w as i64).saturating_add(self.window_ms))
    }

    /// The timestamp a window's output (answers, partials, snapshots) travels at: its last
    /// millisecond. Timestamps are event-time milliseconds, so a value (sent at a timestamp no later
    /// than its event time) is always at or before its window's close time, and the frontier passing
    /// the close time means the whole window has been seen.
    ///
    /// ```
    /// use saams_operators::plan::Routing;
    /// let routing = Routing::new(1, 60_000);
    /// assert_eq!(routing.close_time(120_000), 179_999);
    /// assert_eq!(routing.window_of(routing.close_time(120_000) as i64), 120_000);
    /// ```
    #[inline]
    pub fn close_time(&self, window: u64) -> u64 {
        window.saturating_add(self.window_ms.max(1) as u64 - 1)
    }

    /// The one worker every value of `group` read by worker `me` goes to, whatever its sequence
    /// and window, if there is one: an owned group's owner while no rescale has moved owners,
    /// the reading worker for a partition-based group. Readers send such a group's values in
    /// a container of that worker's, which the exchange hands on whole (no per-value split).
    ///
    /// ```
    /// use saams_operators::plan::{Group, Mode, Routing};
    /// let group = |mode| Group { dataset: "F".into(), stream: "A".into(), field: "price".into(), mode,
    ///     unit_ms: 0, unit_origin: 0, owner: 1, moved: vec![], synopses: vec![], ordered: true, numeric: false };
    /// let mut routing = Routing::new(2, 60_000);
    /// routing.groups = vec![group(Mode::Owned), group(Mode::Exact { spread: 0 }), group(Mode::Binned(4))];
    /// assert_eq!(routing.group_target(0, 0), Some(1), "the owner");
    /// assert_eq!(routing.group_target(1, 0), Some(0), "the reader");
    /// assert_eq!(routing.group_target(2, 0), None, "per value");
    /// assert_eq!(routing.group_target(3, 0), None, "no such group");
    /// assert!((0..4).all(|seq| routing.target(0, seq, 60_000 * seq, 0) == 1));
    /// ```
    #[inline]
    pub fn group_target(&self, group: u32, me: usize) -> Option<usize> {
        let g = self.groups.get(group as usize)?;
        if !self.rescales.is_empty() || self.first_active != self.peers || self.peers == 0 {
            return None;
        }
        match g.mode {
            Mode::Owned => Some(g.owner % self.peers),
            Mode::Exact { spread: 0 } => Some(me % self.peers),
            _ => None,
        }
    }

    /// The worker a tuple of `group` with arrival sequence `seq` in `window` goes to, read by
    /// worker `me`.
    #[inline]
    pub fn target(&self, group: u32, seq: u64, window: u64, me: usize) -> u32 {
        let g = &self.groups[group as usize];
        let w = if self.rescales.is_empty() && self.first_active == self.peers {
            self.peers as u64
        } else if g.mode == Mode::Owned {
            // The owner of the window: a rescale moves the group's state at its fence.
            return (g.owner_at(window) % self.peers) as u32;
        } else {
            // Spread partials are per window (a window-based group's per unit): from the fence
            // on they are built on the active workers only, and meet in the merge as before.
            let unit = match g.mode {
                Mode::Windowed(_) if g.unit_ms > 0 => {
                    g.unit_origin + window.saturating_sub(g.unit_origin) / g.unit_ms * g.unit_ms
                }
                _ => window,
            };
            self.active_at(unit) as u64
        };
        let t = match g.mode {
            Mode::Owned => g.owner as u64,
            Mode::Exact { spread: 0 } => me as u64,
            Mode::Exact { spread } => g.owner as u64 + seq % u64::from(spread),
            Mode::Binned(p) => g.owner as u64 + saams::hash::hash_u64(seq, 0xB1A5) % u64::from(p),
            Mode::Windowed(p) => {
                g.owner as u64 + (window.saturating_sub(g.unit_origin) / g.unit_ms.max(1)) % u64::from(p)
            }
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
    /// use saams_operators::plan::Routing;
    /// let mut routing = Routing::new(4, 60_000);
    /// assert_eq!(routing.merge_stages(), 2);
    /// routing.workers_per_process = 2; // -n 2 -w 2
    /// assert_eq!(routing.merge_stages(), 2);
    /// assert_eq!(Routing::new(1, 60_000).merge_stages(), 0);
    /// ```
    pub fn merge_stages(&self) -> u32 {
        let (k, n) = self.layout();
        merge_stages(k) + merge_stages(n)
    }

    /// Where worker `me` sends a partial of a synopsis whose home is `root` at tree-merge stage
    /// `stage` (1-based, up to [`Routing::merge_stages`]).
    ///
    /// Within-process stages come first, for every root: in each process the partials meet at the
    /// worker with the root's local index (a binomial tree over local indices relative to it), then
    /// those workers, one per process, meet at the root (the same tree over process indices). So a
    /// merge sends n − 1 partials between n processes, the least possible, and each stage halves
    /// the partials in flight.
    ///
    /// ```
    /// use saams_operators::plan::Routing;
    /// let mut routing = Routing::new(4, 60_000);
    /// routing.workers_per_process = 2; // processes {0, 1} and {2, 3}
    /// // Root 1: stage 1 stays in each process (0 -> 1, 2 -> 3), stage 2 crosses once (3 -> 1).
    /// assert_eq!((routing.merge_target(1, 0, 1), routing.merge_target(1, 2, 1)), (1, 3));
    /// assert_eq!(routing.merge_target(1, 3, 2), 1);
    /// ```
    pub fn merge_target(&self, root: usize, me: usize, stage: u32) -> usize {
        let (k, n) = self.layout();
        let local_stages = merge_stages(k);
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

    /// The worker holding the bin of a key hash (see [`Routing::bins`]).
    ///
    /// ```
    /// use saams_operators::plan::{BINS, Routing};
    /// let mut routing = Routing::new(3, 60_000);
    /// assert_eq!(routing.worker_of(BINS as u64 + 5), 5 % 3);
    /// routing.bins[5] = 0; // a rescale moves whole bins
    /// assert_eq!(routing.worker_of(5), 0);
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
    /// use saams_operators::plan::Routing;
    /// let mut routing = Routing::new(3, 60_000);
    /// let owners: Vec<usize> = (0..6).map(|k| routing.owner_of_stream(k * 7)).collect();
    /// assert_eq!(owners, [0, 1, 2, 0, 1, 2], "six streams in six bins: two groups each");
    /// assert_eq!(routing.owner_of_stream(14), 2, "a second group of a stream follows its bin");
    /// assert_eq!(routing.worker_of(14), 2);
    /// ```
    pub fn owner_of_stream(&mut self, hash: u64) -> usize {
        let bin = (hash % BINS as u64) as usize;
        if !self.bin_placed[bin] {
            let fewest = (0..self.active_workers()).min_by_key(|&w| (self.groups_owned[w], w)).unwrap_or(0);
            self.bins[bin] = fewest as u32;
            self.bin_placed[bin] = true;
        }
        let owner = self.worker_of(hash);
        self.groups_owned[owner] += 1;
        owner
    }
}
