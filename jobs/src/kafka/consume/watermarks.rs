//! Per-partition event-time watermarks with idleness ([`PartitionWatermarks`]).
//!
//! Why its own file: pure bookkeeping over explicit clocks, with no Kafka client in it, so its
//! rules (minimum over active partitions, idleness, outages are not idleness, a partition
//! below its end is not idle) are tested deterministically here.

use std::time::{Duration, Instant};

/// Per-partition event-time watermarks with idleness, as Flink's
/// `forBoundedOutOfOrderness(lateness).withIdleness(idle_timeout)`.
///
/// The watermark is the minimum over the *active* partitions of (that partition's max event time −
/// lateness), so records of a slow partition interleaved with a fast one are never late just because
/// the other partition is ahead. A partition that produced no event time for `idle_timeout` (or
/// none since start) is left out of the minimum until it produces again, so an idle partition does
/// not hold windows open forever, unless its source says it has records left to read
/// ([`set_below_end`](Self::set_below_end)): silence then is a slow broker, not an idle
/// partition. The watermark never goes back: when an idle partition returns behind it, its
/// records below the watermark are late (as in Flink).
///
/// Pure bookkeeping with explicit clocks, so it is deterministic to test.
///
/// ```
/// use std::time::{Duration, Instant};
/// use saams_jobs::kafka::PartitionWatermarks;
/// let t0 = Instant::now();
/// let mut w = PartitionWatermarks::new(&[0, 1], 100, Duration::from_secs(10), t0);
/// w.observe(0, 5_000, t0);
/// assert_eq!(w.watermark(t0), None, "partition 1 has not spoken and is not idle yet");
/// w.observe(1, 1_000, t0);
/// assert_eq!(w.watermark(t0), Some(900), "min over partitions, minus lateness");
/// // partition 1 goes quiet: after the idle timeout only partition 0 counts
/// let later = t0 + Duration::from_secs(11);
/// w.observe(0, 6_000, later);
/// assert_eq!(w.watermark(later), Some(5_900));
/// ```
#[derive(Debug, Clone)]
pub struct PartitionWatermarks {
    lateness_ms: i64,
    idle_timeout: Duration,
    parts: Vec<PartitionClock>,
    emitted: Option<i64>,
    /// When the source last looked for records ([`looked_at`](Self::looked_at)).
    last_look: Option<Instant>,
    /// How long a *vacant* partition may be silent ([`set_vacant`](Self::set_vacant)).
    vacant_timeout: Duration,
}

/// The longest pause between two looks for records that counts in full toward a partition's
/// idleness; see [`PartitionWatermarks::looked_at`].
const MAX_LOOK_GAP: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
struct PartitionClock {
    partition: i32,
    max_event_ms: Option<i64>,
    last_active: Instant,
    /// Known to have records past its position ([`PartitionWatermarks::set_below_end`]).
    below_end: bool,
    /// No producer is known to write to it ([`PartitionWatermarks::set_vacant`]).
    vacant: bool,
}

impl PartitionWatermarks {
    /// Tracks `partitions` (all considered active at `now`, with no event time yet).
    pub fn new(partitions: &[i32], lateness_ms: i64, idle_timeout: Duration, now: Instant) -> Self {
        let mut parts: Vec<PartitionClock> = partitions
            .iter()
            .map(|&partition| PartitionClock {
                partition,
                max_event_ms: None,
                last_active: now,
                below_end: false,
                vacant: false,
            })
            .collect();
        parts.sort_by_key(|p| p.partition);
        parts.dedup_by_key(|p| p.partition);
        PartitionWatermarks {
            lateness_ms: lateness_ms.max(0),
            idle_timeout,
            parts,
            emitted: None,
            last_look: None,
            vacant_timeout: idle_timeout,
        }
    }

    /// Records event time `t` (ms) seen on `partition` at `now`; the partition becomes active.
    /// Returns false (and changes nothing) for a partition that is not tracked.
    pub fn observe(&mut self, partition: i32, t: i64, now: Instant) -> bool {
        match self.parts.binary_search_by_key(&partition, |p| p.partition) {
            Ok(i) => {
                let part = &mut self.parts[i];
                part.max_event_ms = Some(part.max_event_ms.map_or(t, |m| m.max(t)));
                part.last_active = now;
                true
            }
            Err(_) => false,
        }
    }

