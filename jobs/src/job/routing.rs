//! Routing: a worker's reading rounds over its units, and the router that turns each parsed
//! tuple into records for the groups it feeds (or a dead letter), batched into the tuple input.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use saams::Datum;
use saams::api::Tuple;
use saams_operators::monitor::MONITOR_GROUP;
use saams_operators::record::pool;
use saams_operators::{Plan, Rec, Val};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::InputHandle;

use crate::dataflow::RecInput;
use crate::metrics::{LocalCounts, Metrics, WorkerLabels};
use crate::sink::file::LineSink;
use crate::source::file::BadLine;
use crate::source::group_batch::GroupBatch;
use crate::source::route_cache::RouteCache;
use crate::stats::Stats;

use super::config::Shared;
use super::generated::{DATASET_KEY_FIELD, STREAM_ID_FIELD};
use super::group_fields::GroupFields;
use super::reading::{Pending, Reading, Source};

/// Tuples between two flushes of a worker's counts into the metrics registry.
const METRICS_EVERY: u64 = 1 << 16;

/// Turns parsed tuples into routed records (the reading side of the routing pacts).
pub(super) struct Router {
    plan: Rc<RefCell<Plan>>,
    /// The worker routing.
    me: usize,
    /// Newest event time routed (ms): the fences start after its window.
    pub(super) newest: i64,
    lateness_ms: i64,
    stats: Arc<Stats>,
    dead: Option<Arc<LineSink>>,
    recs: Vec<Rec>,
    /// Values of monitored streams of the tuple being routed.
    monitor_recs: Vec<Rec>,
    /// Records routed this round, sent grouped ([`GroupBatch`]).
    pub(super) batch: GroupBatch,
    pub(super) tuples: u64,
    reported: u64,
    /// The groups a (dataset, stream) pair feeds, kept per dataset for the current plan version.
    route_cache: RouteCache,
    /// Where each group's value is in a tuple, for the current plan version.
    group_fields: GroupFields,
    /// The window last routed to.
    last_window: LastWindow,
    pub(super) counts: LocalCounts,
    /// Per synopsis, the labels of its series (`None`: deleted).
    syn_labels: Vec<Option<WorkerLabels>>,
    metrics: Arc<Metrics>,
}

impl Router {
    pub(super) fn new(plan: &Rc<RefCell<Plan>>, me: usize, job: &Shared) -> Router {
        Router {
            plan: plan.clone(),
            me,
            lateness_ms: job.settings.lateness_ms,
            stats: job.stats.clone(),
            dead: job.dead.clone(),
            recs: Vec::new(),
            monitor_recs: Vec::new(),
            batch: GroupBatch::default(),
            tuples: 0,
            reported: 0,
            route_cache: RouteCache::default(),
            group_fields: GroupFields::default(),
            last_window: LastWindow::default(),
            counts: LocalCounts::new(&job.metrics, me, plan.borrow().routing.groups.len()),
            newest: 0,
            syn_labels: synopsis_labels(&plan.borrow()),
            metrics: job.metrics.clone(),
        }
    }

    /// The plan changed while the job runs: synopses constructed get their per-synopsis series,
    /// deleted ones lose theirs (values routed to a deleted synopsis' group no longer count for it).
    pub(super) fn relabel(&mut self) {
        let labels = synopsis_labels(&self.plan.borrow());
        for (old, new) in self.syn_labels.iter().zip(&labels) {
            if let (Some(old), None) = (old, new) {
                self.metrics.synopsis_updates.remove(old);
            }
        }
        self.syn_labels = labels;
    }

    /// Read `unit`'s next tuple into its `pending` (bad lines are dead-lettered on the way);
    /// false at the end of the unit.
    pub(super) fn fetch(&mut self, unit: &mut Reading, input: &mut RecInput) -> bool {
        loop {
            match &mut unit.source {
                Source::Lines(reader) => match reader.next_tuple_into(&mut unit.tuple) {
                    None => return false,
                    Some((line, Ok(()))) => {
                        unit.pending = Some(Pending::Tuple(line, unit.tuple.time_ms.unwrap_or(0)));
                        return true;
                    }
                    Some((line, Err(bad))) => self.route(unit, line, Err(bad), input),
                },
                Source::Kafka => return false,
                Source::Generated(g, _) => {
                    let mut values = [0.0; 6];
                    return match g.next_values(&mut values) {
                        None => false,
                        Some((index, time)) => {
                            unit.pending = Some(Pending::Values(index, time, values));
                            true
                        }
                    };
                }
            }
        }
    }

