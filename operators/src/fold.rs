//! `fold_partials`: at each spread synopsis' home worker, merge the window's partials (in bin
//! order; windows in time order) into the synopsis' merged state, answer its continuous queries
//! at every window close, and its ad-hoc queries and SAVEs at the end of the input. Answer lines
//! and snapshots of the upstream operators pass through; states for pair queries go on as snapshots.

use std::collections::HashMap;
use std::rc::Rc;

use saams::Synopsis;
use saams::api::estimation::Estimation;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;

use crate::answer;
use crate::merge_tree::{Pending, combine, stash_partials};
use crate::plan::{Mode, Plan};
use crate::record::{Out, Snapshot, SynBox};

/// Extension trait: fold partials into merged synopses and answer them.
pub trait FoldPartials<'scope> {
    /// Merge partials arriving at their home worker (after the last tree-merge stage) and emit
    /// every answer as a JSON line.
    fn fold_partials(self, plan: Rc<Plan>) -> Stream<'scope, u64, Vec<Out>>;
}

impl<'scope> FoldPartials<'scope> for Stream<'scope, u64, Vec<Out>> {
    fn fold_partials(self, plan: Rc<Plan>) -> Stream<'scope, u64, Vec<Out>> {
        let me = self.scope().index();
        self.unary_frontier::<CapacityContainerBuilder<Vec<Out>>, _, _, _>(
            Pipeline,
            "FoldPartials",
            move |mut cap, _info| {
                cap.downgrade(&u64::MAX);
                let mut end_cap = Some(cap);
                let mut pending = Pending::new();
                let mut merged: HashMap<u32, (Box<dyn Synopsis>, u64)> = HashMap::new();
                move |(input, frontier), output| {
                    input.for_each_stamp(|stamp, data| {
                        let Some(cap) = stamp.retain_least(0) else { return };
                        let mut lines = Vec::new();
                        for batch in data {
                            stash_partials(&plan, batch, &cap, &mut pending, &mut lines);
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
                        let mut lines = Vec::new();
                        let mut snapshots = Vec::new();
                        for (s, partials) in by_syn {
                            let spec = &plan.synopses[s as usize];
                            let p = combine(&plan, partials);
                            let (state, items) = merged.entry(s).or_insert_with(|| (spec.initial.clone(), 0));
                            *items += p.items;
                            let mut failure = None;
                            for (_, part) in &p.parts {
                                if let Err(e) = state.merge(part.0.as_ref()) {
                                    failure = Some(e.to_string());
                                }
                            }
                            match failure {
                                None => {
                                    answer::continuous(&plan, s, state.as_ref(), *items, w, &mut lines);
                                    for &dest in &spec.snapshot_to {
                                        let state = SynBox(state.clone());
                                        snapshots.push(Snapshot {
                                            syn: s,
                                            window: w,
                                            items: *items,
                                            dest: dest as u32,
                                            state,
                                        });
                                    }
                                }
                                Some(e) => {
                                    let msg = format!("merging partials failed: {e}");
                                    let mut est =
                                        Estimation::error(spec.request_id.clone(), None, spec.synopsis_id, msg);
                                    est.stream_id = spec.stream.clone();
                                    est.dataset_key = spec.dataset.clone();
                                    est.field = spec.field.clone();
                                    lines.push(est.to_json_line());
                                }
                            }
                        }
                        let mut session = output.session(&cap);
                        session.give_iterator(lines.into_iter().map(Out::Line));
                        session.give_iterator(snapshots.into_iter().map(Out::Snapshot));
                    }
                    if frontier.is_empty()
                        && let Some(cap) = end_cap.take()
                    {
                        let mut lines = Vec::new();
                        for (s, spec) in plan.synopses.iter().enumerate() {
                            let s = s as u32;
                            if spec.home != me || spec.mode == Mode::Owned || spec.group == u32::MAX {
                                continue;
                            }
                            match merged.get(&s) {
                                Some((state, items)) => answer::at_end(&plan, s, state.as_ref(), *items, &mut lines),
                                None => answer::at_end(&plan, s, spec.initial.as_ref(), 0, &mut lines),
                            }
                        }
                        output.session(&cap).give_iterator(lines.into_iter().map(Out::Line));
                    }
                }
            },
        )
    }
}
