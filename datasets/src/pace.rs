//! Pacing tuples: to a tuple rate (`--rate R`), to a multiple of real time from the tuples'
//! event times (`replay --speed X`), or not at all. One rate mechanism serves every reader and
//! writer, the [`TokenBucket`]: a job's workers share one per process ([`Pacer`]), and a
//! single sender such as `replay` paces tuple by tuple with one of its own ([`TuplePacer`], which
//! also paces by event time).
//!
//! # A job's rate
//! A token bucket per process, filled at the process' share of `R` (R / processes), from which
//! every tuple read takes a token.
//!
//! Each round of a worker's reading loop [`take`](Pacer::take)s what it may read (at most its
//! fair part of a full bucket), reads at most that many tuples, and [`settle`](Pacer::settle)s:
//! tokens it did not use go back to the bucket. While the bucket holds less than a batch, the
//! worker parks for [`wait`](Pacer::wait), so a paced worker sleeps instead of spinning a core,
//! and still steps its dataflow.
//!
//! The bucket is shared by the process' workers rather than split into fixed per-worker shares:
//! a worker that may not read on (its event time is ahead of the others', or it has nothing to
//! read) leaves its tokens to the others, so the job reads at `R` as long as any worker can.
//! (With fixed `R / workers` shares, `stocks:3 --rate 2000 -w 2` read 1,480 tuples/s: the worker
//! whose streams advance event time fastest waits for the others' windows and wastes its share.)
//!
//! Every input stops at what it took (a Kafka poll asks for at most that many records); one that
//! could not would leave the bucket negative, and the debt would be waited off, so the rate holds
//! on average either way. The bucket holds at most
//! [`BURST`] of tokens, so a job that fell behind (a stall, a slow synopsis) catches up by at
//! most that much, not by a flood.
//!
//! Pacing changes when tuples are read, never what they hold: a generated stream keeps its
//! synthetic event times, which advance by the generator's own gaps (stocks: 50 ms – 2 s per
//! stream), not by wall-clock time.
//!
//! The clock is passed in (`now`), so the bucket is deterministic under test.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use saams_datasets::pace::Pacer;
//! let t0 = Instant::now();
//! let pacer = Pacer::new(Some(1000.0), 1, 1, t0).unwrap(); // 1000 tuples/s, one process, one worker
//! let first = pacer.take(t0);
//! pacer.settle(first, first);
//! assert_eq!(pacer.take(t0), 0);
//! assert!(pacer.wait(t0).is_some(), "nothing may be read now: park");
//! let later = pacer.take(t0 + Duration::from_millis(10));
//! assert_eq!(later, 10);
//! pacer.settle(later, 4); // read 4 of 10; 6 go back
//! assert_eq!(pacer.take(t0 + Duration::from_millis(10)), 6);
//! assert_eq!(Pacer::new(None, 4, 2, t0).unwrap().take(t0), u64::MAX, "no --rate: no limit");
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The most tokens a bucket holds, in time at its rate.
pub const BURST: Duration = Duration::from_millis(50);

/// The fewest tokens a paced worker waits for before its next round, in time at its rate (1 ms):
/// at high rates a round reads a batch, so the per-round work (stepping the dataflow, the
/// watermark) stays small per tuple.
const BATCH: Duration = Duration::from_millis(1);

/// The longest single park, so a stop signal is seen promptly however low the rate.
const MAX_PARK: Duration = Duration::from_millis(50);

/// Tokens are counted in billionths, so that whole rates and clock steps in whole nanoseconds
/// add up exactly (no float drift in what a round may read).
const NANO: i128 = 1_000_000_000;

/// A token bucket (single-threaded; [`Pacer`] shares one between a process' workers).
#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// Tokens per second.
    per_second: f64,
    /// Current tokens, in billionths (negative: a debt from reading more than taken).
    tokens: i128,
    /// Most tokens held, in billionths.
    capacity: i128,
    /// Fewest tokens worth a round, in billionths.
    batch: i128,
    /// Most tokens one take hands out (a worker's fair part of a full bucket), in billionths.
    most: i128,
    /// When `tokens` was last brought up to date.
    last: Instant,
}

