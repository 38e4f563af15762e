//! The reorder buffer of one update group (and bin): values the frontier has not passed yet,
//! kept as a few sorted runs and released in feed order (event time, then arrival sequence).

use std::collections::VecDeque;
use std::ops::Range;

use crate::record::Rec;

/// Values of one update group (and bin) the frontier has not passed yet, as a few sorted runs.
///
/// Every value joins, on arrival, the run whose newest value is the newest one older than it (a
/// new run if none is), so each run is sorted by (event time, arrival sequence) and an input
/// that arrives in order extends one run. A release takes the values older than the bound from
/// the front of every run (a binary search per run) and merges them; the values left are not
/// looked at again.
///
/// Why: a buffer fed by several inputs at different event times (a file split into byte ranges,
/// Kafka partitions) is not in arrival order. Partitioning all of it at every release, as this
/// buffer did before, was ~13 % of a JSON-lines replay of a file in four byte ranges (buffers of
/// ~17,000 values behind a watermark held back by the slowest range, walked at every
/// activation); sorting new values into one sorted buffer instead moved ~13,000 values per merge.
/// Now a release costs the values it releases (times the number of runs).
///
/// Values of a group with no order-sensitive synopsis come out sorted too: such groups hold
/// exact-merge kinds only, whose state does not depend on the order.
pub(super) struct Reorder {
    /// Sorted runs (none empty).
    runs: Vec<VecDeque<Rec>>,
    /// Values in all runs.
    waiting: usize,
    /// The values the last [`Reorder::take_older`] released (kept for its allocation).
    released: Vec<Rec>,
    /// Runs emptied by a release, kept for the next run to start (at most [`SPARE_RUNS`]).
    ///
    /// Why: a buffer fed by two workers or processes starts and empties runs all the time (a
    /// release takes a run whole when its input is behind the other's); each new run grew
    /// from nothing (`VecDeque::grow` copying and faulting in fresh pages, ~9 % of a `-n 2`
    /// process' page faults) and each emptied one was freed.
    spare: Vec<VecDeque<Rec>>,
}

/// The order values are fed in: event time, then arrival sequence (unique per group).
pub(super) fn feed_order(r: &Rec) -> (i64, u64) {
    (r.time, r.seq)
}

/// Runs a buffer may have before they are merged into one: arrival orders that keep starting
/// runs (values in falling event time) cost a sort, not a scan of ever more runs per value.
const MAX_RUNS: usize = 16;

/// Emptied runs a buffer keeps for reuse: enough for the runs of two inputs to restart.
const SPARE_RUNS: usize = 2;

impl Reorder {
    pub(super) fn new() -> Reorder {
        Reorder { runs: Vec::new(), waiting: 0, released: Vec::new(), spare: Vec::new() }
    }

    pub(super) fn push(&mut self, recs: impl Iterator<Item = Rec>) {
        // The run the previous value of this call went to: the values of one call are a run of
        // one input's values, so they follow each other there.
        let mut last = usize::MAX;
        for r in recs {
            self.waiting += 1;
            let key = feed_order(&r);
            let fits = |run: &VecDeque<Rec>| run.back().is_some_and(|b| feed_order(b) < key);
            // Else the run whose newest value is the newest one older than `r`, which keeps the
            // runs few (values of an input lagging behind another go to its own run, not to the
            // other's).
            let target = if last < self.runs.len() && fits(&self.runs[last]) {
                Some(last)
            } else {
                let mut best: Option<(usize, (i64, u64))> = None;
                for (i, run) in self.runs.iter().enumerate() {
                    if let Some(b) = run.back().map(feed_order)
                        && b < key
                        && best.is_none_or(|(_, k)| b > k)
                    {
                        best = Some((i, b));
                    }
                }
                best.map(|(i, _)| i)
            };
            match target {
                Some(i) => {
                    self.runs[i].push_back(r);
                    last = i;
                }
                None => {
                    let mut run = self.spare.pop().unwrap_or_default();
                    run.push_back(r);
                    self.runs.push(run);
                    last = self.runs.len() - 1;
                }
            }
            if self.runs.len() > MAX_RUNS {
                self.merge_runs();
                last = 0;
            }
        }
    }

    /// Merge every run into one.
    fn merge_runs(&mut self) {
        let mut all: Vec<Rec> = Vec::with_capacity(self.waiting);
        for mut run in self.runs.drain(..) {
            all.extend(run.drain(..));
            if self.spare.len() < SPARE_RUNS {
                self.spare.push(run);
            }
        }
        all.sort_by_key(feed_order);
        self.runs.push(VecDeque::from(all));
    }

