//! Which offsets may be committed ([`OffsetTracker`]): only those of records whose windows the
//! engine has flushed, which makes the Kafka input at-least-once.
//!
//! Why its own file: pure bookkeeping with no Kafka client, tested on its own.

use std::collections::BTreeMap;

/// Which offsets may be committed, given which event-time windows have been flushed to the sink.
///
/// For each partition it keeps, per unflushed window, the smallest offset that went into it, and the
/// highest offset handled. The committable position of a partition (the next offset to read after a
/// restart) is the smallest offset still in an unflushed window, or one past the highest handled
/// offset when every window it fed is flushed. Committing only that far is at-least-once: records
/// of a window are read again after a crash unless the window's estimations reached the sink.
///
/// ```
/// use saams_jobs::kafka::OffsetTracker;
/// let mut t = OffsetTracker::default();
/// t.mark_processed(0, 10, 1); // offset 10 of partition 0 went into window 1
/// t.mark_processed(0, 11, 2);
/// t.mark_processed(0, 12, 1); // out of order in event time
/// assert_eq!(t.release_through(1), vec![(0, 11)], "offset 11 (window 2) is not flushed yet");
/// assert_eq!(t.release_through(2), vec![(0, 13)]);
/// assert_eq!(t.release_through(3), vec![], "nothing new to commit");
/// ```
#[derive(Debug, Clone, Default)]
pub struct OffsetTracker {
    parts: BTreeMap<i32, PartitionOffsets>,
}

#[derive(Debug, Clone, Default)]
struct PartitionOffsets {
    /// window → smallest offset of this partition in it, for windows not yet flushed
    pending: BTreeMap<u64, i64>,
    /// one past the highest handled offset
    next: Option<i64>,
    /// the last position returned by `release_through`, or the first offset handled: positions at or
    /// below it are no progress
    released: Option<i64>,
}

impl OffsetTracker {
    /// Records that `offset` of `partition` went into event-time window `window` (any `u64` the engine
    /// uses for windows, e.g. the window start); it is committable once that window is flushed.
    pub fn mark_processed(&mut self, partition: i32, offset: i64, window: u64) {
        let part = self.parts.entry(partition).or_default();
        part.released.get_or_insert(offset);
        part.pending.entry(window).and_modify(|m| *m = (*m).min(offset)).or_insert(offset);
        part.next = Some(part.next.map_or(offset + 1, |n| n.max(offset + 1)));
    }

    /// Records that `offset` of `partition` needs no window flush (e.g. it was a malformed record
    /// already handed to the dead-letter sink, or a late record).
    pub fn mark_done(&mut self, partition: i32, offset: i64) {
        let part = self.parts.entry(partition).or_default();
        part.released.get_or_insert(offset);
        part.next = Some(part.next.map_or(offset + 1, |n| n.max(offset + 1)));
    }

    /// Forgets every window `<= window` (they are flushed) and returns the partitions whose
    /// committable position moved, with that position, sorted by partition.
    pub fn release_through(&mut self, window: u64) -> Vec<(i32, i64)> {
        let mut moved = Vec::new();
        for (&partition, part) in &mut self.parts {
            part.pending = match window.checked_add(1) {
                Some(first_kept) => part.pending.split_off(&first_kept),
                None => BTreeMap::new(),
            };
            let Some(next) = part.next else { continue };
            let position = part.pending.values().copied().fold(next, i64::min);
            if part.released.is_none_or(|r| position > r) {
                part.released = Some(position);
                moved.push((partition, position));
            }
        }
        moved
    }

    /// Number of (partition, window) pairs still waiting for a flush.
    pub fn pending(&self) -> usize {
        self.parts.values().map(|p| p.pending.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_flushed_windows_per_partition() {
        let mut t = OffsetTracker::default();
        t.mark_processed(0, 0, 10);
        t.mark_processed(1, 0, 20);
        t.mark_processed(0, 1, 20);
        t.mark_done(1, 1); // a dead letter
        t.mark_processed(1, 2, 10);
        assert_eq!(t.pending(), 4);
        // window 10 flushed: partition 0 up to offset 1 (in window 20), partition 1 held at 0
        assert_eq!(t.release_through(10), vec![(0, 1)]);
        assert_eq!(t.release_through(20), vec![(0, 2), (1, 3)]);
        assert_eq!(t.pending(), 0);
        t.mark_done(0, 2);
        assert_eq!(t.release_through(u64::MAX), vec![(0, 3)]);
    }
}