    /// A resumed job: `partition`'s newest event time before its checkpointed position, from
    /// which its lateness is judged again (as if it had just been read).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use saams_jobs::kafka::PartitionWatermarks;
    /// let t0 = Instant::now();
    /// let mut w = PartitionWatermarks::new(&[0, 1], 100, Duration::from_secs(10), t0);
    /// w.start_from(0, 5_000);
    /// w.start_from(1, 7_000);
    /// assert_eq!(w.watermark(t0), Some(4_900));
    /// ```
    pub fn start_from(&mut self, partition: i32, max_event_ms: i64) {
        if let Ok(i) = self.parts.binary_search_by_key(&partition, |p| p.partition) {
            self.parts[i].max_event_ms = Some(max_event_ms);
        }
    }

    fn is_active(&self, part: &PartitionClock, now: Instant) -> bool {
        let timeout = if part.vacant { self.vacant_timeout } else { self.idle_timeout };
        part.below_end || now.saturating_duration_since(part.last_active) < timeout
    }

    /// Whether no producer is known to write to `partition` (a partials topic's partition no
    /// device ships to, or whose devices all said goodbye): silent at its end, it goes idle
    /// after `vacant_timeout` ([`set_vacant_timeout`](Self::set_vacant_timeout)) instead of the
    /// idle timeout. Why: the idle timeout of a partials topic is `--device-timeout`, the
    /// patience owed to a device that pauses; a partition without a device owes it nothing, and
    /// held every window that long (a whole test run at 120 s).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use saams_jobs::kafka::PartitionWatermarks;
    /// let t0 = Instant::now();
    /// let mut w = PartitionWatermarks::new(&[0, 1], 0, Duration::from_secs(600), t0);
    /// w.set_vacant_timeout(Duration::from_secs(2));
    /// w.set_vacant(1, true); // no device ships to partition 1
    /// w.observe(0, 9_000, t0);
    /// assert_eq!(w.watermark(t0 + Duration::from_secs(1)), None, "partition 1 may still get a device");
    /// assert_eq!(w.watermark(t0 + Duration::from_secs(2)), Some(9_000), "not the 600 s of a silent device");
    /// ```
    pub fn set_vacant(&mut self, partition: i32, vacant: bool) {
        if let Ok(i) = self.parts.binary_search_by_key(&partition, |p| p.partition) {
            self.parts[i].vacant = vacant;
        }
    }

    /// How long a vacant partition may be silent at its end before it is idle (never longer
    /// than the idle timeout).
    pub fn set_vacant_timeout(&mut self, timeout: Duration) {
        self.vacant_timeout = timeout.min(self.idle_timeout);
    }

    /// Whether `partition`'s position is below its end (its high watermark): records are
    /// there to read, so however long it is silent it is not idle. Partitions start at their
    /// end as far as this bookkeeping knows (silence alone decides); a Kafka source says
    /// otherwise from the start and until it has read to the end.
    ///
    /// Why: a loaded broker that stalls without an error (a fetch that takes longer than the
    /// idle timeout) left a partition silent in the middle of its records; it went idle, the
    /// other partitions moved the watermark on, and its records were late when they came
    /// (480,000 of 1 M tuples in a replay on a machine loaded to 24).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use saams_jobs::kafka::PartitionWatermarks;
    /// let t0 = Instant::now();
    /// let mut w = PartitionWatermarks::new(&[0, 1], 0, Duration::from_secs(1), t0);
    /// w.observe(0, 9_000, t0);
    /// w.observe(1, 1_000, t0);
    /// w.set_below_end(1, true); // partition 1 has records left; its broker stalls
    /// let later = t0 + Duration::from_secs(5);
    /// assert_eq!(w.watermark(later), Some(1_000), "partition 1 still holds the watermark");
    /// w.set_below_end(1, false); // read to its end: silence counts again
    /// assert_eq!(w.watermark(later), Some(1_000), "both silent: the watermark stays");
    /// assert!(w.is_idle(later));
    /// ```
    pub fn set_below_end(&mut self, partition: i32, below: bool) {
        if let Ok(i) = self.parts.binary_search_by_key(&partition, |p| p.partition) {
            self.parts[i].below_end = below;
        }
    }

