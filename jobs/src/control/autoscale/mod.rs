//! `--autoscale MIN..MAX`: a thread of the process (never a timely worker) that measures the
//! job's load every `--autoscale-interval`, asks the [`policy`] what to do, and changes the
//! active workers through [`Hub::submit_rescale`], the path `POST /rescale` takes (logged, agreed
//! at a fence, the same 400/409 refusals). Each change is logged on stderr with its reason,
//! counted in `/metrics` (`saams_autoscale_decisions_total{direction="up"|"down"}`) and shown in
//! `GET /status` (`"autoscale"`).
//!
//! What it measures ([`Meter`]): how far the input is behind — the event-time windows read past
//! the dataflow's frontier, and with `--rate` the share of the pace the readers fell short of —
//! and each active worker's busy fraction (wall time it did not park, from
//! [`crate::stats::ParkedClocks`]) — and how far the inputs are behind their ends: the Kafka
//! partitions' lag (high watermark less the next record taken, summed) and, without `--rate`,
//! the bytes the files have left. Every worker of every process reports its figures to worker
//! 0 through a small dataflow of its own ([`crate::dataflow::load_reports`], as the Kafka epoch
//! gossip travels), so under `-n > 1` process 0 — the one decider (two would race for the
//! fences) — sees the whole job.

pub mod policy;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde_json::{Value, json};

use crate::control::hub::Hub;
use crate::stats::{JobLoad, Stats};

use policy::{Decision, Direction, LoadSample, Policy, PolicyConfig};

/// `saams_autoscale_decisions_total`, by `direction`.
pub type DecisionCounts = Family<Vec<(String, String)>, Counter>;

/// The autoscaler's settings: bounds and timing.
#[derive(Clone, Debug)]
pub struct AutoscaleSettings {
    /// Fewest active workers.
    pub min: usize,
    /// Most active workers.
    pub max: usize,
    /// Between two measurements.
    pub interval: Duration,
    /// No change for this long after one.
    pub cooldown: Duration,
}

/// `--autoscale`'s settings from its flags (`None` without `--autoscale`): the bounds `MIN..MAX`
/// for a job of `workers` workers, `--autoscale-interval` and `--autoscale-cooldown`.
///
/// ```
/// use saams_jobs::control::autoscale::settings;
/// assert!(settings(None, 4, "1s", "10s").unwrap().is_none());
/// assert_eq!(settings(Some("1..4"), 4, "500ms", "2s").unwrap().unwrap().max, 4);
/// assert!(settings(Some("1..4"), 4, "0s", "2s").unwrap_err().contains("more than 0"));
/// assert!(settings(Some("1..4"), 4, "1s", "soon").unwrap_err().contains("--autoscale-cooldown"));
/// ```
///
/// # Errors
/// A bad `MIN..MAX` (see [`policy::parse_bounds`]) or duration, or an interval of 0.
pub fn settings(
    bounds: Option<&str>,
    workers: usize,
    interval: &str,
    cooldown: &str,
) -> Result<Option<AutoscaleSettings>, String> {
    let Some(bounds) = bounds else { return Ok(None) };
    let (min, max) = policy::parse_bounds(bounds, workers)?;
    let ms = |flag: &str, text: &str| {
        crate::duration::parse_duration_ms(text).map_err(|e| format!("--{flag} {text}: {e}")).map(|ms| ms.max(0) as u64)
    };
    let interval = ms("autoscale-interval", interval)?;
    if interval == 0 {
        return Err("--autoscale-interval must be more than 0".into());
    }
    let cooldown = ms("autoscale-cooldown", cooldown)?;
    Ok(Some(AutoscaleSettings {
        min,
        max,
        interval: Duration::from_millis(interval),
        cooldown: Duration::from_millis(cooldown),
    }))
}

/// A change the autoscaler made: direction, from, to, reason, wall-clock ms.
type Change = (Direction, usize, usize, String, i64);

/// What `GET /status` shows of the autoscaler: its bounds and the last change.
pub struct AutoscaleBoard {
    min: usize,
    max: usize,
    /// The last change, and the latest hold's reason.
    last: Mutex<(Option<Change>, String)>,
    counts: DecisionCounts,
}

