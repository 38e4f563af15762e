//! How often a reading worker advances its input's epoch. Every advance is progress traffic:
//! timely sends the input's change to every worker (of every process), and each of them
//! wakes, merges it and propagates the frontier through its dataflow. A worker that advanced
//! at every epoch step it passed (a minute of event time: ~166 tuples of the AIS generator)
//! made a job of 12 threads spend most of its time in `step_or_park`, `poll_events` and
//! `propagate_pointstamps` (docs/figures.md, Figure 12), and a `-w 2` worker ~30 instructions
//! a tuple in progress tracking.
//!
//! So a worker that is reading at full pace advances only once it has routed
//! [`PACE_TUPLES`] tuples since its last advance or [`PACE_WAIT`] of wall time has passed,
//! whichever comes first. It advances at once when it has nothing to read (a quiet or ended
//! input, or one waiting for the other workers): a window never waits for the next batch of a
//! worker that is idle. The epoch it advances to is the same as before (the oldest time its
//! inputs can still produce, in steps), only later: the values sent, their times and their
//! order are unchanged, so every answer is byte-identical; a window's answers come out at most
//! [`PACE_WAIT`] (plus the round in progress) later than with an advance at every step.
//!
//! A paced worker's epoch (and so the job's frontier) stays behind its reading by up to
//! [`PACE_TUPLES`] of its tuples: the bounds that keep workers reading near the frontier (the
//! span a worker ahead may read, the lag behind the processed frontier at which a worker
//! parks) grow by that much event time, [`EpochPace::reach`], or every worker ahead waited for
//! the frontier after a step's worth of tuples and advanced at once by one step: with the AIS
//! generator's ~100 tuples a step per worker, 9 of 10 rounds read nothing.
//!
//! The bounds themselves are here too ([`EpochPace::span`], [`EpochPace::lag`]), as they are
//! counted in reaches.

use std::time::{Duration, Instant};

/// Tuples a worker routes between two advances of its epoch while it reads at full pace: at
/// ~12 k instructions of progress tracking per advance at `-w 2`, under one instruction a
/// tuple.
pub(super) const PACE_TUPLES: u64 = 16_384;

/// The longest a reading worker holds an advance back: the bound on how much later a window's
/// answers come out than with an advance at every epoch step.
pub(super) const PACE_WAIT: Duration = Duration::from_millis(5);

/// Granularity (event-time ms) of the input's epoch when windows are longer: the watermark
/// that releases values inside a window moves in these steps.
pub(super) const EPOCH_STEP_MS: i64 = 60_000;

/// The most event time (ms) the reading loop runs ahead of what the dataflow has processed.
const MAX_LAG_MS: i64 = 4 * EPOCH_STEP_MS;

/// How many epoch steps (past the lateness) a worker may read ahead of the job's frontier when
/// its units do not hold it (`WorkerState::span_end` in `super::worker`).
const SPAN_STEPS: u64 = 2;

/// How many paces of its own tuples ([`EpochPace::reach`], the event time of [`PACE_TUPLES`] of
/// them) a worker may read ahead of the job's frontier besides [`SPAN_STEPS`], when its units
/// do not hold it. The frontier trails the reading by more than one pace: the worker's own
/// epoch moves once a pace, the other workers' once theirs, and then the values of the time
/// passed must still cross the exchange and leave the reorder buffers, and under `-n > 1` the
/// progress crosses the network threads. With 2 paces a worker ahead found the span used up in
/// most rounds and parked: a 5 M-line file at `-n 2 -w 1` ran at 0.85 of the two cores, 1.4×
/// one worker; with 8, 1.7× (docs/figures.md, "Reading ahead of the frontier"); with 16, 5–8 %
/// less wall time again at `-n 2` on a quiet machine, `-w 2` unchanged, peak RSS a few MB more
/// (docs/figures.md, "On a quiet machine: what is left between one worker and two"; 32 grew
/// the RSS by up to 40 MB). The bound stays one of tuples (16 × 16 Ki a worker), whatever the
/// input's density in event time.
const SPAN_PACES: u64 = 16;

/// [`SPAN_PACES`] for a job paced by `--rate`: its workers read slowly anyway, so waiting on the
/// frontier costs them nothing, while every pace a worker runs ahead is one the others must read
/// at the rate before a fence completes or a unit moves to a worker that holds its epoch
/// (`super::handover::remote`): with 8, a unit moved between processes at `--rate 750` waited
/// for its giver more than 20 s (`jobs/tests/rescale_readers.rs`).
const PACED_SPAN_PACES: u64 = 2;

/// A worker's pace of epoch advances: when and at which tuple count it last advanced, and how
/// far (event-time ms) that advance moved its epoch.
pub(super) struct EpochPace {
    routed_at: u64,
    since: Instant,
    /// Event-time ms a worker reads in [`PACE_TUPLES`] tuples, measured at its last advance.
    reach: u64,
}

impl EpochPace {
    pub(super) fn new() -> EpochPace {
        EpochPace { routed_at: 0, since: Instant::now(), reach: 0 }
    }