impl TokenBucket {
    /// A bucket filling at `per_second` (positive, finite) for `takers` workers, starting with
    /// one batch (so reading starts at once).
    pub fn new(per_second: f64, takers: usize, now: Instant) -> TokenBucket {
        // At least one whole token, so that a slow rate still lets a tuple through.
        let at_rate = |d: Duration| (per_second * d.as_secs_f64()).max(1.0).round() as i128 * NANO;
        let (capacity, batch) = (at_rate(BURST), at_rate(BATCH));
        let most = (capacity / takers.max(1) as i128).max(batch) / NANO * NANO;
        TokenBucket { per_second, tokens: batch, capacity, batch, most, last: now }
    }

    /// Fill at `per_second` (positive, finite) from `now` on, for `takers` workers: the tokens
    /// earned so far are kept (up to the new capacity).
    pub fn set_rate(&mut self, per_second: f64, takers: usize, now: Instant) {
        self.refill(now);
        let fresh = TokenBucket::new(per_second, takers, now);
        (self.per_second, self.capacity, self.batch, self.most) = (per_second, fresh.capacity, fresh.batch, fresh.most);
        self.tokens = self.tokens.min(self.capacity);
    }

    /// Bring the bucket up to `now`: add the tokens earned since the last look, up to capacity.
    fn refill(&mut self, now: Instant) {
        if now > self.last {
            let earned = (self.per_second * now.duration_since(self.last).as_nanos() as f64) as i128;
            self.tokens = (self.tokens + earned).min(self.capacity);
            self.last = now;
        }
    }

    /// Take the whole tokens available at `now` (at most a fair part of a full bucket).
    pub fn take(&mut self, now: Instant) -> u64 {
        self.refill(now);
        let n = self.tokens.clamp(0, self.most) / NANO;
        self.tokens -= n * NANO;
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// Of `taken` tokens, `used` were used: return the rest, or owe what was used beyond them.
    pub fn settle(&mut self, taken: u64, used: u64) {
        self.tokens += (i128::from(taken) - i128::from(used)) * NANO;
    }

    /// How long to wait at `now` until a batch may be taken: `None` when it may now, else at
    /// most 50 ms (`MAX_PARK`, so a stop signal is seen promptly).
    pub fn wait(&mut self, now: Instant) -> Option<Duration> {
        self.refill(now);
        let missing = self.batch - self.tokens;
        (missing > 0).then(|| Duration::from_nanos((missing as f64 / self.per_second).ceil() as u64).min(MAX_PARK))
    }
}

/// The pacer of one process: a [`TokenBucket`] shared by its workers (clones share it), with
/// the job's rate and the process' workers; unlimited without a rate.
#[derive(Clone, Debug)]
pub struct Pacer(Option<Arc<Mutex<TokenBucket>>>, f64, usize);

impl Pacer {
    /// The pacer of one of `processes` processes sharing `rate` tuples per second (`None`:
    /// unlimited), for its `workers` workers.
    ///
    /// ```
    /// use std::time::Instant;
    /// use saams_datasets::pace::Pacer;
    /// assert!(Pacer::new(Some(0.0), 1, 1, Instant::now()).is_err());
    /// assert!(Pacer::new(Some(f64::INFINITY), 1, 1, Instant::now()).is_err());
    /// assert_eq!(Pacer::new(Some(2000.0), 4, 1, Instant::now()).unwrap().per_second(), Some(500.0));
    /// ```
    ///
    /// # Errors
    /// When the rate is not a positive finite number.
    pub fn new(rate: Option<f64>, processes: usize, workers: usize, now: Instant) -> Result<Pacer, String> {
        match rate {
            None => Ok(Pacer(None, 0.0, workers)),
            Some(r) => {
                let bucket = TokenBucket::new(checked_rate(r)? / processes.max(1) as f64, workers, now);
                Ok(Pacer(Some(Arc::new(Mutex::new(bucket))), r, workers))
            }
        }
    }

