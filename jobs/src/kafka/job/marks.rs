//! The records of one poll as runs ([`Marks`]), recorded into the watermarks and the offset
//! tracker once per run instead of once per record.
//!
//! Why its own file: it is an optimisation with an exact-equivalence promise, tested here against
//! record-by-record recording.

use std::time::Instant;

use crate::kafka::consume::offsets::OffsetTracker;
use crate::kafka::consume::watermarks::PartitionWatermarks;

/// The records handled during one poll, as runs of consecutive records of one partition that went
/// to the same window (or to none: dead letters, late records, blank lines).
///
/// Why: a poll hands thousands of records, mostly long runs of one partition and one window;
/// recording each in the watermarks (a partition lookup) and the offset tracker (two map
/// look-ups) cost more than the records' routing. A run is recorded with its smallest and
/// largest offset and its newest event time, which leaves both exactly as record-by-record
/// recording would (both keep minima and maxima only).
#[derive(Debug, Default)]
pub(super) struct Marks {
    runs: Vec<Run>,
}

/// One run of [`Marks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    partition: i32,
    /// The window the run's records went into; `None`: they need no window flush.
    window: Option<u64>,
    first: i64,
    last: i64,
    /// Newest event time of the run's routed records.
    newest: i64,
}

impl Marks {
    /// A record of `partition` at `offset`; `routed`: its (event time, window) when it was routed.
    pub(super) fn push(&mut self, partition: i32, offset: i64, routed: Option<(i64, u64)>) {
        let window = routed.map(|(_, w)| w);
        let time = routed.map_or(i64::MIN, |(t, _)| t);
        if let Some(run) = self.runs.last_mut()
            && run.partition == partition
            && run.window == window
        {
            run.first = run.first.min(offset);
            run.last = run.last.max(offset);
            run.newest = run.newest.max(time);
            return;
        }
        self.runs.push(Run { partition, window, first: offset, last: offset, newest: time });
    }

    /// Records every run in `clock` (at `now`) and `offsets`, and forgets them.
    pub(super) fn drain_into(&mut self, clock: &mut PartitionWatermarks, offsets: &mut OffsetTracker, now: Instant) {
        for run in self.runs.drain(..) {
            match run.window {
                Some(window) => {
                    clock.observe(run.partition, run.newest, now);
                    offsets.mark_processed(run.partition, run.first, window);
                    offsets.mark_processed(run.partition, run.last, window);
                }
                None => {
                    offsets.mark_done(run.partition, run.first);
                    offsets.mark_done(run.partition, run.last);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn runs_record_what_record_by_record_marking_would() {
        // a deterministic mix: two partitions interleaved in bursts, windows changing, dead letters
        let mut records = Vec::new();
        let mut next = [0i64; 2];
        let mut x = 12345u64;
        for _ in 0..5_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let p = ((x >> 33) % 2) as i32;
            let burst = 1 + (x >> 40) % 20;
            for _ in 0..burst {
                let o = next[p as usize];
                next[p as usize] += 1;
                let time = o * 7 + p as i64 * 1_000;
                let routed = if (x >> 20).is_multiple_of(9) { None } else { Some((time, (time / 500) as u64)) };
                records.push((p, o, routed));
            }
        }
        let t0 = Instant::now();
        for chunk in [1usize, 7, 100, 8192] {
            let (mut one_clock, mut one_offsets) =
                (PartitionWatermarks::new(&[0, 1], 5, Duration::from_secs(60), t0), OffsetTracker::default());
            let (mut run_clock, mut run_offsets) = (one_clock.clone(), OffsetTracker::default());
            let mut marks = Marks::default();
            for batch in records.chunks(chunk) {
                for &(p, o, routed) in batch {
                    match routed {
                        Some((time, window)) => {
                            one_clock.observe(p, time, t0);
                            one_offsets.mark_processed(p, o, window);
                        }
                        None => one_offsets.mark_done(p, o),
                    }
                    marks.push(p, o, routed);
                }
                marks.drain_into(&mut run_clock, &mut run_offsets, t0);
                assert_eq!(run_clock.watermark(t0), one_clock.watermark(t0), "chunks of {chunk}");
                assert_eq!(run_offsets.pending(), one_offsets.pending(), "chunks of {chunk}");
            }
            for through in [10, 100, 1_000, u64::MAX] {
                assert_eq!(run_offsets.release_through(through), one_offsets.release_through(through), "{chunk}");
            }
            assert!(marks.runs.is_empty(), "drained");
        }
        assert!(records.len() > 20_000);
    }
}
