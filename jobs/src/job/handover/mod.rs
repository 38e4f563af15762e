//! Readers follow the active workers (`--active-workers`, `POST /rescale`) in a job of one
//! process: only the workers holding synopses read input, the others park until a rescale gives
//! them units. Why: with 12 threads of which 3 hold synopses, all 12 read the generator and
//! exchanged the tuples to the 3 (docs/figures.md, Figure 12), where a `-w 3` job has 3 threads
//! doing everything; on 2 cores the 12 busy threads competed.
//!
//! Who reads a unit changes only where the tuples are parsed and routed, never which worker a
//! value goes to (the plan routes it by its time's bin map) nor its arrival sequence (the unit's),
//! so the answers are those of a run without a move. What a move must keep exact is:
//! - **each tuple read once**: the unit's reader (its open file or generator state, its pending
//!   tuple and lateness) goes whole from the old worker to the new one through the process'
//!   [`ReaderBoard`] — nothing is read again, nothing skipped;
//! - **the epochs**: a worker sends values at its input's epoch, which must not be past any
//!   value it will still send. The old worker gives a unit only once the unit's oldest possible
//!   time (its [`Reading::low`]) is not behind the new worker's epoch, and the new worker does
//!   not advance its epoch past the units on their way to it; a worker that reads nothing
//!   follows the readers' epochs (it holds nobody's windows back);
//! - **checkpoint positions**: the old worker reports the unit at the boundaries it knew when
//!   it gave it (the positions it marked there, else where the unit stood), the new one at the
//!   later ones ([`Reading::after`], [`Left`]), so a checkpoint names every unit once.
//!
//! A unit moves at the first round after the rescale's fence at which both sides are ready,
//! not necessarily at the fence: the fence decides the bins, not the readers. Between the
//! workers of one process a unit moves through the board; to a worker of another process
//! (`-n > 1`) it is encoded and sent through a dataflow, with an offer, an acceptance that
//! holds the receiver's epoch, and the unit sent once its `low` has reached that epoch
//! ([`remote`], whose doc gives the protocol and why it cannot deadlock). Kafka inputs
//! (partitions follow the consumer group) are read by every worker as before.

mod remote;

use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::Thread;

use saams_datasets::GeneratorSpec;
use saams_datasets::pace::Pacer;
use saams_operators::Plan;
use timely::worker::Worker;

use crate::metrics::Metrics;
use crate::source::file::Input as Unit;
use crate::stats::Stats;

use super::generated::{generated_routes, generated_stream_readers};
use super::reading::{Left, Reading, Source, reads_unit};

/// The input's epoch of a worker whose input has ended (as the worker loop's).
pub(super) const DONE: u64 = 1 << 62;

/// A unit on its way from one worker to another.
struct Moving {
    to: usize,
    /// The oldest event time (ms) the unit can still produce.
    low: u64,
    reading: Box<Reading>,
}

/// What the board knows, behind one lock (a give, a take and an epoch's advance are each one
/// step of it, so no epoch passes a unit on its way).
struct BoardState {
    /// Per worker of the job (global index): its input's epoch, and whether it holds units (a
    /// worker that holds none follows the others; one whose input ended holds its epoch at
    /// [`DONE`]). Another process' workers' entries are what their gossip said last (a lower
    /// bound: epochs only grow), `(0, true)` before it said anything.
    epochs: Vec<(u64, bool)>,
    /// Per worker of this process: it accepted a unit from another process and holds its
    /// epoch until the unit arrives ([`remote`]).
    expecting: Vec<bool>,
    moving: Vec<Moving>,
}

/// The process' units on their way between its workers, and its workers' epochs.
pub(super) struct ReaderBoard {
    state: Mutex<BoardState>,
    /// Each worker's thread, unparked when a unit is given to it.
    threads: Mutex<Vec<Option<Thread>>>,
}