    /// This process reads `part` (0 < part ≤ 1) of the job's rate from `now` on: its share of
    /// the workers that read, when only the active workers read. A process without readers
    /// (`part` 0) keeps its bucket (nothing takes from it).
    ///
    /// ```
    /// use std::time::Instant;
    /// use saams_datasets::pace::Pacer;
    /// let pacer = Pacer::new(Some(3000.0), 2, 2, Instant::now()).unwrap();
    /// pacer.share(2.0 / 3.0, Instant::now());
    /// assert_eq!(pacer.per_second(), Some(2000.0));
    /// pacer.share(0.0, Instant::now());
    /// assert_eq!(pacer.per_second(), Some(2000.0));
    /// ```
    pub fn share(&self, part: f64, now: Instant) {
        if part > 0.0 && part <= 1.0 {
            self.with((), |b| b.set_rate(self.1 * part, self.2, now));
        }
    }

    fn with<T>(&self, unlimited: T, f: impl FnOnce(&mut TokenBucket) -> T) -> T {
        match &self.0 {
            // A worker that panicked holding the lock left a consistent bucket (no step of its
            // methods can panic between two writes).
            Some(b) => f(&mut b.lock().unwrap_or_else(PoisonError::into_inner)),
            None => unlimited,
        }
    }

    /// This process' rate (tuples per second); `None` when unlimited.
    pub fn per_second(&self) -> Option<f64> {
        self.with(None, |b| Some(b.per_second))
    }

    /// How many tuples this worker may read now (`u64::MAX` when unlimited); settle afterwards.
    pub fn take(&self, now: Instant) -> u64 {
        self.with(u64::MAX, |b| b.take(now))
    }

    /// Of `taken` tuples allowed, `used` were read (more than taken leaves a debt).
    pub fn settle(&self, taken: u64, used: u64) {
        self.with((), |b| b.settle(taken, used));
    }

    /// How long to park before the next round (`None`: go on).
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        self.with(None, |b| b.wait(now))
    }
}

/// A rate of tuples per second as given, if it is a positive finite number.
fn checked_rate(r: f64) -> Result<f64, String> {
    if r.is_finite() && r > 0.0 {
        Ok(r)
    } else {
        Err(format!("--rate must be a positive number of tuples per second, got {r}"))
    }
}

/// How fast a single sender emits tuples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// As fast as possible.
    Unlimited,
    /// This many tuples per second.
    Rate(f64),
    /// This multiple of real time, from the tuples' event times (2.0 = twice as fast as recorded).
    Speed(f64),
}

/// Paces a single sender tuple by tuple (what `replay` writes), its clock started at the first
/// tuple: under [`Pace::Rate`] every tuple takes a token from a [`TokenBucket`] of its own, so a
/// rate means what a job's `--rate` means (bursts of at most [`BURST`], a batch of 1 ms of
/// tuples at a time); under [`Pace::Speed`] a tuple is due once its event time, counted from the
/// first tuple's, has passed at that speed.
#[derive(Clone, Debug)]
pub struct TuplePacer {
    pace: Pace,
    /// Under [`Pace::Rate`]: the bucket, filling from the first tuple on.
    bucket: Option<TokenBucket>,
    /// Under [`Pace::Speed`]: when the first tuple was looked at.
    start: Option<Instant>,
    /// Under [`Pace::Speed`]: the first event time seen.
    first_event_ms: Option<i64>,
    emitted: u64,
}

