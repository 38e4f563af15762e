//! Live metrics of the `saams` job and the communication figures of its summary line.
//!
//! The counters are `prometheus-client` metrics (shared atomics). Workers count locally and add
//! their counts here once per batch of tuples ([`LocalCounts::flush`]), never per tuple. Bytes
//! between processes come from timely's communication hooks (the sending side's
//! `MessageHeader.length`), so only traffic that really crosses a process boundary is counted;
//! the partials among it are counted by the decoder that receives them
//! ([`saams_operators::record::wire_counts`]), so no partial is encoded a second time to count it.
//! `--http` (alias `--metrics-addr`) serves the registry in Prometheus text format at `/metrics`
//! ([`crate::control::http`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use saams_operators::{Rec, Val};
use timely::communication::initialize::Hooks;
use timely::communication::logging::{CommunicationEvent, CommunicationEventBuilder};

/// The metrics flags of `saams` (flattened into its CLI).
#[derive(Clone, Debug, Default, Args)]
pub struct MetricsArgs {
    /// Keep serving HTTP (`--http`, `--metrics-addr`) this long after the input ends (e.g. 2s), so a scraper sees the totals.
    #[arg(long = "metrics-linger", default_value = "0s")]
    pub metrics_linger: String,
}

/// Labels of a per-worker counter.
pub type WorkerLabels = Vec<(String, String)>;

