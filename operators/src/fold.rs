//! `fold_partials`: at each spread synopsis' home worker, merge the window's partials (one, for
//! kinds the tree merge reduces at every stage, [`saams::Kind::reduces_at_every_merge_stage`];
//! else in bin order; windows in time order) into the synopsis' merged state, answer its continuous queries
//! at every window close, and its ad-hoc queries and SAVEs at the end of the input. Answer lines
//! and snapshots of the upstream operators pass through; states for pair queries go on as snapshots.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use saams::api::estimation::Estimation;
use saams::api::estimation::with_as_of;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator;

use crate::answer;
use crate::ask::AskPart;
use crate::checkpoint::{BoundaryCopies, copy_homed};
use crate::introspection::SynopsisFigures;
use crate::merge_tree::{Pending, combine, stash_partials};
use crate::out::Out;
use crate::pair_ask;
use crate::plan::{Mode, Plan};
use crate::record::{Partial, Snapshot, SynBox};
use crate::window::Held;

/// Extension trait: fold partials into merged synopses and answer them.
pub trait FoldPartials<'scope> {
    /// Merge partials arriving at their home worker (after the last tree-merge stage) and emit
    /// every answer as a JSON line.
    fn fold_partials(self, plan: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<Out>>;
}

/// Merged state of spread synopses at their home, as their windows hold it.
type Merged = HashMap<u32, Held>;

/// Answer an ask of a spread synopsis from its merged closed windows plus every worker's parts
/// of the windows not folded yet (those with a close time at or after `unfolded_from`).
fn answer_ask(plan: &Plan, merged: &Merged, parts: Vec<AskPart>, unfolded_from: u64) -> String {
    let ask = parts[0].ask.clone();
    let Some(spec) = plan.routing.synopses.get(ask.syn as usize) else {
        return answer::ask_error(&ask, "the synopsis is not known here yet");
    };
    let fresh;
    let held = match merged.get(&ask.syn) {
        Some(held) => held,
        None => {
            fresh = Held::new(spec.initial.as_ref());
            &fresh
        }
    };
    let mut open: Vec<_> =
        parts.into_iter().flat_map(|p| p.parts).filter(|(w, ..)| plan.close_time(*w) >= unfolded_from).collect();
    open.sort_by_key(|(w, bin, ..)| (*w, *bin));
    let open = open.into_iter().map(|(w, _, n, part)| (w, n, part.into_inner())).collect();
    let (state, items, span) = match held.view(spec.windowing(), plan.routing.window_ms as u64, open) {
        Ok(view) => view,
        Err(e) => return answer::ask_error(&ask, &format!("merging partials failed: {e}")),
    };
    let as_of = unfolded_from.min(i64::MAX as u64) as i64;
    with_as_of(answer::ask_line(plan, &ask, state.as_ref(), items, Some(span)), as_of)
}

/// Start the spread synopses homed here from a checkpoint's states.
fn restore(plan: &Plan, me: usize, merged: &mut Merged, loaded: &mut HashMap<u32, usize>) {
    let mut checkpoints = plan.checkpoints.borrow_mut();
    for (s, spec) in plan.routing.synopses.iter().enumerate() {
        let s = s as u32;
        if spec.home == me
            && spec.mode != Mode::Owned
            && let Some((held, loads)) = checkpoints.restored.remove(&s)
        {
            merged.insert(s, held);
            loaded.insert(s, loads);
        }
    }
}

