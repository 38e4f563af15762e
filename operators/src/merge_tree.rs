//! `merge_stage`: one stage of the tree merge of spread synopses' partials.
//!
//! Stage k sends a partial where [`crate::plan::Routing::merge_target`] says: toward the
//! synopsis' home (the root, rotated per synopsis), within each process first (to the worker with
//! the root's local index), then across processes, so a merge over n processes sends n − 1
//! partials between them whatever the root.
//!
//! At every stage, a worker reduces the partials it holds of one synopsis and window to one if
//! the kind's merge does not depend on the merge tree ([`saams::Kind::reduces_at_every_merge_stage`]); the result
//! travels on as one partial. The other kinds' partials travel as a list and are merged at home
//! in bin order, each into the merged state, so their answers do not depend on the number of
//! workers either:
//!
//! - Count-Min, AMS (linear: counters add), HyperLogLog (registers take the maximum), Bloom
//!   filter (bits OR): the merged state is bit-identical for any tree and order;
//! - CPC: the merged sketch's coupons are the union of the parts' coupons, and a merged sketch
//!   answers (ICON estimate and bounds) from the number of coupons and lgK alone, so the answers
//!   are identical for any tree, though the bytes of its state may not be;
//! - KLL: mergeable with the same rank-error guarantee over any merge tree, and its compactions
//!   draw unseeded random bits, so its answers differ between runs of the same input anyway
//!   (the engine tests leave it out of their line-for-line comparisons); reducing at each stage
//!   changes nothing a caller can rely on;
//! - kept in bin order at the home: Lossy Counting (a merge adds the other side's error bound
//!   `⌊n/w⌋` to the entries it lacks and prunes at the new total, so S ⊕ (a ⊕ b) ≠ (S ⊕ a) ⊕ b
//!   in deltas and in which entries survive), Sticky Sampling (a merge thins the side with the
//!   lower rate with the receiver's coin tosses), GK (combine then compress at the running
//!   total), Frequent Items (a merge past the map's capacity purges by the median counter):
//!   their answers would depend on the number of workers.
//!
//! Order-sensitive kinds (DFT, LSH, window quantiles) are built one window per worker
//! (window-based mode): a window has one partial, which the stages pass on, and the home merges
//! windows in time order. Answer lines and snapshots pass through where they are.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator;

use crate::out::Out;
use crate::plan::Plan;
use crate::record::Partial;

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
            o @ (Out::Line(_) | Out::Snapshot(_) | Out::Ask(_) | Out::PairState(_)) => lines.push(o),
            Out::Partial(p) => {
                let (_, by_syn) = pending
                    .entry(p.window)
                    .or_insert_with(|| (cap.delayed(&plan.close_time(p.window)), HashMap::new()));
                by_syn.entry(p.syn).or_default().push(p);
            }
        }
    }
}

/// Fold a window's partials of one synopsis into one (kinds that reduce at every stage) or one
/// list in bin order (others). Partials are moved, never cloned.
pub(crate) fn combine(plan: &Plan, mut partials: Vec<Partial>) -> Partial {
    let mut first = partials.swap_remove(0);
    for p in partials {
        first.items += p.items;
        first.parts.extend(p.parts);
    }
    first.parts.sort_by_key(|(bin, _)| *bin);
    if plan.routing.synopses[first.syn as usize].kind.reduces_at_every_merge_stage() && first.parts.len() > 1 {
        let mut parts = std::mem::take(&mut first.parts).into_iter();
        if let Some((bin, mut acc)) = parts.next() {
            let mut failed = Vec::new();
            for (b, p) in parts {
                if acc.get_mut().merge(p.get()).is_err() {
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
            Out::Line(_) | Out::Snapshot(_) | Out::PairState(_) => me as u64,
            // Straight to the home: an ask does not wait for the tree.
            Out::Ask(a) => u64::from(a.ask.home),
            Out::Partial(p) => {
                let plan = route.borrow();
                plan.routing.merge_target(plan.routing.synopses[p.syn as usize].home, me, stage) as u64
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use saams::api::request::parse_requests;
    use saams::{Datum, Query, Synopsis};

    use super::*;
    use crate::plan::NoFiles;
    use crate::record::SynBox;

    /// A CPC (synopsis 0) and a Lossy Counting (synopsis 1), each in four bins.
    fn plan() -> Plan {
        let script = r#"{"streamID":"A","synopsisID":12,"dataSetKey":"F","param":["CPC","price","NotQueryable",11],"noOfP":4}
{"streamID":"A","synopsisID":5,"dataSetKey":"F","param":["LossyCounting","price","NotQueryable",0.1],"noOfP":4}"#;
        Plan::build(&parse_requests(script), 4, 60_000, Arc::new(NoFiles))
    }

    /// Partials of synopsis `syn`, one per bin, each over its own values (overlapping ranges).
    fn bins(plan: &Plan, syn: u32, order: [u64; 4]) -> Vec<Partial> {
        order
            .iter()
            .map(|&bin| {
                let mut part = plan.routing.synopses[syn as usize].fresh.clone();
                for i in 0..300 * (bin + 1) {
                    part.update(Datum::Num(((i * 7 + bin * 100) % 900) as f64));
                }
                Partial { syn, window: 0, items: 300 * (bin + 1), parts: vec![(bin, SynBox::new(part))] }
            })
            .collect()
    }

    /// Merge the parts into a fresh state in their order, as the home does.
    fn fold(plan: &Plan, p: &Partial) -> Box<dyn Synopsis> {
        let mut state = plan.routing.synopses[p.syn as usize].initial.clone();
        for (_, part) in &p.parts {
            state.merge(part.get()).expect("merge");
        }
        state
    }

    #[test]
    fn cpc_partials_reduce_to_one_with_the_answer_of_the_bin_ordered_merge() {
        let plan = plan();
        // What the home would have by merging each bin's partial in bin order.
        let parts = bins(&plan, 0, [0, 1, 2, 3]).into_iter().flat_map(|p| p.parts).collect();
        let expected = fold(&plan, &Partial { syn: 0, window: 0, items: 3000, parts });
        // Two stages of a tree: bins {3, 1} and {2, 0} meet first, then the two results.
        let mut first = bins(&plan, 0, [3, 1, 2, 0]);
        let (b, a) = (first.split_off(2), first);
        let (a, b) = (combine(&plan, a), combine(&plan, b));
        assert_eq!((a.parts.len(), b.parts.len()), (1, 1), "each stage leaves one partial");
        let root = combine(&plan, vec![b, a]);
        assert_eq!((root.parts.len(), root.items), (1, 3000));
        assert_eq!(root.parts[0].0, 0, "the reduced partial carries its lowest bin");
        let answer = |s: &dyn Synopsis| s.estimate(&Query::Distinct).expect("distinct");
        assert_eq!(answer(fold(&plan, &root).as_ref()), answer(expected.as_ref()));
    }

    #[test]
    fn lossy_counting_partials_stay_a_list_in_bin_order() {
        let plan = plan();
        let mut first = bins(&plan, 1, [3, 1, 2, 0]);
        let (b, a) = (first.split_off(2), first);
        let root = combine(&plan, vec![combine(&plan, b), combine(&plan, a)]);
        assert_eq!(root.parts.iter().map(|(bin, _)| *bin).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(root.items, 3000);
    }
}