impl ReaderBoard {
    /// The board of a process of a job of `processes` processes of `workers` workers each, if
    /// its units follow the active workers: a job reading files or the generator (Kafka
    /// partitions follow their consumer group).
    pub(super) fn for_job(processes: usize, workers: usize, kafka: bool) -> Option<Arc<ReaderBoard>> {
        (!kafka).then(|| ReaderBoard::new(processes.max(1) * workers))
    }

    /// A board for `workers` workers, each holding units at epoch 0 until it says otherwise.
    fn new(workers: usize) -> Arc<ReaderBoard> {
        Arc::new(ReaderBoard {
            state: Mutex::new(BoardState {
                epochs: vec![(0, true); workers],
                expecting: vec![false; workers],
                moving: Vec::new(),
            }),
            threads: Mutex::new(vec![None; workers]),
        })
    }

    fn lock(&self) -> MutexGuard<'_, BoardState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The epoch worker `me` may advance to, at most `proposed`: not past the units on their
    /// way to it, nor at all while it waits for a unit from another process. It holds units
    /// (or not) at that epoch from now on (a worker waiting for a unit counts as holding).
    pub(super) fn advance(&self, me: usize, proposed: u64, holding: bool) -> u64 {
        let mut s = self.lock();
        let incoming = s.moving.iter().filter(|m| m.to == me).map(|m| m.low).min().unwrap_or(u64::MAX);
        let (epoch, _) = s.epochs[me];
        let expecting = s.expecting[me];
        let allowed = if expecting { epoch } else { proposed.min(incoming).max(epoch) };
        s.epochs[me] = (allowed, holding || expecting);
        allowed
    }

    /// Worker `me` waits for a unit from another process (its epoch stays where it is), or no
    /// longer does; its epoch now.
    fn expect(&self, me: usize, expecting: bool) -> u64 {
        let mut s = self.lock();
        s.expecting[me] = expecting;
        if expecting {
            s.epochs[me].1 = true;
        }
        s.epochs[me].0
    }

    /// Worker `me`'s epoch, and whether it holds units.
    fn epoch_of(&self, me: usize) -> (u64, bool) {
        self.lock().epochs[me]
    }

    /// Worker `from` of another process said its epoch is `epoch` (epochs only grow: an older
    /// word arriving late changes nothing but the holding flag of that word's time).
    fn heard(&self, from: usize, epoch: u64, holding: bool) {
        let mut s = self.lock();
        if let Some(e) = s.epochs.get_mut(from)
            && epoch >= e.0
        {
            *e = (epoch, holding);
        }
    }

    /// A unit from another process arrived for worker `me`: taken with the others given to it.
    fn arrived(&self, me: usize, low: u64, reading: Reading) {
        self.lock().moving.push(Moving { to: me, low, reading: Box::new(reading) });
    }

    /// How far a worker that holds no units may advance: the oldest epoch of the workers that
    /// hold some, and of the units on their way; [`DONE`] when there are none (every input has
    /// ended).
    pub(super) fn follow(&self) -> u64 {
        let s = self.lock();
        let held = s.epochs.iter().filter(|(_, holding)| *holding).map(|(e, _)| *e);
        held.chain(s.moving.iter().map(|m| m.low)).min().unwrap_or(DONE)
    }

    /// Give `reading` (which can produce nothing older than `low`) to worker `to` if its epoch
    /// is not past `low`; else hand it back.
    fn give(&self, to: usize, low: u64, reading: Box<Reading>) -> Result<(), Box<Reading>> {
        let mut s = self.lock();
        if s.epochs.get(to).is_none_or(|&(epoch, _)| epoch > low) {
            return Err(reading);
        }
        s.moving.push(Moving { to, low, reading });
        drop(s);
        if let Some(Some(t)) = self.threads.lock().ok().as_deref().and_then(|t| t.get(to)) {
            t.unpark();
        }
        Ok(())
    }