    /// Whether the worker, having routed `routed` tuples in all, advances its epoch now:
    /// `urgent` (it read nothing this round, or a fence is being agreed), or enough tuples or
    /// wall time since the last advance.
    pub(super) fn due(&self, routed: u64, urgent: bool) -> bool {
        urgent || routed.saturating_sub(self.routed_at) >= PACE_TUPLES || self.since.elapsed() >= PACE_WAIT
    }

    /// The epoch advanced by `stride` event-time ms (at most `most`), with `routed` tuples
    /// routed in all. The reach is the event time of the tuples routed since the last advance,
    /// or of [`PACE_TUPLES`] of them if more; a worker `held` (it read nothing because it is a
    /// span ahead of the frontier) reads on as fast as the span lets it, so its reach is what
    /// its tuples say [`PACE_TUPLES`] of them span: with the tuples' own event time, the span
    /// never grew past one step. Not so for a worker reading slowly (`--rate`, a live input):
    /// extrapolated, its span let it read far ahead of the others, and the boundaries agreed
    /// after the newest value read came late (a rate-limited run wrote fewer checkpoints).
    pub(super) fn advanced(&mut self, routed: u64, stride: u64, (most, held): (u64, bool)) {
        let tuples = routed.saturating_sub(self.routed_at).max(1);
        let counted = if held { PACE_TUPLES } else { PACE_TUPLES.min(tuples) };
        let reach = stride.min(most) as u128 * counted as u128 / tuples as u128;
        self.reach = reach.min(most as u128) as u64;
        self.routed_at = routed;
        self.since = Instant::now();
    }

    /// How far (event-time ms) behind its reading a worker's epoch may stay between two
    /// advances: the event time of [`PACE_TUPLES`] of its tuples.
    pub(super) fn reach(&self) -> u64 {
        self.reach
    }

    /// The event time (ms) past the job's frontier a worker whose units do not hold it may read:
    /// the lateness, [`SPAN_STEPS`] epoch steps of `step` ms and [`SPAN_PACES`] reaches
    /// ([`PACED_SPAN_PACES`] when the job is `paced` by `--rate`).
    pub(super) fn span(&self, lateness_ms: u64, step: u64, paced: bool) -> u64 {
        let paces = if paced { PACED_SPAN_PACES } else { SPAN_PACES };
        lateness_ms.saturating_add(SPAN_STEPS * step).saturating_add(paces.saturating_mul(self.reach()))
    }

    /// How far (event-time ms) a worker's epoch may run ahead of what the dataflow has processed
    /// before it parks: 64 windows of `window_ms`, at most [`MAX_LAG_MS`], plus twice the reach.
    pub(super) fn lag(&self, window_ms: i64) -> u64 {
        (64 * window_ms).clamp(0, MAX_LAG_MS) as u64 + 2 * self.reach()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_after_enough_tuples_or_when_urgent() {
        let mut pace = EpochPace::new();
        pace.advanced(1_000, 60_000, (u64::MAX, false));
        assert!(!pace.due(1_000 + PACE_TUPLES - 1, false) || pace.since.elapsed() >= PACE_WAIT);
        assert!(pace.due(1_000 + PACE_TUPLES, false));
        assert!(pace.due(1_000, true), "an idle worker advances at once");
    }

    #[test]
    fn reach_is_the_event_time_of_pace_tuples() {
        let mut pace = EpochPace::new();
        // Held by the span after 1,024 tuples in a minute: PACE_TUPLES of them span 16 minutes.
        pace.advanced(1_024, 60_000, (u64::MAX, true));
        assert_eq!(pace.reach(), 16 * 60_000);
        // Reading slowly, not held: the minute those tuples spanned.
        pace.advanced(2_048, 60_000, (u64::MAX, false));
        assert_eq!(pace.reach(), 60_000);
        // Reading fast: PACE_TUPLES of 4 × PACE_TUPLES tuples span a quarter.
        pace.advanced(2_048 + 4 * PACE_TUPLES, 60_000, (u64::MAX, false));
        assert_eq!(pace.reach(), 15_000);
        // At most `most`, however sparse (the first advance moves from 0 to the first time).
        pace.advanced(2_049 + 4 * PACE_TUPLES, 1 << 40, (3_600_000, true));
        assert_eq!(pace.reach(), 3_600_000);
    }

    #[test]
    fn a_worker_ahead_reads_sixteen_reaches_past_the_frontier_or_two_under_a_rate() {
        let mut pace = EpochPace::new();
        // 4 × PACE_TUPLES tuples over a minute: the reach is 15 s.
        pace.advanced(4 * PACE_TUPLES, 60_000, (u64::MAX, false));
        assert_eq!(pace.span(1_000, 60_000, false), 1_000 + SPAN_STEPS * 60_000 + 16 * 15_000);
        assert_eq!(pace.span(1_000, 60_000, true), 1_000 + SPAN_STEPS * 60_000 + 2 * 15_000);
        assert_eq!(pace.lag(60_000), MAX_LAG_MS as u64 + 2 * 15_000);
        assert_eq!(pace.lag(1_000), 64_000 + 2 * 15_000);
    }

    #[test]
    fn due_after_the_wait() {
        let mut pace = EpochPace::new();
        pace.advanced(0, 0, (0, false));
        pace.since -= PACE_WAIT;
        assert!(pace.due(1, false), "a slow reader advances after PACE_WAIT");
    }
}