    fn reject(&self, unit: &Reading, line: u64, raw: &str, error: &str, late: bool) {
        reject_line((&*self.stats, self.dead.as_deref()), unit, line, raw, error, late);
    }

    /// Route the tuple `parsed` says is in `unit.tuple` (line `line`), or dead-letter the bad
    /// line it carries.
    pub(super) fn route(
        &mut self,
        unit: &mut Reading,
        line: u64,
        parsed: Result<(), BadLine>,
        input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>,
    ) {
        if let Err((raw, e)) = parsed {
            if self.tuples == 0 {
                self.stats.first.get_or_init(Instant::now);
            }
            return self.reject(unit, line, &raw, &e, false);
        }
        if let Some((time, window)) = self.records_of(unit, &unit.tuple, line) {
            self.accept(unit, (line, time), window, input);
        }
    }

    /// Route `t`, line (or sequence number) `line` of `unit`, kept by its input: the Kafka
    /// partitions' tuple, parsed in place line after line and lent here, not moved (see
    /// [`crate::kafka::KafkaInput::poll`]).
    pub(super) fn route_tuple(
        &mut self,
        unit: &mut Reading,
        t: &Tuple,
        line: u64,
        input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>,
    ) {
        if let Some((time, window)) = self.records_of(unit, t, line) {
            self.accept(unit, (line, time), window, input);
        }
    }

    /// The window of event time `time` (ms), cached for a run of equal windows ([`LastWindow`]).
    #[inline]
    pub(super) fn window_of(&mut self, time: i64) -> u64 {
        self.last_window.of(&self.plan.borrow(), time)
    }

    /// `t`'s records (and its monitored values), made into `self.recs`: its time and window, or
    /// `None` when it is not routed (counted before the checkpoint `unit` resumed from, or
    /// dead-lettered: before 1970, late, a field not numeric). `unit` is only read: the caller
    /// changes it after (`accept`), so `t` may be the unit's own tuple.
    #[inline]
    fn records_of(&mut self, unit: &Reading, t: &Tuple, line: u64) -> Option<(i64, u64)> {
        if self.tuples == 0 {
            self.stats.first.get_or_init(Instant::now);
        }
        let time = t.time_ms.unwrap_or(0);
        if time < unit.marks.skip_before {
            // Counted (or found late) before the checkpoint this unit resumed from.
            return None;
        }
        if let Err((msg, late)) = self.check_time(unit, time) {
            self.reject(unit, line, &t.to_json(), &msg, late);
            return None;
        }
        let plan = self.plan.borrow();
        let window = self.last_window.of(&plan, time);
        let seq = (unit.seq_unit << 40) | line;
        self.recs.clear();
        self.group_fields.sync(&plan);
        for &g in self.route_cache.groups(&plan, &t.dataset_key, &t.stream_id) {
            // Taken from the plan just now: every group it routes to is there.
            let Some(field) = self.group_fields.get(g) else { continue };
            let val = match field.value(t) {
                None => continue,
                Some(Datum::Num(x)) => Val::Num(x),
                // Text that reads as a number is one (vessel ids): `parse_f64` is `str::parse`'s
                // value without its general machinery (~2 % of an AIS ingest).
                Some(Datum::Str(s)) => match saams_datasets::parse_f64(saams_datasets::trim(s)) {
                    Some(x) if x.is_finite() => Val::Num(x),
                    _ if field.numeric => {
                        let msg = format!("field `{}` is not numeric: {s:?}", field.name);
                        let to = (&*self.stats, self.dead.as_deref());
                        reject_line(to, unit, line, &t.to_json(), &msg, false);
                        return None;
                    }
                    _ => Val::Str(s.into()),
                },
            };
            self.recs.push(Rec { group: g, time, seq, val });
        }
        monitor_values(&plan, t, (time, seq), &mut self.monitor_recs);
        Some((time, window))
    }

    /// Route records made elsewhere — a device's shipment ([`crate::edge::intake`]), at event
    /// time `time` (its window's start) — as one tuple of `unit`; returns its window.
    pub(super) fn route_recs(
        &mut self,
        unit: &mut Reading,
        (line, time): (u64, i64),
        recs: Vec<Rec>,
        input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>,
    ) -> u64 {
        let window = self.last_window.of(&self.plan.borrow(), time);
        // A device's site messages go to the monitored streams' path, as their values do.
        let (monitored, recs): (Vec<Rec>, Vec<Rec>) =
            recs.into_iter().partition(|r| saams_operators::monitor::monitored_index(r.group).is_some());
        self.monitor_recs.extend(monitored);
        self.recs.extend(recs);
        self.accept(unit, (line, time), window, input);
        window
    }

