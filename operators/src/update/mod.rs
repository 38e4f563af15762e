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

mod distributor;
mod moves;
mod reorder;
mod state;

use std::cell::RefCell;
use std::rc::Rc;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::{DistributorPact, Exchange, Pipeline};
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::core::{ConnectLoop, Feedback, OkErr};
use timely::dataflow::operators::generic::Operator;

use crate::out::Out;
use crate::plan::Plan;
use crate::record::{Rec, RecBatch};
use distributor::RunDistributor;
pub use moves::{Move, MovedState, moved_totals};
use state::{State, take_batch};

/// What the update operator emits: its output, and owned states moving to their new owner at a
/// rescale's fence (back into the operator, on the worker they go to).
#[derive(Clone, Debug)]
enum Emitted {
    Out(Out),
    Move(Move),
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

/// Records in plain vectors (tests, examples; the job's come from
/// [`crate::JoinRegistry::join_registry`] as [`RecBatch`]es): each moved into a batch first.
impl<'scope> UpdateSynopses<'scope> for Stream<'scope, u64, Vec<Rec>> {
    fn update_synopses(self, plan: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<Out>> {
        let batches = self.unary::<CapacityContainerBuilder<RecBatch>, _, _, _>(Pipeline, "RecBatches", |_, _| {
            |input, output| {
                input.for_each_stamp(|stamp, data| {
                    let mut session = output.session(&stamp);
                    data.for_each(|recs| session.give_container(&mut RecBatch(std::mem::take(recs))));
                });
            }
        });
        batches.update_synopses(plan)
    }
}

impl<'scope> UpdateSynopses<'scope> for Stream<'scope, u64, RecBatch> {
    fn update_synopses(self, shared: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<Out>> {
        let me = self.scope().index();
        let route = shared.clone();
        // Runs on the reading worker: partition-based values stay where they were read.
        let pact = DistributorPact(move |_peers: usize| RunDistributor::new(route, me));
        // Moved states come back one millisecond later: a loop needs a summary above zero,
        // and nothing waits for their frontier (the new owner counts what it expects).
        let (handle, moved) = self.scope().feedback::<Vec<Move>>(1);
        let to_owner = Exchange::new(|m: &Move| u64::from(m.to));
        let emitted = self.binary_frontier::<_, CapacityContainerBuilder<Vec<Emitted>>, _, _, _, _>(
            moved,
            pact,
            to_owner,
            "UpdateSynopses",
            move |cap, _info| {
                let mut step = Step::new(shared, me, cap);
                move |(input, frontier), (moved, moved_frontier), output| {
                    moved.for_each_stamp(|_, data| step.take_over(data.flat_map(|batch| batch.drain(..))));
                    let records = frontier.frontier().iter().min().copied().unwrap_or(u64::MAX);
                    let watermark = step.limit(records);
                    let update = step.shared.borrow().update;
                    input.for_each_stamp(|stamp, data| {
                        if !update {
                            data.for_each(|batch| batch.0.clear());
                            return;
                        }
                        let Some(&time) = stamp.least() else {
                            data.for_each(|batch| batch.0.clear());
                            return;
                        };
                        if step.held.as_ref().is_none_or(|c| time < *c.time()) {
                            step.held = stamp.retain_least(0);
                        }
                        for batch in data {
                            let at = (me, watermark, step.copied_through);
                            take_batch(
                                &step.shared,
                                &mut step.state,
                                &mut batch.0,
                                &mut step.runs,
                                at,
                                &mut step.asked,
                            );
                        }
                    });
                    let ended = frontier.is_empty() && moved_frontier.is_empty();
                    let mut give = |cap: &Capability<u64>, items: Vec<Emitted>| {
                        output.session(cap).give_iterator(items.into_iter());
                    };
                    step.after_input((records, watermark), ended, &mut give);
                }
            },
        );
        let (out, moves) = emitted.ok_err::<Vec<Out>, _, Vec<Move>, _, _>(|e| match e {
            Emitted::Out(o) => Ok(o),
            Emitted::Move(m) => Err(m),
        });
        moves.connect_loop(handle);
        out
    }
}

/// The update operator between activations: its state, its moves, and its capabilities.
struct Step {
    shared: Rc<RefCell<Plan>>,
    me: usize,
    state: State,
    moves: moves::Moves,
    /// Checkpoint boundaries before this one (exclusive) have their copies taken.
    copied_through: u64,
    /// Held at the frontier while anything is buffered or open: every window still to close
    /// ends after it, so the window's output can be emitted at its close time.
    held: Option<Capability<u64>>,
    /// The end-of-input answers go out at `u64::MAX`.
    end_cap: Option<Capability<u64>>,
    /// Moves go out at the input's frontier: held until the input ends.
    move_cap: Option<Capability<u64>>,
    /// Runs of one incoming batch: ((group, bin), length).
    runs: Vec<((u32, u64), usize)>,
    asked: Vec<Out>,
}

impl Step {
    fn new(shared: Rc<RefCell<Plan>>, me: usize, cap: Capability<u64>) -> Step {
        let mut state = State::default();
        state.restore(&shared.borrow(), me);
        let moves = moves::Moves::after(shared.borrow().checkpoints.borrow().restored_boundary);
        let end_cap = Some(cap.delayed(&u64::MAX));
        let (held, move_cap, runs, asked) = (None, Some(cap), Vec::new(), Vec::new());
        Step { shared, me, state, moves, copied_through: 0, held, end_cap, move_cap, runs, asked }
    }

