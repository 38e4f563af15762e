//! Ad-hoc pair queries answered now (correlated streams over DFT, similar streams over LSH, the
//! inner product of two AMS sketches): every participant's state at one point of event time,
//! gathered at the pair's home worker.
//!
//! The ask travels like any other ([`crate::ask`]): a marker record at the input's time `t`,
//! one copy per worker. The point the states are taken at is the window boundary `P` =
//! `window_of(t)`, the same on every worker (the copies carry the same time): every window
//! before `P`, nothing after. A worker takes its copy while its frontier is at or before `t`,
//! so it has closed no window ending after `P`; each side is taken as follows.
//!
//! - An owned synopsis (one owner) is answered by its owner, inside the update operator: once
//!   every window before `P` is closed (the frontier passed `P`) and before the window at `P`
//!   closes. Its merged state may hold values of the open window already (fed on arrival, or
//!   released inside the window); the owner keeps the state as it was at the last window close
//!   for such synopses (one copy per window, made only when a value of a later window is fed)
//!   and sends that.
//! - A spread synopsis (partials merged at its home) is answered at its home, in the fold: the
//!   ask waits there (its record travels at a time no later than `t`, so the window at `P` is not
//!   folded yet) until every window before `P` is folded, and takes the merged state then, before
//!   folding the window at `P`.
//!
//! Each side goes as a [`PairState`] to the pair's home (the named synopsis' home), which answers
//! once it has every participant's state, with `asOf` = `P` and `tuples` = the named synopsis'
//! values before `P`. The answer is then the one the same states give at a window close: the same
//! for any number of workers.

use std::collections::HashMap;

use saams::api::estimation::with_as_of;
use saams::api::request::query_spec;
use saams::{Kind, Synopsis};
use serde::{Deserialize, Serialize};
use timely::dataflow::operators::Capability;

use crate::answer as lines;
use crate::ask::{Ask, AskPart, AskWhat, PairAsk, reply_line};
use crate::plan::{Mode, PairQueryReg, Plan, QueryReg};
use crate::record::SynBox;

/// True for kinds whose synopses take part in pair queries (DFT, LSH, AMS): the owner keeps
/// their state at the last window close for pair asks.
pub fn answers_pairs(kind: Kind) -> bool {
    matches!(kind, Kind::Dft | Kind::Lsh | Kind::Ams)
}

/// One participant's state for a pair ask, on its way to the pair's home.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PairState {
    /// The ask, for this participant (`syn` is the participant; `what` the pair).
    pub ask: Ask,
    /// Values the state summarizes.
    pub items: u64,
    /// The state at the pair's point.
    pub state: SynBox,
}

impl PairState {
    /// The worker that answers the pair.
    pub fn dest(&self) -> u32 {
        match &self.ask.what {
            AskWhat::Pair(pair) => pair.answer_home,
            _ => self.ask.home,
        }
    }
}

/// The pair of an ask (`None` for other asks).
pub fn pair_of(ask: &Ask) -> Option<&PairAsk> {
    match &ask.what {
        AskWhat::Pair(pair) => Some(pair),
        _ => None,
    }
}

/// The asks for each participant of pair ask `ask` whose marker came at `time`, with the point
/// set (the window of `time`): (participant's ask, owned), for those this worker (`me`) takes:
/// owned ones it owns at the point (a state moved there at the point is taken once installed),
/// spread ones whose home it is.
pub fn components(plan: &Plan, me: usize, mut ask: Ask, time: i64) -> Vec<(Ask, bool)> {
    let at = plan.window_of(time);
    let AskWhat::Pair(pair) = &mut ask.what else { return Vec::new() };
    pair.at = at;
    let participants = pair.participants.clone();
    participants
        .into_iter()
        .filter_map(|p| {
            let spec = plan.routing.synopses.get(p as usize)?;
            let home = spec.home_at(at);
            (home == me).then(|| {
                let owned = spec.mode == Mode::Owned;
                (Ask { syn: p, home: home as u32, spread: !owned, ..ask.clone() }, owned)
            })
        })
        .collect()
}

