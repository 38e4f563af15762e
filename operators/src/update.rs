//! `update_synopses`: the operator that routes tuple values to their synopses (the exchange
//! pact carries the target the reading worker computed) and updates them as the input frontier
//! (the event-time watermark) passes the values.
//!
//! State is bounded by the synopses, not by the tuples of a window:
//!
//! - exact-merge synopses (Count-Min, HyperLogLog, Bloom filter, AMS): their state does not
//!   depend on the order of the updates, so it is updated as values arrive, in any order. Spread
//!   over several workers, the window's partial is the state. Owned (in a group of such kinds
//!   only), the merged state is: a value of the current window (every window before it closed)
//!   goes straight to it, one of a later window (up to the lateness early) waits in the group's
//!   reorder buffer for its window's turn, so no window costs a merge;
//! - every other synopsis: values wait in a reorder buffer per update group (and bin) until the
//!   frontier passes their event time. The reading loop advances its input to the oldest event
//!   time any input can still produce (newest time minus the lateness, in steps of at most a
//!   minute), so a buffer holds about (lateness + step) × rate values, plus a batch
//!   (`RELEASE_BATCH`, less when there are many buffers: `RELEASE_BUDGET` in all), whatever the
//!   window length. Values the frontier has passed can no longer
//!   be preceded by another (every value arrives at a timestamp at most its event time), so they
//!   go to their synopses in event-time order (then arrival sequence): order-sensitive kinds
//!   ([`saams::Kind::is_order_sensitive`]) item by item, the others as a batch — the same
//!   sequence of updates for any number of workers, processes or split of the input. (GK, KLL,
//!   Lossy Counting, Sticky Sampling, FrequentItems and CPC answer the same for any order, but
//!   their state depends on it, and answers must not change with `-w`/`-n`: each kind's docs,
//!   "Update order".)
//!
//! A window's answers are written when the frontier passes its end.
//!
//! Owned synopses (one owner) are merged state right here: the owner updates them and answers
//! their continuous queries at every window close, and their ad-hoc queries and SAVEs at the end;
//! the states of synopses in pair queries go on as snapshots.
//! Spread synopses get one partial per window (and bin), built from a fresh synopsis as the
//! window's values pass the frontier, sent on to the tree merge at the window's close.
//!
//! Timestamps are event-time milliseconds: a window's output (answers, partials, snapshots) is
//! emitted at [`Plan::close_time`] of the window, its last millisecond.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;

use saams::{Datum, Synopsis};
use timely::communication::Push;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::DistributorPact;
use timely::dataflow::channels::pushers::exchange::Distributor;
use timely::dataflow::channels::{Message, Stamp};
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator;

use crate::answer;
use crate::ask::{ASK_GROUP, Ask, AskPart, FENCE_GROUP, destination_of, fence_of, is_marker};
use crate::checkpoint::copy_homed;
use crate::out::Out;
use crate::plan::{Mode, Plan};
use crate::record::{Partial, Rec, Snapshot, SynBox};
use saams::api::estimation::with_as_of;

