//! The autoscaler's policy: load samples in, a decision with its reason out. Pure (no clock, no
//! job): the thread in [`super`] measures and acts, this decides, so the rules are tested alone.
//!
//! Two signals say the active workers are too few, and both must be quiet to say they are too
//! many:
//! - **how far the input is behind**: windows read but not yet processed (the dataflow's frontier
//!   behind the readers' epoch), and, with `--rate`, the share of the pace the readers fell short
//!   of (the generator's or a replayed file's rate not kept up);
//! - **how busy the active workers are**: the fraction of wall time they did not park.
//!
//! Hysteresis: scaling up needs a load *above* the up thresholds, scaling down a load *below*
//! separate, lower down thresholds, each for `sustain` samples in a row; between the two the
//! policy holds. After any change a cool-down holds every decision, so one burst cannot flap the
//! job up and down (each rescale moves bins at a fence). Up doubles (a backlog grows while the
//! job waits, so it reacts in few steps); down removes a quarter (cheap to be slow there).

/// One measurement of the job's load.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadSample {
    /// When it was taken (ms, any monotonic origin).
    pub at_ms: u64,
    /// Workers holding the synopses now.
    pub active: usize,
    /// Event-time windows the input has been read past the dataflow's frontier.
    pub lag_windows: f64,
    /// With `--rate`: the share of the pace the readers fell short of since the last sample (0: kept up).
    pub pace_shortfall: Option<f64>,
    /// Each active worker's busy fraction since the last sample (0..1).
    pub busy: Vec<f64>,
    /// A rescale is waiting for its fence or still moving.
    pub rescaling: bool,
    /// Records the Kafka partitions lag by, summed over every worker (`None`: no Kafka input,
    /// or not known yet).
    pub kafka_lag: Option<u64>,
    /// Bytes the files have left to read, summed over every worker (`None`: no file, or paced
    /// by `--rate`, where being behind a file's end is by design).
    pub file_behind_bytes: Option<u64>,
}

impl LoadSample {
    /// The mean busy fraction of the active workers (0 with none measured).
    pub fn mean_busy(&self) -> f64 {
        if self.busy.is_empty() { 0.0 } else { self.busy.iter().sum::<f64>() / self.busy.len() as f64 }
    }
}

/// The thresholds and bounds of the policy.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyConfig {
    /// Fewest active workers.
    pub min: usize,
    /// Most active workers.
    pub max: usize,
    /// Scale up when the mean busy fraction is at least this …
    pub up_busy: f64,
    /// … or the input is at least this many windows behind …
    pub up_lag_windows: f64,
    /// … or, with `--rate`, the readers fell short of the pace by at least this share.
    pub up_shortfall: f64,
    /// Scale down only when the mean busy fraction is at most this …
    pub down_busy: f64,
    /// … and the input at most this many windows behind …
    pub down_lag_windows: f64,
    /// … and the pace kept up to within this share.
    pub down_shortfall: f64,
    /// … or the Kafka lag is at least this many records and would take more than
    /// `up_drain_s` to drain at the pace it drained since the last sample (or grew) …
    pub up_kafka_records: u64,
    /// … or the files have at least this many bytes left, draining as slowly.
    pub up_file_bytes: u64,
    /// The drain time (s) past which an input's backlog counts as falling behind.
    pub up_drain_s: f64,
    /// Scale down only when the Kafka lag is at most this many records …
    pub down_kafka_records: u64,
    /// … and the files have at most this many bytes left.
    pub down_file_bytes: u64,
    /// Samples in a row beyond a threshold before acting.
    pub sustain: usize,
    /// No decision for this long after a change (ms).
    pub cooldown_ms: u64,
}