/// The part that carries a spread participant's ask to its home ([`crate::fold`]).
pub fn part_for_home(ask: Ask) -> AskPart {
    let at = pair_of(&ask).map_or(0, |p| p.at);
    AskPart { ask, closed_before: at, parts: Vec::new() }
}

/// Pair asks of spread synopses waiting at their home for every window before their point to
/// be folded: by (ask id, participant).
pub type Waiting = HashMap<(u64, u32), (Capability<u64>, Ask)>;

/// The waiting asks whose point is at or before `upto` (every window before it is folded, none
/// at or after it), taken out with the state each gets from `state_of`.
pub fn ready(
    waiting: &mut Waiting,
    upto: u64,
    mut state_of: impl FnMut(u32) -> Option<(Box<dyn Synopsis>, u64)>,
) -> Vec<(Capability<u64>, PairState)> {
    let mut due: Vec<(u64, u32)> =
        waiting.iter().filter(|(_, (_, ask))| pair_of(ask).is_some_and(|p| p.at <= upto)).map(|(&k, _)| k).collect();
    due.sort_unstable();
    due.into_iter()
        .filter_map(|k| waiting.remove(&k))
        .filter_map(|(cap, ask)| {
            let (state, items) = state_of(ask.syn)?;
            Some((cap, PairState { ask, items, state: SynBox::new(state) }))
        })
        .collect()
}

/// States gathered at the pair's home, by ask id.
pub type Gathered = HashMap<u64, Vec<PairState>>;

/// How a pair query is answered from the participants' states ([`crate::pairs`]).
pub type AnswerFn<'a> = &'a dyn Fn(&Plan, &PairQueryReg, &HashMap<u32, (Box<dyn Synopsis>, u64)>) -> String;

/// Keep one participant's state; the answer line once every participant's is here (made by
/// `answer`).
pub fn gather(plan: &Plan, gathered: &mut Gathered, got: PairState, answer: AnswerFn<'_>) -> Option<String> {
    let id = got.ask.id;
    let states = gathered.entry(id).or_default();
    states.push(got);
    let needed = pair_of(&states[0].ask).map_or(0, |p| p.participants.len());
    if states.len() < needed {
        return None;
    }
    let states = gathered.remove(&id)?;
    Some(answer_pair(plan, states, answer))
}

/// The answer line of a pair ask from every participant's state.
fn answer_pair(plan: &Plan, states: Vec<PairState>, answer: AnswerFn<'_>) -> String {
    let first = states[0].ask.clone();
    let Some(pair) = pair_of(&first).cloned() else { return lines::ask_error(&first, "not a pair ask") };
    let named = pair.participants[0];
    let ask = Ask { syn: named, ..first };
    let Some(spec) = plan.routing.synopses.get(named as usize) else {
        return lines::ask_error(&ask, "the synopsis is not known here yet");
    };
    let args = pair.args.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let query = match query_spec(spec.kind, args) {
        Ok(query) => query,
        Err(e) => return lines::ask_error(&ask, &e.0),
    };
    let latest: HashMap<u32, (Box<dyn Synopsis>, u64)> =
        states.into_iter().map(|s| (s.ask.syn, (s.state.into_inner(), s.items))).collect();
    let reg = QueryReg {
        request_id: ask.request_id.clone(),
        uid: ask.uid.clone(),
        args: pair.args.clone(),
        spec: query,
        from: 0,
    };
    let q = PairQueryReg {
        syn: named,
        reg,
        continuous: false,
        participants: pair.participants,
        home: pair.answer_home as usize,
    };
    let line = answer(plan, &q, &latest);
    reply_line(ask.origin, with_as_of(line, pair.at.min(i64::MAX as u64) as i64))
}
