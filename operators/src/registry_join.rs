//! `join_registry`: routed tuple values meet the registry — a differential collection of
//! `((dataSetKey, streamID), synopsis)` entries, constructs +1 and deletes −1, timestamped by the
//! window from which they take effect (the request script at time 0) — so the update operator
//! maintains, at window `w`, exactly the synopses registered as of `w`.
//!
//! The registry is arranged by key (dataset, stream); its consolidated changes are broadcast to
//! every worker and applied, at their timestamps, to the plan's [`LiveRegistry`]. Tuple values
//! never go through differential: they pass this operator as they came (whole containers, no
//! per-record work). The registry stream is this operator's second input, so its output frontier
//! — the one the update operator closes windows by — passes `w` only after the registry's
//! frontier has: the update operator holds a window's values until every registry change up to
//! that window has been applied here, on every worker alike.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use differential_dataflow::VecCollection;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;

use crate::plan::Plan;
use crate::record::Rec;

/// A registry entry: the (dataSetKey, streamID) a synopsis summarizes ("" = every stream of the
/// dataset), and the synopsis ([`crate::plan::Plan::synopses`] index).
pub type Entry = ((String, String), u32);

/// Which synopses are registered at which window, as the registry's changes have told this
/// worker. Until a registry is joined ([`JoinRegistry::join_registry`]), every synopsis the plan
/// compiled is registered at every window (a plan used without a registry collection).
#[derive(Debug, Default)]
pub struct LiveRegistry {
    joined: Cell<bool>,
    /// Per synopsis, its registry changes (window, diff) in time order (a handful at most: it
    /// is read at every window close of every synopsis, so a dense vector, no hashing).
    changes: RefCell<Vec<Vec<(u64, isize)>>>,
}

impl LiveRegistry {
    /// Whether synopsis `syn` is registered at window `window` (its registry changes up to that
    /// window add up to a positive count).
    ///
    /// ```
    /// use saams_operators::registry_join::LiveRegistry;
    /// let live = LiveRegistry::default();
    /// assert!(live.is_live(3, 0), "no registry joined: the plan's synopses are live");
    /// live.apply(3, 60_000, 1);
    /// live.apply(3, 180_000, -1);
    /// assert!(!live.is_live(3, 0) && live.is_live(3, 60_000) && live.is_live(3, 120_000));
    /// assert!(!live.is_live(3, 180_000) && !live.is_live(4, 60_000));
    /// ```
    pub fn is_live(&self, syn: u32, window: u64) -> bool {
        if !self.joined.get() {
            return true;
        }
        self.changes
            .borrow()
            .get(syn as usize)
            .is_some_and(|c| c.iter().take_while(|(t, _)| *t <= window).map(|(_, d)| d).sum::<isize>() > 0)
    }

    /// The first window synopsis `syn` was registered at, if it ever was.
    ///
    /// ```
    /// use saams_operators::registry_join::LiveRegistry;
    /// let live = LiveRegistry::default();
    /// live.apply(2, 120_000, 1);
    /// assert_eq!((live.registered_from(2), live.registered_from(3)), (Some(120_000), None));
    /// ```
    pub fn registered_from(&self, syn: u32) -> Option<i64> {
        let changes = self.changes.borrow();
        let list = changes.get(syn as usize)?;
        let mut count = 0;
        list.iter().find_map(|&(t, d)| {
            count += d;
            (count > 0).then_some(t as i64)
        })
    }

    /// Apply one registry change: `diff` registrations of `syn` from window `time` on. Applying
    /// a change also marks the registry as joined (from then on only registered synopses are live).
    pub fn apply(&self, syn: u32, time: u64, diff: isize) {
        self.joined.set(true);
        let mut changes = self.changes.borrow_mut();
        if changes.len() <= syn as usize {
            changes.resize_with(syn as usize + 1, Vec::new);
        }
        let list = &mut changes[syn as usize];
        let at = list.partition_point(|(t, _)| *t <= time);
        list.insert(at, (time, diff));
    }

    fn join(&self) {
        self.joined.set(true);
    }
}

/// Extension trait: join routed values with the registry.
pub trait JoinRegistry<'scope> {
    /// Pass the values on unchanged, applying the registry's changes to `plan.live` at their
    /// timestamps; the output's frontier follows the registry's, so the update operator closes a
    /// window only once the registry is known up to it.
    fn join_registry(
        self,
        registry: VecCollection<'scope, u64, Entry>,
        plan: Rc<RefCell<Plan>>,
    ) -> Stream<'scope, u64, Vec<Rec>>;
}

impl<'scope> JoinRegistry<'scope> for Stream<'scope, u64, Vec<Rec>> {
    fn join_registry(
        self,
        registry: VecCollection<'scope, u64, Entry>,
        plan: Rc<RefCell<Plan>>,
    ) -> Stream<'scope, u64, Vec<Rec>> {
        plan.borrow().live.join();
        let changes = registry.arrange_by_key().as_collection(|key, syn| (key.clone(), *syn)).inner.broadcast();
        self.binary_frontier::<_, CapacityContainerBuilder<Vec<Rec>>, _, _, _, _>(
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
                    values.for_each_stamp(|stamp, data| output.session(&stamp).give_containers(data));
                }
            },
        )
    }
}
