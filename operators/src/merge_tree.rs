//! `merge_stage`: one stage of the tree merge of spread synopses' partials.
//!
//! Stage k sends a partial where [`Plan::merge_target`] says: toward the synopsis' home (the
//! root, rotated per synopsis), within each process first (to the worker with the root's local
//! index), then across processes, so a merge over n processes sends n − 1 partials between them
//! whatever the root.
//! Exact-merge kinds are merged at every stage (the result does not depend on the tree); the
//! other kinds' partials travel as a list and are merged at home in bin order, so their answers
//! do not depend on the number of workers either. Answer lines and snapshots pass through where they are.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator;

use crate::plan::{Plan, merge_is_exact};
use crate::record::{Out, Partial};

/// Partials waiting for their window to close, per window: its capability and per synopsis.
pub(crate) type Pending = BTreeMap<u64, (Capability<u64>, HashMap<u32, Vec<Partial>>)>;

/// Sort one incoming batch: answer lines and snapshots pass straight through (into `lines`),
/// partials wait in `pending` by window and synopsis until the frontier passes their window.
pub(crate) fn stash_partials(
    plan: &Plan,
    batch: &mut Vec<Out>,
    cap: &Capability<u64>,
    pending: &mut Pending,
    lines: &mut Vec<Out>,
) {
    for o in batch.drain(..) {
        match o {
            o @ (Out::Line(_) | Out::Snapshot(_) | Out::Ask(_)) => lines.push(o),
            Out::Partial(p) => {
                let (_, by_syn) = pending
                    .entry(p.window)
                    .or_insert_with(|| (cap.delayed(&plan.close_time(p.window)), HashMap::new()));
                by_syn.entry(p.syn).or_default().push(p);
            }
        }
    }
}

/// Fold a window's partials of one synopsis into one (exact kinds) or one list (others).
pub(crate) fn combine(plan: &Plan, mut partials: Vec<Partial>) -> Partial {
    let mut first = partials.swap_remove(0);
    for p in partials {
        first.items += p.items;
        first.parts.extend(p.parts);
    }
    first.parts.sort_by_key(|(bin, _)| *bin);
    if merge_is_exact(plan.synopses[first.syn as usize].kind) && first.parts.len() > 1 {
        let mut parts = std::mem::take(&mut first.parts).into_iter();
        if let Some((bin, mut acc)) = parts.next() {
            let mut failed = Vec::new();
            for (b, p) in parts {
                if acc.0.merge(p.0.as_ref()).is_err() {
                    failed.push((b, p));
                }
            }
            first.parts.push((bin, acc));
            first.parts.extend(failed);
        }
    }
    first
}

/// Extension trait: one tree-merge stage.
pub trait MergeTree<'scope> {
    /// Stage `stage` (1-based) of the tree merge toward each synopsis' home worker.
    fn merge_stage(self, plan: Rc<RefCell<Plan>>, stage: u32) -> Stream<'scope, u64, Vec<Out>>;
}

impl<'scope> MergeTree<'scope> for Stream<'scope, u64, Vec<Out>> {
    fn merge_stage(self, shared: Rc<RefCell<Plan>>, stage: u32) -> Stream<'scope, u64, Vec<Out>> {
        let scope = self.scope();
        let me = scope.index();
        let route = shared.clone();
        let pact = Exchange::new(move |o: &Out| match o {
            Out::Line(_) | Out::Snapshot(_) => me as u64,
            // Straight to the home: an ask does not wait for the tree.
            Out::Ask(a) => u64::from(a.ask.home),
            Out::Partial(p) => {
                let plan = route.borrow();
                plan.merge_target(plan.synopses[p.syn as usize].home, me, stage) as u64
            }
        });
        self.unary_frontier::<CapacityContainerBuilder<Vec<Out>>, _, _, _>(
            pact,
            &format!("MergeStage{stage}"),
            move |_cap, _info| {
                let mut pending: Pending = BTreeMap::new();
                move |(input, frontier), output| {
                    let plan = shared.borrow();
                    let plan = &*plan;
                    input.for_each_stamp(|stamp, data| {
                        let Some(cap) = stamp.retain_least(0) else { return };
                        let mut lines = Vec::new();
                        for batch in data {
                            stash_partials(plan, batch, &cap, &mut pending, &mut lines);
                        }
                        if !lines.is_empty() {
                            output.session(&cap).give_iterator(lines.into_iter());
                        }
                    });
                    while let Some((&w, _)) = pending.first_key_value() {
                        if frontier.less_equal(&plan.close_time(w)) {
                            break;
                        }
                        let Some((_, (cap, by_syn))) = pending.pop_first() else { break };
                        let mut by_syn: Vec<_> = by_syn.into_iter().collect();
                        by_syn.sort_unstable_by_key(|(s, _)| *s);
                        let mut session = output.session(&cap);
                        for (_, partials) in by_syn {
                            session.give(Out::Partial(combine(plan, partials)));
                        }
                    }
                }
            },
        )
    }
}
