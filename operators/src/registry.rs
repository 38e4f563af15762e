//! The synopsis registry as data: its entries, and which synopses it registers at which window
//! as this worker has been told ([`crate::registry_join`] feeds it; the operators read it).

use std::cell::{Cell, RefCell};

/// A registry entry: the (dataSetKey, streamID) a synopsis summarizes ("" = every stream of the
/// dataset), and the synopsis ([`crate::plan::Routing::synopses`] index).
pub type Entry = ((String, String), u32);

/// Which synopses are registered at which window, as the registry's changes have told this
/// worker. Until a registry is joined ([`crate::registry_join::JoinRegistry::join_registry`]), every synopsis the plan
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
    /// use saams_operators::registry::LiveRegistry;
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
    /// use saams_operators::registry::LiveRegistry;
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

    /// Mark the registry as joined: from now on only synopses it registers are live.
    pub(crate) fn join(&self) {
        self.joined.set(true);
    }
}