impl TuplePacer {
    /// A pacer; the clock starts at the first tuple.
    ///
    /// ```
    /// use saams_datasets::pace::{Pace, TuplePacer};
    /// assert!(TuplePacer::new(Pace::Rate(0.0)).is_err());
    /// assert!(TuplePacer::new(Pace::Speed(f64::NAN)).is_err());
    /// assert!(TuplePacer::new(Pace::Rate(1000.0)).is_ok());
    /// ```
    ///
    /// # Errors
    /// When a rate or speed is not a positive finite number.
    pub fn new(pace: Pace) -> Result<TuplePacer, String> {
        match pace {
            Pace::Rate(r) => checked_rate(r).map(|_| ()),
            Pace::Speed(x) if !(x.is_finite() && x > 0.0) => {
                Err(format!("--speed must be a positive multiple of real time, got {x}"))
            }
            _ => Ok(()),
        }?;
        Ok(TuplePacer { pace, bucket: None, start: None, first_event_ms: None, emitted: 0 })
    }

    /// How long the next tuple (with event time `event_ms`) must still wait at `now`; `None`
    /// when it may go now, and it then counts as emitted. Ask again after the wait. Tuples
    /// without event time (or earlier than the first) may go at once under `Speed`, and so may
    /// a tuple due within a millisecond (to keep sleeps rare).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use saams_datasets::pace::{Pace, TuplePacer};
    /// let t0 = Instant::now();
    /// let mut p = TuplePacer::new(Pace::Rate(1000.0)).unwrap();
    /// assert_eq!(p.delay(None, t0), None);
    /// assert_eq!(p.delay(None, t0), Some(Duration::from_millis(1)));
    /// assert_eq!(p.delay(None, t0 + Duration::from_millis(1)), None);
    /// let mut s = TuplePacer::new(Pace::Speed(2.0)).unwrap();
    /// assert_eq!(s.delay(Some(10_000), t0), None);
    /// assert_eq!(s.delay(Some(14_000), t0), Some(Duration::from_secs(2)));
    /// assert_eq!(s.delay(Some(14_000), t0 + Duration::from_secs(2)), None);
    /// assert_eq!(s.emitted(), 2);
    /// ```
    pub fn delay(&mut self, event_ms: Option<i64>, now: Instant) -> Option<Duration> {
        let wait = match self.pace {
            Pace::Unlimited => None,
            Pace::Rate(r) => {
                let bucket = self.bucket.get_or_insert_with(|| TokenBucket::new(r, 1, now));
                match bucket.take(now) {
                    0 => bucket.wait(now),
                    n => {
                        bucket.settle(n, 1);
                        None
                    }
                }
            }
            Pace::Speed(x) => {
                let start = *self.start.get_or_insert(now);
                let due = match event_ms {
                    None => Duration::ZERO,
                    Some(ms) => {
                        let first = *self.first_event_ms.get_or_insert(ms);
                        Duration::from_secs_f64((ms - first).max(0) as f64 / 1000.0 / x)
                    }
                };
                let elapsed = now.saturating_duration_since(start);
                (due > elapsed + Duration::from_millis(1)).then(|| due - elapsed)
            }
        };
        if wait.is_none() {
            self.emitted += 1;
        }
        wait
    }

    /// Sleep until the next tuple (with event time `event_ms`) may go, and count it.
    pub fn wait(&mut self, event_ms: Option<i64>) {
        while let Some(d) = self.delay(event_ms, Instant::now()) {
            std::thread::sleep(d);
        }
    }

    /// Tuples paced so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    /// Drive a bucket like the reading loop does, with a reader that reads at most
    /// `max_per_round` of what it takes: take, read, settle, 100 µs of work, then the wait.
    /// Returns tuples read by `end_ms`.
    fn drive(b: &mut TokenBucket, t0: Instant, end_ms: u64, max_per_round: u64) -> u64 {
        let (mut now, mut read) = (t0, 0);
        while now < ms(t0, end_ms) {
            let taken = b.take(now);
            let n = taken.min(max_per_round);
            b.settle(taken, n);
            read += n;
            now += Duration::from_micros(100);
            now += b.wait(now).unwrap_or_default();
        }
        read
    }