    fn check_time(&self, unit: &Reading, time: i64) -> Result<(), (String, bool)> {
        if time < 0 {
            return Err(("event time before 1970".into(), false));
        }
        if unit.max_time != i64::MIN && time < unit.max_time.saturating_sub(self.lateness_ms) {
            let msg = format!(
                "late: {} ms older than the newest tuple of its input (lateness bound {} ms)",
                unit.max_time - time,
                self.lateness_ms
            );
            return Err((msg, true));
        }
        Ok(())
    }

    fn accept(
        &mut self,
        unit: &mut Reading,
        (line, time): (u64, i64),
        window: u64,
        input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>,
    ) {
        if unit.marks.reached(time) {
            let at = unit.position_of(line);
            unit.marks.mark(time, at);
        }
        unit.max_time = unit.max_time.max(time);
        self.newest = self.newest.max(time);
        self.tuples += 1;
        // The metrics registry (labelled counters behind a lock, ~600 instructions per synopsis
        // touched) less often than the progress counters: ~1 % of the paper workload at every
        // 4096 tuples.
        if self.tuples.is_multiple_of(METRICS_EVERY) {
            self.flush_stats(window);
        } else if self.tuples.is_multiple_of(4096) {
            self.flush_progress(window);
        }
        for r in self.monitor_recs.drain(..) {
            input.send(r);
        }
        for r in self.recs.drain(..) {
            self.counts.record(&r);
            if self.batch.push(r) {
                send_staged(&mut self.batch, &self.plan, self.me, input);
            }
        }
    }

    /// Send the records routed since the last send (at the end of every read round: before the
    /// worker sends a fence or an ask, advances its epoch, or writes a checkpoint).
    pub(super) fn send_batch(&mut self, input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>) {
        send_staged(&mut self.batch, &self.plan, self.me, input);
    }

    /// Publish the tuples read and the newest window (progress line, metrics server).
    fn flush_progress(&mut self, window: u64) {
        self.stats.newest.fetch_max(window as i64, Ordering::Relaxed);
        self.publish_tuples();
    }

    /// Add the tuples routed since the last time to the process' count now (the autoscaler's
    /// pace measure: published only every 4096 tuples, a worker reading 500 a second looked
    /// 100 % short of `--rate` for 8 s at a time).
    pub(super) fn publish_tuples(&mut self) {
        self.stats.tuples.fetch_add(self.tuples - self.reported, Ordering::Relaxed);
        self.reported = self.tuples;
    }

    pub(super) fn flush_stats(&mut self, window: u64) {
        self.flush_progress(window);
        self.flush_counts();
    }

    /// Add this worker's counts to the metrics registry now: every `METRICS_EVERY` tuples, and
    /// when its input is quiet (so a live input's per-synopsis series show without waiting for
    /// that many tuples).
    pub(super) fn flush_counts(&mut self) {
        if self.counts.flushed(self.tuples) {
            return;
        }
        let plan = self.plan.borrow();
        let labels = &self.syn_labels;
        self.counts.flush(&self.metrics, self.tuples, |g| match plan.update {
            true => plan.routing.groups[g].synopses.iter().filter_map(|&s| labels.get(s as usize)?.as_ref()).collect(),
            false => Vec::new(),
        });
    }

    /// The generator's path: values of known fields, routes resolved once per stream.
    pub(super) fn route_values(
        &mut self,
        unit: &mut Reading,
        index: u64,
        time: i64,
        values: &[f64; 6],
        input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>,
    ) {
        if self.tuples == 0 {
            self.stats.first.get_or_init(Instant::now);
        }
        if time < unit.marks.skip_before {
            return;
        }
        if let Err((msg, late)) = self.check_time(unit, time) {
            return self.reject(unit, index, &format!("time {time}"), &msg, late);
        }
        let window = self.last_window.of(&self.plan.borrow(), time);
        let seq = (unit.unit << 40) | index;
        self.recs.clear();
        if let Source::Generated(gen_stream, routes) = &unit.source {
            for &(g, k) in routes {
                let val = match k {
                    STREAM_ID_FIELD => Val::Str(gen_stream.stream_id.as_str().into()),
                    DATASET_KEY_FIELD => Val::Str(gen_stream.dataset_key.as_str().into()),
                    k => Val::Num(values[k]),
                };
                self.recs.push(Rec { group: g, time, seq, val });
            }
            monitor_generated(&self.plan.borrow(), gen_stream, values, (time, seq), &mut self.monitor_recs);
        }
        self.accept(unit, (index, time), window, input);
    }
}