/// Feed values of one window (in event-time order, then arrival sequence) to one synopsis:
/// order-sensitive kinds item by item with the event time (DFT's parameters are in time units),
/// the others as one batch (kinds speed up batches; only exact-merge kinds override
/// `update_batch`, so a window fed in several batches gives the same state as in one).
fn feed(syn: &mut dyn Synopsis, recs: &[Rec], batch: &[Datum<'_>]) {
    if syn.kind().is_order_sensitive() {
        for r in recs {
            syn.update_at(r.val.datum(), r.time);
        }
    } else {
        syn.update_batch(batch);
    }
}

/// Values of one buffer the watermark has passed that are fed together inside a window (all of
/// them are fed when the window closes): the buffers hold at most this many values more than
/// the lateness and the reading step let in.
const RELEASE_BATCH: usize = 2048;

/// Values the watermark has passed that all buffers together hold back for batching: with many
/// buffers (a group per stream), each batches fewer (at least 1), so the total stays about this
/// many whatever the number of streams (2048 each for 200 per-stream buffers held ~20 MB at
/// one-hour windows, where nothing else releases them for an hour). 2^15: peak RSS at 1 h windows
/// 1.09× that at 60 s on the paper workload; 2^14 gave 1.06× at ~1 % more CPU.
const RELEASE_BUDGET: usize = 1 << 15;

/// Values of one update group (and bin) the frontier has not passed yet, as a few sorted runs.
///
/// Every value joins, on arrival, the run whose newest value is the newest one older than it (a
/// new run if none is), so each run is sorted by (event time, arrival sequence) and an input
/// that arrives in order extends one run. A release takes the values older than the bound from
/// the front of every run (a binary search per run) and merges them; the values left are not
/// looked at again.
///
/// Why: a buffer fed by several inputs at different event times (a file split into byte ranges,
/// Kafka partitions) is not in arrival order. Partitioning all of it at every release, as this
/// buffer did before, was ~13 % of a JSON-lines replay of a file in four byte ranges (buffers of
/// ~17,000 values behind a watermark held back by the slowest range, walked at every
/// activation); sorting new values into one sorted buffer instead moved ~13,000 values per merge.
/// Now a release costs the values it releases (times the number of runs).
///
/// Values of a group with no order-sensitive synopsis come out sorted too: such groups hold
/// exact-merge kinds only, whose state does not depend on the order.
struct Reorder {
    /// Sorted runs (none empty).
    runs: Vec<VecDeque<Rec>>,
    /// Values in all runs.
    waiting: usize,
    /// The values the last [`Reorder::take_older`] released (kept for its allocation).
    released: Vec<Rec>,
}

/// The order values are fed in: event time, then arrival sequence (unique per group).
fn feed_order(r: &Rec) -> (i64, u64) {
    (r.time, r.seq)
}

/// Runs a buffer may have before they are merged into one: arrival orders that keep starting
/// runs (values in falling event time) cost a sort, not a scan of ever more runs per value.
const MAX_RUNS: usize = 16;

impl Reorder {
    fn new() -> Reorder {
        Reorder { runs: Vec::new(), waiting: 0, released: Vec::new() }
    }

    fn push(&mut self, recs: impl Iterator<Item = Rec>) {
        // The run the previous value of this call went to: the values of one call are a run of
        // one input's values, so they follow each other there.
        let mut last = usize::MAX;
        for r in recs {
            self.waiting += 1;
            let key = feed_order(&r);
            let fits = |run: &VecDeque<Rec>| run.back().is_some_and(|b| feed_order(b) < key);
            // Else the run whose newest value is the newest one older than `r`, which keeps the
            // runs few (values of an input lagging behind another go to its own run, not to the
            // other's).
            let target = if last < self.runs.len() && fits(&self.runs[last]) {
                Some(last)
            } else {
                let mut best: Option<(usize, (i64, u64))> = None;
                for (i, run) in self.runs.iter().enumerate() {
                    if let Some(b) = run.back().map(feed_order)
                        && b < key
                        && best.is_none_or(|(_, k)| b > k)
                    {
                        best = Some((i, b));
                    }
                }
                best.map(|(i, _)| i)
            };
            match target {
                Some(i) => {
                    self.runs[i].push_back(r);
                    last = i;
                }
                None => {
                    self.runs.push(VecDeque::from([r]));
                    last = self.runs.len() - 1;
                }
            }
            if self.runs.len() > MAX_RUNS {
                self.merge_runs();
                last = 0;
            }
        }
    }

    /// Merge every run into one.
    fn merge_runs(&mut self) {
        let mut all: Vec<Rec> = Vec::with_capacity(self.waiting);
        for run in self.runs.drain(..) {
            all.extend(run);
        }
        all.sort_by_key(feed_order);
        self.runs.push(VecDeque::from(all));
    }

    fn is_empty(&self) -> bool {
        self.waiting == 0
    }

    fn waiting(&self) -> usize {
        self.waiting
    }

    /// Capacity held for values.
    fn capacity(&self) -> usize {
        self.runs.iter().map(VecDeque::capacity).sum::<usize>() + self.released.capacity()
    }

    /// Event time of the oldest value waiting.
    fn oldest(&self) -> Option<i64> {
        self.runs.iter().filter_map(|run| run.front().map(|r| r.time)).min()
    }

    /// Take the waiting values older than `bound`, in (event time, arrival sequence) order, if
    /// there are at least `at_least` of them (and at least one).
    fn take_older(&mut self, bound: i64, at_least: usize) -> Option<&[Rec]> {
        self.released.clear();
        let mut counts: Vec<usize> = self.runs.iter().map(|run| run.partition_point(|r| r.time < bound)).collect();
        let total: usize = counts.iter().sum();
        if total == 0 || total < at_least {
            return None;
        }
        let taking = counts.iter().filter(|&&n| n > 0).count();
        if taking == 1 {
            let i = counts.iter().position(|&n| n > 0).unwrap_or(0);
            self.released.extend(self.runs[i].drain(..counts[i]));
        } else if taking > 1 {
            // A k-way merge of the runs' fronts (k is small).
            loop {
                let mut next: Option<(usize, (i64, u64))> = None;
                for (i, run) in self.runs.iter().enumerate() {
                    if counts[i] > 0
                        && let Some(key) = run.front().map(feed_order)
                        && next.is_none_or(|(_, k)| key < k)
                    {
                        next = Some((i, key));
                    }
                }
                let Some((i, _)) = next else { break };
                counts[i] -= 1;
                if let Some(r) = self.runs[i].pop_front() {
                    self.released.push(r);
                }
            }
        }
        self.runs.retain(|run| !run.is_empty());
        self.waiting -= self.released.len();
        Some(&self.released)
    }
}

/// What one window has gathered for one update group (and bin) so far.
struct Gathered {
    /// Values fed.
    items: u64,
    /// Per synopsis of the group (in the group's order): its partial (spread modes).
    parts: Vec<Option<Box<dyn Synopsis>>>,
}

/// Open windows (start, ms): what each (group, bin) has gathered.
type Windows = BTreeMap<u64, BTreeMap<(u32, u64), Gathered>>;

impl Gathered {
    /// What `key` gathered in window `w` (created empty for a group of `synopses`), with `n`
    /// more values counted.
    fn counted(windows: &mut Windows, w: u64, key: (u32, u64), synopses: usize, n: usize) -> &mut Gathered {
        let gathered =
            windows.entry(w).or_default().entry(key).or_insert_with(|| Gathered { items: 0, parts: Vec::new() });
        // A group gains synopses when a construct takes effect while the job runs.
        if gathered.parts.len() < synopses {
            gathered.parts.resize_with(synopses, || None);
        }
        gathered.items += n as u64;
        gathered
    }
}

/// Merged state of owned synopses, with the values it summarizes.
type Merged = HashMap<u32, (Box<dyn Synopsis>, u64), foldhash::fast::RandomState>;

/// The operator's state between activations.
struct State {
    /// Reorder buffers per (group, bin), looked up per run of incoming values (a run is often
    /// one value: a file's streams interleave), so with a fast hash (SipHash was ~5 %).
    buffers: HashMap<(u32, u64), Reorder, foldhash::fast::RandomState>,
    /// Values of the current window of owned exact-merge groups, taken on arrival and fed at the
    /// end of the activation ([`State::take_on_arrival`]).
    staged: HashMap<(u32, u64), Vec<Rec>, foldhash::fast::RandomState>,
    windows: Windows,
    merged: Merged,
    /// Per owned synopsis: how many of its live LOADs are merged into its state.
    loaded: HashMap<u32, usize>,
    /// Windows before this one (start, ms) are closed.
    closed_before: u64,
}

/// Feed the values of buffer `key` older than `bound` (ms) to their synopses, if there are at
/// least `at_least` of them. They all lie in one window: every older window was closed (and its
/// values fed) before. The order among buffers does not matter (each synopsis is fed by one buffer).
fn release(
    plan: &Plan,
    key: (u32, u64),
    buffer: &mut Reorder,
    (bound, at_least): (i64, usize),
    windows: &mut Windows,
    merged: &mut Merged,
) {
    if buffer.waiting() < at_least || buffer.oldest().is_none_or(|t| t >= bound) {
        return;
    }
    let Some(recs) = buffer.take_older(bound, at_least) else { return };
    let n = recs.len();
    let group = &plan.routing.groups[key.0 as usize];
    let w = plan.window_of(recs[0].time);
    debug_assert!(recs.iter().all(|r| plan.window_of(r.time) == w), "one window per release");
    let batch: Vec<Datum<'_>> =
        if group.synopses.iter().any(|&s| !plan.routing.synopses[s as usize].kind.is_order_sensitive()) {
            recs.iter().map(|r| r.val.datum()).collect()
        } else {
            Vec::new()
        };
    let gathered = Gathered::counted(windows, w, key, group.synopses.len(), n);
    if group.mode == Mode::Owned {
        feed_merged(plan, key.0, w, (recs, &batch), merged);
        return;
    }
    for (i, &s) in group.synopses.iter().enumerate() {
        if plan.live.is_live(s, w) {
            let part = gathered.parts[i].get_or_insert_with(|| plan.routing.synopses[s as usize].fresh.clone());
            feed(part.as_mut(), recs, &batch);
        }
    }
}

/// Feed values of window `w` (every window before it closed) to the merged states of owned
/// group `g`'s synopses registered at `w`.
fn feed_merged(plan: &Plan, g: u32, w: u64, (recs, batch): (&[Rec], &[Datum<'_>]), merged: &mut Merged) {
    for &s in &plan.routing.groups[g as usize].synopses {
        if plan.live.is_live(s, w) {
            let (state, items) =
                merged.entry(s).or_insert_with(|| (plan.routing.synopses[s as usize].initial.clone(), 0));
            feed(state.as_mut(), recs, batch);
            *items += recs.len() as u64;
        }
    }
}

impl State {
    /// Start the owned synopses this worker owns from a checkpoint's states.
    fn restore(&mut self, plan: &Plan, me: usize) {
        let mut checkpoints = plan.checkpoints.borrow_mut();
        for (s, spec) in plan.routing.synopses.iter().enumerate() {
            let s = s as u32;
            if spec.home == me
                && spec.mode == Mode::Owned
                && let Some((state, items, loads)) = checkpoints.restored.remove(&s)
            {
                self.merged.insert(s, (state, items));
                self.loaded.insert(s, loads);
            }
        }
    }

    /// An order-insensitive owned synopsis' state with the values still waiting in its group's
    /// reorder buffers (those of windows it is registered at) fed to a copy, and how many they
    /// were; `None` if there are none or the synopsis depends on update order.
    fn with_waiting(&self, plan: &Plan, syn: u32, state: &dyn Synopsis) -> Option<(Box<dyn Synopsis>, u64)> {
        let spec = plan.routing.synopses.get(syn as usize)?;
        if spec.kind.is_order_sensitive() {
            return None;
        }
        let waiting: Vec<Datum<'_>> = self
            .buffers
            .iter()
            .filter(|((g, _), _)| *g == spec.group)
            .flat_map(|(_, b)| b.runs.iter().flatten())
            .filter(|r| plan.live.is_live(syn, plan.window_of(r.time)))
            .map(|r| r.val.datum())
            .collect();
        if waiting.is_empty() {
            return None;
        }
        let mut now = state.clone_box();
        now.update_batch(&waiting);
        Some((now, waiting.len() as u64))
    }

    /// Take part in an ask: an owned synopsis is answered here by its owner, from its merged
    /// state; for a spread one every worker sends its open windows' partials to the home
    /// ([`crate::ask`]).
    fn ask(&self, plan: &Plan, me: usize, ask: Ask, watermark: u64, out: &mut Vec<Out>) {
        if !ask.spread {
            if ask.home as usize != me {
                return;
            }
            let line = match plan.routing.synopses.get(ask.syn as usize) {
                Some(spec) => {
                    let (state, items) = match self.merged.get(&ask.syn) {
                        Some((state, items)) => (state.as_ref(), *items),
                        None => (spec.initial.as_ref(), 0),
                    };
                    match self.with_waiting(plan, ask.syn, state) {
                        // Values the watermark has not passed yet count too: the answer does
                        // not depend on their order.
                        Some((now, waiting)) => answer::ask_line(plan, &ask, now.as_ref(), items + waiting),
                        None => answer::ask_line(plan, &ask, state, items),
                    }
                }
                None => answer::ask_error(&ask, "the synopsis is not known here yet"),
            };
            out.push(Out::Line(with_as_of(line, watermark.min(i64::MAX as u64) as i64)));
            return;
        }
        let mut parts = Vec::new();
        if let Some(spec) = plan.routing.synopses.get(ask.syn as usize)
            && let Some(group) = plan.routing.groups.get(spec.group as usize)
            && let Some(i) = group.synopses.iter().position(|&s| s == ask.syn)
        {
            for (&w, by_key) in &self.windows {
                for (&(g, bin), got) in by_key {
                    if g == spec.group
                        && let Some(Some(part)) = got.parts.get(i)
                    {
                        parts.push((w, bin, got.items, SynBox::new(part.clone())));
                    }
                }
            }
        }
        out.push(Out::Ask(AskPart { ask, closed_before: self.closed_before, parts }));
    }

    /// Update the window partials of a spread exact-merge group with values on arrival (their
    /// windows are open: a value arrives no later than its event time, a window closes after its
    /// end). Whether the synopses are registered at the window is checked at its close.
    fn gather(&mut self, plan: &Plan, key: (u32, u64), recs: &[Rec]) {
        let group = &plan.routing.groups[key.0 as usize];
        let mut rest = recs;
        while let Some(first) = rest.first() {
            let w = plan.window_of(first.time);
            let n = rest.iter().take_while(|r| plan.window_of(r.time) == w).count();
            let (now, later) = rest.split_at(n);
            rest = later;
            let batch: Vec<Datum<'_>> = now.iter().map(|r| r.val.datum()).collect();
            let gathered = Gathered::counted(&mut self.windows, w, key, group.synopses.len(), n);
            for (i, &s) in group.synopses.iter().enumerate() {
                let part = gathered.parts[i].get_or_insert_with(|| plan.routing.synopses[s as usize].fresh.clone());
                part.update_batch(&batch);
            }
        }
    }

    /// Take values of an owned group of exact-merge kinds on arrival: those of the current
    /// window (every window before it closed, the frontier past its start, the next checkpoint
    /// boundary after it: a copy at a boundary must not hold later values) go to the group's
    /// staged values, fed to the merged states at the end of the activation
    /// ([`State::feed_staged`]); those of later windows (up to the lateness early) wait in the
    /// group's reorder buffer for their window's turn. Their state is the same whatever the
    /// order of the updates, so the answers are those of feeding each window in event-time order.
    fn take_on_arrival(
        &mut self,
        key: (u32, u64),
        recs: impl Iterator<Item = Rec>,
        window_of: impl Fn(i64) -> u64,
        (watermark, next_boundary): (u64, Option<u64>),
    ) {
        let current = self.closed_before;
        // Which synopses are registered at the current window is known once the frontier is
        // past its start (the registry's changes up to it are applied: `registry_join`).
        let direct = watermark > current && next_boundary.is_none_or(|b| b > current);
        if !direct {
            self.buffers.entry(key).or_insert_with(Reorder::new).push(recs);
            return;
        }
        let staged = self.staged.entry(key).or_default();
        let mut later = Vec::new();
        for r in recs {
            if window_of(r.time) == current {
                staged.push(r);
            } else {
                later.push(r);
            }
        }
        if !later.is_empty() {
            self.buffers.entry(key).or_insert_with(Reorder::new).push(later.into_iter());
        }
    }

    /// Feed the staged values of the current window ([`State::take_on_arrival`]) to their
    /// merged states, a batch per group: once per activation, not per run of values (a file's
    /// streams interleave, so runs are often one value), and before anything reads the states.
    fn feed_staged(&mut self, plan: &Plan) {
        let current = self.closed_before;
        for (&key, staged) in &mut self.staged {
            if staged.is_empty() {
                continue;
            }
            let batch: Vec<Datum<'_>> = staged.iter().map(|r| r.val.datum()).collect();
            let group = &plan.routing.groups[key.0 as usize];
            Gathered::counted(&mut self.windows, current, key, group.synopses.len(), staged.len());
            feed_merged(plan, key.0, current, (staged, &batch), &mut self.merged);
            drop(batch);
            staged.clear();
        }
    }

    /// Feed the buffered values older than `bound`, of the buffers that have at least
    /// `at_least` of them.
    fn release_all(&mut self, plan: &Plan, bound: i64, at_least: usize) {
        for (&key, buffer) in &mut self.buffers {
            release(plan, key, buffer, (bound, at_least), &mut self.windows, &mut self.merged);
        }
    }

    /// The oldest window with anything open or buffered.
    fn oldest_window(&self, plan: &Plan) -> Option<u64> {
        let buffered = self.buffers.values().filter_map(Reorder::oldest).min().map(|t| plan.window_of(t));
        let open = self.windows.first_key_value().map(|(&w, _)| w);
        match (buffered, open) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Close window `w` (every value of it fed): answers of owned synopses, partials of spread ones.
    fn close(
        &mut self,
        plan: &Plan,
        w: u64,
        lines: &mut Vec<String>,
        partials: &mut Vec<Partial>,
        snapshots: &mut Vec<Snapshot>,
    ) {
        self.closed_before = self.closed_before.max(w.saturating_add(plan.routing.window_ms as u64));
        let Some(gathered) = self.windows.remove(&w) else { return };
        for ((g, bin), mut got) in gathered {
            let group = &plan.routing.groups[g as usize];
            for (i, &s) in group.synopses.iter().enumerate() {
                if !plan.live.is_live(s, w) {
                    continue;
                }
                let spec = &plan.routing.synopses[s as usize];
                if group.mode == Mode::Owned {
                    let Some((state, items)) = self.merged.get_mut(&s) else { continue };
                    let done = self.loaded.entry(s).or_insert(0);
                    answer::merge_loads(plan, s, w, state.as_mut(), done, lines);
                    answer::continuous(plan, s, state.as_ref(), *items, w, lines);
                    for &dest in &spec.snapshot_to {
                        snapshots.push(Snapshot {
                            syn: s,
                            window: w,
                            items: *items,
                            dest: dest as u32,
                            state: SynBox::new(state.clone()),
                        });
                    }
                } else if let Some(part) = got.parts[i].take() {
                    partials.push(Partial {
                        syn: s,
                        window: w,
                        items: got.items,
                        parts: vec![(bin, SynBox::new(part))],
                    });
                }
            }
        }
    }
}

/// Records per container sent to another worker (a few hundred KiB: fewer, larger messages).
const SHIP_RECORDS: usize = 4096;

/// The exchange of routed records to their target workers, a run at a time.
///
/// Readers send a stream's tuples together, so records come in runs of one update group, and
/// every record of an owned group goes to its owner: the target is computed once per run and
/// the run moves into that worker's container in one extend (timely's hash exchange computes a
/// target and pushes per record, ~90 instructions each, which made `-w 2` do ~20 % more work
/// than `-w 1`). Other modes get their target per record, as [`crate::plan::Routing::target`] says.
struct RunDistributor {
    plan: Rc<RefCell<Plan>>,
    me: usize,
    /// Per target worker: records waiting to be sent.
    pending: Vec<Vec<Rec>>,
    /// Runs of the container being partitioned: (target, length).
    runs: Vec<(usize, usize)>,
}

impl RunDistributor {
    fn target(plan: &Plan, me: usize, r: &Rec, peers: usize) -> usize {
        let window = match plan.routing.groups[r.group as usize].mode {
            Mode::Windowed(_) => plan.window_of(r.time),
            _ => 0,
        };
        plan.routing.target(r.group, r.seq, window, me) as usize % peers
    }

    fn ship<T: Clone, P: Push<Message<T, Vec<Rec>>>>(&mut self, target: usize, stamp: &Stamp<T>, pusher: &mut P) {
        let buffer = &mut self.pending[target];
        Message::push_at(buffer, stamp.clone(), pusher);
        // What the pusher hands back is a recycled container: empty it.
        buffer.clear();
    }
}

impl Distributor<Vec<Rec>> for RunDistributor {
    fn partition<T: Clone, P: Push<Message<T, Vec<Rec>>>>(
        &mut self,
        container: &mut Vec<Rec>,
        stamp: &Stamp<T>,
        pushers: &mut [P],
    ) {
        let peers = pushers.len();
        if self.pending.len() != peers {
            self.pending.resize_with(peers, Vec::new);
        }
        if container.iter().any(is_marker) {
            // Asks and fence markers reach every worker (each answers for what it holds; each
            // applies the requests): the reader sent a copy per worker, each goes to its own
            // (copying here would consume more records than were produced: `to_every_worker`),
            // ahead of the container's values.
            let mut rest = Vec::with_capacity(container.len());
            for r in container.drain(..) {
                if is_marker(&r) {
                    self.pending[destination_of(&r) % peers].push(r);
                } else {
                    rest.push(r);
                }
            }
            *container = rest;
        }
        let plan = self.plan.clone();
        let plan = plan.borrow();
        self.runs.clear();
        let mut i = 0;
        while i < container.len() {
            let first = &container[i];
            let target = RunDistributor::target(&plan, self.me, first, peers);
            let len = if plan.routing.groups[first.group as usize].mode == Mode::Owned {
                1 + container[i + 1..].iter().take_while(|r| r.group == first.group).count()
            } else {
                1
            };
            match self.runs.last_mut() {
                Some((t, n)) if *t == target => *n += len,
                _ => self.runs.push((target, len)),
            }
            i += len;
        }
        if let [(target, _)] = self.runs[..] {
            // The whole container (typically a batch of one stream's tuples) goes to one worker:
            // send it on as it is, after what was waiting for that worker (order per worker kept).
            if !self.pending[target].is_empty() {
                self.ship(target, stamp, &mut pushers[target]);
            }
            Message::push_at(container, stamp.clone(), &mut pushers[target]);
            container.clear();
            return;
        }
        let runs = std::mem::take(&mut self.runs);
        let mut recs = container.drain(..);
        for &(target, len) in &runs {
            let mut left = len;
            while left > 0 {
                let buffer = &mut self.pending[target];
                if buffer.capacity() < SHIP_RECORDS {
                    buffer.reserve(SHIP_RECORDS - buffer.len());
                }
                let take = left.min(SHIP_RECORDS - buffer.len().min(SHIP_RECORDS));
                buffer.extend(recs.by_ref().take(take));
                left -= take;
                if buffer.len() >= SHIP_RECORDS {
                    self.ship(target, stamp, &mut pushers[target]);
                }
            }
        }
        drop(recs);
        self.runs = runs;
    }

    fn flush<T: Clone, P: Push<Message<T, Vec<Rec>>>>(&mut self, stamp: &Stamp<T>, pushers: &mut [P]) {
        for (target, pusher) in pushers.iter_mut().enumerate() {
            if self.pending.get(target).is_some_and(|b| !b.is_empty()) {
                self.ship(target, stamp, pusher);
            }
        }
    }

    fn relax(&mut self) {
        for buffer in &mut self.pending {
            if buffer.is_empty() {
                *buffer = Vec::new();
            }
        }
    }
}

/// Take one incoming batch: fence markers first (the requests take effect before any value
/// routed with them is looked at: the marker came first on its channel, and before the fence
/// closes), then asks (answered now) and values (to their partials or reorder buffers). The
/// batch is emptied in place (timely recycles its allocation).
fn take_batch(
    shared: &RefCell<Plan>,
    state: &mut State,
    batch: &mut Vec<Rec>,
    runs: &mut Vec<((u32, u64), usize)>,
    (me, watermark, copied_through): (usize, u64, u64),
    asked: &mut Vec<Out>,
) {
    if batch.iter().any(|r| r.group == FENCE_GROUP) {
        // Requests take effect before any value routed with them is looked at
        // (the marker came first on its channel) and before the fence closes.
        let mut plan = shared.borrow_mut();
        for (epoch, fence) in batch.iter().filter_map(fence_of) {
            plan.apply_through(epoch, fence);
        }
        batch.retain(|r| r.group != FENCE_GROUP);
    }
    let plan = shared.borrow();
    let plan = &*plan;
    // Values fed on arrival stay out of the copy at this boundary (the fence marker of its
    // epoch came before any value at or after it).
    let next_boundary = plan.checkpoints.borrow().next_due(copied_through, u64::MAX);
    // Records arrive in runs of one stream: find the runs on the slice,
    // then move each into its buffer in one go (one lookup per run).
    runs.clear();
    let mut i = 0;
    while i < batch.len() {
        if batch[i].group == ASK_GROUP {
            runs.push(((ASK_GROUP, 0), 1));
            i += 1;
            continue;
        }
        let (g, bin) = (batch[i].group, plan.routing.bin(batch[i].group, batch[i].seq));
        let binned = matches!(plan.routing.groups[g as usize].mode, Mode::Binned(_));
        let more = batch[i + 1..]
            .iter()
            .take_while(|r| r.group == g && (!binned || plan.routing.bin(g, r.seq) == bin))
            .count();
        runs.push(((g, bin), more + 1));
        i += more + 1;
    }
    let mut recs = batch.drain(..);
    for &(key, len) in runs.iter() {
        if key.0 == ASK_GROUP {
            // The answer covers every value that came before the ask.
            state.feed_staged(plan);
            if let Some(ask) = recs.next().as_ref().and_then(Ask::from_rec) {
                state.ask(plan, me, ask, watermark, asked);
            }
            continue;
        }
        let group = &plan.routing.groups[key.0 as usize];
        if matches!(group.mode, Mode::Exact { .. }) {
            // Exact-merge kinds only: the window's partial is the state,
            // updated on arrival in any order.
            state.gather(plan, key, &recs.as_slice()[..len]);
            recs.by_ref().take(len).for_each(drop);
        } else if group.mode == Mode::Owned && !group.ordered {
            // Exact-merge kinds only, one owner: the merged state is updated on arrival.
            state.take_on_arrival(key, recs.by_ref().take(len), |t| plan.window_of(t), (watermark, next_boundary));
        } else {
            let buffer = state.buffers.entry(key).or_insert_with(Reorder::new);
            buffer.push(recs.by_ref().take(len));
        }
    }
}

/// Extension trait: maintain the plan's synopses from a stream of routed values.
pub trait UpdateSynopses<'scope> {
    /// Update every synopsis of `plan` from the values; emits answer lines of owned synopses and
    /// per-window partials of spread ones (timestamps: the window's [`Plan::close_time`]; the
    /// end-of-input answers at `u64::MAX`).
    ///
    /// Values must arrive at a timestamp no later than their event time (ms): the frontier is
    /// the watermark that releases them to their synopses.
    fn update_synopses(self, plan: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<Out>>;
}

impl<'scope> UpdateSynopses<'scope> for Stream<'scope, u64, Vec<Rec>> {
    fn update_synopses(self, shared: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<Out>> {
        let me = self.scope().index();
        let route = shared.clone();
        // Runs on the reading worker: partition-based values stay where they were read.
        let pact = DistributorPact(move |_peers: usize| RunDistributor {
            plan: route,
            me,
            pending: Vec::new(),
            runs: Vec::new(),
        });
        self.unary_frontier::<CapacityContainerBuilder<Vec<Out>>, _, _, _>(
            pact,
            "UpdateSynopses",
            move |mut cap, _info| {
                cap.downgrade(&u64::MAX);
                let mut end_cap = Some(cap);
                let mut state = State {
                    buffers: HashMap::default(),
                    staged: HashMap::default(),
                    windows: BTreeMap::new(),
                    merged: HashMap::default(),
                    loaded: HashMap::new(),
                    closed_before: 0,
                };
                state.restore(&shared.borrow(), me);
                // Checkpoint boundaries before this one (exclusive) have their copies taken.
                let mut copied_through = 0u64;
                // Held at the frontier while anything is buffered or open: every window still to
                // close ends after it, so the window's output can be emitted at its close time.
                let mut held: Option<Capability<u64>> = None;
                // Runs of one incoming batch: ((group, bin), length).
                let mut runs: Vec<((u32, u64), usize)> = Vec::new();
                let mut asked: Vec<Out> = Vec::new();
                move |(input, frontier), output| {
                    let watermark = frontier.frontier().iter().min().copied().unwrap_or(u64::MAX);
                    let update = shared.borrow().update;
                    input.for_each_stamp(|stamp, data| {
                        if !update {
                            data.for_each(|batch| batch.clear());
                            return;
                        }
                        let Some(&time) = stamp.least() else {
                            data.for_each(|batch| batch.clear());
                            return;
                        };
                        if held.as_ref().is_none_or(|c| time < *c.time()) {
                            held = stamp.retain_least(0);
                        }
                        for batch in data {
                            take_batch(
                                &shared,
                                &mut state,
                                batch,
                                &mut runs,
                                (me, watermark, copied_through),
                                &mut asked,
                            );
                        }
                    });
                    if !asked.is_empty()
                        && let Some(cap) = &held
                    {
                        // Answered now: nothing waits for a window.
                        output.session(cap).give_iterator(asked.drain(..));
                    }
                    let plan = shared.borrow();
                    let plan = &*plan;
                    state.feed_staged(plan);
                    // The watermark: no value older than it can still arrive.
                    let bound = i64::try_from(watermark).unwrap_or(i64::MAX);
                    let mut lines = Vec::new();
                    let mut partials = Vec::new();
                    let mut snapshots = Vec::new();
                    // Close every window the watermark has passed, oldest first: feed its values,
                    // then answer it. At a checkpoint boundary the watermark has passed, copy
                    // the owned states once every window before it is closed, before any later
                    // value is fed.
                    let due = plan.checkpoints.borrow().due(copied_through, watermark);
                    for stop in due.iter().copied().map(Some).chain(std::iter::once(None)) {
                        let limit = stop.unwrap_or(watermark);
                        while let Some(w) = state.oldest_window(plan) {
                            let end = w.saturating_add(plan.routing.window_ms as u64);
                            if end > limit {
                                break;
                            }
                            state.release_all(plan, i64::try_from(end).unwrap_or(i64::MAX), 1);
                            state.close(plan, w, &mut lines, &mut partials, &mut snapshots);
                            if let Some(cap) = &held {
                                let at = cap.delayed(&plan.close_time(w));
                                let mut session = output.session(&at);
                                session.give_iterator(lines.drain(..).map(Out::Line));
                                session.give_iterator(partials.drain(..).map(Out::Partial));
                                session.give_iterator(snapshots.drain(..).map(Out::Snapshot));
                            }
                        }
                        if let Some(b) = stop {
                            let copies =
                                copy_homed(|s| plan.routing.is_home(s, me), state.merged.iter(), &state.loaded);
                            plan.checkpoints.borrow_mut().hand_in(b, copies, Vec::new());
                            copied_through = b;
                        }
                    }
                    if watermark < u64::MAX {
                        state.closed_before = state.closed_before.max(plan.window_of(bound));
                    }
                    // Values of the open window the watermark has passed go to their synopses, a
                    // batch at a time: feeding each stream's synopses a few values per activation,
                    // round the streams, misses the cache on every update (a Count-Min is ~50 KiB).
                    let batch = RELEASE_BATCH.min(RELEASE_BUDGET / state.buffers.len().max(1)).max(1);
                    state.release_all(plan, bound, batch);
                    if state.windows.is_empty() && state.buffers.values().all(Reorder::is_empty) {
                        held = None;
                        state.buffers.retain(|_, b| b.capacity() <= 4096);
                        state.staged.retain(|_, v| v.capacity() <= 4096);
                    } else if let Some(cap) = held.as_mut()
                        && watermark > *cap.time()
                    {
                        cap.downgrade(&watermark);
                    }
                    if frontier.is_empty()
                        && let Some(cap) = end_cap.take()
                    {
                        let mut lines = Vec::new();
                        for (s, spec) in plan.routing.synopses.iter().enumerate() {
                            let s = s as u32;
                            if spec.home != me || spec.mode != Mode::Owned || spec.group == u32::MAX {
                                continue;
                            }
                            match state.merged.get(&s) {
                                Some((st, items)) => answer::at_end(plan, s, st.as_ref(), *items, &mut lines),
                                None => answer::at_end(plan, s, spec.initial.as_ref(), 0, &mut lines),
                            }
                        }
                        output.session(&cap).give_iterator(lines.into_iter().map(Out::Line));
                    }
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ask::{destination_of, fence_marker, fence_of, to_every_worker};
    use crate::record::Val;

    /// A pusher that keeps what reaches it.
    #[derive(Default)]
    struct Kept(Vec<Rec>);

    impl Push<Message<u64, Vec<Rec>>> for Kept {
        fn push(&mut self, message: &mut Option<Message<u64, Vec<Rec>>>) {
            if let Some(m) = message {
                self.0.append(&mut m.data);
            }
        }
    }

    /// Timely accounts records where they are produced and where they are consumed: the
    /// exchange must hand on exactly the records it was given (a marker copied to every worker
    /// here made the frontier pass values still in flight). Each worker gets its own copy of a
    /// marker, ahead of the values that came after it.
    #[test]
    fn the_exchange_hands_on_every_record_once_and_each_worker_its_marker_copy() {
        let requests = saams::api::request::parse_requests(
            r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1],"noOfP":3}"#,
        );
        let peers = 3;
        let plan =
            Rc::new(RefCell::new(Plan::build(&requests, peers, 60_000, std::sync::Arc::new(crate::plan::NoFiles))));
        let group = plan.borrow().routes("F", "A").0[0];
        let mut distributor = RunDistributor { plan, me: 0, pending: Vec::new(), runs: Vec::new() };
        let mut pushers: Vec<Kept> = (0..peers).map(|_| Kept::default()).collect();
        let stamp = Stamp::from_elem(1_000u64);
        let value = |seq: u64| Rec { group, time: 1_000, seq, val: Val::Num(seq as f64) };
        let mut container: Vec<Rec> = (0..10).map(value).collect();
        container.extend(to_every_worker(fence_marker(2, 60_000, 1_000), peers));
        container.extend((10..20).map(value));
        let given = container.len();
        distributor.partition(&mut container, &stamp, &mut pushers);
        distributor.flush(&stamp, &mut pushers);
        assert_eq!(pushers.iter().map(|p| p.0.len()).sum::<usize>(), given, "records in = records out");
        for (w, kept) in pushers.iter().enumerate() {
            let markers: Vec<&Rec> = kept.0.iter().filter(|r| fence_of(r).is_some()).collect();
            assert_eq!(markers.len(), 1, "worker {w} gets one copy");
            assert_eq!((destination_of(markers[0]), fence_of(markers[0])), (w, Some((2, 60_000))));
            assert!(fence_of(&kept.0[0]).is_some(), "worker {w}: the marker comes first");
        }
    }

    /// Several inputs, each in event-time order, interleaved in uneven runs (as a file read in
    /// byte ranges or Kafka partitions arrive), plus values in falling time that start runs:
    /// every release gives exactly the values older than its bound, in (time, sequence) order.
    #[test]
    fn releases_in_feed_order_whatever_the_arrival_order() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut buffer = Reorder::new();
        let mut expected: Vec<(i64, u64)> = Vec::new();
        let inputs = 5u64;
        let mut clock = [0i64; 5];
        let mut line = [0u64; 5];
        let mut released = Vec::new();
        for round in 0..400 {
            let mut arriving = Vec::new();
            for _ in 0..next(40) {
                let u = next(inputs) as usize;
                // Input 4 arrives backwards now and then (new runs, up to a merge of all).
                clock[u] += if u == 4 && next(3) == 0 { -(next(50) as i64) } else { next(20) as i64 };
                line[u] += 1;
                let r = Rec { group: 0, time: clock[u] + 1000, seq: ((u as u64) << 40) | line[u], val: Val::Num(1.0) };
                expected.push(feed_order(&r));
                arriving.push(r);
            }
            buffer.push(arriving.into_iter());
            assert_eq!(buffer.waiting(), expected.len());
            assert_eq!(buffer.oldest(), expected.iter().map(|k| k.0).min());
            let bound = 1000 + round * 5;
            expected.sort_unstable();
            let n = expected.partition_point(|k| k.0 < bound);
            assert!(buffer.take_older(bound, n + 1).is_none(), "fewer than asked for");
            let got: Vec<(i64, u64)> = buffer.take_older(bound, 0).unwrap_or_default().iter().map(feed_order).collect();
            assert_eq!(got, expected[..n], "round {round}");
            released.extend(expected.drain(..n));
            assert!(buffer.runs.len() <= MAX_RUNS && buffer.runs.iter().all(|r| !r.is_empty()));
        }
        let got: Vec<(i64, u64)> = buffer.take_older(i64::MAX, 1).unwrap_or_default().iter().map(feed_order).collect();
        assert_eq!(got, expected);
        assert!(buffer.is_empty() && buffer.runs.is_empty());
        assert!(released.len() > 1000);
    }
}