    /// Install the states moved here.
    fn take_over(&mut self, moved: impl Iterator<Item = Move>) {
        let plan = self.shared.borrow();
        for m in moved {
            if let Err(e) = self.state.take_over(&plan, &mut self.moves, m) {
                eprintln!("saams: a rescale's moved state: {e}");
                std::process::exit(2);
            }
        }
    }

    /// The watermark windows may close up to: the input's frontier, held at the oldest fence
    /// whose moved states have not arrived here yet.
    fn limit(&mut self, records: u64) -> u64 {
        self.moves.refresh(&self.shared.borrow(), self.me);
        self.moves.limit(records)
    }

    /// After the input: answer asks, close what the watermark passed, give away the states
    /// due, release values, and at the end of everything the end-of-input answers.
    fn after_input(
        &mut self,
        (records, watermark): (u64, u64),
        ended: bool,
        give: &mut impl FnMut(&Capability<u64>, Vec<Emitted>),
    ) {
        let watermark = self.limit(records).min(watermark);
        self.state.pair_hold = self.moves.waiting_from();
        let (me, state) = (self.me, &mut self.state);
        if !self.asked.is_empty()
            && let Some(cap) = &self.held
        {
            // Answered now: nothing waits for a window.
            give(cap, self.asked.drain(..).map(Emitted::Out).collect());
        }
        let plan = self.shared.borrow();
        let plan = &*plan;
        state.feed_staged(plan);
        let held = &self.held;
        state.close_passed(plan, me, watermark, &mut self.copied_through, |w, lines, partials, snapshots| {
            if let Some(cap) = held {
                let mut out: Vec<Emitted> = lines.drain(..).map(|l| Emitted::Out(Out::Line(l))).collect();
                out.extend(partials.drain(..).map(|p| Emitted::Out(Out::Partial(p))));
                out.extend(snapshots.drain(..).map(|s| Emitted::Out(Out::Snapshot(s))));
                give(&cap.delayed(&plan.close_time(w)), out);
            }
        });
        if let Some(cap) = &self.move_cap {
            let given = state.give_away(plan, &mut self.moves);
            if !given.is_empty() {
                give(cap, given.into_iter().map(Emitted::Move).collect());
            }
        }
        if let Some(cap) = self.held.as_ref().filter(|_| !state.pair_out.is_empty()) {
            // Pair states taken at their point (`held` is still before the window at it).
            give(cap, state.pair_out.drain(..).map(Emitted::Out).collect());
        }
        state.release_passed(plan, watermark);
        if state.drained() {
            self.held = None;
        } else if let Some(cap) = self.held.as_mut()
            && watermark > *cap.time()
        {
            cap.downgrade(&watermark);
        }
        if records == u64::MAX && !self.moves.owes() {
            self.move_cap = None;
        } else if let Some(cap) = self.move_cap.as_mut()
            && records > *cap.time()
        {
            cap.downgrade(&records);
        }
        if ended
            && !self.moves.pending()
            && let Some(cap) = self.end_cap.take()
        {
            give(&cap, state.answers_at_end(plan, me).into_iter().map(|l| Emitted::Out(Out::Line(l))).collect());
        }
    }
}
