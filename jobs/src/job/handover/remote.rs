//! Units moving between processes (`-n > 1`): a unit's reader state is encoded (a file unit's
//! position, a generated stream's walk) and sent through a dataflow of its own
//! ([`crate::dataflow::reader_moves`]) to the worker that reads it under the new active set,
//! which re-opens the file at the position or goes on with the walk.
//!
//! The protocol, per unit, between the giver `g` (which holds it) and the receiver `w` (the
//! worker of another process that reads it under the new active set):
//! 1. `g` sends `Offer`. `w` checks it can read the unit (its file opens there) and that its
//!    own input has not ended; if not, it answers `Refuse` with the reason (logged, counted in
//!    `saams_unit_moves_refused_total`) and `g` keeps reading the unit until the next rescale.
//! 2. Else `w` holds its epoch from now on (it advances no further while it waits for a unit)
//!    and answers `Accept` with that epoch `e` and the newest checkpoint boundary it knows.
//! 3. `g` reads on until the unit's oldest possible time ([`Reading::low`]) is not behind `e`
//!    and `g` knows that boundary too, then sends the unit (`Unit`), its positions at the
//!    boundaries `g` knows staying with `g`, `w` marking the later ones. (Why the boundary: `w`
//!    may be past a boundary `g` has not heard of yet; once `g`'s epoch passes it too, `w`
//!    could write its part of that checkpoint before the unit arrives, and neither would name
//!    the unit there. A boundary `w` learns after accepting is at or after `e`, which `w`
//!    does not pass before the unit arrives.)
//!    an accepted unit is `g`'s to send (a later rescale does not take it back: `w` assigns it
//!    anew once it has it). If the unit ends at `g` first, `g` sends `Cancel`.
//! 4. `w` puts the unit on its process' [`ReaderBoard`] (its epoch cannot pass the unit's
//!    `low` there) and, once it waits for no unit, advances again.
//!
//! Why not the receiver working out on its own which units it will receive (it could, from the
//! plan): when rescales follow each other faster than units move, a unit expected at one
//! rescale no longer comes at the next, and the receiver cannot tell whether it was already
//! sent — stopping to wait could let its epoch pass a unit on the wire. With the offer, each
//! wait is one the giver knows of and ends (by sending or cancelling).
//!
//! Why it cannot deadlock: a giver waits for nothing but its own unit's `low` to reach `e`. The
//! job's frontier is at most `e` while `w` holds; the workers below it hold the frontier and
//! read without a span limit (`span_end`), so the frontier reaches `e`; then the giver's epoch
//! — the oldest `low` of its units — is at least the frontier, so the unit's `low` is at least
//! `e`. A unit that ends first is cancelled. Two receivers holding never wait for each other:
//! holding stops only a worker's epoch, never its reading.
//!
//! Every worker also tells the other processes' workers its epoch (and whether it holds or
//! awaits units) when it changes, at most every [`GOSSIP_EVERY`]: a worker that reads nothing
//! follows the oldest of them ([`ReaderBoard::follow`]); a gossiped epoch arrives late, so it is
//! a lower bound, which holds the follower back a little and is never past a reader.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use saams_datasets::GeneratorSpec;
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use crate::dataflow::MoveInput;
use crate::metrics::Metrics;
use crate::source::file::{Input as Unit, UnitReader};
use crate::source::generated::Generated;
use crate::stats::Stats;

use super::super::reading::{Pending, Reading, Source};
use super::{DONE, ReaderBoard};

/// The shortest time between two epoch words of one worker: a worker that reads nothing wakes
/// for each (it parks up to 20 ms between looks anyway).
const GOSSIP_EVERY: Duration = Duration::from_millis(20);

/// A unit across the job: a generated stream's index or an input unit's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct UnitId {
    generated: bool,
    unit: u64,
}

impl UnitId {
    fn of(r: &Reading) -> UnitId {
        UnitId { generated: matches!(r.source, Source::Generated(..)), unit: r.unit }
    }
}

/// Where a moved unit reads on.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum PackedAt {
    /// A file unit: the byte offset and line number of its next line (its pending tuple's
    /// line, read again there).
    Lines { offset: u64, line: u64 },
    /// A generated stream: tuples handed out, the walk's state, and the tuple generated but
    /// not routed yet (index, time, values).
    Generated { index: u64, walk: Vec<u64>, pending: Option<(u64, i64, [f64; 6])> },
}

