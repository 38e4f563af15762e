//! Pacing a replay: a fixed tuple rate, a multiple of real time from event timestamps, or as fast
//! as possible.

use std::time::{Duration, Instant};

/// How fast to emit tuples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// As fast as possible.
    Unlimited,
    /// This many tuples per second.
    Rate(f64),
    /// This multiple of real time, from the tuples' event times (2.0 = twice as fast as recorded).
    Speed(f64),
}

/// Decides when each tuple is due and sleeps until then.
#[derive(Clone, Debug)]
pub struct Pacer {
    pace: Pace,
    start: Option<Instant>,
    first_event_ms: Option<i64>,
    emitted: u64,
}

impl Pacer {
    /// A pacer; the clock starts at the first tuple.
    ///
    /// ```
    /// use saams_datasets::pace::{Pace, Pacer};
    /// assert!(Pacer::new(Pace::Rate(0.0)).is_err());
    /// assert!(Pacer::new(Pace::Speed(f64::NAN)).is_err());
    /// assert!(Pacer::new(Pace::Rate(1000.0)).is_ok());
    /// ```
    ///
    /// # Errors
    /// When a rate or speed is not a positive finite number.
    pub fn new(pace: Pace) -> Result<Pacer, String> {
        match pace {
            Pace::Rate(x) | Pace::Speed(x) if !(x.is_finite() && x > 0.0) => {
                Err(format!("rate and speed must be positive numbers, got {x}"))
            }
            _ => Ok(Pacer { pace, start: None, first_event_ms: None, emitted: 0 }),
        }
    }

    /// When the next tuple (with event time `event_ms`) is due, as an offset from the first tuple;
    /// counts it as emitted. Tuples without event time (or earlier than the first) are due at once
    /// under `Speed`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use saams_datasets::pace::{Pace, Pacer};
    /// let mut p = Pacer::new(Pace::Rate(1000.0)).unwrap();
    /// assert_eq!(p.due(None), Duration::ZERO);
    /// assert_eq!(p.due(None), Duration::from_millis(1));
    /// let mut s = Pacer::new(Pace::Speed(2.0)).unwrap();
    /// assert_eq!(s.due(Some(10_000)), Duration::ZERO);
    /// assert_eq!(s.due(Some(14_000)), Duration::from_secs(2));
    /// ```
    pub fn due(&mut self, event_ms: Option<i64>) -> Duration {
        let n = self.emitted;
        self.emitted += 1;
        match self.pace {
            Pace::Unlimited => Duration::ZERO,
            Pace::Rate(r) => Duration::from_secs_f64(n as f64 / r),
            Pace::Speed(x) => match event_ms {
                None => Duration::ZERO,
                Some(ms) => {
                    let first = *self.first_event_ms.get_or_insert(ms);
                    Duration::from_secs_f64((ms - first).max(0) as f64 / 1000.0 / x)
                }
            },
        }
    }

    /// Sleep until the next tuple is due (no sleep below a millisecond, to keep syscalls rare).
    pub fn wait(&mut self, event_ms: Option<i64>) {
        let due = self.due(event_ms);
        let start = *self.start.get_or_insert_with(Instant::now);
        let elapsed = start.elapsed();
        if due > elapsed + Duration::from_millis(1) {
            std::thread::sleep(due - elapsed);
        }
    }

    /// Tuples paced so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }
}
