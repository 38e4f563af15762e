//! One round of reading a worker's input units, the unit furthest behind in event time first.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::dataflow::RecInput;

use super::reading::{Left, Pending, Reading, Source};
use super::routing::Router;

/// How far (event-time ms) any input is read past the one furthest behind: the reorder buffers
/// of order-sensitive synopses hold about this much of the input (plus the lateness).
const READ_STEP_MS: i64 = 120_000;

/// How far (event-time ms) the unit furthest behind reads past the next unit's position before
/// that one is read. Why: a worker's units were each read up to the horizon in turn, in runs of
/// up to 4,096 tuples, so the reorder buffers got runs from event times up to the horizon apart
/// and sorted them (at `-w 1` on a file in stripes, `take_older` and `push` rose from 5.8 % to
/// 8.7 % of the samples and the run took 13 % more CPU). Read lowest first, the values arrive
/// nearly in time order; the slack keeps a unit's runs long where units overlap in time (files
/// of the same hours), so picking the next unit costs little.
const MERGE_SLACK_MS: i64 = 1_000;

/// The most tuples one unit reads before the unit furthest behind is picked again.
const RUN: u64 = 4096;

/// The fewest tuples (below the horizon) a unit reads when picked: units that overlap in event
/// time (generated streams, a file per stream) would otherwise be picked for a tuple or two
/// each (a heap's pop and push a tuple: the generator path took 11 % more CPU), where order
/// between them does not matter to the reorder buffers (each feeds its own streams).
const MIN_RUN: u64 = 64;

/// One round of reading this worker's units: the unit furthest behind in event time first, each
/// up to a little past the next one, none past a little past the unit furthest behind (the
/// horizon), at most `allowance` tuples in all (`--rate`), nothing past `hold_end` while a
/// fence is agreed. Units that ended are dropped (a quiet live stdin stays).
pub(super) fn read_units(
    readers: &mut Vec<Reading>,
    router: &mut Router,
    input: &mut RecInput,
    (allowance, hold_end): (u64, Option<i64>),
    (window_ms, ended): (i64, &mut Vec<Left>),
) {
    let routed_before = router.tuples;
    // Read in event-time step: every unit up to a little past the unit that is furthest
    // behind (2 windows, at most READ_STEP_MS), so the watermark follows the input closely
    // and the values waiting for it (the update operator's reorder buffers) stay few,
    // whatever the window length.
    // A unit with nothing pending (it read its whole batch) is where its newest tuple is:
    // ignoring it let every other unit run ahead, and the reorder buffers held all of them.
    // A unit not read yet shows where it starts first: byte ranges of one file start at other
    // times, and routing the first tuples of each at once opened windows all over the file
    // (and put checkpoint boundaries and live requests' fences near its end).
    for r in readers.iter_mut() {
        if r.pending.is_none() && r.max_time == i64::MIN {
            router.fetch(r, input);
        }
    }
    let horizon = readers.iter().filter_map(position).min();
    let horizon = horizon.map_or(i64::MIN, |t| t.saturating_add((2 * window_ms).min(READ_STEP_MS)));
    // While a fence is being agreed, nothing past the window this worker announced.
    let horizon = match hold_end {
        Some(end) if horizon == i64::MIN || horizon > end => end,
        _ => horizon,
    };
    // A round reads at most a run per unit (then the dataflow is stepped), and under --rate
    // the allowance: the unit furthest behind, which holds the epoch, is read first.
    let most = allowance.min(RUN.saturating_mul(readers.len().max(1) as u64));
    let mut behind: BinaryHeap<Reverse<(i64, usize)>> =
        readers.iter().enumerate().map(|(i, r)| Reverse((position(r).unwrap_or(i64::MIN), i))).collect();
    let mut gone = vec![false; readers.len()];
    while let Some(Reverse((at, i))) = behind.pop() {
        let spent = router.tuples - routed_before;
        if spent >= most {
            break;
        }
        let next = behind.peek().map_or(i64::MAX, |Reverse((t, _))| t.saturating_add(MERGE_SLACK_MS));
        let limits = Limits { run: RUN.min(most - spent), bound: horizon.min(next), horizon, hold_end };
        match read_unit(&mut readers[i], router, input, &limits, ended) {
            UnitRead::Ended => gone[i] = true,
            // Below the horizon still: its turn comes again when it is furthest behind. (Not
            // when it read nothing and did not move: then it waits for the next round.)
            UnitRead::Below(t) if t != at || router.tuples - routed_before > spent => behind.push(Reverse((t, i))),
            UnitRead::Below(_) | UnitRead::Held => {}
        }
    }
    let mut k = 0;
    readers.retain(|_| {
        k += 1;
        !gone[k - 1]
    });
    router.send_batch(input);
}

/// Where a unit is in event time: its pending tuple's time, else its newest time (`None`: it
/// has read nothing).
fn position(r: &Reading) -> Option<i64> {
    r.pending.as_ref().map(Pending::time).or((r.max_time != i64::MIN).then_some(r.max_time))
}

/// How far one unit reads in one turn.
struct Limits {
    /// The most tuples.
    run: u64,
    /// Routes tuples before this time: the horizon, or a little past the next unit.
    bound: i64,
    horizon: i64,
    hold_end: Option<i64>,
}

/// What a unit's turn ended with.
enum UnitRead {
    /// It ended (it goes to the ended units).
    Ended,
    /// It stopped at this position, below the horizon (the next unit's turn, or its run read).
    Below(i64),
    /// It reached the horizon, or (a live stdin) nothing has arrived yet.
    Held,
}

/// One unit's turn: route its tuples before `limits.bound` (the first [`MIN_RUN`] before the
/// horizon), at most `limits.run` of them.
fn read_unit(
    r: &mut Reading,
    router: &mut Router,
    input: &mut RecInput,
    limits: &Limits,
    ended: &mut Vec<Left>,
) -> UnitRead {
    // A unit whose first tuple is not known yet, when no unit has a position (and no fence is
    // agreed): read it (there is nothing to keep in step with).
    let open = limits.horizon == i64::MIN && r.max_time == i64::MIN && limits.hold_end.is_none();
    for n in 0..limits.run {
        if r.pending.is_none() && !router.fetch(r, input) {
            // The end, or (a live stdin) nothing yet: keep it and read on later.
            let waiting = match &mut r.source {
                Source::Lines(reader) => reader.take_waiting(),
                _ => false,
            };
            if waiting {
                return UnitRead::Held;
            }
            // Checkpoints at later boundaries say it ended; at those it had reached before,
            // where it was.
            let mut at = r.position_now();
            at.done = true;
            ended.push(Left::ended(at, std::mem::take(&mut r.marks), r.after));
            return UnitRead::Ended;
        }
        match r.pending.take() {
            Some(p) if p.time() < limits.bound || n < MIN_RUN && p.time() < limits.horizon || open => match p {
                Pending::Tuple(line, _) => router.route(r, line, Ok(()), input),
                Pending::Values(index, time, values) => router.route_values(r, index, time, &values, input),
            },
            other => {
                r.pending = other;
                break;
            }
        }
    }
    match position(r) {
        Some(t) if t < limits.horizon => UnitRead::Below(t),
        _ => UnitRead::Held,
    }
}