/// A unit's reader state on the wire.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Packed {
    unit: UnitId,
    /// The oldest event time (ms) it can still produce.
    low: u64,
    max_time: i64,
    /// The receiver reports its positions at checkpoint boundaries after this one.
    after: u64,
    skip_before: i64,
    at: PackedAt,
}

/// What the workers of different processes tell each other about units (see the module's doc).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Wire {
    /// Worker `from`'s input epoch, and whether it holds (or awaits) units.
    Epoch {
        from: u32,
        epoch: u64,
        holding: bool,
    },
    Offer {
        from: u32,
        unit: UnitId,
    },
    /// `from` holds its epoch at `epoch` until the unit arrives; `known`: the newest
    /// checkpoint boundary it knows.
    Accept {
        from: u32,
        unit: UnitId,
        epoch: u64,
        known: u64,
    },
    Refuse {
        from: u32,
        unit: UnitId,
        reason: String,
    },
    /// The accepted unit will not come (it ended, or was moved elsewhere before it was accepted).
    Cancel {
        unit: UnitId,
    },
    Unit(Box<Packed>),
}

/// One worker's side of the moves between processes.
pub(super) struct Remote {
    me: usize,
    workers_per_process: usize,
    peers: usize,
    input: MoveInput<Wire>,
    inbox: Rc<RefCell<Vec<Wire>>>,
    /// Something was sent since the input last advanced (an exchange hands data on once its
    /// input's time moves).
    sent: bool,
    /// Units of this worker offered to a worker of another process: to whom, and once it
    /// accepted, the epoch it holds at and the newest checkpoint boundary it knew.
    offered: BTreeMap<UnitId, (usize, Option<(u64, u64)>)>,
    /// Units this worker accepted and waits for, from whom.
    awaited: BTreeMap<UnitId, usize>,
    /// The epoch word last gossiped, and when.
    told: (Option<(u64, bool)>, Instant),
    /// What a unit is re-opened from: the generator's spec and the job's input units.
    inputs: (Option<GeneratorSpec>, Vec<Unit>),
    /// Where refusals and units that cannot be re-opened are counted.
    counts: (Arc<Metrics>, Arc<Stats>),
}

/// Where a worker of a job with several processes stands: its global index, workers per
/// process, and the job's workers.
pub(super) type Shape = (usize, usize, usize);

impl Remote {
    /// Worker `me`'s side, with its dataflow built (every worker builds it, in the same order).
    pub(super) fn new(
        worker: &mut Worker,
        (me, workers_per_process, peers): Shape,
        inputs: (Option<GeneratorSpec>, Vec<Unit>),
        counts: (Arc<Metrics>, Arc<Stats>),
    ) -> Remote {
        let inbox: Rc<RefCell<Vec<Wire>>> = Rc::default();
        let input = crate::dataflow::reader_moves(worker, inbox.clone());
        Remote {
            me,
            workers_per_process: workers_per_process.max(1),
            peers,
            input,
            inbox,
            sent: false,
            offered: BTreeMap::new(),
            awaited: BTreeMap::new(),
            told: (None, Instant::now()),
            inputs,
            counts,
        }
    }

    /// Whether worker `to` is in another process.
    pub(super) fn crosses(&self, to: usize) -> bool {
        to / self.workers_per_process != self.me / self.workers_per_process
    }

    fn send(&mut self, to: usize, wire: Wire) {
        self.input.send((to as u64, wire));
        self.sent = true;
    }

    /// Hand on what was sent: advance the input's time.
    fn flush(&mut self) {
        if std::mem::take(&mut self.sent) {
            let next = *self.input.time() + 1;
            self.input.advance_to(next);
        }
    }

    /// Tell the other processes' workers this worker's epoch if it changed (at once if it
    /// started or stopped holding units, or `now`; else at most every [`GOSSIP_EVERY`]).
    pub(super) fn publish(&mut self, board: &ReaderBoard, now: bool) {
        let word = board.epoch_of(self.me);
        let changed = match self.told.0 {
            None => true,
            Some(told) if told == word => false,
            Some((_, holding)) => now || holding != word.1 || self.told.1.elapsed() >= GOSSIP_EVERY,
        };
        if !changed {
            return;
        }
        self.told = (Some(word), Instant::now());
        let (epoch, holding) = word;
        for to in 0..self.peers {
            if self.crosses(to) {
                self.send(to, Wire::Epoch { from: self.me as u32, epoch, holding });
            }
        }
        self.flush();
    }

