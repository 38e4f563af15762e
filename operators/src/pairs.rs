//! `answer_pairs`: queries over pairs of synopses — correlated streams of a dataset (DFT),
//! similar streams (LSH), the inner product of two streams (AMS). Each participant's merged state
//! arrives as a snapshot at the query's home worker after every window close in which it changed;
//! continuous pair queries answer at those window closes from the latest state of every
//! participant, ad-hoc ones once at the end of the input. Answer lines pass through.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use saams::Synopsis;
use saams::api::estimation::{Answer, Estimation};
use saams::api::request::QuerySpec;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator;

use crate::plan::{PairQueryReg, Plan};
use crate::record::{Out, Snapshot};

/// Latest state and item count per synopsis.
type Latest = HashMap<u32, (Box<dyn Synopsis>, u64)>;

fn state_of<'a>(plan: &'a Plan, latest: &'a Latest, s: u32) -> (&'a dyn Synopsis, u64) {
    match latest.get(&s) {
        Some((state, items)) => (state.as_ref(), *items),
        None => (plan.synopses[s as usize].initial.as_ref(), 0),
    }
}

/// Answer one pair query from the latest states.
pub(crate) fn answer(plan: &Plan, q: &PairQueryReg, latest: &Latest, window: Option<(i64, i64)>) -> String {
    let s = &plan.synopses[q.syn as usize];
    let (mine, items) = state_of(plan, latest, q.syn);
    let answer = match &q.reg.spec {
        QuerySpec::PairsAbove { query, threshold } => {
            let mut pairs = Vec::new();
            for (i, &a) in q.participants.iter().enumerate() {
                for &b in &q.participants[i + 1..] {
                    let (sa, sb) = (state_of(plan, latest, a).0, state_of(plan, latest, b).0);
                    // Pairs without enough data to compare (e.g. no complete DFT window) are left out.
                    if let Ok(e) = sa.estimate_pair(sb, query)
                        && let Some(x) = e.as_f64()
                        && x >= *threshold
                    {
                        let (na, nb) = (&plan.synopses[a as usize].stream, &plan.synopses[b as usize].stream);
                        let (na, nb) = if na <= nb { (na, nb) } else { (nb, na) };
                        pairs.push((na.clone(), nb.clone(), x));
                    }
                }
            }
            pairs.sort_by(|x, y| (&x.0, &x.1).cmp(&(&y.0, &y.1)));
            Answer::Pairs(pairs)
        }
        QuerySpec::PairWith { query, .. } => {
            let other = q.participants.get(1).map(|&o| state_of(plan, latest, o).0);
            match other.map(|o| mine.estimate_pair(o, query)) {
                Some(Ok(e)) => Answer::Estimate(e),
                Some(Err(e)) => Answer::Error(e.to_string()),
                None => Answer::Error("the other stream's synopsis is missing".into()),
            }
        }
        QuerySpec::Single(query) => match mine.estimate(query) {
            Ok(e) => Answer::Estimate(e),
            Err(e) => Answer::Error(e.to_string()),
        },
    };
    Estimation {
        request_id: q.reg.request_id.clone(),
        uid: q.reg.uid.clone(),
        synopsis_id: s.synopsis_id,
        kind: Some(s.kind),
        stream_id: s.stream.clone(),
        dataset_key: s.dataset.clone(),
        field: s.field.clone(),
        query: q.reg.args.clone(),
        window,
        tuples: Some(items),
        answer,
    }
    .to_json_line()
}

/// Extension trait: answer pair queries and emit every answer line.
pub trait AnswerPairs<'scope> {
    /// Collect snapshots at the pair queries' homes, answer them, and emit all answer lines.
    fn answer_pairs(self, plan: Rc<Plan>) -> Stream<'scope, u64, Vec<String>>;
}

impl<'scope> AnswerPairs<'scope> for Stream<'scope, u64, Vec<Out>> {
    fn answer_pairs(self, plan: Rc<Plan>) -> Stream<'scope, u64, Vec<String>> {
        let me = self.scope().index();
        let pact = Exchange::new(move |o: &Out| match o {
            Out::Snapshot(s) => u64::from(s.dest),
            _ => me as u64,
        });
        self.unary_frontier::<CapacityContainerBuilder<Vec<String>>, _, _, _>(pact, "AnswerPairs", move |mut cap, _| {
            cap.downgrade(&u64::MAX);
            let mut end_cap = Some(cap);
            let mut pending: BTreeMap<u64, (Capability<u64>, Vec<Snapshot>)> = BTreeMap::new();
            let mut latest: Latest = HashMap::new();
            move |(input, frontier), output| {
                input.for_each_stamp(|stamp, data| {
                    let Some(cap) = stamp.retain_least(0) else { return };
                    let mut lines = Vec::new();
                    for batch in data {
                        for o in batch.drain(..) {
                            match o {
                                Out::Line(l) => lines.push(l),
                                Out::Snapshot(s) => {
                                    let w = s.window;
                                    pending.entry(w).or_insert_with(|| (cap.delayed(&w), Vec::new())).1.push(s);
                                }
                                // Partials never reach this operator (fold merges them).
                                Out::Partial(_) => {}
                            }
                        }
                    }
                    if !lines.is_empty() {
                        output.session(&cap).give_iterator(lines.into_iter());
                    }
                });
                while let Some((&w, _)) = pending.first_key_value() {
                    if frontier.less_equal(&w) {
                        break;
                    }
                    let Some((_, (cap, mut snaps))) = pending.pop_first() else { break };
                    snaps.sort_unstable_by_key(|s| s.syn);
                    let changed: Vec<u32> = snaps.iter().map(|s| s.syn).collect();
                    for s in snaps {
                        latest.insert(s.syn, (s.state.0, s.items));
                    }
                    let window = Some((w as i64, w as i64 + plan.window_ms));
                    let lines: Vec<String> = plan
                        .pair_queries
                        .iter()
                        .filter(|q| q.home == me && q.continuous && q.participants.iter().any(|p| changed.contains(p)))
                        .map(|q| answer(&plan, q, &latest, window))
                        .collect();
                    output.session(&cap).give_iterator(lines.into_iter());
                }
                if frontier.is_empty()
                    && let Some(cap) = end_cap.take()
                {
                    let lines: Vec<String> = plan
                        .pair_queries
                        .iter()
                        .filter(|q| q.home == me && !q.continuous)
                        .map(|q| answer(&plan, q, &latest, None))
                        .collect();
                    output.session(&cap).give_iterator(lines.into_iter());
                }
            }
        })
    }
}
