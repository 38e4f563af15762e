//! Checkpoints, the operators' side: at an agreed window boundary every stateful operator
//! takes a copy of the state that summarizes the values *before* the boundary, and a restarted
//! job starts its operators from such copies.
//!
//! The frontier is the barrier. The job agrees on a boundary `b` (a window start, in event-time
//! ms) the way it agrees on fences for live requests ([`crate::Plan::apply_through`]): after the
//! boundary is in every worker's plan, no value at or after `b` has been routed anywhere. Each
//! operator then takes its copy in the activation in which its input frontier first passes
//! `b`, after closing every window before `b` and before feeding any value at or after it:
//!
//! - `update_synopses`: the merged state of the owned synopses it owns;
//! - `fold_partials`: the merged state of the spread synopses homed here;
//! - `answer_pairs`: the latest states of the synopses in pair queries, and the last answered
//!   set of each continuous set-valued query;
//! - `monitor_sites` and `monitor_coordinator` (the monitoring kind, [`crate::monitor`]): each
//!   site hosted here once it has processed every event before `b`, and each coordinator homed
//!   here once it has applied every message sent before `b` and answered every window before
//!   it (items, messages and refusals at or after `b` are left out: they come again).
//!
//! Besides the operators' copies, a job merging devices' shipments copies its process' table of
//! asks waiting for devices' answers into every part ([`crate::device_replies::RepliesCopy`]).
//!
//! Nothing of a window at or after `b` is copied: partials, reorder buffers and values in
//! flight are rebuilt by re-reading the inputs from the positions where each first read a value
//! at or after `b` (the job's readers keep those positions). So a checkpoint's size is the
//! synopses' size, whatever the rate or the window.
//!
//! Every state is keyed by synopsis (or query) id, never by worker: a job with another number
//! of workers or processes finds each state's new home from its own plan.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use saams::Synopsis;
use saams::checkpoint::MonitorState;

use crate::ask::Ask;
use crate::device_replies::RestoredReplies;
use crate::window::Held;

/// The operators that take a copy at every boundary (the job waits for all of them): the
/// synopses' three and the monitoring kind's two.
pub const STATEFUL_OPERATORS: u32 = 5;

/// An operator's way through the boundaries: which it has copied its state at.
#[derive(Default)]
pub(crate) struct BoundaryCopies {
    /// Boundaries at or before this one are copied.
    copied_through: u64,
}

impl BoundaryCopies {
    /// The boundary to copy at now: one the operator's frontier (`watermark`) has passed and
    /// that is not after `next`, the oldest window the operator has still to process (every
    /// window before the boundary is processed then).
    pub(crate) fn due(&self, checkpoints: &RefCell<Checkpointing>, watermark: u64, next: Option<u64>) -> Option<u64> {
        let b = checkpoints.borrow().next_due(self.copied_through, watermark)?;
        next.is_none_or(|w| w >= b).then_some(b)
    }

    /// Hand in the copies taken at `b`.
    pub(crate) fn hand_in(
        &mut self,
        checkpoints: &RefCell<Checkpointing>,
        b: u64,
        states: Vec<HeldState>,
        sets: Vec<(u32, Vec<String>)>,
    ) {
        checkpoints.borrow_mut().hand_in(b, states, sets);
        self.copied_through = b;
    }

    /// Hand in the monitoring kind's copies taken at `b` (sites or coordinators).
    pub(crate) fn hand_in_monitors(
        &mut self,
        checkpoints: &RefCell<Checkpointing>,
        b: u64,
        monitors: Vec<MonitorState>,
    ) {
        let mut checkpoints = checkpoints.borrow_mut();
        checkpoints.hand_in(b, Vec::new(), Vec::new());
        checkpoints.taken.entry(b).or_default().monitors.extend(monitors);
        self.copied_through = b;
    }
}