    /// Whether a worker of another process accepted `r`: the move is this worker's to
    /// complete, whatever later rescales say (the receiver assigns the unit anew).
    pub(super) fn committed(&self, r: &Reading) -> bool {
        self.offered.get(&UnitId::of(r)).is_some_and(|(_, accepted)| accepted.is_some())
    }

    /// Whether `r`, which goes to worker `to` of another process, can be sent now: `to`
    /// accepted it, `low` is not behind the epoch it holds at, and this worker knows
    /// (`known`) every checkpoint boundary it knew. Offers it first.
    pub(super) fn ready(&mut self, r: &Reading, to: usize, (low, known): (u64, u64)) -> bool {
        let id = UnitId::of(r);
        match self.offered.get(&id) {
            Some(&(w, accepted)) if w == to => accepted.is_some_and(|(epoch, theirs)| low >= epoch && known >= theirs),
            _ => {
                self.offered.insert(id, (to, None));
                self.send(to, Wire::Offer { from: self.me as u32, unit: id });
                false
            }
        }
    }

    /// Send `r` (ready: [`Remote::ready`]) to worker `to`, its positions at boundaries up to
    /// `after` staying here. A unit that cannot be encoded stays (the receiver stops waiting).
    pub(super) fn send_unit(&mut self, r: Box<Reading>, to: usize, low: u64) -> Result<(), Box<Reading>> {
        let id = UnitId::of(&r);
        self.offered.remove(&id);
        match pack(&r, id, low) {
            Ok(p) => {
                self.send(to, Wire::Unit(Box::new(p)));
                Ok(())
            }
            Err(e) => {
                eprintln!("saams: {} stays with worker {}: {e}", r.name(), self.me);
                self.send(to, Wire::Cancel { unit: id });
                Err(r)
            }
        }
    }

    /// After a round of giving: cancel the offers of units this worker no longer holds (they
    /// ended, or went elsewhere in the process) and hand on what was sent.
    pub(super) fn settle(&mut self, readers: &[Reading]) {
        let gone: Vec<(UnitId, usize)> = self
            .offered
            .iter()
            .filter(|(id, _)| !readers.iter().any(|r| UnitId::of(r) == **id))
            .map(|(id, &(to, _))| (*id, to))
            .collect();
        for (id, to) in gone {
            self.offered.remove(&id);
            self.send(to, Wire::Cancel { unit: id });
        }
        self.flush();
    }

    /// Take what the other processes' workers said: epochs, offers (accepted or refused),
    /// answers to this worker's offers (a refused unit stays in `readers`), and units, which
    /// go to the board for this worker to take.
    /// `known`: the newest checkpoint boundary this worker knows (told with an acceptance).
    pub(super) fn poll(&mut self, board: &ReaderBoard, readers: &mut [Reading], known: u64) {
        let inbox = std::mem::take(&mut *self.inbox.borrow_mut());
        for wire in inbox {
            match wire {
                Wire::Epoch { from, epoch, holding } => board.heard(from as usize, epoch, holding),
                Wire::Offer { from, unit } => self.offered_to_me(board, from as usize, (unit, known)),
                Wire::Accept { from, unit, epoch, known } => {
                    // Still going there (no rescale sent it elsewhere since the offer)?
                    let to = Some(from as usize);
                    let going = readers.iter().any(|r| UnitId::of(r) == unit && r.moving_to == to);
                    match self.offered.get_mut(&unit) {
                        Some((w, accepted @ None)) if going && Some(*w) == to => *accepted = Some((epoch, known)),
                        _ => self.send(from as usize, Wire::Cancel { unit }),
                    }
                }
                Wire::Refuse { from, unit, reason } => {
                    if self.offered.get(&unit).is_some_and(|&(to, _)| to == from as usize) {
                        self.offered.remove(&unit);
                        if let Some(r) = readers.iter_mut().find(|r| UnitId::of(r) == unit) {
                            eprintln!(
                                "saams: {} stays with worker {}: worker {from} refused it: {reason}",
                                r.name(),
                                self.me
                            );
                            r.moving_to = None;
                        }
                    }
                }
                Wire::Cancel { unit } => {
                    self.awaited.remove(&unit);
                }
                Wire::Unit(p) => self.arrived(board, *p),
            }
        }
        if self.awaited.is_empty() {
            board.expect(self.me, false);
        }
        self.flush();
    }