    /// The units given to worker `me`; it holds units from now on if it got any.
    fn take(&self, me: usize) -> Vec<Reading> {
        let mut s = self.lock();
        if !s.moving.iter().any(|m| m.to == me) {
            return Vec::new();
        }
        let (mine, others): (Vec<Moving>, Vec<Moving>) =
            std::mem::take(&mut s.moving).into_iter().partition(|m| m.to == me);
        s.moving = others;
        s.epochs[me].1 = true;
        mine.into_iter().map(|m| *m.reading).collect()
    }
}

/// What a worker's side of the moves between processes needs of the job.
pub(super) struct JobInputs {
    pub(super) workers_per_process: usize,
    /// The generator's spec and the input units (to re-open a unit that arrives).
    pub(super) inputs: (Option<GeneratorSpec>, Vec<Unit>),
    /// Where refusals, and units that cannot be re-opened, are counted.
    pub(super) counts: (Arc<Metrics>, Arc<Stats>),
    /// The process' `--rate` bucket: it fills at the process' share of the readers.
    pub(super) pacer: Pacer,
}

/// One worker's side of the moves: the board, and the rescales whose assignment it has applied
/// to its units.
pub(super) struct Handover {
    board: Arc<ReaderBoard>,
    me: usize,
    /// Rescales of the plan applied to the units' assignment.
    seen: usize,
    /// A job of several processes: the moves to and from their workers.
    remote: Option<remote::Remote>,
    /// The process' `--rate` bucket, and its workers per process.
    pacer: (Pacer, usize),
}

/// Where a worker's units are, for a move: its readers and those it left (with the newest
/// checkpoint boundary it knows of).
pub(super) type Units<'a> = (&'a mut Vec<Reading>, &'a mut Vec<Left>, u64);

impl Handover {
    /// The worker's side; the plan's rescales so far are in the units it opens (which the
    /// plan's active workers read). With several processes it builds the dataflow of the moves
    /// between them (every worker does, in the same order).
    pub(super) fn new(board: Arc<ReaderBoard>, worker: &mut Worker, plan: &Plan, job: JobInputs) -> Handover {
        let (me, peers) = (worker.index(), worker.peers());
        if let Ok(mut t) = board.threads.lock()
            && let Some(slot) = t.get_mut(me)
        {
            *slot = Some(std::thread::current());
        }
        let JobInputs { workers_per_process, inputs, counts, pacer } = job;
        let per_process = workers_per_process.max(1);
        let remote =
            (peers > per_process).then(|| remote::Remote::new(worker, (me, per_process, peers), inputs, counts));
        let handover = Handover { board, me, seen: plan.routing.rescales().len(), remote, pacer: (pacer, per_process) };
        handover.share_rate(plan);
        handover
    }

    /// `--rate` is the job's: each process reads its share of it, the share of the active
    /// workers (the readers) it has. (A fixed `rate / processes` each left a process without
    /// readers its share unused: `-n 2 --active-workers 1` read at half the rate.)
    fn share_rate(&self, plan: &Plan) {
        let (pacer, per_process) = &self.pacer;
        let active = plan.routing.active_workers().max(1);
        let first = self.me - self.me % per_process;
        let here = active.saturating_sub(first).min(*per_process);
        pacer.share(here as f64 / active as f64, std::time::Instant::now());
    }

    /// This worker's input has ended: it holds nobody's windows back from now on (the other
    /// processes' workers are told at once).
    pub(super) fn stop_reading(&mut self) {
        self.board.advance(self.me, DONE, true);
        if let Some(r) = self.remote.as_mut() {
            r.publish(&self.board, true);
        }
    }

    /// The board (epochs, following).
    pub(super) fn board(&self) -> &ReaderBoard {
        &self.board
    }

    /// Whether the plan applied rescales since the last call (then every unit of this worker
    /// learns where it goes: [`Handover::assign`]).
    pub(super) fn rescaled(&mut self, plan: &Plan) -> bool {
        let n = plan.routing.rescales().len();
        let rescaled = std::mem::replace(&mut self.seen, n) != n;
        if rescaled {
            self.share_rate(plan);
        }
        rescaled
    }