    /// The watermark at `now` (ms): min over active partitions of max event time − lateness, never
    /// lower than a watermark returned before. `None` until every active partition has an event
    /// time (or went idle) and none was ever returned.
    pub fn watermark(&mut self, now: Instant) -> Option<i64> {
        let mut min: Option<i64> = None;
        let mut any_active = false;
        for part in &self.parts {
            if !self.is_active(part, now) {
                continue;
            }
            any_active = true;
            match part.max_event_ms {
                Some(t) => min = Some(min.map_or(t, |m: i64| m.min(t))),
                None => return self.emitted,
            }
        }
        if any_active && let Some(m) = min {
            let candidate = m.saturating_sub(self.lateness_ms);
            self.emitted = Some(self.emitted.map_or(candidate, |e| e.max(candidate)));
        }
        self.emitted
    }

    /// The watermark of one partition alone (its max event time − lateness), if it has one.
    pub fn partition_watermark(&self, partition: i32) -> Option<i64> {
        let i = self.parts.binary_search_by_key(&partition, |p| p.partition).ok()?;
        self.parts[i].max_event_ms.map(|t| t.saturating_sub(self.lateness_ms))
    }

    /// The source looks for records at `now` (it polls, or asks for the watermark). Silence counts
    /// as idleness only while the source was looking: a pause since the previous look longer than
    /// a quarter of the idle timeout (at most [`MAX_LOOK_GAP`]) moves every partition's last
    /// activity forward by the excess. A worker that stalled (a blocking call, a starved CPU)
    /// did not see what its partitions had: without this, after an 11 s stall the first
    /// partition whose records it polled was alone active, moved the watermark, and the other
    /// partition's on-time records were late (1,170 of them in the broker-restart test).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use saams_jobs::kafka::PartitionWatermarks;
    /// let t0 = Instant::now();
    /// let mut w = PartitionWatermarks::new(&[0, 1], 0, Duration::from_secs(4), t0);
    /// w.looked_at(t0);
    /// w.observe(0, 1_000, t0);
    /// w.observe(1, 1_000, t0);
    /// // the worker stalls for 10 s; then partition 0's records come first
    /// let back = t0 + Duration::from_secs(10);
    /// w.looked_at(back);
    /// w.observe(0, 60_000, back);
    /// assert_eq!(w.watermark(back), Some(1_000), "partition 1 was not seen silent: still active");
    /// ```
    pub fn looked_at(&mut self, now: Instant) {
        let allowance = (self.idle_timeout / 4).min(MAX_LOOK_GAP);
        if let Some(last) = self.last_look.replace(now) {
            let excess = now.saturating_duration_since(last).saturating_sub(allowance);
            if !excess.is_zero() {
                for part in &mut self.parts {
                    part.last_active = (part.last_active + excess).min(now);
                }
            }
        }
    }

    /// Marks every tracked partition active at `now`, keeping its event time: the consumer met an
    /// error (a broker down or reconnecting), and silence caused by an outage is not idleness.
    /// Otherwise all partitions would go idle during the outage, and after it the first partition
    /// whose records come back would drive the watermark past the others' on-time records.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use saams_jobs::kafka::PartitionWatermarks;
    /// let t0 = Instant::now();
    /// let mut w = PartitionWatermarks::new(&[0, 1], 0, Duration::from_secs(1), t0);
    /// w.observe(0, 1_000, t0);
    /// w.observe(1, 1_000, t0);
    /// // the broker goes away for 5 s; the consumer keeps reporting errors
    /// let back = t0 + Duration::from_secs(5);
    /// w.hold_active(back);
    /// // partition 0 returns first, far ahead: partition 1 still holds the watermark
    /// w.observe(0, 60_000, back);
    /// assert_eq!(w.watermark(back), Some(1_000));
    /// ```
    pub fn hold_active(&mut self, now: Instant) {
        for part in &mut self.parts {
            part.last_active = part.last_active.max(now);
        }
    }