impl AutoscaleBoard {
    /// A board for bounds `min..max`, counting into `counts`.
    pub fn new(min: usize, max: usize, counts: DecisionCounts) -> AutoscaleBoard {
        AutoscaleBoard { min, max, last: Mutex::new((None, "no sample yet".into())), counts }
    }

    /// `{"min","max","lastDecision","from","to","reason","at","holding"}` (`lastDecision` null
    /// before the first change; `holding` the latest sample's reason to hold).
    ///
    /// ```
    /// use saams_jobs::control::autoscale::AutoscaleBoard;
    /// let board = AutoscaleBoard::new(2, 8, Default::default());
    /// assert_eq!(board.status()["lastDecision"], serde_json::Value::Null);
    /// assert_eq!(board.status()["max"], 8);
    /// ```
    pub fn status(&self) -> Value {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let mut v = json!({"min": self.min, "max": self.max, "lastDecision": null, "holding": last.1});
        if let Some((direction, from, to, reason, at)) = &last.0 {
            v["lastDecision"] = json!(direction.as_str());
            v["from"] = json!(from);
            v["to"] = json!(to);
            v["reason"] = json!(reason);
            v["at"] = json!(saams::api::time::format_timestamp(*at));
        }
        v
    }

    fn changed(&self, d: &Decision, from: usize) {
        let at = i64::try_from(crate::clock::now_unix_ms()).unwrap_or(i64::MAX);
        self.counts.get_or_create(&vec![("direction".to_string(), d.direction.as_str().to_string())]).inc();
        self.last.lock().unwrap_or_else(|e| e.into_inner()).0 = Some((d.direction, from, d.to, d.reason.clone(), at));
    }

    fn holding(&self, reason: String) {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).1 = reason;
    }
}

/// Turns the process' counters into [`LoadSample`]s: each sample covers the time since the
/// previous one.
pub struct Meter {
    started: Instant,
    window_ms: i64,
    /// `--rate` for this process (tuples/s), if paced.
    rate: Option<f64>,
    /// Workers of this process, and the first's global index.
    local: (usize, usize),
    previous: Option<(Instant, u64, Vec<u64>)>,
    /// The workers' load reports at the previous sample (global index → parked ns).
    previous_reports: std::collections::BTreeMap<usize, u64>,
}

impl Meter {
    /// A meter for a process whose workers are `first..first + workers` of the job, reading at
    /// most `rate` tuples/s (its share of `--rate`).
    pub fn new(window_ms: i64, rate: Option<f64>, (first, workers): (usize, usize)) -> Meter {
        Meter {
            started: Instant::now(),
            window_ms: window_ms.max(1),
            rate,
            local: (workers, first),
            previous: None,
            previous_reports: std::collections::BTreeMap::new(),
        }
    }

    /// A sample of `stats` now, with the job's `active` workers, its dataflow in `open_window`
    /// (ms) and `rescaling`; `None` for the first call (nothing to compare yet).
    pub fn sample(&mut self, stats: &Stats, active: usize, open_window: i64, rescaling: bool) -> Option<LoadSample> {
        let now = Instant::now();
        let tuples = stats.tuples.load(Ordering::Relaxed);
        let parked = stats.parked.read();
        let previous = self.previous.replace((now, tuples, parked.clone()));
        let (then, tuples_then, parked_then) = previous?;
        let wall = now.duration_since(then).as_nanos().max(1) as f64;
        let reports = stats.job_load.read();
        let reported: std::collections::BTreeMap<usize, u64> = reports.iter().map(|(&w, l)| (w, l.parked_ns)).collect();
        let reports_then = std::mem::replace(&mut self.previous_reports, reported);
        let busy = if reports.is_empty() {
            self.local_busy((&parked, &parked_then), active, wall)
        } else {
            // Every process' active workers, from their reports (under -n > 1 too).
            (0..active)
                .filter_map(|w| {
                    let (now, then) = (self.previous_reports.get(&w)?, reports_then.get(&w)?);
                    Some((1.0 - now.saturating_sub(*then) as f64 / wall).clamp(0.0, 1.0))
                })
                .collect()
        };
        let kafka_lag = JobLoad::kafka_records(&reports);
        // With --rate the readers are behind a file's end by design: the pace is the signal.
        let file_behind_bytes = JobLoad::file_bytes(&reports).filter(|_| self.rate.is_none());
        let read_epoch = stats.epoch.load(Ordering::Relaxed);
        // No reading yet, or the inputs ended (their epoch is past every window): nothing behind.
        let lag_windows = if read_epoch <= 0 || read_epoch > i64::MAX / 4 || open_window <= 0 {
            0.0
        } else {
            ((read_epoch - open_window).max(0) / self.window_ms) as f64
        };
        let pace_shortfall = self.rate.filter(|_| stats.first.get().is_some()).map(|rate| {
            let wanted = rate * wall / 1e9;
            (1.0 - (tuples - tuples_then) as f64 / wanted).clamp(0.0, 1.0)
        });
        let at_ms = now.duration_since(self.started).as_millis() as u64;
        Some(LoadSample { at_ms, active, lag_windows, pace_shortfall, busy, rescaling, kafka_lag, file_behind_bytes })
    }

