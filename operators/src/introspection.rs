//! What each synopsis is doing, as the workers last said: the values its merged state
//! summarizes, its size, the last window it answered and the worker holding it. The worker that
//! holds a synopsis' merged state (its owner, or its home for a spread one) publishes a row at
//! every window close it answers; the HTTP side reads the table (`GET /synopses`). The dataflow
//! never waits for a reader: a row is written under a lock held for one insert.

use std::collections::HashMap;
use std::sync::Mutex;

/// One synopsis' figures at the last window its merged state closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynopsisFigures {
    /// Values the merged state summarizes: every value of its stream (and field) from the
    /// window it counts from up to the end of `last_window`.
    pub tuples: u64,
    /// The merged state's size in memory ([`saams::Synopsis::size_bytes`]).
    pub bytes: usize,
    /// The last window (start, ms) closed and answered.
    pub last_window: u64,
    /// Its end (ms).
    pub window_end: u64,
    /// The worker holding the merged state.
    pub worker: usize,
}

/// The table the workers of a process publish into, by synopsis (its index in the plan).
///
/// ```
/// use saams_operators::introspection::{Published, SynopsisFigures};
/// let table = Published::default();
/// let row = SynopsisFigures { tuples: 3, bytes: 64, last_window: 60_000, window_end: 120_000, worker: 1 };
/// table.publish(2, row);
/// assert_eq!(table.get(2), Some(row));
/// table.keep(|syn| syn != 2);
/// assert_eq!(table.get(2), None);
/// ```
#[derive(Debug, Default)]
pub struct Published {
    rows: Mutex<HashMap<u32, SynopsisFigures>>,
}

impl Published {
    /// Publish synopsis `syn`'s figures (replacing the previous row).
    pub fn publish(&self, syn: u32, figures: SynopsisFigures) {
        if let Ok(mut rows) = self.rows.lock() {
            rows.insert(syn, figures);
        }
    }

    /// Synopsis `syn`'s last published figures.
    pub fn get(&self, syn: u32) -> Option<SynopsisFigures> {
        self.rows.lock().ok()?.get(&syn).copied()
    }

    /// Forget the rows of the synopses `live` says no (deleted ones).
    pub fn keep(&self, live: impl Fn(u32) -> bool) {
        if let Ok(mut rows) = self.rows.lock() {
            rows.retain(|&syn, _| live(syn));
        }
    }
}