impl PolicyConfig {
    /// The default thresholds between `min` and `max` active workers, with `cooldown_ms`.
    pub fn new(min: usize, max: usize, cooldown_ms: u64) -> PolicyConfig {
        PolicyConfig {
            min,
            max,
            up_busy: 0.85,
            up_lag_windows: 4.0,
            up_shortfall: 0.10,
            down_busy: 0.40,
            down_lag_windows: 1.0,
            down_shortfall: 0.02,
            up_kafka_records: 10_000,
            up_file_bytes: 8 << 20,
            up_drain_s: 30.0,
            down_kafka_records: 1_000,
            down_file_bytes: 1 << 20,
            sustain: 3,
            cooldown_ms,
        }
    }
}

/// Which way a decision goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// More active workers.
    Up,
    /// Fewer active workers.
    Down,
    /// No change.
    Hold,
}

impl Direction {
    /// `up`, `down`, `hold` (the metric's `direction` label).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
            Direction::Hold => "hold",
        }
    }
}

/// What the policy decided for one sample, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// Up, down or hold.
    pub direction: Direction,
    /// Active workers wanted (the current count when holding).
    pub to: usize,
    /// Why, with the figures that decided it.
    pub reason: String,
}

/// The policy's memory between samples: samples in a row over / under the thresholds, and
/// when the last change was decided.
///
/// ```
/// use saams_jobs::control::autoscale::policy::{Direction, LoadSample, Policy, PolicyConfig};
/// let mut p = Policy::new(PolicyConfig::new(3, 12, 10_000));
/// let hot = |at_ms| LoadSample { at_ms, active: 3, busy: vec![0.95; 3], ..LoadSample::default() };
/// assert_eq!(p.decide(&hot(0)).direction, Direction::Hold, "one sample is no trend");
/// assert_eq!(p.decide(&hot(1_000)).direction, Direction::Hold);
/// let d = p.decide(&hot(2_000));
/// assert_eq!((d.direction, d.to), (Direction::Up, 6));
/// assert!(d.reason.contains("busy"), "{}", d.reason);
/// ```
#[derive(Clone, Debug)]
pub struct Policy {
    config: PolicyConfig,
    over: usize,
    under: usize,
    last_change_ms: Option<u64>,
    /// The previous sample's time and input lags (Kafka records, file bytes): how fast they drain.
    previous: Option<(u64, Option<u64>, Option<u64>)>,
}

impl Policy {
    /// A policy with no history.
    pub fn new(config: PolicyConfig) -> Policy {
        Policy { config, over: 0, under: 0, last_change_ms: None, previous: None }
    }

    /// The thresholds.
    pub fn config(&self) -> &PolicyConfig {
        &self.config
    }