/// Send the records `batch` staged, read by worker `me`: a group's records whose values all go
/// to one worker in a container of that worker's ([`GroupBatch::send_by_target`]).
fn send_staged(
    batch: &mut GroupBatch,
    plan: &RefCell<Plan>,
    me: usize,
    input: &mut InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>,
) {
    let plan = plan.borrow();
    // Timely keeps the container sent: the next one is a vector this thread's update operator
    // or exchange emptied ([`saams_operators::record::pool`]), not a fresh allocation.
    let send = |c: &mut Vec<Rec>| {
        input.send_batch(c);
        if c.capacity() == 0 {
            *c = pool::take(0);
        }
    };
    batch.send_by_target(|r| plan.routing.group_target(r.group, me), send);
}

/// The values of monitored streams of a generated tuple ([`monitor_values`]'s generator path):
/// the generator's fields by name; `streamID`/`dataSetKey` are no numbers to track.
fn monitor_generated(
    plan: &Plan,
    g: &crate::source::generated::Generated,
    values: &[f64; 6],
    (time, seq): (i64, u64),
    recs: &mut Vec<Rec>,
) {
    for (i, field) in plan.monitor.routes(&g.dataset_key, &g.stream_id, time) {
        if let Some(k) = g.fields.iter().position(|f| *f == field) {
            recs.push(Rec { group: MONITOR_GROUP | i, time, seq, val: Val::Num(values[k]) });
        }
    }
}

/// The values of monitored streams ([`saams_operators::monitor`]): tagged with
/// [`MONITOR_GROUP`], sent beside the synopses' values; a value the sites cannot track is
/// refused and counted there.
fn monitor_values(plan: &Plan, t: &Tuple, (time, seq): (i64, u64), recs: &mut Vec<Rec>) {
    for (i, field) in plan.monitor.routes(&t.dataset_key, &t.stream_id, time) {
        let val = match t.field(field) {
            None => continue,
            Some(Datum::Num(x)) => Val::Num(x),
            Some(Datum::Str(s)) => Val::Str(s.into()),
        };
        recs.push(Rec { group: MONITOR_GROUP | i, time, seq, val });
    }
}

/// Count a rejected input line (malformed, late) and write it to the dead letters, if kept.
fn reject_line(
    (stats, dead): (&Stats, Option<&LineSink>),
    unit: &Reading,
    line: u64,
    raw: &str,
    error: &str,
    late: bool,
) {
    stats.dead_letters.fetch_add(1, Ordering::Relaxed);
    if late {
        stats.late.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(d) = dead {
        let j = serde_json::json!({"source": format!("{}:{line}", unit.name()), "error": error, "input": raw});
        d.write_all(std::iter::once(&j.to_string()));
    }
}

/// The window a router last routed to, the times in it and the plan's window length then:
/// tuples come in runs of one window, and [`Plan::window_of`]'s 64-bit division for every tuple
/// drew ~1.4 % of a `--no-synopses` JSON-lines ingest's `perf` samples (6 % of the router's).
#[derive(Default)]
struct LastWindow {
    window: u64,
    span: std::ops::Range<i64>,
    window_ms: i64,
}

impl LastWindow {
    /// [`Plan::window_of`] `time`, dividing only when it leaves the last window.
    #[inline]
    fn of(&mut self, plan: &Plan, time: i64) -> u64 {
        if !self.span.contains(&time) || self.window_ms != plan.routing.window_ms {
            (self.window, self.span) = plan.window_span(time);
            self.window_ms = plan.routing.window_ms;
        }
        self.window
    }
}

/// The labels of each synopsis' series (`synopsis` = its index in the plan, its kind and
/// stream); `None` for a deleted one.
fn synopsis_labels(plan: &Plan) -> Vec<Option<WorkerLabels>> {
    let synopses = plan.routing.synopses.iter().enumerate();
    synopses
        .map(|(i, s)| {
            (!s.is_deleted()).then(|| {
                vec![
                    ("synopsis".to_string(), i.to_string()),
                    ("kind".to_string(), s.kind.to_string()),
                    ("stream".to_string(), format!("{}/{}", s.dataset, s.stream)),
                ]
            })
        })
        .collect()
}