    /// True when no tracked partition is active at `now` (also when none is tracked): this worker
    /// should then not hold the dataflow's frontier back.
    pub fn is_idle(&self, now: Instant) -> bool {
        !self.parts.iter().any(|p| self.is_active(p, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_partitions_never_make_on_time_tuples_late() {
        let t0 = Instant::now();
        let mut w = PartitionWatermarks::new(&[0, 1], 0, Duration::from_secs(60), t0);
        // partition 0 is an hour ahead of partition 1; records interleave
        for i in 0..100i64 {
            w.observe(0, 3_600_000 + i * 1000, t0);
            let wm = w.watermark(t0);
            let t1 = i * 1000;
            assert!(wm.is_none_or(|wm| t1 >= wm), "tuple {t1} of partition 1 late at watermark {wm:?}");
            w.observe(1, t1, t0);
        }
        assert_eq!(w.watermark(t0), Some(99_000));
    }

    #[test]
    fn idle_partition_excluded_then_rejoins_without_regressing() {
        let t0 = Instant::now();
        let idle = Duration::from_millis(500);
        let mut w = PartitionWatermarks::new(&[0, 1, 2], 10, idle, t0);
        w.observe(0, 1_000, t0);
        w.observe(1, 2_000, t0);
        assert_eq!(w.watermark(t0), None, "partition 2 never spoke and is not idle yet");
        let t1 = t0 + Duration::from_millis(400);
        w.observe(0, 1_500, t1);
        w.observe(1, 2_500, t1);
        assert_eq!(w.watermark(t1), None, "still within the idle timeout");
        let t2 = t0 + Duration::from_millis(600);
        assert_eq!(w.watermark(t2), Some(1_490), "partition 2 idle: excluded");
        assert!(!w.is_idle(t2));
        // partition 2 comes back behind the watermark: the watermark does not go back
        w.observe(2, 100, t2);
        assert_eq!(w.watermark(t2), Some(1_490));
        w.observe(2, 5_000, t2);
        assert_eq!(w.watermark(t2), Some(1_490));
        // everything idle: the watermark stays, the worker reports idle
        let t3 = t2 + Duration::from_secs(1);
        assert!(w.is_idle(t3));
        assert_eq!(w.watermark(t3), Some(1_490));
        assert_eq!(w.partition_watermark(2), Some(4_990));
        assert!(!w.observe(7, 1, t3), "untracked partition");
    }

    #[test]
    fn an_outage_is_not_idleness() {
        let t0 = Instant::now();
        let idle = Duration::from_secs(2);
        let run = |hold: bool| {
            let mut w = PartitionWatermarks::new(&[0, 1], 0, idle, t0);
            w.observe(0, 1_000, t0);
            w.observe(1, 1_000, t0);
            // the broker is down for 5 s; the consumer reports errors until it is back
            let mut now = t0;
            while now < t0 + Duration::from_secs(5) {
                now += Duration::from_millis(500);
                if hold {
                    w.hold_active(now);
                }
            }
            // partition 0's records come back first, an hour ahead of partition 1's next ones
            w.observe(0, 3_600_000, now);
            let after = now + Duration::from_millis(1500);
            (w.watermark(after), w.is_idle(after))
        };
        assert_eq!(run(false), (Some(3_600_000), false), "without holding, partition 1 counted as idle");
        assert_eq!(run(true), (Some(1_000), false), "partition 1 still holds the watermark");
        // a partition silent for the idle timeout after the outage is idle again
        let mut w = PartitionWatermarks::new(&[0, 1], 0, idle, t0);
        w.observe(0, 1_000, t0);
        w.observe(1, 1_000, t0);
        w.hold_active(t0 + Duration::from_secs(5));
        w.observe(0, 9_000, t0 + Duration::from_secs(6));
        assert_eq!(w.watermark(t0 + Duration::from_secs(7) + Duration::from_millis(1)), Some(9_000));
    }

    #[test]
    fn only_silence_seen_while_looking_makes_a_partition_idle() {
        let t0 = Instant::now();
        let idle = Duration::from_secs(4);
        let ms = Duration::from_millis;
        let mut w = PartitionWatermarks::new(&[0, 1], 0, idle, t0);
        w.looked_at(t0);
        w.observe(0, 1_000, t0);
        w.observe(1, 1_000, t0);
        // looks every 500 ms (within the allowance of idle / 4 = 1 s): silence counts in full
        let mut now = t0;
        for _ in 0..7 {
            now += ms(500);
            w.looked_at(now);
            w.observe(0, 2_000, now);
        }
        assert_eq!(w.watermark(now), Some(1_000), "3.5 s of silence: partition 1 still active");
        now += ms(500);
        w.looked_at(now);
        assert_eq!(w.watermark(now), Some(2_000), "4 s: partition 1 idle");
        // a 10 s stall: only 1 s of it counts (partition 0 was last active at 3.5 s)
        let mut w = PartitionWatermarks::new(&[0, 1], 0, idle, t0);
        w.looked_at(t0);
        w.observe(0, 1_000, t0);
        w.observe(1, 1_000, t0);
        now = t0 + Duration::from_secs(10);
        w.looked_at(now);
        assert!(!w.is_idle(now), "1 s of silence seen");
        w.observe(0, 60_000, now);
        assert_eq!(w.watermark(now), Some(1_000));
        // then 3 s more, looking: partition 1 has been seen silent for 4 s
        for _ in 0..6 {
            now += ms(500);
            w.looked_at(now);
        }
        assert_eq!(w.watermark(now), Some(60_000), "partition 1 idle after 4 s seen");
        // a 30 s stall counts as 1 s of silence ...
        let s = Duration::from_secs;
        let mut w = PartitionWatermarks::new(&[0], 0, idle, t0);
        w.looked_at(t0);
        w.looked_at(t0 + s(30));
        assert!(!w.is_idle(t0 + s(33) - ms(1)));
        assert!(w.is_idle(t0 + s(33)));
        // ... and never moves a partition's last activity past the look
        let mut w = PartitionWatermarks::new(&[0], 0, idle, t0);
        w.looked_at(t0);
        w.observe(0, 1_000, t0 + s(5));
        w.looked_at(t0 + s(30));
        assert!(!w.is_idle(t0 + s(34) - ms(1)));
        assert!(w.is_idle(t0 + s(34)));
    }

    #[test]
    fn a_partition_below_its_end_is_never_idle_and_one_at_its_end_is_after_the_timeout() {
        let t0 = Instant::now();
        let idle = Duration::from_secs(2);
        let s = Duration::from_secs;
        let mut w = PartitionWatermarks::new(&[0, 1, 2], 0, idle, t0);
        for p in [0, 1, 2] {
            w.set_below_end(p, true);
        }
        w.observe(0, 500, t0);
        w.observe(1, 7_000, t0);
        w.observe(2, 9_000, t0);
        w.set_below_end(0, false); // read to its end
        w.set_below_end(9, true); // untracked: ignored
        // partition 1's broker stalls for a minute below its end; partition 2 keeps going
        let mut now = t0;
        for _ in 0..120 {
            now += Duration::from_millis(500);
            w.looked_at(now);
            w.observe(2, 9_000 + (now - t0).as_millis() as i64, now);
            assert!(!w.is_idle(now));
            let wm = w.watermark(now);
            if now - t0 < idle {
                assert_eq!(wm, Some(500), "partition 0 is silent at its end for less than the timeout");
            } else {
                assert_eq!(wm, Some(7_000), "partition 0 idle at its end, partition 1 holds the watermark");
            }
        }
        // partition 1's records come, to its end; then it is idle after the timeout
        w.observe(1, 8_000, now);
        w.set_below_end(1, false);
        let mut later = now;
        for _ in 0..4 {
            assert_eq!(w.watermark(later), Some(8_000), "partition 1 silent for less than the timeout");
            later += Duration::from_millis(500);
            w.looked_at(later);
            w.observe(2, 70_000, later);
        }
        assert_eq!(w.watermark(later), Some(70_000), "partition 1 idle at its end: only partition 2 counts");
        // a partition that never read anything and is not at its end holds the watermark back
        let mut w = PartitionWatermarks::new(&[0, 1], 0, idle, t0);
        w.set_below_end(1, true);
        w.observe(0, 1_000, t0 + s(10));
        assert_eq!(w.watermark(t0 + s(10)), None);
        assert!(!w.is_idle(t0 + s(60)));
    }

    #[test]
    fn no_partitions_is_idle_without_watermark() {
        let t0 = Instant::now();
        let mut w = PartitionWatermarks::new(&[], 0, Duration::from_secs(1), t0);
        assert!(w.is_idle(t0));
        assert_eq!(w.watermark(t0), None);
    }
}