/// The job's metrics, shared by its workers, the communication threads and the HTTP thread.
pub struct Metrics {
    registry: Registry,
    /// Valid tuples read, per reading worker.
    pub tuples_in: Family<WorkerLabels, Counter>,
    /// Values fed to each synopsis (label `synopsis` = its index in the plan, plus kind and stream).
    pub synopsis_updates: Family<WorkerLabels, Counter>,
    /// Estimation lines written.
    pub estimations_out: Counter,
    /// Rejected input lines.
    pub dead_letters: Counter,
    /// Tuples older than the lateness bound.
    pub late: Counter,
    /// Request fields outside the reference's request class.
    pub request_warnings: Counter,
    /// Bytes sent by this process to other processes (timely's communication log).
    pub bytes_between_processes: Counter,
    /// Wire bytes (codec bytes, zero runs packed, and the fields around them) of the partials
    /// this process received from other processes in the tree merge.
    pub partial_bytes: Counter,
    /// Partials this process received from other processes in the tree merge.
    pub partials: Counter,
    /// [`saams_operators::record::wire_counts`] when these metrics were made.
    partials_before: (u64, u64),
    /// Bytes the routed tuples take as compact records (what shipping the raw streams costs).
    pub raw_bytes: Counter,
    /// Event-time lag between the newest window read and the oldest window still open (ms).
    pub window_lag_ms: Gauge,
    /// HTTP requests refused at the edge, by `reason` (`unauthorized`, `busy`).
    pub http_refused: crate::control::auth::Refusals,
    /// Rescales applied (`POST /rescale`, a rescale request).
    pub rescales: Counter,
    /// Bins that changed worker in those rescales.
    pub bins_moved: Counter,
    /// Bytes of synopsis state this process' workers sent to a bin's new worker.
    pub rescale_bytes_moved: Counter,
    /// Workers holding the synopses now.
    pub active_workers: Gauge,
    /// Input units this process' workers took over from a worker of another process.
    pub units_moved_between_processes: Counter,
    /// Moves of input units to this process' workers they refused (the file does not open
    /// here, or the worker's input has ended): the old worker reads on.
    pub unit_moves_refused: Counter,
    /// Per device of a partials topic (`device`): the bytes its shipments took (`form` =
    /// `shipped`) and what the same windows take raw (`form` = `raw`).
    pub device_bytes: Family<WorkerLabels, Gauge>,
    /// Per device: its shipments by `outcome` (`merged`, `late`, `replayed`, `refused`).
    pub device_shipments: Family<WorkerLabels, Gauge>,
    /// Per device: ad-hoc queries and SAVEs of synopses resident on it that it did not answer
    /// (gone, or the job ended first), answered with an error instead.
    pub device_asks_unanswered: Family<WorkerLabels, Gauge>,
    /// `--autoscale`'s changes, by `direction` (`up`, `down`).
    pub autoscale_decisions: crate::control::autoscale::DecisionCounts,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric registered.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("saams");
        let m = Metrics {
            registry: Registry::default(),
            tuples_in: Family::default(),
            synopsis_updates: Family::default(),
            estimations_out: Counter::default(),
            dead_letters: Counter::default(),
            late: Counter::default(),
            request_warnings: Counter::default(),
            bytes_between_processes: Counter::default(),
            partial_bytes: Counter::default(),
            partials: Counter::default(),
            raw_bytes: Counter::default(),
            window_lag_ms: Gauge::default(),
            http_refused: Family::default(),
            rescales: Counter::default(),
            bins_moved: Counter::default(),
            rescale_bytes_moved: Counter::default(),
            active_workers: Gauge::default(),
            units_moved_between_processes: Counter::default(),
            unit_moves_refused: Counter::default(),
            device_bytes: Family::default(),
            device_shipments: Family::default(),
            device_asks_unanswered: Family::default(),
            autoscale_decisions: Family::default(),
            partials_before: saams_operators::record::wire_counts(),
        };
        registry.register("tuples_in", "Valid tuples read, per worker", m.tuples_in.clone());
        registry.register("synopsis_updates", "Values fed to each synopsis", m.synopsis_updates.clone());
        registry.register("estimations_out", "Estimation lines written", m.estimations_out.clone());
        registry.register("dead_letters", "Rejected input lines (malformed or late)", m.dead_letters.clone());
        registry.register("late_tuples", "Tuples older than the lateness bound", m.late.clone());
        registry.register(
            "request_warnings",
            "Request fields outside the reference's request class (ignored, or refused with --strict-requests)",
            m.request_warnings.clone(),
        );
        registry.register(
            "bytes_between_processes",
            "Bytes this process sent to other processes (timely communication log)",
            m.bytes_between_processes.clone(),
        );
        registry.register(
            "partial_bytes",
            "Wire bytes of the partials received from other processes in the tree merge",
            m.partial_bytes.clone(),
        );
        registry.register("partials", "Partials received from other processes in the tree merge", m.partials.clone());
        registry.register("raw_bytes", "Bytes of the routed tuples as compact records", m.raw_bytes.clone());
        registry.register("window_lag_ms", "Newest window read minus oldest open window (ms)", m.window_lag_ms.clone());
        registry.register(
            "http_refused",
            "HTTP requests refused before the job saw them: reason=unauthorized (401), busy (503)",
            m.http_refused.clone(),
        );
        registry.register(
            "device_bytes",
            "Per device of the partials topic: bytes shipped (form=shipped) and the same windows raw (form=raw)",
            m.device_bytes.clone(),
        );
        registry.register(
            "device_shipments",
            "Per device: shipments merged, late, replayed or refused (outcome)",
            m.device_shipments.clone(),
        );
        registry.register(
            "device_asks_unanswered",
            "Per device: asks of synopses resident on it answered with an error: the device said goodbye without answering, or the job ended first",
            m.device_asks_unanswered.clone(),
        );
        register_rescaling(&mut registry, &m);
        Metrics { registry, ..m }
    }

    /// Handles of the rescale metrics, for the process' rescale board.
    pub fn rescale_counters(&self) -> crate::control::rescale::RescaleCounters {
        crate::control::rescale::RescaleCounters {
            rescales: self.rescales.clone(),
            bins_moved: self.bins_moved.clone(),
            bytes_moved: self.rescale_bytes_moved.clone(),
            active_workers: self.active_workers.clone(),
        }
    }

    /// Set the per-device series from the devices' table (at every scrape).
    ///
    /// ```
    /// use saams_jobs::edge::devices::Devices;
    /// let d = Devices::new(std::time::Duration::from_secs(5));
    /// d.touch("pi-1", |r| { r.shipped_bytes = 120; r.raw_bytes = 4000; r.shipments = 2 });
    /// let m = saams_jobs::metrics::Metrics::new();
    /// m.publish_devices(&d.rows());
    /// let text = m.render();
    /// assert!(text.contains(r#"saams_device_bytes{device="pi-1",form="raw"} 4000"#), "{text}");
    /// assert!(text.contains(r#"saams_device_shipments{device="pi-1",outcome="merged"} 2"#));
    /// ```
    pub fn publish_devices(&self, rows: &[(String, crate::edge::devices::DeviceRow)]) {
        let label = |device: &str, k: &str, v: &str| {
            vec![("device".to_string(), device.to_string()), (k.to_string(), v.to_string())]
        };
        let gauge = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
        for (device, r) in rows {
            self.device_bytes.get_or_create(&label(device, "form", "shipped")).set(gauge(r.shipped_bytes));
            self.device_bytes.get_or_create(&label(device, "form", "raw")).set(gauge(r.raw_bytes));
            for (outcome, n) in
                [("merged", r.shipments), ("late", r.late), ("replayed", r.replayed), ("refused", r.refused)]
            {
                self.device_shipments.get_or_create(&label(device, "outcome", outcome)).set(gauge(n));
            }
        }
    }

    /// Set the per-device count of asks answered with an error instead of the device's answer
    /// ([`crate::edge::devices::Devices::unanswered`], at every scrape).
    ///
    /// ```
    /// let m = saams_jobs::metrics::Metrics::new();
    /// m.publish_unanswered(&[("pi-1".to_string(), 3)]);
    /// assert!(m.render().contains(r#"saams_device_asks_unanswered{device="pi-1"} 3"#), "{}", m.render());
    /// ```
    pub fn publish_unanswered(&self, counts: &[(String, u64)]) {
        for (device, n) in counts {
            let label = vec![("device".to_string(), device.clone())];
            self.device_asks_unanswered.get_or_create(&label).set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
    }

    /// The registry in Prometheus text format.
    ///
    /// ```
    /// let m = saams_jobs::metrics::Metrics::new();
    /// m.raw_bytes.inc_by(32);
    /// assert!(m.render().contains("saams_raw_bytes_total 32"));
    /// ```
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }

    /// Timely communication hooks adding every message this process sends to another process
    /// to [`Metrics::bytes_between_processes`] (the loggers are batched by timely).
    pub fn hooks(self: &Arc<Self>) -> Hooks {
        let metrics = self.clone();
        Hooks {
            log_fn: Arc::new(move |setup| {
                if !setup.sender {
                    return None;
                }
                let counter = metrics.bytes_between_processes.clone();
                Some(timely::logging_core::Logger::<CommunicationEventBuilder>::new(
                    Instant::now(),
                    Duration::default(),
                    move |_t, data: &mut Option<Vec<(Duration, CommunicationEvent)>>| {
                        if let Some(data) = data {
                            let bytes: usize = data
                                .iter()
                                .map(|(_, ev)| match ev {
                                    CommunicationEvent::Message(msg) if msg.is_send => msg.header.length,
                                    _ => 0,
                                })
                                .sum();
                            counter.inc_by(bytes as u64);
                        }
                    },
                ))
            }),
            ..Default::default()
        }
    }

    /// Bring the partial counters up to what this process has received from other processes
    /// since the metrics were made ([`saams_operators::record::wire_counts`]: counted by the
    /// decoder, from the bytes received; nothing is encoded to count it).
    fn sync_partials(&self) {
        let (partials, bytes) = saams_operators::record::wire_counts();
        let (partials, bytes) = (partials - self.partials_before.0, bytes - self.partials_before.1);
        self.partials.inc_by(partials.saturating_sub(self.partials.get()));
        self.partial_bytes.inc_by(bytes.saturating_sub(self.partial_bytes.get()));
    }

    /// The communication figures of the summary line.
    pub fn comm(&self) -> CommFigures {
        self.sync_partials();
        CommFigures {
            bytes_between_processes: self.bytes_between_processes.get(),
            partial_bytes: self.partial_bytes.get(),
            partials: self.partials.get(),
            raw_bytes: self.raw_bytes.get(),
        }
    }
}