    /// The decision for `s` (a change starts the cool-down: the caller acts on it).
    pub fn decide(&mut self, s: &LoadSample) -> Decision {
        let backlog = self.previous.replace((s.at_ms, s.kafka_lag, s.file_behind_bytes)).and_then(|(then, k, f)| {
            let c = &self.config;
            let dt = s.at_ms.saturating_sub(then);
            let kafka = falling_behind(k, s.kafka_lag, dt, (c.up_kafka_records, c.up_drain_s));
            let kafka = kafka.map(|why| format!("Kafka lag {} records {why}", s.kafka_lag.unwrap_or(0)));
            let file = falling_behind(f, s.file_behind_bytes, dt, (c.up_file_bytes, c.up_drain_s));
            kafka.or_else(|| {
                file.map(|why| format!("files {} bytes behind their end {why}", s.file_behind_bytes.unwrap_or(0)))
            })
        });
        let c = &self.config;
        let hold = |reason: String| Decision { direction: Direction::Hold, to: s.active, reason };
        if s.rescaling {
            self.over = 0;
            self.under = 0;
            return hold("a rescale is waiting for its fence or moving".into());
        }
        if let Some(last) = self.last_change_ms
            && s.at_ms < last.saturating_add(c.cooldown_ms)
        {
            self.over = 0;
            self.under = 0;
            let left = last + c.cooldown_ms - s.at_ms;
            return hold(format!("cooling down ({left} ms left)"));
        }
        if s.active < c.min || s.active > c.max {
            // Someone else (POST /rescale) left the bounds: bring it back at once.
            let to = s.active.clamp(c.min, c.max);
            let direction = if to > s.active { Direction::Up } else { Direction::Down };
            return self.change(
                s,
                direction,
                to,
                format!("{} active workers is outside {}..{}", s.active, c.min, c.max),
            );
        }
        match (backlog.or_else(|| overloaded(c, s)), underloaded(c, s)) {
            (Some(why), _) => {
                self.under = 0;
                self.over += 1;
                if s.active >= c.max {
                    return hold(format!("{why}, but already at the most ({})", c.max));
                }
                if self.over < c.sustain {
                    return hold(format!("{why} ({} of {} samples)", self.over, c.sustain));
                }
                let to = (s.active * 2).clamp(c.min, c.max);
                self.change(s, Direction::Up, to, format!("{why} for {} samples", self.over))
            }
            (None, Some(why)) => {
                self.over = 0;
                self.under += 1;
                if s.active <= c.min {
                    return hold(format!("{why}, but already at the fewest ({})", c.min));
                }
                if self.under < c.sustain {
                    return hold(format!("{why} ({} of {} samples)", self.under, c.sustain));
                }
                let to = (s.active - s.active.div_ceil(4)).clamp(c.min, c.max);
                self.change(s, Direction::Down, to, format!("{why} for {} samples", self.under))
            }
            (None, None) => {
                self.over = 0;
                self.under = 0;
                hold(format!(
                    "load between the thresholds (busy {:.2}, {:.1} windows behind{})",
                    s.mean_busy(),
                    s.lag_windows,
                    input_lag(s)
                ))
            }
        }
    }

    fn change(&mut self, s: &LoadSample, direction: Direction, to: usize, reason: String) -> Decision {
        self.over = 0;
        self.under = 0;
        self.last_change_ms = Some(s.at_ms);
        Decision { direction, to, reason: format!("{reason}: {} -> {to} active workers", s.active) }
    }
}

/// Why `s` is over an up threshold (`None`: it is not).
fn overloaded(c: &PolicyConfig, s: &LoadSample) -> Option<String> {
    if s.lag_windows >= c.up_lag_windows {
        return Some(format!("input {:.1} windows behind (>= {})", s.lag_windows, c.up_lag_windows));
    }
    if let Some(short) = s.pace_shortfall.filter(|&x| x >= c.up_shortfall) {
        return Some(format!("reading {:.0}% short of --rate (>= {:.0}%)", short * 100.0, c.up_shortfall * 100.0));
    }
    let busy = s.mean_busy();
    (busy >= c.up_busy).then(|| format!("active workers busy {busy:.2} (>= {})", c.up_busy))
}

/// Why an input's backlog (`now`: records or bytes; `then`, `dt_ms` before) says the job
/// falls behind: at least `floor` and growing, or draining slower than in `drain_s` seconds.
fn falling_behind(then: Option<u64>, now: Option<u64>, dt_ms: u64, (floor, drain_s): (u64, f64)) -> Option<String> {
    let (then, now) = (then?, now?);
    if now < floor || dt_ms == 0 {
        return None;
    }
    if now >= then {
        return Some(format!("(>= {floor}, not draining: {then} a sample before)"));
    }
    let per_s = (then - now) as f64 * 1000.0 / dt_ms as f64;
    let secs = now as f64 / per_s;
    (secs > drain_s).then(|| format!("(>= {floor}, {secs:.0} s to drain at {per_s:.0}/s, > {drain_s:.0} s)"))
}

/// `, Kafka lag N records, files N bytes behind` for what `s` measured.
fn input_lag(s: &LoadSample) -> String {
    let kafka = s.kafka_lag.map(|k| format!(", Kafka lag {k} records")).unwrap_or_default();
    kafka + &s.file_behind_bytes.map(|f| format!(", files {f} bytes behind")).unwrap_or_default()
}