/// Copies of the merged states of `merged` whose synopses are homed here (`homed_here`), by
/// synopsis (with the LOADs merged into each, from `loaded`): the open period, and a sliding
/// synopsis' closed panes after it.
pub(crate) fn copy_homed<'a>(
    homed_here: impl Fn(u32) -> bool,
    merged: impl Iterator<Item = (&'a u32, &'a Held)>,
    loaded: &HashMap<u32, usize>,
) -> Vec<HeldState> {
    let mut copies: Vec<HeldState> = Vec::new();
    for (&syn, held) in merged.filter(|(s, _)| homed_here(**s)) {
        copies.push(HeldState {
            syn,
            latest: false,
            pane: false,
            since: held.since,
            until: held.fed_to,
            state: held.state.clone(),
            items: held.items,
            loads_merged: loaded.get(&syn).copied().unwrap_or(0),
        });
        copies.extend(held.panes.iter().map(|pane| HeldState {
            syn,
            latest: false,
            pane: true,
            since: Some(pane.start),
            until: pane.start,
            state: pane.state.clone(),
            items: pane.items,
            loads_merged: 0,
        }));
    }
    copies.sort_by_key(|h| (h.syn, h.pane, h.since));
    copies
}

/// A synopsis' cumulative state as an operator holds it.
pub struct HeldState {
    /// The synopsis (index in [`crate::plan::Routing::synopses`]).
    pub syn: u32,
    /// True for the state a pair query reads (`answer_pairs`), false for the merged state at
    /// the synopsis' home.
    pub latest: bool,
    /// A closed pane of a sliding synopsis ([`crate::window::Pane`]), at its home.
    pub pane: bool,
    /// The first event time the state covers ([`crate::window::Held::since`], a pane's start).
    pub since: Option<u64>,
    /// The end of the newest window it closed ([`crate::window::Held::fed_to`]).
    pub until: u64,
    /// The state.
    pub state: Box<dyn Synopsis>,
    /// The values it summarizes.
    pub items: u64,
    /// Live LOADs merged into it so far.
    pub loads_merged: usize,
}

/// What one worker's operators copied at one boundary.
#[derive(Default)]
pub struct Taken {
    /// Operators that have passed the boundary (each adds its copies, possibly none).
    pub operators: u32,
    /// Synopsis states.
    pub states: Vec<HeldState>,
    /// Per continuous set-valued query: the members of its last answered set.
    pub sets: Vec<(u32, Vec<String>)>,
    /// The monitoring kind's sites and coordinators.
    pub monitors: Vec<MonitorState>,
}

/// One worker's checkpoint bookkeeping, shared by its operators through the plan.
#[derive(Default)]
pub struct Checkpointing {
    /// Agreed boundaries (ms) not yet handed to the job, with their checkpoint ids.
    pub boundaries: BTreeMap<u64, u64>,
    /// Copies taken, by boundary.
    pub taken: BTreeMap<u64, Taken>,
    /// States to start from (a restarted job), by synopsis: the merged state at its home (with
    /// a sliding synopsis' panes), and the LOADs merged into it.
    pub restored: HashMap<u32, (Held, usize)>,
    /// States to start from for pair queries, by synopsis.
    pub restored_latest: HashMap<u32, (Box<dyn Synopsis>, u64)>,
    /// Last answered sets to start from, by continuous set-valued query.
    pub restored_sets: HashMap<u32, Vec<String>>,
    /// The monitoring kind's sites and coordinators to start from (each taken by the worker
    /// that hosts it in this job: [`crate::monitor`]).
    pub restored_monitors: Vec<MonitorState>,
    /// The boundary (ms) the restored states were taken at (0 for a job not resumed): the
    /// holder of a state is its home at that window (a rescale may move it on later).
    pub restored_boundary: u64,
    /// A job merging devices: the plan holds its process' table of devices' replies
    /// ([`crate::Plan::attach_device_replies`]), which every part copies
    /// ([`crate::device_replies::RepliesCopy`]).
    pub replies_attached: bool,
    /// The table of devices' replies a resumed job's process starts from (shared by its
    /// workers; installed when the table is attached).
    pub restored_replies: Option<Arc<RestoredReplies>>,
    /// A resumed job's worker 0: the asks of the logged live requests fenced after the
    /// restored boundary, to send again (their answers' lines were after the cut, or never
    /// written), each with its fence.
    pub asks_again: Vec<(u64, Ask)>,
    /// Asks of live requests this worker sent at an input time before an agreed boundary that
    /// is before their fence: (ask id, input time, fence). See [`Checkpointing::sent_before`].
    pub sent: Vec<(u64, u64, u64)>,
}