/// Bytes figures of one run (see [`Metrics`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommFigures {
    /// Bytes this process sent to other processes.
    pub bytes_between_processes: u64,
    /// Wire bytes of the partials received from other processes.
    pub partial_bytes: u64,
    /// Partials received from other processes.
    pub partials: u64,
    /// Bytes of the routed tuples as compact records.
    pub raw_bytes: u64,
}

impl CommFigures {
    /// `key=value` pairs appended to the summary line.
    ///
    /// ```
    /// let c = saams_jobs::metrics::CommFigures { raw_bytes: 88, ..Default::default() };
    /// assert_eq!(c.fields(), "bytes_between_processes=0 partial_bytes=0 partials=0 raw_bytes=88");
    /// ```
    pub fn fields(&self) -> String {
        format!(
            "bytes_between_processes={} partial_bytes={} partials={} raw_bytes={}",
            self.bytes_between_processes, self.partial_bytes, self.partials, self.raw_bytes
        )
    }
}

/// The bytes a routed record takes on the wire as a compact fixed-width record: group (4 bytes),
/// time and sequence (8 each), the value's tag (4) and the number (8) or the text's length (8)
/// and bytes.
///
/// ```
/// use saams_operators::{Rec, Val};
/// let r = Rec { group: 0, time: 5, seq: 7, val: Val::Num(1.5) };
/// assert_eq!(saams_jobs::metrics::record_bytes(&r), 32);
/// ```
pub fn record_bytes(r: &Rec) -> u64 {
    let val = match &r.val {
        Val::Num(_) => 8,
        Val::Str(s) => 8 + s.len() as u64,
        Val::Part(b) => 8 + b.len() as u64,
    };
    4 + 8 + 8 + 4 + val
}

/// A worker's counts since its last flush: added to the shared counters once per batch.
pub struct LocalCounts {
    tuples: Counter,
    group_updates: Vec<u64>,
    raw_bytes: u64,
    reported_tuples: u64,
}

impl LocalCounts {
    /// Counts for worker `me` over `groups` update groups.
    pub fn new(metrics: &Metrics, me: usize, groups: usize) -> LocalCounts {
        let tuples = metrics.tuples_in.get_or_create(&vec![("worker".to_string(), me.to_string())]).clone();
        LocalCounts { tuples, group_updates: vec![0; groups], raw_bytes: 0, reported_tuples: 0 }
    }

