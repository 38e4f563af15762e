//! The one lock helper the Kafka producers, the job's shared state and its counters use.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, also when another thread panicked while holding it: the producers and the job's
/// counters stay usable, so the exit report still says what was delivered and what went wrong.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}
