//! `join_registry`: routed tuple values meet the registry — a differential collection of
//! `((dataSetKey, streamID), synopsis)` entries, constructs +1 and deletes −1, timestamped by the
//! window from which they take effect (the request script at time 0) — so the update operator
//! maintains, at window `w`, exactly the synopses registered as of `w`.
//!
//! The registry is arranged by key (dataset, stream); its consolidated changes are broadcast to
//! every worker and applied, at their timestamps, to the plan's
//! [`LiveRegistry`](crate::registry::LiveRegistry). Tuple values never go through differential:
//! they pass this operator as they came (whole containers, no per-record work), each moved into
//! the [`RecBatch`] whose bytes the update operator's exchange writes by hand between processes.
//! The registry stream is this operator's second input, so its output frontier
//! — the one the update operator closes windows by — passes `w` only after the registry's
//! frontier has: the update operator holds a window's values until every registry change up to
//! that window has been applied here, on every worker alike.

use std::cell::RefCell;
use std::rc::Rc;

use differential_dataflow::VecCollection;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;

use crate::plan::Plan;
use crate::record::{Rec, RecBatch};
use crate::registry::Entry;

/// Extension trait: join routed values with the registry.
pub trait JoinRegistry<'scope> {
    /// Pass the values on unchanged, applying the registry's changes to `plan.live` at their
    /// timestamps; the output's frontier follows the registry's, so the update operator closes a
    /// window only once the registry is known up to it.
    fn join_registry(
        self,
        registry: VecCollection<'scope, u64, Entry>,
        plan: Rc<RefCell<Plan>>,
    ) -> Stream<'scope, u64, RecBatch>;
}

impl<'scope> JoinRegistry<'scope> for Stream<'scope, u64, Vec<Rec>> {
    fn join_registry(
        self,
        registry: VecCollection<'scope, u64, Entry>,
        plan: Rc<RefCell<Plan>>,
    ) -> Stream<'scope, u64, RecBatch> {
        plan.borrow().live.join();
        let changes = registry.arrange_by_key().as_collection(|key, syn| (key.clone(), *syn)).inner.broadcast();
        self.binary_frontier::<_, CapacityContainerBuilder<RecBatch>, _, _, _, _>(
            changes,
            Pipeline,
            Pipeline,
            "JoinRegistry",
            move |_cap, _info| {
                move |(values, _), (changes, _), output| {
                    changes.for_each_stamp(|_, data| {
                        for batch in data {
                            for ((_, syn), time, diff) in batch.drain(..) {
                                plan.borrow().live.apply(syn, time, diff);
                            }
                        }
                    });
                    values.for_each_stamp(|stamp, data| {
                        let mut session = output.session(&stamp);
                        data.for_each(|recs| session.give_container(&mut RecBatch(std::mem::take(recs))));
                    });
                }
            },
        )
    }
}