    /// This process' active workers' busy fractions from its own clocks (`parked` now and
    /// then, over `wall` ns): before any load report has come.
    fn local_busy(&self, (parked, parked_then): (&[u64], &[u64]), active: usize, wall: f64) -> Vec<f64> {
        let (workers, first) = self.local;
        // This process' workers among the job's first `active`.
        let mine = active.saturating_sub(first).min(workers);
        (0..mine)
            .map(|i| {
                let p = parked.get(i).copied().unwrap_or(0).saturating_sub(parked_then.get(i).copied().unwrap_or(0));
                (1.0 - p as f64 / wall).clamp(0.0, 1.0)
            })
            .collect()
    }
}

/// Start the autoscaler thread: it samples every `settings.interval` until `finished` is set or
/// the hub closes. Not joined at the end: a rescale in flight would only delay the exit.
///
/// # Errors
/// When the thread cannot be started.
pub fn start(
    settings: AutoscaleSettings,
    hub: Arc<Hub>,
    stats: Arc<Stats>,
    (board, mut meter): (Arc<AutoscaleBoard>, Meter),
    finished: Arc<AtomicU64>,
) -> Result<std::thread::JoinHandle<()>, String> {
    let cooldown_ms = settings.cooldown.as_millis().min(u64::MAX as u128) as u64;
    let mut policy = Policy::new(PolicyConfig::new(settings.min, settings.max, cooldown_ms));
    eprintln!(
        "autoscale: {}..{} active workers, a sample every {:?}, cool-down {:?}",
        settings.min, settings.max, settings.interval, settings.cooldown
    );
    std::thread::Builder::new()
        .name("saams-autoscale".into())
        .spawn(move || {
            let mut next = Instant::now();
            while finished.load(Ordering::Relaxed) == 0 {
                std::thread::sleep(Duration::from_millis(20));
                if Instant::now() < next {
                    continue;
                }
                next += settings.interval;
                if !hub.is_open() {
                    continue;
                }
                let rescale = hub.rescale_board();
                let active = rescale.active_workers();
                let open = rescale.open_window();
                let moving = rescale.moving(open.max(0) as u64);
                let Some(sample) = meter.sample(&stats, active, open, moving) else { continue };
                let decision = policy.decide(&sample);
                if decision.direction == Direction::Hold {
                    board.holding(decision.reason);
                    continue;
                }
                act(&hub, &board, &decision, active);
            }
        })
        .map_err(|e| format!("the autoscale thread did not start: {e}"))
}

/// Submit a change and log it with its reason (or why it was refused: nothing moved then).
fn act(hub: &Hub, board: &AutoscaleBoard, decision: &Decision, from: usize) {
    eprintln!("autoscale: {} to {} active workers: {}", decision.direction.as_str(), decision.to, decision.reason);
    match hub.submit_rescale(decision.to) {
        Ok(ack) => {
            board.changed(decision, from);
            eprintln!(
                "autoscale: {} active workers from window {} ms ({} bins moved)",
                ack.active_workers, ack.effective_from, ack.moves
            );
        }
        Err(e) => {
            eprintln!("autoscale: the rescale to {} was not applied: {e}", decision.to);
            board.holding(format!("the rescale to {} was not applied: {e}", decision.to));
        }
    }
}