    /// Every value waiting, run by run.
    pub(super) fn values(&self) -> impl Iterator<Item = &Rec> {
        self.runs.iter().flatten()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.waiting == 0
    }

    pub(super) fn waiting(&self) -> usize {
        self.waiting
    }

    /// Capacity held for values.
    pub(super) fn capacity(&self) -> usize {
        self.runs.iter().chain(&self.spare).map(VecDeque::capacity).sum::<usize>() + self.released.capacity()
    }

    /// Event time of the oldest value waiting.
    pub(super) fn oldest(&self) -> Option<i64> {
        self.runs.iter().filter_map(|run| run.front().map(|r| r.time)).min()
    }

    /// Take the waiting values older than `bound`, in (event time, arrival sequence) order, if
    /// there are at least `at_least` of them (and at least one).
    pub(super) fn take_older(&mut self, bound: i64, at_least: usize) -> Option<&[Rec]> {
        self.released.clear();
        // At most MAX_RUNS runs (`push` merges past it): the counts on the stack, not allocated
        // at every release a buffer is asked for.
        let mut counts = [0usize; MAX_RUNS];
        let counts = &mut counts[..self.runs.len()];
        for (n, run) in counts.iter_mut().zip(&self.runs) {
            *n = older_than(run, bound);
        }
        let total: usize = counts.iter().sum();
        if total == 0 || total < at_least {
            return None;
        }
        self.released.reserve(total);
        merge_fronts(&mut self.runs, counts, &mut self.released);
        // Emptied runs: kept for the next run to start, up to SPARE_RUNS.
        let spare = &mut self.spare;
        self.runs.retain_mut(|run| {
            if run.is_empty() && spare.len() < SPARE_RUNS {
                spare.push(std::mem::take(run));
            }
            !run.is_empty()
        });
        self.waiting -= self.released.len();
        Some(&self.released)
    }
}

/// Move the first `counts[i]` values of every run `i` to `out`, merged in feed order: from the
/// run whose front is oldest, every value older than the oldest front of the others, in one
/// move (found by [`short_prefix`]).
///
/// Why: a buffer fed by two workers or processes holds a run of each, and a release takes the
/// front of both. Merging them value by value (a scan of every run's front per value) made
/// `take_older` ~5× its `-w 1` share at `-w 2`. Runs over separate spans of time (an input
/// behind another) now cost a move each; runs that alternate value by value cost about a
/// comparison per value, without the scan of every run.
fn merge_fronts(runs: &mut [VecDeque<Rec>], counts: &mut [usize], out: &mut Vec<Rec>) {
    loop {
        // The run with the oldest front, and the oldest front of the others.
        let mut first: Option<(usize, (i64, u64))> = None;
        let mut second: Option<(i64, u64)> = None;
        for (i, run) in runs.iter().enumerate() {
            let Some(key) = run.front().map(feed_order).filter(|_| counts[i] > 0) else { continue };
            match first {
                Some((_, k)) if key > k => second = Some(second.map_or(key, |s| s.min(key))),
                _ => {
                    second = first.map(|(_, k)| k);
                    first = Some((i, key));
                }
            }
        }
        let Some((i, _)) = first else { return };
        let run = &mut runs[i];
        let n = match second {
            None => counts[i],
            // Keys are unique (the arrival sequence), so at least the front moves.
            Some(limit) => short_prefix(run, counts[i], |r| feed_order(r) < limit),
        };
        counts[i] -= n;
        if n <= SHORT {
            out.extend((0..n).filter_map(|_| run.pop_front()));
        } else {
            out.extend(run.drain(..n));
        }
    }
}

/// Values a merge step moves one by one (popped) rather than drained: runs of two inputs read at
/// the same event times alternate every value or few, and a drain per value costs more than
/// the pops.
const SHORT: usize = 4;

/// Values a merge step compares in turn before it gallops past them.
///
/// Why: the runs of a buffer fed by two workers alternate in chunks of a few to a few hundred
/// values (one stripe of a file's unit: a 2 M-line file at `-w 2` gave ~30,000 merge steps a
/// worker, ~34 values a step, none over 256), and the values a release reads were written
/// long before (the buffer holds the lateness' worth), so they are out of the cache. A gallop
/// from the 5th value (probes 1, 2, 4, … values on, then a binary search back) reads those
/// lines out of order, a miss and a mispredicted exit at each probe: `gallop` was +716 of the
/// +3,568 samples `-w 2` adds to `-w 1` on a 5 M-line file (~300 ns a step). A scan reads them
/// in order, as the move after it does, which the prefetcher follows.
const SCAN: usize = 256;