/// Fold window `w`'s partials (by synopsis) into the merged states: the window's answer lines
/// (LOADs merged in, continuous answers, or the merge's failure) and snapshots for pair queries.
fn fold_window(
    plan: &Plan,
    w: u64,
    by_syn: HashMap<u32, Vec<Partial>>,
    merged: &mut Merged,
    loaded: &mut HashMap<u32, usize>,
) -> (Vec<String>, Vec<Snapshot>) {
    let mut by_syn: Vec<_> = by_syn.into_iter().collect();
    by_syn.sort_unstable_by_key(|(s, _)| *s);
    let mut lines = Vec::new();
    let mut snapshots = Vec::new();
    let cadence = plan.routing.window_ms as u64;
    for (s, partials) in by_syn {
        let spec = &plan.routing.synopses[s as usize];
        let p = combine(plan, partials);
        let held = merged.entry(s).or_insert_with(|| Held::new(spec.initial.as_ref()));
        held.enter(spec.windowing(), w, &mut |span, state, items| {
            answer::continuous(plan, s, state, items, span, &mut lines);
        });
        held.items += p.items;
        answer::merge_loads(plan, s, w, held.state.as_mut(), loaded.entry(s).or_insert(0), &mut lines);
        let mut failure = None;
        for (_, part) in &p.parts {
            if let Err(e) = held.state.merge(part.get()) {
                failure = Some(e.to_string());
            }
        }
        match failure {
            None => held.close(spec.windowing(), w, cadence, &mut |span, state, items| {
                answer::continuous(plan, s, state, items, span, &mut lines);
                let figures = SynopsisFigures {
                    tuples: items,
                    bytes: state.size_bytes(),
                    last_window: w,
                    window_end: w.saturating_add(cadence),
                    worker: spec.home,
                };
                plan.published.publish(s, figures);
                for &dest in &spec.snapshot_to {
                    let state = SynBox::new(state.clone_box());
                    let since = span.start.max(0) as u64;
                    snapshots.push(Snapshot { syn: s, window: w, since, items, dest: dest as u32, state });
                }
            }),
            Some(e) => {
                let msg = format!("merging partials failed: {e}");
                let mut est = Estimation::error(spec.request_id.clone(), None, spec.synopsis_id, msg);
                est.stream_id = spec.stream.clone();
                est.dataset_key = spec.dataset.clone();
                est.field = spec.field.clone();
                lines.push(est.to_json_line());
            }
        }
    }
    (lines, snapshots)
}

/// Keep the asks among what passes through (by ask id; pair asks by ask and participant, to
/// wait for their point); the rest passes on.
fn keep_asks(
    through: Vec<Out>,
    cap: &Capability<u64>,
    asks: &mut HashMap<u64, (Capability<u64>, Vec<AskPart>)>,
    pairs_waiting: &mut pair_ask::Waiting,
) -> Vec<Out> {
    through
        .into_iter()
        .filter_map(|o| match o {
            Out::Ask(part) if pair_ask::pair_of(&part.ask).is_some() => {
                pairs_waiting.insert((part.ask.id, part.ask.syn), (cap.clone(), part.ask));
                None
            }
            Out::Ask(part) => {
                asks.entry(part.ask.id).or_insert_with(|| (cap.clone(), Vec::new())).1.push(part);
                None
            }
            o => Some(o),
        })
        .collect()
}

/// Pair asks waiting here whose point is at or before `upto` (every window before it folded,
/// none after): each participant's merged state, to go on to the pair's home.
fn pairs_due(
    plan: &Plan,
    merged: &Merged,
    waiting: &mut pair_ask::Waiting,
    upto: u64,
) -> Vec<(Capability<u64>, pair_ask::PairState)> {
    pair_ask::ready(waiting, upto, |syn| match merged.get(&syn) {
        Some(held) => Some((held.state.clone_box(), held.items)),
        None => plan.routing.synopses.get(syn as usize).map(|s| (s.initial.clone(), 0)),
    })
}

/// Asks with every worker's part (of `peers`), once every window some worker had closed is
/// folded here (before `unfolded_from`): to be answered now.
fn ready_asks(asks: &HashMap<u64, (Capability<u64>, Vec<AskPart>)>, peers: usize, unfolded_from: u64) -> Vec<u64> {
    asks.iter()
        .filter(|(_, (_, parts))| {
            parts.len() >= peers && parts.iter().map(|p| p.closed_before).max().is_none_or(|c| unfolded_from >= c)
        })
        .map(|(&id, _)| id)
        .collect()
}

/// The end-of-input answers of the spread synopses homed on worker `me`: the windows still
/// open, then the ad-hoc queries and SAVEs ([`answer::at_end`]).
fn answers_at_end(plan: &Plan, me: usize, merged: &mut Merged) -> Vec<String> {
    let mut lines = Vec::new();
    for (s, spec) in plan.routing.synopses.iter().enumerate() {
        let s = s as u32;
        if spec.home != me || spec.mode == Mode::Owned || spec.group == u32::MAX {
            continue;
        }
        match merged.get_mut(&s) {
            Some(held) => answer::at_end(plan, s, held, &mut lines),
            None => answer::at_end(plan, s, &mut Held::new(spec.initial.as_ref()), &mut lines),
        }
    }
    lines
}