impl Checkpointing {
    /// The boundaries an operator that has taken copies through `done` (exclusive: boundaries
    /// at or before it are done) must take now that its frontier is at `watermark`: every
    /// agreed boundary in `(done, watermark]`, oldest first.
    ///
    /// ```
    /// use saams_operators::checkpoint::Checkpointing;
    /// let mut c = Checkpointing::default();
    /// c.boundaries.insert(60_000, 1);
    /// c.boundaries.insert(120_000, 2);
    /// assert_eq!(c.due(0, 59_999), Vec::<u64>::new());
    /// assert_eq!(c.due(0, 60_000), vec![60_000]);
    /// assert_eq!(c.due(60_000, u64::MAX), vec![120_000]);
    /// ```
    pub fn due(&self, done: u64, watermark: u64) -> Vec<u64> {
        self.boundaries.range(done.saturating_add(1)..).map(|(&b, _)| b).take_while(|&b| b <= watermark).collect()
    }

    /// The oldest boundary in `(done, watermark]`, if any ([`Checkpointing::due`]'s first).
    pub fn next_due(&self, done: u64, watermark: u64) -> Option<u64> {
        self.boundaries.range(done.saturating_add(1)..).map(|(&b, _)| b).next().filter(|&b| b <= watermark)
    }

    /// The ids of the asks this worker sent before boundary `b` for requests fenced after it,
    /// for its part at `b` ([`crate::device_replies::RepliesCopy::sent_before`]); those fenced
    /// at or before `b` are forgotten (a later boundary is after their fence too).
    ///
    /// Why: a job resumed from `b` applies the requests fenced after `b` again and makes their
    /// asks again, as their answer lines are after the cut, except these, whose lines are at
    /// their (earlier) input time: before the cut.
    ///
    /// ```
    /// use saams_operators::checkpoint::Checkpointing;
    /// let mut c = Checkpointing::default();
    /// c.sent = vec![(1, 50_000, 60_000), (2, 55_000, 120_000), (3, 65_000, 120_000)];
    /// assert_eq!(c.sent_before(60_000), vec![2]);
    /// assert_eq!(c.sent.len(), 2, "the ask fenced at the boundary is forgotten");
    /// ```
    pub fn sent_before(&mut self, b: u64) -> Vec<u64> {
        self.sent.retain(|&(_, _, fence)| fence > b);
        self.sent.iter().filter(|&&(_, at, _)| at < b).map(|&(id, ..)| id).collect()
    }

    /// An operator hands in its copies for boundary `b` (possibly none).
    pub fn hand_in(&mut self, b: u64, states: Vec<HeldState>, sets: Vec<(u32, Vec<String>)>) {
        let taken = self.taken.entry(b).or_default();
        taken.operators += 1;
        taken.states.extend(states);
        taken.sets.extend(sets);
    }

    /// The oldest boundary every stateful operator has handed in, with its id and copies.
    pub fn take_complete(&mut self) -> Option<(u64, u64, Taken)> {
        let (&b, taken) = self.taken.first_key_value()?;
        if taken.operators < STATEFUL_OPERATORS {
            return None;
        }
        let taken = self.taken.remove(&b)?;
        let id = self.boundaries.remove(&b).unwrap_or(0);
        Some((b, id, taken))
    }
}