    /// A worker of another process offers `unit`: accept it (holding this worker's epoch
    /// from now on) if this worker can read it and still reads; else refuse, saying why.
    fn offered_to_me(&mut self, board: &ReaderBoard, from: usize, (unit, known): (UnitId, u64)) {
        let reason = if board.epoch_of(self.me).0 >= DONE {
            Err("its input has ended".to_string())
        } else {
            self.readable(unit)
        };
        match reason {
            Ok(()) => {
                self.awaited.insert(unit, from);
                let epoch = board.expect(self.me, true);
                self.send(from, Wire::Accept { from: self.me as u32, unit, epoch, known });
            }
            Err(reason) => {
                eprintln!("saams: worker {} refuses unit {} from worker {from}: {reason}", self.me, unit.unit);
                self.counts.0.unit_moves_refused.inc();
                self.send(from, Wire::Refuse { from: self.me as u32, unit, reason });
            }
        }
    }

    /// Whether this worker can read `unit` (a file unit's file opens here).
    fn readable(&self, unit: UnitId) -> Result<(), String> {
        if unit.generated {
            return Ok(());
        }
        match self.inputs.1.get(unit.unit as usize) {
            Some(Unit::File(p, _) | Unit::Range(p, _, _, _) | Unit::Stripes(p, _, _)) => {
                std::fs::File::open(p).map(drop).map_err(|e| format!("{}: {e}", p.display()))
            }
            Some(Unit::Stdin(_)) => Err("standard input is read by worker 0 only".into()),
            None => Err(format!("unit {} is not among this job's inputs", unit.unit)),
        }
    }

    /// A unit arrived: re-open it and put it on the board (it failed to open since it was
    /// accepted: a dead letter, as a unit that cannot be opened at the start).
    fn arrived(&mut self, board: &ReaderBoard, p: Packed) {
        self.awaited.remove(&p.unit);
        match unpack(&p, (self.inputs.0.as_ref(), &self.inputs.1)) {
            Ok(reading) => {
                self.counts.0.units_moved_between_processes.inc();
                board.arrived(self.me, p.low, reading);
            }
            Err(e) => {
                eprintln!("saams: worker {} cannot read on unit {}: {e}", self.me, p.unit.unit);
                self.counts.1.dead_letters.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// `r`'s state on the wire: where it reads on (its pending line read again; a generated
/// stream's pending tuple sent along), its lateness and its checkpoint boundary.
fn pack(r: &Reading, unit: UnitId, low: u64) -> Result<Packed, String> {
    let at = match (&r.source, &r.pending) {
        (Source::Lines(_), _) => {
            let p = r.position_now();
            PackedAt::Lines { offset: p.offset, line: p.line }
        }
        (Source::Generated(g, _), pending) => {
            let pending = match pending {
                None => None,
                Some(Pending::Values(index, time, values)) => Some((*index, *time, *values)),
                Some(Pending::Tuple(..)) => return Err("a generated stream holds a parsed tuple".into()),
            };
            let (index, walk) = g.state();
            PackedAt::Generated { index, walk, pending }
        }
        (Source::Kafka, _) => return Err("Kafka partitions follow their consumer group".into()),
    };
    Ok(Packed { unit, low, max_time: r.max_time, after: r.after, skip_before: r.marks.skip_before, at })
}

/// The reader `p` describes, re-opened here.
fn unpack(p: &Packed, (spec, units): (Option<&GeneratorSpec>, &[Unit])) -> Result<Reading, String> {
    let i = p.unit.unit;
    let mut r = match &p.at {
        PackedAt::Lines { offset, line } => {
            let unit = units.get(i as usize).ok_or_else(|| format!("unit {i} is not among this job's inputs"))?;
            Reading::new(i, Source::Lines(UnitReader::open_at(unit, *offset, *line)?))
        }
        PackedAt::Generated { index, walk, pending } => {
            let spec = spec.ok_or("this job generates no streams")?;
            let g = Generated::restore(spec, i as usize, (*index, walk.clone()))?;
            let mut r = Reading::new(i, Source::Generated(g, Vec::new()));
            r.pending = pending.map(|(index, time, values)| Pending::Values(index, time, values));
            r
        }
    };
    r.max_time = p.max_time;
    r.after = p.after;
    r.marks.skip_before = p.skip_before;
    Ok(r)
}