    #[test]
    fn a_busy_reader_reads_at_the_rate() {
        let t0 = Instant::now();
        for rate in [2000.0, 500.0, 1e6, 3.0] {
            let mut b = TokenBucket::new(rate, 1, t0);
            let read = drive(&mut b, t0, 10_000, u64::MAX) as f64;
            let want = rate * 10.0;
            assert!((read - want).abs() <= want * 0.01 + 2.0, "{rate}: read {read}, want {want}");
        }
        // A reader slower than the rate reads what it can: the bucket does not pile up.
        let mut b = TokenBucket::new(1e6, 1, t0);
        assert_eq!(drive(&mut b, t0, 1000, 10), 100_000, "10 per 100 µs round");
    }

    #[test]
    fn the_bucket_holds_at_most_a_burst() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(1000.0, 1, t0);
        assert_eq!(b.take(t0), 1, "one batch (1 ms) to start with");
        // An hour idle earns no more than 50 ms of tuples.
        assert_eq!(b.take(t0 + Duration::from_secs(3600)), 50);
        let mut slow = TokenBucket::new(0.5, 1, t0);
        assert_eq!(slow.take(ms(t0, 60_000)), 1, "at least one tuple fits in the bucket");
    }

    #[test]
    fn a_take_is_at_most_a_fair_part_of_a_full_bucket() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(1000.0, 2, t0);
        let later = ms(t0, 3600);
        assert_eq!((b.take(later), b.take(later), b.take(later)), (25, 25, 0), "two workers, 50 tokens");
        b.settle(25, 5);
        assert_eq!(b.take(later), 20, "what one worker did not read goes to the other");
    }

    #[test]
    fn reading_more_than_taken_is_waited_off() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(1000.0, 1, t0);
        let taken = b.take(t0);
        b.settle(taken, 500); // a reader that could not stop at its allowance
        assert_eq!(b.take(ms(t0, 400)), 0, "still 99 tuples in debt");
        assert_eq!(b.wait(ms(t0, 400)), Some(MAX_PARK), "a long debt parks in short steps");
        assert_eq!(b.wait(ms(t0, 480)), Some(Duration::from_millis(20)), "19 in debt, then a batch of 1");
        assert_eq!(b.wait(ms(t0, 500)), None);
        assert_eq!(b.take(ms(t0, 500)), 1);
    }

    #[test]
    fn a_paced_worker_parks_until_a_batch_is_ready() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(1e6, 1, t0);
        assert_eq!(b.take(t0), 1000, "a batch is 1 ms of tuples");
        assert_eq!(b.wait(t0), Some(Duration::from_millis(1)));
        assert_eq!(b.wait(t0 + Duration::from_micros(600)), Some(Duration::from_micros(400)));
        assert_eq!(b.wait(ms(t0, 1)), None);
        // An earlier clock reading (a worker that read the clock before another) adds nothing.
        assert_eq!(b.take(t0), 1000);
        assert_eq!(b.take(t0), 0);
    }

    #[test]
    fn the_workers_of_a_process_share_one_bucket() {
        let t0 = Instant::now();
        let pacer = Pacer::new(Some(4000.0), 2, 2, t0).unwrap();
        assert_eq!(pacer.per_second(), Some(2000.0), "half the rate per process");
        let other_worker = pacer.clone();
        let later = ms(t0, 1000);
        assert_eq!((pacer.take(later), other_worker.take(later), pacer.take(later)), (50, 50, 0));
        other_worker.settle(50, 0);
        assert_eq!(pacer.take(later), 50);
    }

    #[test]
    fn unlimited_never_waits_and_bad_rates_are_refused() {
        let t0 = Instant::now();
        let p = Pacer::new(None, 3, 2, t0).unwrap();
        p.settle(0, u64::MAX);
        assert_eq!((p.take(t0), p.wait(t0), p.per_second()), (u64::MAX, None, None));
        for bad in [0.0, -5.0, f64::NAN, f64::INFINITY] {
            let err = Pacer::new(Some(bad), 1, 1, t0).unwrap_err();
            assert!(err.contains("positive number"), "{bad}: {err}");
        }
    }

    /// A sender paced by a [`TuplePacer`], on a simulated clock: every tuple waits what `delay`
    /// says, then takes `work` to send. Returns tuples sent by `end`.
    fn send(p: &mut TuplePacer, t0: Instant, end: Duration, work: Duration, event_ms: impl Fn(u64) -> i64) -> u64 {
        let (mut now, mut sent) = (t0, 0);
        while now < t0 + end {
            match p.delay(Some(event_ms(sent)), now) {
                Some(d) => now += d,
                None => {
                    sent += 1;
                    now += work;
                }
            }
        }
        sent
    }

    #[test]
    fn a_tuple_pacer_sends_at_the_rate_with_the_job_s_bursts() {
        let t0 = Instant::now();
        for rate in [2000.0, 500.0, 1e5, 3.0] {
            let mut p = TuplePacer::new(Pace::Rate(rate)).unwrap();
            let sent = send(&mut p, t0, Duration::from_secs(10), Duration::from_micros(1), |_| 0) as f64;
            let want = rate * 10.0;
            assert!((sent - want).abs() <= want * 0.01 + 2.0, "{rate}: sent {sent}, want {want}");
            assert_eq!(p.emitted() as f64, sent);
        }
        // After a stall, a sender catches up by at most a burst (50 ms of tuples), as a job does.
        let mut p = TuplePacer::new(Pace::Rate(1000.0)).unwrap();
        assert_eq!(p.delay(None, t0), None);
        let later = t0 + Duration::from_secs(10);
        let at_once = std::iter::from_fn(|| p.delay(None, later).is_none().then_some(())).count();
        assert_eq!(at_once, 50);
    }

    #[test]
    fn a_tuple_pacer_follows_event_time_at_its_speed() {
        let t0 = Instant::now();
        // Event times 100 ms apart at 4× real time: 25 ms apart, 400 tuples in 10 s.
        let mut p = TuplePacer::new(Pace::Speed(4.0)).unwrap();
        let sent = send(&mut p, t0, Duration::from_secs(10), Duration::from_micros(1), |n| 5_000 + 100 * n as i64);
        assert!((400..=401).contains(&sent), "{sent}");
        // Tuples without event time, or earlier than the first, go at once.
        let mut p = TuplePacer::new(Pace::Speed(1.0)).unwrap();
        assert_eq!(p.delay(Some(60_000), t0), None);
        assert_eq!((p.delay(None, t0), p.delay(Some(1_000), t0)), (None, None));
        assert_eq!(p.delay(Some(60_500), t0), Some(Duration::from_millis(500)));
        assert_eq!(p.delay(Some(60_500), t0 + Duration::from_micros(499_500)), None, "due within 1 ms");
    }

    #[test]
    fn an_unlimited_tuple_pacer_never_waits_and_bad_paces_are_refused() {
        let t0 = Instant::now();
        let mut p = TuplePacer::new(Pace::Unlimited).unwrap();
        assert!((0..1000).all(|_| p.delay(Some(0), t0).is_none()));
        assert_eq!(p.emitted(), 1000);
        for bad in [0.0, -5.0, f64::NAN, f64::INFINITY] {
            let rate = TuplePacer::new(Pace::Rate(bad)).unwrap_err();
            assert!(rate.contains("--rate") && rate.contains("positive number"), "{bad}: {rate}");
            let speed = TuplePacer::new(Pace::Speed(bad)).unwrap_err();
            assert!(speed.contains("--speed") && speed.contains("positive"), "{bad}: {speed}");
        }
    }
}
