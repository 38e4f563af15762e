//! The update operator's per-window state: reorder buffers per update group, what each open
//! window has gathered (partials of spread synopses), the merged state of owned synopses, and
//! how a batch of incoming records, a window close and an ask change them.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use saams::api::estimation::with_as_of;
use saams::{Datum, Synopsis};

use super::moves::{Move, Moves};
use super::reorder::Reorder;

mod device_asks;
mod device_parts;
mod pair_stop;
use crate::answer;
use crate::ask::{ASK_GROUP, Ask, AskPart, FENCE_GROUP, fence_of};
use crate::checkpoint::copy_homed;
use crate::introspection::SynopsisFigures;
use crate::out::Out;
use crate::pair_ask::{answers_pairs, pair_of};
use crate::plan::{Mode, Plan};
use crate::record::{Partial, Rec, Snapshot, SynBox, Val};
use crate::window::Held;

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

/// What one window has gathered for one update group (and bin) so far.
struct Gathered {
    /// Values fed.
    items: u64,
    /// Per synopsis of the group (in the group's order): its partial (spread modes).
    parts: Vec<Option<Box<dyn Synopsis>>>,
    /// Answers owned synopses owed when this window opened their period (a tumbling window
    /// or sliding windows that ended without values in their last job window), written with
    /// this window's.
    owed: Vec<String>,
}

/// Open windows (start, ms): what each (group, bin) has gathered.
type Windows = BTreeMap<u64, BTreeMap<(u32, u64), Gathered>>;

impl Gathered {
    /// What `key` gathered in window `w` (created empty for a group of `synopses`), with `n`
    /// more values counted.
    fn counted(windows: &mut Windows, w: u64, key: (u32, u64), synopses: usize, n: usize) -> &mut Gathered {
        let gathered = windows.entry(w).or_default().entry(key).or_insert_with(|| Gathered {
            items: 0,
            parts: Vec::new(),
            owed: Vec::new(),
        });
        // A group gains synopses when a construct takes effect while the job runs.
        if gathered.parts.len() < synopses {
            gathered.parts.resize_with(synopses, || None);
        }
        gathered.items += n as u64;
        gathered
    }
}

/// Device partials of owned groups waiting for their window's close: per window, the (group,
/// bin) and the partials.
type DeviceParts = BTreeMap<u64, Vec<((u32, u64), crate::device_part::DevicePart)>>;

/// Merged state of owned synopses, as their windows hold it.
type Merged = HashMap<u32, Held, foldhash::fast::RandomState>;