    /// Count `groups` update groups (live constructs add groups).
    pub fn grow(&mut self, groups: usize) {
        if self.group_updates.len() < groups {
            self.group_updates.resize(groups, 0);
        }
    }

    /// True when every tuple up to `tuples` (the worker's running total) is flushed.
    pub fn flushed(&self, tuples: u64) -> bool {
        self.reported_tuples == tuples
    }

    /// Count one routed record (local, no atomics).
    #[inline]
    pub fn record(&mut self, r: &Rec) {
        if let Some(c) = self.group_updates.get_mut(r.group as usize) {
            *c += 1;
        }
        self.raw_bytes += record_bytes(r);
    }

    /// Add the counts since the last flush to the shared counters; `tuples` is the worker's
    /// running total of valid tuples. `synopses(g)` lists group g's synopses with their labels.
    pub fn flush<'a, F>(&mut self, metrics: &Metrics, tuples: u64, synopses: F)
    where
        F: Fn(usize) -> Vec<&'a WorkerLabels>,
    {
        self.tuples.inc_by(tuples - self.reported_tuples);
        self.reported_tuples = tuples;
        metrics.raw_bytes.inc_by(std::mem::take(&mut self.raw_bytes));
        for (g, n) in self.group_updates.iter_mut().enumerate() {
            if *n == 0 {
                continue;
            }
            for labels in synopses(g) {
                metrics.synopsis_updates.get_or_create(labels).inc_by(*n);
            }
            *n = 0;
        }
    }
}

/// Values the job keeps elsewhere, copied into the registry at each scrape.
pub struct Totals {
    /// Estimation lines written.
    pub estimations: u64,
    /// Rejected lines.
    pub dead_letters: u64,
    /// Late tuples.
    pub late: u64,
    /// Request fields outside the reference's request class.
    pub request_warnings: u64,
    /// Window lag (ms).
    pub window_lag_ms: i64,
}

impl Metrics {
    /// Bring the counters kept elsewhere up to `t` (counters only grow).
    pub fn sync(&self, t: &Totals) {
        for (c, v) in [
            (&self.estimations_out, t.estimations),
            (&self.dead_letters, t.dead_letters),
            (&self.late, t.late),
            (&self.request_warnings, t.request_warnings),
        ] {
            c.inc_by(v.saturating_sub(c.get()));
        }
        self.window_lag_ms.set(t.window_lag_ms);
        self.sync_partials();
        // Counted by the update operators as they send owned states at a rescale's fence.
        let (_, bytes) = saams_operators::update::moved_totals();
        self.rescale_bytes_moved.inc_by(bytes.saturating_sub(self.rescale_bytes_moved.get()));
    }
}

impl Metrics {
    /// What `GET /metrics` serves ([`crate::control::http`]): the registry in Prometheus text
    /// format, with the counters kept elsewhere brought up to `totals()` first, at every scrape.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use saams_jobs::metrics::{Metrics, Totals};
    /// let text = Arc::new(Metrics::new()).scrape(|| Totals {
    ///     estimations: 3, dead_letters: 0, late: 0, request_warnings: 0, window_lag_ms: 0,
    /// });
    /// assert!(text().contains("saams_estimations_out_total 3"));
    /// ```
    pub fn scrape<F>(self: Arc<Self>, totals: F) -> Arc<dyn Fn() -> String + Send + Sync>
    where
        F: Fn() -> Totals + Send + Sync + 'static,
    {
        Arc::new(move || {
            self.sync(&totals());
            self.render()
        })
    }
}

/// Register the metrics of rescales, of the input units that follow the active workers and of
/// `--autoscale`.
fn register_rescaling(registry: &mut Registry, m: &Metrics) {
    registry.register("rescales", "Rescales applied (the bin map redrawn at a fence)", m.rescales.clone());
    registry.register("bins_moved", "Bins that changed worker in rescales", m.bins_moved.clone());
    registry.register(
        "rescale_bytes_moved",
        "Bytes of synopsis state sent to a bin's new worker in rescales",
        m.rescale_bytes_moved.clone(),
    );
    registry.register("active_workers", "Workers holding the synopses", m.active_workers.clone());
    registry.register(
        "units_moved_between_processes",
        "Input units this process' workers took over from a worker of another process",
        m.units_moved_between_processes.clone(),
    );
    registry.register(
        "unit_moves_refused",
        "Moves of input units this process' workers refused (file not readable here, input ended)",
        m.unit_moves_refused.clone(),
    );
    registry.register(
        "autoscale_decisions",
        "Changes of the active workers --autoscale made, by direction (up, down)",
        m.autoscale_decisions.clone(),
    );
}
