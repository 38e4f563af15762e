//! `answer_pairs`: queries over pairs of synopses — correlated streams of a dataset (DFT),
//! similar streams (LSH), the inner product of two streams (AMS) — and continuous set-valued
//! queries of one synopsis (frequent items). Each participant's merged state arrives as a
//! snapshot at the query's home worker after every window close in which it changed; continuous
//! queries answer at those window closes from the latest state of every participant, ad-hoc ones
//! once at the end of the input. Continuous set-valued answers leave as [`SetAnswer`]s (the set
//! with the previous one, for [`crate::changes`]); every other answer as a line. Answer lines
//! pass through.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use saams::api::estimation::{Answer, Estimation};
use saams::api::request::QuerySpec;
use saams::api::window::{Span, WindowType};
use saams::{EstimateValue, PairQuery, Synopsis};
use serde_json::Value as Json;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator;

use crate::changes::{Answered, SetAnswer, member_text};
use crate::checkpoint::{BoundaryCopies, HeldState};
use crate::out::Out;
use crate::pair_ask;
use crate::plan::{PairQueryReg, Plan, is_set_valued};
use crate::record::Snapshot;

/// Latest state and item count per synopsis.
type Latest = HashMap<u32, (Box<dyn Synopsis>, u64)>;

/// Start from a checkpoint: the latest states of the synopses whose snapshots come here, and
/// the last answered sets of the continuous set-valued queries homed here.
fn restore(plan: &Plan, me: usize, latest: &mut Latest, previous: &mut HashMap<u32, Vec<String>>) {
    let mut checkpoints = plan.checkpoints.borrow_mut();
    for (s, spec) in plan.routing.synopses.iter().enumerate() {
        if spec.snapshot_to.contains(&me)
            && let Some((state, items)) = checkpoints.restored_latest.get(&(s as u32))
        {
            latest.insert(s as u32, (state.clone(), *items));
        }
    }
    for (q, reg) in plan.routing.pair_queries.iter().enumerate() {
        if reg.home == me
            && let Some(members) = checkpoints.restored_sets.remove(&(q as u32))
        {
            previous.insert(q as u32, members);
        }
    }
}

/// Copies of the latest states and the last answered sets (a checkpoint).
fn copy_latest(latest: &Latest, previous: &HashMap<u32, Vec<String>>) -> (Vec<HeldState>, Vec<(u32, Vec<String>)>) {
    let mut states: Vec<HeldState> = latest
        .iter()
        .map(|(&syn, (state, items))| HeldState {
            syn,
            latest: true,
            pane: false,
            since: None,
            until: 0,
            state: state.clone(),
            items: *items,
            loads_merged: 0,
        })
        .collect();
    states.sort_unstable_by_key(|h| h.syn);
    let mut sets: Vec<(u32, Vec<String>)> = previous.iter().map(|(&q, m)| (q, m.clone())).collect();
    sets.sort_unstable();
    (states, sets)
}

fn state_of<'a>(plan: &'a Plan, latest: &'a Latest, s: u32) -> (&'a dyn Synopsis, u64) {
    match latest.get(&s) {
        Some((state, items)) => (state.as_ref(), *items),
        None => (plan.routing.synopses[s as usize].initial.as_ref(), 0),
    }
}

/// The stream pairs among the participants whose pair answer reaches the threshold, sorted.
fn pairs_above(
    plan: &Plan,
    q: &PairQueryReg,
    latest: &Latest,
    query: &PairQuery,
    t: f64,
) -> Vec<(String, String, f64)> {
    let mut pairs = Vec::new();
    for (i, &a) in q.participants.iter().enumerate() {
        for &b in &q.participants[i + 1..] {
            let (sa, sb) = (state_of(plan, latest, a).0, state_of(plan, latest, b).0);
            // Pairs without enough data to compare (e.g. no complete DFT window) are left out.
            if let Ok(e) = crate::query_view::estimate_pair(sa, sb, query)
                && let Some(x) = e.as_f64()
                && x >= t
            {
                let (na, nb) = (&plan.routing.synopses[a as usize].stream, &plan.routing.synopses[b as usize].stream);
                let (na, nb) = if na <= nb { (na, nb) } else { (nb, na) };
                pairs.push((na.clone(), nb.clone(), x));
            }
        }
    }
    pairs.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
    pairs
}