/// The operator's state between activations.
#[derive(Default)]
pub(super) struct State {
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
    /// The merged states of owned synopses of pair kinds as they were when the windows before
    /// `closed_before` were closed, for those fed values of a later window since
    /// ([`crate::pair_ask`]).
    at_close: Merged,
    /// Pair asks of owned synopses this worker owns, waiting for their point: (point, ask).
    pair_stops: Vec<(u64, Ask)>,
    /// Pair states taken at their point, to emit.
    pub(super) pair_out: Vec<Out>,
    /// Pair asks at or after this point wait: a state moved here at it is not installed yet
    /// ([`Moves::waiting_from`]).
    pub(super) pair_hold: u64,
    /// Device partials of owned groups, per window, waiting for its close ([`device_parts`]).
    device_parts: DeviceParts,
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
    (merged, at_close): (&mut Merged, Option<&mut Merged>),
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
        feed_merged(plan, key.0, w, (recs, &batch), (merged, at_close), &mut gathered.owed);
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
/// group `g`'s synopses registered at `w`, opening `w`'s period first (answers it owes go to
/// `owed`). With `at_close` (values of the open window, not those of the window being closed):
/// the states of pair kinds are kept as they were first.
fn feed_merged(
    plan: &Plan,
    g: u32,
    w: u64,
    (recs, batch): (&[Rec], &[Datum<'_>]),
    (merged, mut at_close): (&mut Merged, Option<&mut Merged>),
    owed: &mut Vec<String>,
) {
    for &s in &plan.routing.groups[g as usize].synopses {
        if plan.live.is_live(s, w) {
            let spec = &plan.routing.synopses[s as usize];
            let held = merged.entry(s).or_insert_with(|| Held::new(spec.initial.as_ref()));
            if let Some(kept) = at_close.as_deref_mut()
                && answers_pairs(spec.kind)
                && !kept.contains_key(&s)
            {
                kept.insert(s, held.clone());
            }
            held.enter(spec.windowing(), w, &mut |span, state, items| {
                answer::continuous(plan, s, state, items, span, owed);
            });
            feed(held.state.as_mut(), recs, batch);
            held.items += recs.len() as u64;
        }
    }
}

impl State {
    /// Start the owned synopses this worker owns from a checkpoint's states (those it holds at
    /// the checkpoint's boundary: a rescale after it moves them on at its fence).
    pub(super) fn restore(&mut self, plan: &Plan, me: usize) {
        let mut checkpoints = plan.checkpoints.borrow_mut();
        let boundary = checkpoints.restored_boundary;
        for (s, spec) in plan.routing.synopses.iter().enumerate() {
            let s = s as u32;
            if spec.home_at(boundary) == me
                && spec.mode == Mode::Owned
                && let Some((held, loads)) = checkpoints.restored.remove(&s)
            {
                self.merged.insert(s, held);
                self.loaded.insert(s, loads);
            }
        }
    }

    /// The values still waiting in an order-insensitive owned synopsis' reorder buffers (those
    /// of windows it is registered at), as a partial per job window: (window, values, partial),
    /// in window order; none if the synopsis depends on update order.
    fn waiting(&self, plan: &Plan, syn: u32) -> Vec<(u64, u64, Box<dyn Synopsis>)> {
        let Some(spec) = plan.routing.synopses.get(syn as usize) else { return Vec::new() };
        if spec.kind.is_order_sensitive() {
            return Vec::new();
        }
        let mut by_window: BTreeMap<u64, Vec<Datum<'_>>> = BTreeMap::new();
        let values = self.buffers.iter().filter(|((g, _), _)| *g == spec.group).flat_map(|(_, b)| b.values());
        for r in values {
            let w = plan.window_of(r.time);
            if plan.live.is_live(syn, w) {
                by_window.entry(w).or_default().push(r.val.datum());
            }
        }
        by_window
            .into_iter()
            .map(|(w, values)| {
                let mut part = spec.fresh.clone();
                part.update_batch(&values);
                (w, values.len() as u64, part)
            })
            .collect()
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
                    let fresh;
                    let held = match self.merged.get(&ask.syn) {
                        Some(held) => held,
                        None => {
                            fresh = Held::new(spec.initial.as_ref());
                            &fresh
                        }
                    };
                    // Values the watermark has not passed yet count too: the answer does not
                    // depend on their order.
                    let cadence = plan.routing.window_ms as u64;
                    match held.view(spec.windowing(), cadence, self.waiting(plan, ask.syn)) {
                        Ok((now, items, span)) => answer::ask_line(plan, &ask, now.as_ref(), items, Some(span)),
                        Err(e) => answer::ask_error(&ask, &format!("merging the open windows failed: {e}")),
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
    pub(super) fn feed_staged(&mut self, plan: &Plan) {
        let current = self.closed_before;
        for (&key, staged) in &mut self.staged {
            if staged.is_empty() {
                continue;
            }
            let batch: Vec<Datum<'_>> = staged.iter().map(|r| r.val.datum()).collect();
            let group = &plan.routing.groups[key.0 as usize];
            let gathered = Gathered::counted(&mut self.windows, current, key, group.synopses.len(), staged.len());
            let merged = (&mut self.merged, Some(&mut self.at_close));
            feed_merged(plan, key.0, current, (staged, &batch), merged, &mut gathered.owed);
            drop(batch);
            staged.clear();
        }
    }

    /// Feed the buffered values older than `bound`, of the buffers that have at least
    /// `at_least` of them; `closing`: they are those of the window about to close (no state is
    /// kept as at the last close for them).
    fn release_all(&mut self, plan: &Plan, bound: i64, at_least: usize, closing: bool) {
        for (&key, buffer) in &mut self.buffers {
            let at_close = (!closing).then_some(&mut self.at_close);
            release(plan, key, buffer, (bound, at_least), &mut self.windows, (&mut self.merged, at_close));
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
        // Every merged state is as at this close now (nothing of a later window is fed yet).
        self.at_close.clear();
        self.merge_device_parts(plan, w);
        let Some(gathered) = self.windows.remove(&w) else { return };
        let cadence = plan.routing.window_ms as u64;
        for ((g, bin), mut got) in gathered {
            lines.append(&mut got.owed);
            let group = &plan.routing.groups[g as usize];
            for (i, &s) in group.synopses.iter().enumerate() {
                if !plan.live.is_live(s, w) {
                    continue;
                }
                let spec = &plan.routing.synopses[s as usize];
                if group.mode == Mode::Owned {
                    let Some(held) = self.merged.get_mut(&s) else { continue };
                    let done = self.loaded.entry(s).or_insert(0);
                    answer::merge_loads(plan, s, w, held.state.as_mut(), done, lines);
                    held.close(spec.windowing(), w, cadence, &mut |span, state, items| {
                        answer::continuous(plan, s, state, items, span, lines);
                        let figures = SynopsisFigures {
                            tuples: items,
                            bytes: state.size_bytes(),
                            last_window: w,
                            window_end: w.saturating_add(cadence),
                            worker: spec.home_at(w),
                        };
                        plan.published.publish(s, figures);
                        for &dest in &spec.snapshot_to {
                            snapshots.push(Snapshot {
                                syn: s,
                                window: w,
                                since: span.start.max(0) as u64,
                                items,
                                dest: dest as u32,
                                state: SynBox::new(state.clone_box()),
                            });
                        }
                    });
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

/// Take one incoming batch: fence markers first (the requests take effect before any value
/// routed with them is looked at: the marker came first on its channel, and before the fence
/// closes), then asks (answered now) and values (to their partials or reorder buffers). The
/// batch is emptied in place (timely recycles its allocation).
pub(super) fn take_batch(
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
    if batch.iter().any(|r| matches!(r.val, Val::Part(_))) {
        state.take_device_parts(plan, batch);
    }
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
            let Some(rec) = recs.next() else { continue };
            match Ask::from_rec(&rec) {
                Some(ask) if state.device_ask(plan, me, &ask, rec.time) => {}
                Some(ask) if pair_of(&ask).is_some() => state.ask_pair(plan, me, ask, rec.time, asked),
                Some(ask) => state.ask(plan, me, ask, watermark, asked),
                None => {}
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

impl State {
    /// Close every window the watermark has passed, oldest first: feed its values, then answer
    /// it, handing each window's lines, partials and snapshots to `emit`. At a checkpoint
    /// boundary the watermark has passed, copy the owned states once every window before it is
    /// closed, before any later value is fed.
    pub(super) fn close_passed(
        &mut self,
        plan: &Plan,
        me: usize,
        watermark: u64,
        copied_through: &mut u64,
        mut emit: impl FnMut(u64, &mut Vec<String>, &mut Vec<Partial>, &mut Vec<Snapshot>),
    ) {
        let (mut lines, mut partials, mut snapshots) = (Vec::new(), Vec::new(), Vec::new());
        // Checkpoint boundaries (true) and pair asks' points (false) the watermark has passed.
        let mut stops: Vec<(u64, bool)> =
            plan.checkpoints.borrow().due(*copied_through, watermark).into_iter().map(|b| (b, true)).collect();
        stops.extend(self.pair_points(watermark).into_iter().map(|p| (p, false)));
        stops.sort_unstable();
        for stop in stops.iter().copied().map(Some).chain(std::iter::once(None)) {
            let limit = stop.map_or(watermark, |(b, _)| b);
            while let Some(w) = self.oldest_window(plan) {
                let end = w.saturating_add(plan.routing.window_ms as u64);
                if end > limit {
                    break;
                }
                self.release_all(plan, i64::try_from(end).unwrap_or(i64::MAX), 1, true);
                self.close(plan, w, &mut lines, &mut partials, &mut snapshots);
                emit(w, &mut lines, &mut partials, &mut snapshots);
            }
            if let Some((p, false)) = stop {
                self.take_pair_states(plan, p);
            } else if let Some((b, true)) = stop {
                // Held here before the boundary (a rescale at it moves them after the copy).
                let before = plan.window_of(i64::try_from(b.saturating_sub(1)).unwrap_or(i64::MAX));
                let copies = copy_homed(|s| plan.routing.is_home_at(s, me, before), self.merged.iter(), &self.loaded);
                plan.checkpoints.borrow_mut().hand_in(b, copies, Vec::new());
                *copied_through = b;
            }
        }
        if watermark < u64::MAX {
            let bound = i64::try_from(watermark).unwrap_or(i64::MAX);
            self.closed_before = self.closed_before.max(plan.window_of(bound));
        }
    }

    /// Values of the open window the watermark has passed go to their synopses, a batch at a
    /// time: feeding each stream's synopses a few values per activation, round the streams,
    /// misses the cache on every update (a Count-Min is ~50 KiB).
    pub(super) fn release_passed(&mut self, plan: &Plan, watermark: u64) {
        let bound = i64::try_from(watermark).unwrap_or(i64::MAX);
        let batch = RELEASE_BATCH.min(RELEASE_BUDGET / self.buffers.len().max(1)).max(1);
        self.release_all(plan, bound, batch, false);
    }

    /// True when nothing is buffered or open and no pair ask waits; the buffers then give back
    /// large allocations.
    pub(super) fn drained(&mut self) -> bool {
        // Pair asks waiting for their point keep the capability their states go out at.
        if !self.windows.is_empty() || self.pairs_waiting() || !self.buffers.values().all(Reorder::is_empty) {
            return false;
        }
        self.buffers.retain(|_, b| b.capacity() <= 4096);
        self.staged.retain(|_, v| v.capacity() <= 4096);
        true
    }

    /// Owned groups this worker gives away at a rescale's fence, now that the windows before it
    /// are closed ([`Moves::due`]).
    pub(super) fn give_away(&mut self, plan: &Plan, moves: &mut Moves) -> Vec<Move> {
        moves.due(plan, self.closed_before, &mut self.merged, &mut self.loaded)
    }

    /// Install an owned group's states moved here ([`Moves::install`]).
    pub(super) fn take_over(&mut self, plan: &Plan, moves: &mut Moves, m: Move) -> Result<(), String> {
        moves.install(plan, m, &mut self.merged, &mut self.loaded)
    }

    /// The end-of-input answers of the owned synopses homed on worker `me`: the windows still
    /// open ([`Held::finish`]), then the ad-hoc queries and SAVEs.
    pub(super) fn answers_at_end(&mut self, plan: &Plan, me: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for (s, spec) in plan.routing.synopses.iter().enumerate() {
            let s = s as u32;
            if spec.home != me || spec.mode != Mode::Owned || spec.group == u32::MAX {
                continue;
            }
            match self.merged.get_mut(&s) {
                Some(held) => device_asks::at_end(plan, s, held, &mut lines),
                None => answer::at_end(plan, s, &mut Held::new(spec.initial.as_ref()), &mut lines),
            }
        }
        lines
    }
}