/// How many of the first `max` values of `run` satisfy `before` (true on a prefix): up to
/// [`SCAN`] looked at in turn, a gallop past them.
#[inline]
fn short_prefix(run: &VecDeque<Rec>, max: usize, before: impl Fn(&Rec) -> bool + Copy) -> usize {
    let limit = max.min(SCAN);
    let n = scan_prefix(run, limit, before);
    // The gallop stops at `max`: probing a long run to its end (the other runs' fronts being
    // far newer) touched a cache line in each part of it.
    if n < limit || n == max { n } else { n + prefix_len_in(run, n..max, before) }
}

/// How many of the first `limit` values of `run` (at most its length) satisfy `before`, looked
/// at in turn, in each of the deque's two slices.
#[inline]
fn scan_prefix(run: &VecDeque<Rec>, limit: usize, before: impl Fn(&Rec) -> bool) -> usize {
    let (front, back) = run.as_slices();
    let front = &front[..limit.min(front.len())];
    let n = front.iter().position(|r| !before(r)).unwrap_or(front.len());
    if n < front.len() || n == limit {
        return n;
    }
    let back = &back[..limit - n];
    n + back.iter().position(|r| !before(r)).unwrap_or(back.len())
}

/// How many of `run`'s values are older than `bound`: a galloping search from the front (probes
/// at 1, 2, 4, … values, then a binary search between the last two). A release usually takes a
/// short prefix of a long run (the values of the last few epochs of a buffer that holds minutes
/// of them), and a buffer holding fewer than `at_least` such values is asked again at every
/// activation: a binary search over the whole run touched a cache line in each part of it
/// (`partition_point` was ~3.6 % of a batched Kafka run's worker samples), this one only the
/// front the release reads anyway.
fn older_than(run: &VecDeque<Rec>, bound: i64) -> usize {
    prefix_len(run, |r| r.time < bound)
}

/// How many values from `run`'s front satisfy `before` (true on a prefix of the run): a
/// galloping search in each of the deque's two slices.
#[inline]
fn prefix_len(run: &VecDeque<Rec>, before: impl Fn(&Rec) -> bool + Copy) -> usize {
    prefix_len_in(run, 0..run.len(), before)
}

/// [`prefix_len`] of the values in `range` of `run` (those before it satisfy `before`).
#[inline]
fn prefix_len_in(run: &VecDeque<Rec>, range: Range<usize>, before: impl Fn(&Rec) -> bool + Copy) -> usize {
    let (front, back) = run.as_slices();
    let split = front.len();
    let front = &front[range.start.min(split)..range.end.min(split)];
    let back = &back[range.start.saturating_sub(split)..range.end.saturating_sub(split)];
    let n = gallop(front, before);
    if n < front.len() { n } else { n + gallop(back, before) }
}