    /// Each of `readers` learns the worker that reads it under the plan's active workers (as a
    /// new job with them would be given it), if not this one.
    pub(super) fn assign(
        &self,
        plan: &Plan,
        (spec, units): (Option<&GeneratorSpec>, &[Unit]),
        readers: &mut [Reading],
    ) {
        let active = plan.routing.active_workers().max(1);
        let streams = spec.map(|s| generated_stream_readers(plan, s, active));
        for r in readers.iter_mut() {
            if self.remote.as_ref().is_some_and(|m| m.committed(r)) {
                // Accepted by a worker of another process: this worker sends it there (which
                // assigns it anew).
                continue;
            }
            let to = match &r.source {
                Source::Generated(..) => streams.as_ref().and_then(|s| s.get(r.unit as usize).copied()),
                Source::Lines(_) => units
                    .get(r.unit as usize)
                    .and_then(|u| (0..active).find(|&w| reads_unit((r.unit as usize, u), (w, active)))),
                Source::Kafka => None,
            };
            r.moving_to = to.filter(|&w| w != self.me);
        }
    }

    /// Give the units that go elsewhere to their workers, those that can be given now (see the
    /// module's doc); the positions at the boundaries known here (`known`) stay here (`left`).
    /// True if this worker gave any.
    pub(super) fn give(&mut self, (readers, left, known): Units<'_>, lateness_ms: i64, checkpoints: bool) -> bool {
        if readers.iter().all(|r| r.moving_to.is_none()) {
            if let Some(m) = self.remote.as_mut() {
                m.settle(readers);
            }
            return false;
        }
        let mut gave = false;
        let mut kept = Vec::with_capacity(readers.len());
        for mut r in readers.drain(..) {
            let Some(to) = r.moving_to.take() else {
                kept.push(r);
                continue;
            };
            let low = r.low(lateness_ms);
            if let Some(m) = self.remote.as_mut()
                && m.crosses(to)
                && !m.ready(&r, to, (low, known))
            {
                // Offered, or accepted at an epoch the unit has not reached: read on here.
                r.moving_to = Some(to);
                kept.push(r);
                continue;
            }
            let at = r.position_now();
            let marks = std::mem::take(&mut r.marks);
            r.marks.skip_before = marks.skip_before;
            let after = r.after;
            r.after = known.max(after);
            let given = match self.remote.as_mut().filter(|m| m.crosses(to)) {
                Some(m) => m.send_unit(Box::new(r), to, low),
                None => self.board.give(to, low, Box::new(r)),
            };
            match given {
                Ok(()) => {
                    gave = true;
                    if checkpoints && known > after {
                        left.push(Left { at, marks, after, upto: known });
                    }
                }
                Err(mut r) => {
                    // Its worker is ahead of it: read on here, and try again next round.
                    (r.marks, r.after, r.moving_to) = (marks, after, Some(to));
                    kept.push(*r);
                }
            }
        }
        *readers = kept;
        if let Some(m) = self.remote.as_mut() {
            m.settle(readers);
        }
        gave
    }

    /// Take the units given to this worker: their generated streams' routes are this plan's,
    /// and they mark the checkpoint boundaries after the old worker's.
    pub(super) fn take(&mut self, plan: &Plan, readers: &mut Vec<Reading>) -> bool {
        if let Some(m) = self.remote.as_mut() {
            // The newest boundary known here that is still open (those written are known to
            // every worker: the frontier passed them, so every epoch did).
            let known = plan.checkpoints.borrow().boundaries.keys().next_back().copied().unwrap_or(0);
            m.poll(&self.board, readers, known);
            m.publish(&self.board, false);
        }
        let taken = self.board.take(self.me);
        if taken.is_empty() {
            return false;
        }
        let checkpoints = plan.checkpoints.borrow();
        for mut r in taken {
            if let Source::Generated(g, routes) = &mut r.source {
                *routes = generated_routes(plan, g);
            }
            for &b in checkpoints.boundaries.keys().filter(|&&b| b > r.after) {
                r.marks.want(b);
            }
            readers.push(r);
        }
        true
    }
}