/// The members of a set-valued query's answer from the latest states, as (member JSON text,
/// value), sorted by member; an error when the synopsis cannot answer.
fn members(plan: &Plan, q: &PairQueryReg, latest: &Latest) -> Result<Vec<(String, f64)>, String> {
    let mut members: Vec<(String, f64)> = match &q.reg.spec {
        QuerySpec::PairsAbove { query, threshold } => pairs_above(plan, q, latest, query, *threshold)
            .into_iter()
            .map(|(a, b, x)| (Json::Array(vec![Json::String(a), Json::String(b)]).to_string(), x))
            .collect(),
        QuerySpec::Single(query) => match state_of(plan, latest, q.syn).0.estimate(query).map(|e| e.value) {
            Ok(EstimateValue::Items(items)) => items.iter().map(|(v, c)| (member_text(v), *c)).collect(),
            Ok(other) => return Err(format!("expected a set of items, the synopsis answered {other:?}")),
            Err(e) => return Err(e.to_string()),
        },
        QuerySpec::PairWith { .. } => return Err("an inner product is not a set".into()),
    };
    members.sort_by(|a, b| a.0.cmp(&b.0));
    members.dedup_by(|a, b| a.0 == b.0);
    Ok(members)
}

/// Answer one query from the latest states, whole (ad-hoc answers, continuous ones that are not sets).
pub(crate) fn answer(plan: &Plan, q: &PairQueryReg, latest: &Latest, window: Option<Span>) -> String {
    let s = &plan.routing.synopses[q.syn as usize];
    let (mine, items) = state_of(plan, latest, q.syn);
    let answer = match &q.reg.spec {
        QuerySpec::PairsAbove { query, threshold } => Answer::Pairs(pairs_above(plan, q, latest, query, *threshold)),
        QuerySpec::PairWith { query, .. } => {
            let other = q.participants.get(1).map(|&o| state_of(plan, latest, o).0);
            match other.map(|o| crate::query_view::estimate_pair(mine, o, query)) {
                Some(result) => Answer::of(result),
                None => Answer::Error("the other stream's synopsis is missing".into()),
            }
        }
        QuerySpec::Single(query) => Answer::of(mine.estimate(query)),
    };
    crate::answer::query_line(s, &q.reg, window, Some(items), &answer)
}

/// [`answer`], for a query answered once (an ad-hoc pair ask, [`pair_ask`]).
fn answer_whole(plan: &Plan, q: &PairQueryReg, latest: &Latest) -> String {
    answer(plan, q, latest, None)
}

/// The error line of a set-valued query that could not be answered at a window.
fn error_line(plan: &Plan, q: &PairQueryReg, msg: String, window: Option<Span>, items: u64) -> String {
    let s = &plan.routing.synopses[q.syn as usize];
    let mut e = Estimation::error(q.reg.request_id.clone(), q.reg.uid.clone(), s.synopsis_id, msg);
    e.stream_id = s.stream.clone();
    e.dataset_key = s.dataset.clone();
    e.field = s.field.clone();
    e.query = q.reg.args.clone();
    e.window = window;
    e.tuples = Some(items);
    e.to_json_line()
}

/// Take window `w`'s snapshots into the latest states (and each synopsis' first window into
/// `since`) and answer the continuous queries homed on worker `me` that one of them takes part
/// in: lines, and set answers (with the set before). Their synopses are landmark synopses: an
/// answer covers the job windows from the first its participants summarize to `w`'s end.
fn answer_window(
    plan: &Plan,
    (me, w): (usize, u64),
    mut snaps: Vec<Snapshot>,
    (latest, since): (&mut Latest, &mut HashMap<u32, u64>),
    previous: &mut HashMap<u32, Vec<String>>,
) -> Vec<Answered> {
    snaps.sort_unstable_by_key(|s| s.syn);
    let changed: Vec<u32> = snaps.iter().map(|s| s.syn).collect();
    for s in snaps {
        let first = since.entry(s.syn).or_insert(s.since);
        *first = (*first).min(s.since);
        latest.insert(s.syn, (s.state.into_inner(), s.items));
    }
    let end = w as i64 + plan.routing.window_ms;
    let mut answers = Vec::new();
    for (i, q) in plan.routing.pair_queries.iter().enumerate() {
        if q.home != me || !q.continuous || q.reg.from > w || !q.participants.iter().any(|p| changed.contains(p)) {
            continue;
        }
        let start = q.participants.iter().filter_map(|p| since.get(p)).min().map_or(w as i64, |&t| t as i64);
        let window = Some(Span::new(WindowType::Landmark, start, end));
        if !is_set_valued(&q.reg.spec) {
            answers.push(Answered::Line(answer(plan, q, latest, window)));
            continue;
        }
        let tuples = state_of(plan, latest, q.syn).1;
        let members = members(plan, q, latest).unwrap_or_else(|msg| {
            answers.push(Answered::Line(error_line(plan, q, msg, window, tuples)));
            Vec::new()
        });
        let keys = members.iter().map(|(m, _)| m.clone()).collect();
        let previous = previous.insert(i as u32, keys).unwrap_or_default();
        let since = start as u64;
        answers.push(Answered::Set(SetAnswer { query: i as u32, window: w, since, tuples, members, previous }));
    }
    answers
}