impl<'scope> FoldPartials<'scope> for Stream<'scope, u64, Vec<Out>> {
    fn fold_partials(self, shared: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<Out>> {
        let me = self.scope().index();
        let peers = self.scope().peers();
        self.unary_frontier::<CapacityContainerBuilder<Vec<Out>>, _, _, _>(
            Pipeline,
            "FoldPartials",
            move |mut cap, _info| {
                cap.downgrade(&u64::MAX);
                let mut end_cap = Some(cap);
                let mut pending = Pending::new();
                let mut merged: Merged = HashMap::new();
                let mut loaded: HashMap<u32, usize> = HashMap::new();
                restore(&shared.borrow(), me, &mut merged, &mut loaded);
                let mut copies = BoundaryCopies::default();
                // Asks of spread synopses homed here: their parts so far, by ask id.
                let mut asks: HashMap<u64, (Capability<u64>, Vec<AskPart>)> = HashMap::new();
                // Pair asks of spread synopses homed here, waiting for their point ([`pair_ask`]).
                let mut pairs_waiting = pair_ask::Waiting::new();
                move |(input, frontier), output| {
                    let plan = shared.borrow();
                    let plan = &*plan;
                    input.for_each_stamp(|stamp, data| {
                        let Some(cap) = stamp.retain_least(0) else { return };
                        let mut lines = Vec::new();
                        for batch in data {
                            stash_partials(plan, batch, &cap, &mut pending, &mut lines);
                        }
                        let lines = keep_asks(lines, &cap, &mut asks, &mut pairs_waiting);
                        if !lines.is_empty() {
                            output.session(&cap).give_iterator(lines.into_iter());
                        }
                    });
                    // The frontier as a time: every time before it is complete.
                    let watermark = frontier.frontier().iter().min().copied().unwrap_or(u64::MAX);
                    loop {
                        // A checkpoint boundary whose earlier windows are all folded: copy before
                        // folding a window at or after it.
                        let next = pending.first_key_value().map(|(&w, _)| w);
                        if let Some(b) = copies.due(&plan.checkpoints, watermark, next) {
                            let homed = copy_homed(|s| plan.routing.is_home(s, me), merged.iter(), &loaded);
                            copies.hand_in(&plan.checkpoints, b, homed, Vec::new());
                            continue;
                        }
                        let Some(w) = next else { break };
                        if frontier.less_equal(&plan.close_time(w)) {
                            break;
                        }
                        // Pair asks at or before this window take the state before it is folded.
                        for (cap, state) in pairs_due(plan, &merged, &mut pairs_waiting, w) {
                            output.session(&cap).give(Out::PairState(state));
                        }
                        let Some((_, (cap, by_syn))) = pending.pop_first() else { break };
                        let (lines, snapshots) = fold_window(plan, w, by_syn, &mut merged, &mut loaded);
                        let mut session = output.session(&cap);
                        session.give_iterator(lines.into_iter().map(Out::Line));
                        session.give_iterator(snapshots.into_iter().map(Out::Snapshot));
                    }
                    // Asks with every worker's part, once every window some worker had closed is
                    // folded here: answered now.
                    let unfolded_from = frontier.frontier().iter().min().copied().unwrap_or(u64::MAX);
                    for (cap, state) in pairs_due(plan, &merged, &mut pairs_waiting, unfolded_from) {
                        output.session(&cap).give(Out::PairState(state));
                    }
                    for id in ready_asks(&asks, peers, unfolded_from) {
                        if let Some((cap, parts)) = asks.remove(&id) {
                            let line = answer_ask(plan, &merged, parts, unfolded_from);
                            output.session(&cap).give(Out::Line(line));
                        }
                    }
                    if frontier.is_empty()
                        && let Some(cap) = end_cap.take()
                    {
                        let lines = answers_at_end(plan, me, &mut merged);
                        output.session(&cap).give_iterator(lines.into_iter().map(Out::Line));
                    }
                }
            },
        )
    }
}