/// [`prefix_len`] in one slice.
#[inline]
fn gallop(s: &[Rec], before: impl Fn(&Rec) -> bool) -> usize {
    let (mut lo, mut step) = (0, 1);
    // `s[..lo]` all satisfy `before`.
    while lo + step <= s.len() {
        let probe = lo + step - 1;
        if !before(&s[probe]) {
            return lo + s[lo..probe].partition_point(&before);
        }
        lo = probe + 1;
        step *= 2;
    }
    lo + s[lo..].partition_point(before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Val;

    #[test]
    fn older_than_counts_what_a_binary_search_does_in_wrapped_runs() {
        let rec = |time: i64| Rec { group: 0, time, seq: 0, val: Val::Num(0.0) };
        let mut wrapped = 0;
        // Short runs, and runs past what a merge step scans before it gallops.
        for len in (0..70usize).chain([SCAN - 1, SCAN, SCAN + 1, 2 * SCAN + 40]) {
            for skip in [0usize, 1, 5, 33] {
                // The values start `skip` slots into the deque's buffer, so they wrap around its end.
                let mut run: VecDeque<Rec> = VecDeque::with_capacity(len);
                for _ in 0..skip.min(run.capacity()) {
                    run.push_back(rec(-1_000));
                    run.pop_front();
                }
                run.extend((0..len).map(|i| rec((i / 3) as i64 * 2)));
                wrapped += usize::from(!run.as_slices().1.is_empty());
                for bound in -2..(len as i64) + 2 {
                    let n = run.partition_point(|r| r.time < bound);
                    assert_eq!(older_than(&run, bound), n, "{len} {skip} {bound}");
                    let before = |r: &Rec| r.time < bound;
                    for start in [0, n / 2, n.saturating_sub(1), n] {
                        for end in [start, n, len] {
                            let got = start + prefix_len_in(&run, start..end, before);
                            assert_eq!(got, n.min(end), "{len} {skip} {bound} {start} {end}");
                        }
                    }
                    for max in [0, 1, 3, SHORT, SHORT + 1, SCAN - 1, SCAN, SCAN + 1, n + 2, len] {
                        assert_eq!(short_prefix(&run, max.min(len), before), n.min(max), "{len} {skip} {bound} {max}");
                    }
                }
            }
        }
        assert!(wrapped > 50, "runs in two slices were tried: {wrapped}");
    }

    /// Two inputs a few values apart in time, released as the frontier moves: the runs emptied
    /// by a release start the next runs (no allocation grows past the first rounds').
    #[test]
    fn emptied_runs_are_reused() {
        let mut buffer = Reorder::new();
        let rec = |time: i64, seq: u64| Rec { group: 0, time, seq, val: Val::Num(0.0) };
        let mut capacity = Vec::new();
        for round in 0..50i64 {
            // Input 1 is behind input 0: its values start a run of their own every round.
            let base = round * 100;
            buffer.push((0..40).map(|i| rec(base + 50 + i, (1 << 40) | (round * 40 + i) as u64)));
            buffer.push((0..40).map(|i| rec(base + i, (round * 40 + i) as u64)));
            let got: Vec<i64> = buffer.take_older(base + 100, 1).unwrap_or_default().iter().map(|r| r.time).collect();
            assert_eq!(got.len(), 80, "round {round}");
            assert!(got.windows(2).all(|p| p[0] <= p[1]));
            assert!(buffer.is_empty() && buffer.spare.len() == SPARE_RUNS);
            capacity.push(buffer.capacity());
        }
        assert!(capacity[10..].iter().all(|&c| c == capacity[10]), "{capacity:?}");
    }

    /// Several inputs, each in event-time order, interleaved in uneven runs (as a file read in
    /// byte ranges or Kafka partitions arrive), plus values in falling time that start runs:
    /// every release gives exactly the values older than its bound, in (time, sequence) order.
    #[test]
    fn releases_in_feed_order_whatever_the_arrival_order() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut buffer = Reorder::new();
        let mut expected: Vec<(i64, u64)> = Vec::new();
        let inputs = 5u64;
        let mut clock = [0i64; 5];
        let mut line = [0u64; 5];
        let mut released = Vec::new();
        for round in 0..400 {
            let mut arriving = Vec::new();
            for _ in 0..next(40) {
                let u = next(inputs) as usize;
                // Input 4 arrives backwards now and then (new runs, up to a merge of all).
                clock[u] += if u == 4 && next(3) == 0 { -(next(50) as i64) } else { next(20) as i64 };
                line[u] += 1;
                let r = Rec { group: 0, time: clock[u] + 1000, seq: ((u as u64) << 40) | line[u], val: Val::Num(1.0) };
                expected.push(feed_order(&r));
                arriving.push(r);
            }
            buffer.push(arriving.into_iter());
            assert_eq!(buffer.waiting(), expected.len());
            assert_eq!(buffer.oldest(), expected.iter().map(|k| k.0).min());
            let bound = 1000 + round * 5;
            expected.sort_unstable();
            let n = expected.partition_point(|k| k.0 < bound);
            assert!(buffer.take_older(bound, n + 1).is_none(), "fewer than asked for");
            let got: Vec<(i64, u64)> = buffer.take_older(bound, 0).unwrap_or_default().iter().map(feed_order).collect();
            assert_eq!(got, expected[..n], "round {round}");
            released.extend(expected.drain(..n));
            assert!(buffer.runs.len() <= MAX_RUNS && buffer.runs.iter().all(|r| !r.is_empty()));
        }
        let got: Vec<(i64, u64)> = buffer.take_older(i64::MAX, 1).unwrap_or_default().iter().map(feed_order).collect();
        assert_eq!(got, expected);
        assert!(buffer.is_empty() && buffer.runs.is_empty());
        assert!(released.len() > 1000);
    }
}
