//! Emptied record vectors kept for reuse by the thread that dropped them: the containers the
//! readers fill, the exchange ships and the update operator drains.
//!
//! Why: timely hands no container back (its channels drop what they delivered), so every
//! container of routed records was a fresh allocation of ~160 KiB, written once and freed: the
//! reader's containers, the exchange's per-worker containers, and each message decoded from
//! another process ([`super::RecBatch::decode`]). glibc gives such blocks back to the kernel
//! (trimmed or unmapped) and the next one faults in zeroed pages: at `-n 2 -w 1` on the paper
//! workload ~a third of each process' page faults were the reader's containers and the decoded
//! messages. Kept here, a container's pages are reused while they are still in the cache.
//!
//! A thread keeps at most [`KEPT`] vectors of at most [`MAX_KEPT`] records each, so what it
//! holds is bounded (2.5 MiB) whatever the traffic; a vector dropped on another thread (the
//! exchange between workers of a process) joins that thread's pool.

use std::cell::RefCell;

use super::Rec;

/// Vectors a thread keeps: more than the containers a worker has in flight at once (one per
/// target worker being filled by the reader and by the exchange, and those delivered to it).
const KEPT: usize = 8;

/// Capacity (records) above which an emptied vector is freed, not kept: twice a routed batch
/// (the reader's and the exchange's containers are at most 4096 records).
const MAX_KEPT: usize = 2 * 4096;

thread_local! {
    static SPARE: RefCell<Vec<Vec<Rec>>> = const { RefCell::new(Vec::new()) };
}

/// An empty vector with room for at least `n` records: a kept one if the thread has one.
pub fn take(n: usize) -> Vec<Rec> {
    let kept = SPARE.try_with(|s| s.borrow_mut().pop()).ok().flatten();
    match kept {
        // One too small is freed, not grown: `realloc` would copy all of its old room.
        Some(v) if v.capacity() >= n => v,
        _ => Vec::with_capacity(n),
    }
}

/// Keep `v`'s allocation for a later [`take`] (emptied first); one without capacity, above
/// [`MAX_KEPT`], or beyond the [`KEPT`] a thread holds is freed.
pub fn give_back(mut v: Vec<Rec>) {
    if v.capacity() == 0 || v.capacity() > MAX_KEPT {
        return;
    }
    v.clear();
    // At a thread's exit the pool may be gone already: the vector is freed then.
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < KEPT {
            s.push(v);
        }
    });
}

/// Vectors the calling thread keeps now.
#[cfg(test)]
pub(super) fn kept() -> usize {
    SPARE.with_borrow(Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Val;

    /// A vector given back is the next one taken (its allocation, emptied); the pool keeps at
    /// most `KEPT` vectors and none above `MAX_KEPT` records.
    #[test]
    fn vectors_given_back_are_reused_and_the_pool_stays_bounded() {
        // Each test runs on a thread of its own: the pool starts empty.
        assert_eq!(kept(), 0);
        let mut v = take(100);
        v.extend((0..100).map(|i| Rec { group: 1, time: i, seq: 0, val: Val::Str("x".into()) }));
        let at = v.as_ptr();
        give_back(v);
        assert_eq!(kept(), 1);
        let again = take(50);
        assert!(again.is_empty() && again.capacity() >= 100);
        assert_eq!(again.as_ptr(), at, "the same allocation");
        assert_eq!(kept(), 0);
        give_back(Vec::with_capacity(MAX_KEPT + 1));
        give_back(Vec::new());
        assert_eq!(kept(), 0, "too large or empty: freed");
        for _ in 0..KEPT + 5 {
            give_back(Vec::with_capacity(10));
        }
        assert_eq!(kept(), KEPT);
        // A kept vector smaller than asked for grows.
        assert!(take(1000).capacity() >= 1000);
    }
}