/// Why `s` is under every down threshold (`None`: it is not).
fn underloaded(c: &PolicyConfig, s: &LoadSample) -> Option<String> {
    let busy = s.mean_busy();
    let kept_pace = s.pace_shortfall.is_none_or(|x| x <= c.down_shortfall);
    let caught_up = s.kafka_lag.is_none_or(|k| k <= c.down_kafka_records)
        && s.file_behind_bytes.is_none_or(|f| f <= c.down_file_bytes);
    (busy <= c.down_busy && s.lag_windows <= c.down_lag_windows && kept_pace && caught_up).then(|| {
        format!(
            "active workers busy {busy:.2} (<= {}) and input {:.1} windows behind (<= {}){}",
            c.down_busy,
            s.lag_windows,
            c.down_lag_windows,
            input_lag(s)
        )
    })
}

/// Parse `--autoscale MIN..MAX` for a job of `workers` workers.
///
/// ```
/// use saams_jobs::control::autoscale::policy::parse_bounds;
/// assert_eq!(parse_bounds("3..12", 12), Ok((3, 12)));
/// assert!(parse_bounds("0..4", 4).unwrap_err().contains("at least 1"));
/// assert!(parse_bounds("2..8", 4).unwrap_err().contains("4 workers"));
/// assert!(parse_bounds("5..2", 8).unwrap_err().contains("MIN <= MAX"));
/// assert!(parse_bounds("3-12", 12).is_err());
/// ```
///
/// # Errors
/// Not two whole numbers `MIN..MAX`, `MIN` 0, `MIN > MAX`, or `MAX` beyond the job's workers.
pub fn parse_bounds(text: &str, workers: usize) -> Result<(usize, usize), String> {
    let bad = || format!("--autoscale {text:?}: expected MIN..MAX, two whole numbers (e.g. 2..8)");
    let (lo, hi) = text.split_once("..").ok_or_else(bad)?;
    let lo: usize = lo.trim().parse().map_err(|_| bad())?;
    let hi: usize = hi.trim().parse().map_err(|_| bad())?;
    if lo == 0 {
        return Err(format!("--autoscale {text}: MIN must be at least 1 active worker"));
    }
    if lo > hi {
        return Err(format!("--autoscale {text}: MIN <= MAX is required"));
    }
    if hi > workers {
        return Err(format!("--autoscale {text}: MAX is more than the job's {workers} workers (-w × -n)"));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: u64, active: usize, busy: f64, lag_windows: f64) -> LoadSample {
        LoadSample { at_ms, active, lag_windows, busy: vec![busy; active], ..LoadSample::default() }
    }

    #[test]
    fn a_kafka_lag_that_does_not_drain_scales_up_and_names_the_lag() {
        let mut p = Policy::new(PolicyConfig::new(1, 8, 0));
        // Workers not busy, no window behind: only the lag says the job falls behind.
        let lag = |i: u64, records| LoadSample { kafka_lag: Some(records), ..sample(i * 1000, 2, 0.3, 0.0) };
        let d: Vec<_> =
            [50_000, 52_000, 54_000, 56_000].iter().enumerate().map(|(i, &r)| p.decide(&lag(i as u64, r))).collect();
        assert_eq!(d[0].direction, Direction::Hold, "one sample has no trend");
        assert_eq!((d[3].direction, d[3].to), (Direction::Up, 4));
        assert!(d[3].reason.contains("Kafka lag 56000 records"), "{}", d[3].reason);
        assert!(d[3].reason.contains("not draining"), "{}", d[3].reason);
    }

    #[test]
    fn a_lag_draining_fast_enough_or_below_the_floor_does_not_scale_up() {
        let mut p = Policy::new(PolicyConfig::new(1, 8, 0));
        // 100 000 records draining 10 000 a second: 10 s to drain, under 30 s.
        let fast = |i: u64| LoadSample { kafka_lag: Some(100_000 - i * 10_000), ..sample(i * 1000, 2, 0.6, 0.0) };
        assert!((0..6).all(|i| p.decide(&fast(i)).direction == Direction::Hold));
        // Draining 1 000 a second from 60 000: a minute to drain, over 30 s: up.
        let mut p = Policy::new(PolicyConfig::new(1, 8, 0));
        let slow = |i: u64| LoadSample { kafka_lag: Some(60_000 - i * 1_000), ..sample(i * 1000, 2, 0.6, 0.0) };
        let d: Vec<_> = (10..14).map(|i| p.decide(&slow(i))).collect();
        assert_eq!(d[3].direction, Direction::Up, "{}", d[3].reason);
        assert!(d[3].reason.contains("s to drain at 1000/s"), "{}", d[3].reason);
        // Growing, but below the floor: nothing.
        let mut p = Policy::new(PolicyConfig::new(1, 8, 0));
        let small = |i: u64| LoadSample { kafka_lag: Some(100 + i * 100), ..sample(i * 1000, 2, 0.6, 0.0) };
        assert!((0..6).all(|i| p.decide(&small(i)).direction == Direction::Hold));
    }

    #[test]
    fn files_behind_their_end_scale_up_and_a_lag_keeps_the_job_from_scaling_down() {
        let mut p = Policy::new(PolicyConfig::new(1, 8, 0));
        let file = |i: u64, bytes| LoadSample { file_behind_bytes: Some(bytes), ..sample(i * 1000, 2, 0.1, 0.0) };
        let d: Vec<_> = (0..4).map(|i| p.decide(&file(i, 900_000_000 - i * 1_000_000))).collect();
        assert_eq!(d[3].direction, Direction::Up, "{}", d[3].reason);
        assert!(d[3].reason.contains("files 897000000 bytes behind their end"), "{}", d[3].reason);
        // Idle workers, but a Kafka lag over the down floor (draining fast): no scale-down.
        let mut p = Policy::new(PolicyConfig::new(1, 8, 0));
        let lagging = |i: u64| LoadSample { kafka_lag: Some(5_000 - i * 500), ..sample(i * 1000, 4, 0.05, 0.0) };
        assert!((0..6).all(|i| p.decide(&lagging(i)).direction == Direction::Hold));
        let caught_up = |i: u64| LoadSample { kafka_lag: Some(200), ..sample(i * 1000, 4, 0.05, 0.0) };
        let d: Vec<_> = (10..13).map(|i| p.decide(&caught_up(i))).collect();
        assert_eq!(d[2].direction, Direction::Down, "{}", d[2].reason);
        assert!(d[2].reason.contains("Kafka lag 200 records"), "{}", d[2].reason);
    }

    fn run(p: &mut Policy, samples: &[LoadSample]) -> Vec<Direction> {
        samples.iter().map(|s| p.decide(s).direction).collect()
    }

    #[test]
    fn scales_up_on_a_sustained_backlog_and_not_past_max() {
        let mut p = Policy::new(PolicyConfig::new(2, 8, 5_000));
        let d: Vec<_> = (0..3).map(|i| p.decide(&sample(i * 1000, 4, 0.5, 10.0))).collect();
        assert_eq!(d[2].direction, Direction::Up);
        assert_eq!(d[2].to, 8);
        assert!(d[2].reason.contains("windows behind"), "{}", d[2].reason);
        // At max: holds, and says why.
        let at_max: Vec<_> = (10..14).map(|i| p.decide(&sample(i * 1000, 8, 0.99, 10.0))).collect();
        assert!(at_max.iter().all(|d| d.direction == Direction::Hold));
        assert!(at_max[3].reason.contains("already at the most"), "{}", at_max[3].reason);
    }

    #[test]
    fn hysteresis_holds_between_the_thresholds() {
        let mut p = Policy::new(PolicyConfig::new(1, 8, 0));
        // Busy 0.6: under the up threshold, over the down one: never a change.
        let samples: Vec<_> = (0..20).map(|i| sample(i * 1000, 4, 0.6, 2.0)).collect();
        assert!(run(&mut p, &samples).iter().all(|&d| d == Direction::Hold));
    }

    #[test]
    fn a_flapping_load_does_not_flap_the_job() {
        let mut p = Policy::new(PolicyConfig::new(1, 8, 0));
        // Hot and cold samples alternate: never `sustain` in a row.
        let samples: Vec<_> = (0..20).map(|i| sample(i * 1000, 4, if i % 2 == 0 { 0.99 } else { 0.05 }, 0.0)).collect();
        assert!(run(&mut p, &samples).iter().all(|&d| d == Direction::Hold));
    }

    #[test]
    fn cooldown_holds_after_a_change() {
        let mut p = Policy::new(PolicyConfig::new(1, 16, 10_000));
        let hot: Vec<_> = (0..3).map(|i| sample(i * 1000, 2, 0.99, 0.0)).collect();
        assert_eq!(run(&mut p, &hot).last(), Some(&Direction::Up));
        let during: Vec<_> = (3..12).map(|i| p.decide(&sample(i * 1000, 4, 0.99, 0.0))).collect();
        assert!(during.iter().all(|d| d.direction == Direction::Hold));
        assert!(during[0].reason.contains("cooling down"), "{}", during[0].reason);
        // After the cool-down, `sustain` new samples are needed.
        let after: Vec<_> = (12..15).map(|i| p.decide(&sample(i * 1000, 4, 0.99, 0.0)).direction).collect();
        assert_eq!(after, [Direction::Hold, Direction::Hold, Direction::Up]);
    }

    #[test]
    fn scales_down_slowly_and_not_below_min() {
        let mut p = Policy::new(PolicyConfig::new(3, 12, 0));
        let cold: Vec<_> = (0..3).map(|i| p.decide(&sample(i * 1000, 12, 0.1, 0.0))).collect();
        assert_eq!((cold[2].direction, cold[2].to), (Direction::Down, 9));
        let mut active = 9;
        for i in 3..40 {
            let d = p.decide(&sample(i * 1000, active, 0.1, 0.0));
            active = d.to;
        }
        assert_eq!(active, 3);
        assert!(p.decide(&sample(50_000, 3, 0.1, 0.0)).reason.contains("fewest"));
    }

    #[test]
    fn down_needs_every_signal_quiet() {
        let mut p = Policy::new(PolicyConfig::new(1, 8, 0));
        // Idle workers but the readers short of --rate by 5%: neither up (< 10%) nor down.
        let s = |i: u64| LoadSample { pace_shortfall: Some(0.05), ..sample(i * 1000, 4, 0.1, 0.0) };
        assert!((0..10).all(|i| p.decide(&s(i)).direction == Direction::Hold));
        // 20% short of the pace: up.
        let short = |i: u64| LoadSample { pace_shortfall: Some(0.2), ..sample(i * 1000, 4, 0.1, 0.0) };
        let d: Vec<_> = (10..13).map(|i| p.decide(&short(i))).collect();
        assert_eq!(d[2].direction, Direction::Up);
        assert!(d[2].reason.contains("--rate"), "{}", d[2].reason);
    }

    #[test]
    fn holds_while_a_rescale_moves_and_restores_the_bounds() {
        let mut p = Policy::new(PolicyConfig::new(2, 4, 0));
        let moving = |i: u64| LoadSample { rescaling: true, ..sample(i * 1000, 2, 0.99, 9.0) };
        assert!((0..5).all(|i| p.decide(&moving(i)).direction == Direction::Hold));
        let d = p.decide(&sample(6_000, 8, 0.5, 0.0));
        assert_eq!((d.direction, d.to), (Direction::Down, 4));
        assert!(d.reason.contains("outside 2..4"), "{}", d.reason);
    }
}