/// The end-of-input answers of the ad-hoc pair queries homed on worker `me`.
fn answers_at_end(plan: &Plan, me: usize, latest: &Latest) -> Vec<Answered> {
    plan.routing
        .pair_queries
        .iter()
        .filter(|q| q.home == me && !q.continuous)
        .map(|q| Answered::Line(answer(plan, q, latest, None)))
        .collect()
}

/// The snapshots waiting at a query's home for their window's close, by window.
type Pending = BTreeMap<u64, (Capability<u64>, Vec<Snapshot>)>;

/// One record arriving here: a line passes on; a snapshot waits for its window's close; a pair
/// state joins its ask (whose answer is a line once every participant's state is in).
fn arrive(
    plan: &Plan,
    o: Out,
    cap: &Capability<u64>,
    pending: &mut Pending,
    gathered: &mut pair_ask::Gathered,
) -> Option<Answered> {
    match o {
        Out::Line(l) => Some(Answered::Line(l)),
        Out::Snapshot(s) => {
            let w = s.window;
            pending.entry(w).or_insert_with(|| (cap.delayed(&plan.close_time(w)), Vec::new())).1.push(s);
            None
        }
        Out::PairState(got) => pair_ask::gather(plan, gathered, got, &answer_whole).map(Answered::Line),
        // Partials and asks never reach this operator (fold takes them).
        Out::Partial(_) | Out::Ask(_) => None,
    }
}

/// Extension trait: answer pair queries and continuous set-valued queries.
pub trait AnswerPairs<'scope> {
    /// Collect snapshots at the queries' homes and answer them: every answer line passes on as
    /// [`Answered::Line`], each continuous set-valued answer as [`Answered::Set`] (at the window
    /// whose close produced it). An answer that fails at a window is an error line and an empty set.
    fn answer_pairs(self, shared: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<Answered>>;
}

impl<'scope> AnswerPairs<'scope> for Stream<'scope, u64, Vec<Out>> {
    fn answer_pairs(self, shared: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<Answered>> {
        let me = self.scope().index();
        let pact = Exchange::new(move |o: &Out| match o {
            Out::Snapshot(s) => u64::from(s.dest),
            Out::PairState(p) => u64::from(p.dest()),
            _ => me as u64,
        });
        self.unary_frontier::<CapacityContainerBuilder<Vec<Answered>>, _, _, _>(
            pact,
            "AnswerPairs",
            move |mut cap, _| {
                cap.downgrade(&u64::MAX);
                let mut end_cap = Some(cap);
                let mut pending: Pending = BTreeMap::new();
                let mut latest: Latest = HashMap::new();
                // The first window each synopsis' snapshots cover (what an answer's span starts at).
                let mut since: HashMap<u32, u64> = HashMap::new();
                // The last answered set of each continuous set-valued query (by index in the plan).
                let mut previous: HashMap<u32, Vec<String>> = HashMap::new();
                restore(&shared.borrow(), me, &mut latest, &mut previous);
                let mut copies = BoundaryCopies::default();
                // Pair asks answered now: the participants' states gathered so far ([`pair_ask`]).
                let mut gathered = pair_ask::Gathered::new();
                move |(input, frontier), output| {
                    let plan = shared.borrow();
                    let plan = &*plan;
                    input.for_each_stamp(|stamp, data| {
                        let Some(cap) = stamp.retain_least(0) else { return };
                        let mut lines = Vec::new();
                        for batch in data {
                            for o in batch.drain(..) {
                                lines.extend(arrive(plan, o, &cap, &mut pending, &mut gathered));
                            }
                        }
                        if !lines.is_empty() {
                            output.session(&cap).give_iterator(lines.into_iter());
                        }
                    });
                    let watermark = frontier.frontier().iter().min().copied().unwrap_or(u64::MAX);
                    loop {
                        // A checkpoint boundary whose earlier windows are all answered: copy before
                        // taking the snapshots of a window at or after it.
                        let next = pending.first_key_value().map(|(&w, _)| w);
                        if let Some(b) = copies.due(&plan.checkpoints, watermark, next) {
                            let (states, sets) = copy_latest(&latest, &previous);
                            copies.hand_in(&plan.checkpoints, b, states, sets);
                            continue;
                        }
                        let Some(w) = next else { break };
                        if frontier.less_equal(&plan.close_time(w)) {
                            break;
                        }
                        let Some((_, (cap, snaps))) = pending.pop_first() else { break };
                        let answers = answer_window(plan, (me, w), snaps, (&mut latest, &mut since), &mut previous);
                        output.session(&cap).give_iterator(answers.into_iter());
                    }
                    if frontier.is_empty()
                        && let Some(cap) = end_cap.take()
                    {
                        let lines = answers_at_end(plan, me, &latest);
                        output.session(&cap).give_iterator(lines.into_iter());
                    }
                }
            },
        )
    }
}
