//! The loop every worker runs: receive the request script, build the dataflow, then read its
//! units (and Kafka partitions) round by round, applying live requests at their fences and
//! writing checkpoints, until the input ends and every live request is answered.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use saams_operators::Plan;
use saams_operators::ask::{fence_marker, to_every_worker};
use saams_operators::monitor::monitor_fence_marker;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

use crate::checkpoint::resume::Resume;
use crate::control::fence::Fences;
use crate::dataflow::RecInput;
use crate::edge::control::{Applied, Control, snapshots_of};
use crate::kafka::KafkaInput;

use super::checkpoints::{want_boundaries, write_checkpoints};
use super::config::{Settings, Shared};
use super::epoch_pace::{EPOCH_STEP_MS, EpochPace};
use super::generated::generated_routes;
use super::handover::Handover;
use super::read_units::read_units;
use super::reading::{Left, Reading, Source, open_readers, resume_readers};
use super::requests::{build_plan, take_applied};
use super::routing::Router;

/// The most epoch steps a paced worker's reach ([`EpochPace::reach`]) counts for: bounds the
/// event time read ahead of the frontier for sparse inputs (and the first advance, from 0 to
/// the input's first time).
const REACH_STEPS: u64 = 256;

/// How long a worker whose Kafka partitions had nothing parks before it looks again. Records
/// wake it at once (the fetch queue unparks it), and so does its dataflow (timely unparks a
/// worker that has messages); what waits up to this long is what nothing wakes: HTTP requests,
/// the stop flag, `--exit-when-idle`, partitions going idle, commits. Why not 1 ms, as for files:
/// a quiet worker woke 330 times a second (a 1 ms park and a 2 ms wait in the consumer), and
/// the two workers' 2 s of `--exit-when-idle` cost 0.2 CPU-seconds, a third of what reading a
/// million tuples from a file costs (docs/figures.md, "Kafka record formats and consumer
/// settings").
const QUIET_KAFKA_PARK: Duration = Duration::from_millis(10);

/// The input's epoch once a worker's input has ended while the job still takes requests: far
/// past any event time, so it holds nobody's windows back, yet a time asks can still be sent at.
const DONE_EPOCH: u64 = super::handover::DONE;

/// The longest a worker that reads nothing parks at a time (`super::handover`): it follows the
/// readers' epochs, and their progress messages wake it sooner, as does a unit given to it.
const FOLLOW_PARK: Duration = Duration::from_millis(20);

/// One worker: receive the request script, build the dataflows, read its units (and Kafka
/// partitions) until the input ends and every live request is answered, then finish.
pub(super) fn work(worker: &mut Worker, job: &Shared) {
    let mut state = WorkerState::start(worker, job);
    loop {
        state.apply_requests();
        state.move_units();
        state.tell_devices();
        state.hand_off();
        state.checkpoint();
        state.report_load();
        if let Some(r) = state.device_reports.as_mut() {
            r.send(false);
        }
        let active = state.active();
        if !active && state.reading && state.follow(worker) {
            continue;
        }
        if !active && state.reading && !state.fences.agreeing() {
            // (Not while a fence is being agreed: `Fences::agreeing`.)
            state.stop_reading();
        }
        if !active {
            if state.fences.finished(&state.plan.borrow()) {
                break;
            }
            worker.step_or_park(Some(Duration::from_millis(1)));
            continue;
        }
        state.read_round(worker);
    }
    state.finish(worker);
}

/// What a worker holds while it runs: the plan and its fences, the dataflow's input and probe,
/// its readers and router, its Kafka partitions, and how far its input has advanced.
struct WorkerState<'a> {
    job: &'a Shared,
    me: usize,
    peers: usize,
    plan: Rc<RefCell<Plan>>,
    fences: Fences,
    input: RecInput,
    probe: ProbeHandle<u64>,
    /// The newest epoch heard from the other workers' Kafka partitions (the gossip).
    heard: Rc<Cell<u64>>,
    gossip: Option<InputHandle<u64, CapacityContainerBuilder<Vec<u64>>>>,
    /// The newest own epoch gossiped.
    told: u64,
    /// `--autoscale`: this worker's load reports to worker 0, and when it sent the last.
    load: Option<(crate::dataflow::LoadInput, Instant)>,
    /// A job merging devices: this process' device table to the others, theirs to it.
    device_reports: Option<crate::edge::reports::DeviceReports>,
    readers: Vec<Reading>,
    /// Units that ended, or went to another worker, with where they stood at the boundaries
    /// they reached.
    ended: Vec<Left>,
    /// A job of one process: its units follow the active workers (`super::handover`).
    handover: Option<Handover>,
    /// The newest checkpoint boundary the readers were told to mark.
    boundaries_known: u64,
    router: Router,
    kafka: Option<KafkaInput>,
    /// The `Reading` the Kafka partitions' records are routed through.
    kafka_unit: Reading,
    /// The reader of device shipments, when the Kafka input is a partials topic.
    intake: Option<crate::edge::intake::Intake>,
    /// The tuple input's epoch.
    epoch: u64,
    /// When this worker next advances its epoch while it reads (`super::epoch_pace`).
    pace: EpochPace,
    /// False once this worker's input has ended.
    reading: bool,
    /// A job taking over: whether this worker has seen it take over.
    took_over: bool,
    /// A job merging devices: the live requests written to the control topic (worker 0), and
    /// the newest window this worker said it routed.
    told_devices: (usize, Option<u64>),
    /// When its Kafka input ended while it reads on for devices' answers (`Devices::reads_on`).
    read_on_since: Cell<Option<Instant>>,
}

impl<'a> WorkerState<'a> {
    /// Receive the request script and build the plan, the fences, the dataflow and the readers.
    fn start(worker: &mut Worker, job: &'a Shared) -> WorkerState<'a> {
        let (me, peers) = (worker.index(), worker.peers());
        let (plan, fences, resume) = plan_and_fences(worker, job);

        // 2. The dataflow.
        let (input, probe) =
            crate::dataflow::build(worker, &plan, job.sink.clone(), (job.hub.clone(), job.devices.clone()));

        // 2b. Epoch gossip for Kafka input: every worker's own epoch (while it has active
        //     partitions) reaches every worker of every process, so a process whose partitions are
        //     all idle follows the others instead of holding their windows open.
        let heard = Rc::new(Cell::new(0u64));
        let gossip = job.kafka_job.is_some().then(|| crate::dataflow::gossip(worker, heard.clone()));
        let load =
            job.settings.autoscale.then(|| (crate::dataflow::load_reports(worker, job.stats.clone()), Instant::now()));
        let shape = (me, job.settings.workers_per_process, peers / job.settings.workers_per_process.max(1));
        let device_reports =
            job.devices.clone().map(|d| crate::edge::reports::DeviceReports::build(worker, (d, &plan), shape));

        // 3. Read this worker's units round-robin, a batch at a time; the input's epoch is the
        //    oldest event time (ms) any unit can still produce (its newest time minus the
        //    lateness): the watermark that releases values to their synopses inside a window.
        let (dead, stats) = (job.dead.as_deref(), &*job.stats);
        // With units following the active workers, the plan's active workers read them.
        let handover = job.handover(worker, &plan.borrow());
        let readers_of = if handover.is_some() { plan.borrow().routing.active_workers() } else { peers };
        let mut readers =
            open_readers(&plan.borrow(), job.generator.as_ref(), &job.units, (me, readers_of), dead, stats);
        let mut ended = Vec::new();
        if let Some(resume) = &resume {
            resume_readers(&mut readers, resume, &job.units, &mut ended, (dead, stats));
        }
        let mut router = Router::new(&plan, me, job);
        if let Some(resume) = &resume {
            // Fences (live requests, checkpoints) fall at or after the boundary resumed from: a
            // checkpoint before it would name the resumed positions with an earlier boundary, and a
            // restart from it would count the values between the two boundaries twice.
            router.newest = router.newest.max((resume.boundary_ms.min(i64::MAX as u64) as i64).saturating_sub(1));
        }
        let checkpointed = job.checkpoints.is_some().then_some(resume.as_deref());
        let kafka = job
            .kafka_job
            .as_ref()
            .and_then(|k| k.worker_input((me, peers), (job.dead.clone(), &job.sink), checkpointed));
        let kafka_unit = kafka_reading(resume.as_deref());
        WorkerState {
            job,
            me,
            peers,
            plan,
            fences,
            input,
            probe,
            heard,
            gossip,
            told: 0,
            load,
            device_reports,
            readers,
            ended,
            handover,
            boundaries_known: 0,
            router,
            intake: job.devices.clone().map(crate::edge::intake::Intake::new),
            kafka,
            kafka_unit,
            epoch: 0,
            pace: EpochPace::new(),
            reading: true,
            took_over: false,
            told_devices: (0, None),
            read_on_since: Cell::new(None),
        }
        .started()
    }

    /// Worker 0 of a job merging devices writes its start to the control topic: the request
    /// script and the live requests applied before (a resumed job's); the devices build their
    /// plans from them.
    fn started(mut self) -> Self {
        if let (0, Some(devices)) = (self.me, self.job.devices.as_deref()) {
            let log = self.fences.request_log();
            let log = log
                .iter()
                .enumerate()
                .map(|(at, r)| Applied::of(at as u64, (r.fence_ms, &r.text), &*self.job.store))
                .collect();
            let script = self.job.requests.clone().unwrap_or_default();
            let snapshots = snapshots_of(&script, &*self.job.store);
            devices.publish(&Control::Start { script, log, snapshots });
            self.told_devices.0 = self.fences.request_log().len();
        }
        self
    }

    /// A job merging devices: worker 0 writes the live requests agreed since it last did to the
    /// control topic, and a worker that has routed a newer window says so (with the live
    /// requests it has applied), which devices wait for before they read that window
    /// ([`crate::edge::control`]).
    fn tell_devices(&mut self) {
        let Some(devices) = self.job.devices.as_deref() else { return };
        devices.give_up_left(&self.plan.borrow()); // asks devices left unanswered: an error each
        let log = self.fences.request_log();
        if self.me == 0 {
            for (at, r) in log.iter().enumerate().skip(self.told_devices.0) {
                devices.publish(&Control::Request(Applied::of(at as u64, (r.fence_ms, &r.text), &*self.job.store)));
            }
        }
        self.told_devices.0 = log.len();
        if self.router.newest < 0 {
            return;
        }
        let window = self.plan.borrow().window_of(self.router.newest);
        if self.told_devices.1.is_none_or(|w| window > w) {
            self.told_devices.1 = Some(window);
            devices.publish(&Control::Routed { window, applied: log.len() as u64 });
        }
    }

    /// Live requests: agree fences, apply them, answer for what this worker took.
    fn apply_requests(&mut self) {
        let newest = self.plan.borrow().window_of(self.router.newest);
        for (request_epoch, fence) in self.fences.poll(&self.plan, newest) {
            if self.reading {
                // Before any value routed with the new plan: see `control::fence`.
                for copy in to_every_worker(fence_marker(request_epoch, fence, self.epoch as i64), self.peers) {
                    // And to the monitored streams' sites (`saams_operators::monitor`).
                    self.input.send(monitor_fence_marker(copy.clone()));
                    self.input.send(copy);
                }
            }
            self.plan.borrow_mut().apply_through(request_epoch, fence);
        }
        if take_applied(&self.plan, self.me, &self.job.sink, &self.job.hub, &mut self.input, self.epoch) {
            for r in &mut self.readers {
                if let Source::Generated(g, routes) = &mut r.source {
                    *routes = generated_routes(&self.plan.borrow(), g);
                }
            }
            self.router.counts.grow(self.plan.borrow().routing.groups.len());
            self.router.relabel();
        }
    }

    /// A hand-off (`crate::handoff`). The job handing off: worker 0 asks for its last
    /// checkpoint, every process ends once it has written it. The job taking over: once it
    /// holds the directory, its fences fall at or after the boundary it took over at (its
    /// checkpoints' cuts then follow every answer written), worker 0 asks for checkpoints, and
    /// the intake worker logs the requests it takes.
    fn hand_off(&mut self) {
        let (Some(h), Some(c)) = (self.job.handoff.as_deref(), self.job.checkpoints.as_deref()) else { return };
        if self.me == 0 && h.asked() {
            self.fences.hand_off();
        }
        if let Some(id) = self.fences.final_checkpoint() {
            c.end_with(id);
        }
        if c.ended() && !self.job.stop.raised() {
            eprintln!("saams: handed off: the last checkpoint is written, this job stops");
            self.job.stop.raise();
        }
        if self.took_over {
            return;
        }
        let Some((boundary, next_id)) = h.taken_over() else { return };
        self.took_over = true;
        self.router.newest = self.router.newest.max((boundary.min(i64::MAX as u64) as i64).saturating_sub(1));
        if self.me == 0 {
            self.fences.resume_checkpoints(next_id);
        }
        if self.me.is_multiple_of(self.job.settings.workers_per_process.max(1))
            && let Some(log) = h.take_log()
        {
            self.fences.set_request_log(log);
        }
    }

    /// Checkpoints: the readers mark the boundaries agreed since the last turn, and this
    /// worker writes its part of those its dataflow has passed.
    fn checkpoint(&mut self) {
        want_boundaries(&self.plan.borrow(), (&mut self.readers, self.kafka.as_mut()), &mut self.boundaries_known);
        if let Some(c) = &self.job.checkpoints {
            let at = (&mut self.readers[..], &mut self.ended, self.kafka.as_mut(), self.router.tuples);
            write_checkpoints(&self.plan, &self.probe, at, &mut self.fences, (c, self.me));
        }
    }

    /// Whether this worker reads on: it has units or running Kafka partitions, and the job was
    /// not told to stop.
    fn active(&self) -> bool {
        // A job merging devices reads on while they owe answers (`crate::edge::devices::owed`).
        let kafka = |k: &KafkaInput| match self.job.devices.as_deref() {
            Some(d) => {
                self.reading && d.reads_on(&self.plan.borrow(), (k.running(), k.may_read_on()), &self.read_on_since)
            }
            None => k.running(),
        };
        (!self.readers.is_empty() || self.kafka.as_ref().is_some_and(kafka)) && !self.job.stop.raised()
    }

    /// Units follow the active workers (`super::handover`): after a rescale, learn where this
    /// worker's units go; take those given to it.
    fn move_units(&mut self) {
        let Some(h) = self.handover.as_mut() else { return };
        let plan = self.plan.borrow();
        let inputs = (self.job.generator.as_ref(), &self.job.units[..]);
        let before = self.readers.len();
        if h.take(&plan, &mut self.readers) {
            h.assign(&plan, inputs, &mut self.readers[before..]);
        }
        if h.rescaled(&plan) {
            h.assign(&plan, inputs, &mut self.readers);
        }
    }

    /// A worker of a job whose units follow the active workers that reads nothing: follow the
    /// readers' epochs (holding nobody's windows back) and park until a unit is given to it or
    /// the dataflow has work. False when the whole input has ended or the job stops.
    fn follow(&mut self, worker: &mut Worker) -> bool {
        let Some(h) = self.handover.as_ref() else { return false };
        if self.job.stop.raised() {
            return false;
        }
        self.router.flush_stats(0);
        let board = h.board();
        let bound = board.follow();
        if bound >= DONE_EPOCH {
            return false;
        }
        let step = self.job.settings.window_ms.clamp(1, EPOCH_STEP_MS) as u64;
        let epoch = board.advance(self.me, bound - bound % step, false);
        if epoch > self.epoch {
            self.advance_to(epoch);
        }
        self.park(worker, Some(FOLLOW_PARK));
        true
    }

    /// This worker's input ended: stop holding the others' windows back, stop taking
    /// requests; keep the input for the asks and fences still to come.
    fn stop_reading(&mut self) {
        if let Some(h) = self.handover.as_mut() {
            // Units given to it as the job stops: their positions are in its checkpoints.
            h.take(&self.plan.borrow(), &mut self.readers);
            h.stop_reading();
        }
        self.reading = false;
        self.fences.stop_forwarding();
        self.epoch = DONE_EPOCH;
        self.input.advance_to(self.epoch);
    }

    /// One round: read the units and the Kafka partitions (within `--rate`'s allowance, and
    /// not past a fence being agreed), advance the epoch, step the dataflow, pace, and hold
    /// back while the dataflow lags.
    fn read_round(&mut self, worker: &mut Worker) {
        let window_ms = self.job.settings.window_ms;
        let pacer = &self.job.pacer;
        let hold_end = self.fences.hold().map(|h| (h as i64).saturating_add(window_ms));
        let (allowance, routed_before) = (pacer.take(Instant::now()), self.router.tuples);
        // Nothing past the fence being agreed, nor past the span this worker may run ahead.
        let span_end = self.span_end();
        let limit = [hold_end, span_end].into_iter().flatten().min();
        let ended = &mut self.ended;
        read_units(&mut self.readers, &mut self.router, &mut self.input, (allowance, limit), (window_ms, ended));
        if let Some(h) = self.handover.as_mut() {
            let units = (&mut self.readers, &mut self.ended, self.boundaries_known);
            h.give(units, self.job.settings.lateness_ms, self.job.checkpoints.is_some());
        }
        let kafka_low = self.read_kafka(allowance, routed_before, hold_end);
        let routed = self.router.tuples - routed_before;
        // At once when idle (no window waits for a worker with nothing to read) or while a
        // fence is agreed; else at the pace of `super::epoch_pace`.
        let held = routed == 0 && span_end.is_some();
        self.advance_epoch(kafka_low, (routed == 0 || hold_end.is_some(), held));
        // --rate: what was not read goes back to the process' bucket before this worker parks.
        // Parked holding it (10 ms per quiet round), a worker whose partitions had nothing
        // took the whole allowance of a slow rate, round after round, and the worker with
        // records left read none until `--exit-when-idle` ended the job with them unread.
        pacer.settle(allowance, routed);
        if routed == 0 && hold_end.is_none() {
            // Nothing to read right now (a quiet live input): wait for it or for the others.
            self.router.flush_counts();
            self.park(worker, Some(self.quiet_park()));
        } else {
            worker.step();
        }
        // --rate: park until the next batch may be read.
        if let Some(wait) = pacer.wait(Instant::now()) {
            self.park(worker, Some(wait));
        }
        // Keep a bounded number of windows in flight (each holds its synopses' state until it
        // closes), and a bounded span of event time read but not processed (values queued in
        // the exchanges): park (instead of spinning) while other workers catch up, still taking
        // part in the fences (they may wait for this worker's position). A bound in windows
        // alone let a one-hour window queue 64 hours of values (peak RSS 1.55× that of 60 s).
        // (Plus what a paced worker reads between two advances: `super::epoch_pace`.)
        let lag = self.pace.lag(window_ms);
        let behind = self.epoch.saturating_sub(lag);
        if self.probe.less_than(&behind) {
            self.park(worker, Some(Duration::from_millis(1)));
            return;
        }
        self.commit_kafka();
    }

    /// `--autoscale`: publish the tuples routed (every round: the autoscaler's pace measure),
    /// and every [`crate::stats::LOAD_REPORT_MS`] send worker 0 this worker's time parked, the
    /// bytes its files have left and its Kafka partitions' lag.
    fn report_load(&mut self) {
        let Some((handle, last)) = self.load.as_mut() else { return };
        // The pace measure's count, current to the round (one atomic add).
        self.router.publish_tuples();
        if last.elapsed() < Duration::from_millis(crate::stats::LOAD_REPORT_MS) {
            return;
        }
        *last = Instant::now();
        let local = self.me % self.job.settings.workers_per_process.max(1);
        let parked = self.job.stats.parked.read().get(local).copied().unwrap_or(0);
        let files = self.readers.iter().filter_map(|r| match &r.source {
            Source::Lines(u) => u.bytes_left(),
            _ => None,
        });
        let file_bytes = files.reduce(u64::saturating_add).unwrap_or(u64::MAX);
        let kafka = self.kafka.as_ref().and_then(KafkaInput::lag).unwrap_or(u64::MAX);
        handle.send((self.me as u64, parked, file_bytes, kafka));
        // Advanced, not only flushed: the exchange to worker 0 holds its buffer until the time
        // moves on (flushed alone, no report ever arrived).
        let next = handle.time() + 1;
        handle.advance_to(next);
    }

    /// How long a round that read nothing parks: [`QUIET_KAFKA_PARK`] when the worker reads
    /// only Kafka partitions and they had nothing (their records wake it), else 1 ms.
    fn quiet_park(&self) -> Duration {
        match &self.kafka {
            Some(k) if self.readers.is_empty() && k.quiet() => QUIET_KAFKA_PARK,
            _ => Duration::from_millis(1),
        }
    }

    /// Park (stepping first) for at most `wait`, counting the time as parked for the
    /// autoscaler's busy fractions.
    fn park(&self, worker: &mut Worker, wait: Option<Duration>) {
        let start = Instant::now();
        worker.step_or_park(wait);
        let local = self.me % self.job.settings.workers_per_process.max(1);
        self.job.stats.parked.add(local, start.elapsed().as_nanos().min(u64::MAX as u128) as u64);
    }

    /// Read the Kafka partitions with what the allowance leaves (nothing while a fence is
    /// agreed), follow the other workers' epochs and gossip this worker's own: the oldest
    /// window the partitions can still produce.
    fn read_kafka(&mut self, allowance: u64, routed_before: u64, hold_end: Option<i64>) -> Option<u64> {
        let (plan, router, input, kafka_unit) = (&self.plan, &mut self.router, &mut self.input, &mut self.kafka_unit);
        let (stats, heard, told, gossip) = (&*self.job.stats, &self.heard, &mut self.told, &mut self.gossip);
        let intake = &mut self.intake;
        self.kafka.as_mut().map(|k| {
            if let Some(intake) = intake.as_mut() {
                if hold_end.is_none() && allowance > router.tuples - routed_before {
                    k.poll_shipments(
                        allowance - (router.tuples - routed_before),
                        stats,
                        |partition, payload, late_below| {
                            let admitted = intake.admit(&plan.borrow(), (partition, payload), late_below)?;
                            Ok(admitted.map(|(time, recs, clock)| {
                                if recs.is_empty() {
                                    // A device's position (`edge::control`): it waits until this
                                    // worker has reached its window.
                                    router.newest = router.newest.max(time);
                                    return (time, plan.borrow().window_of(time), clock);
                                }
                                (time, router.route_recs(kafka_unit, (0, time), recs, input), clock)
                            }))
                        },
                    );
                    router.send_batch(input);
                    // Devices' answers to asks (`edge::asks`), to their synopses' homes.
                    intake.take_answers(*input.time());
                }
                for (partition, vacant) in intake.vacancies() {
                    k.set_vacant(partition, vacant);
                }
            } else if hold_end.is_none() && allowance > router.tuples - routed_before {
                k.poll(allowance - (router.tuples - routed_before), stats, |seq, t| {
                    kafka_unit.max_time = i64::MIN; // lateness is judged per partition by the source
                    let window = router.window_of(t.time_ms.unwrap_or(0));
                    router.route_tuple(kafka_unit, t, seq, input);
                    window
                });
                router.send_batch(input);
            }
            k.follow(heard.get());
            let (low, own) = k.low(|t| plan.borrow().window_of(t));
            if let Some(own) = own
                && own > *told
                && let Some(g) = gossip.as_mut()
            {
                *told = own;
                g.send(own);
                g.flush(); // an input hands data on only when flushed or advanced
            }
            low
        })
    }

    /// The oldest event time (ms) this worker's units can still produce.
    fn units_low(&self) -> Option<u64> {
        let lateness_ms = self.job.settings.lateness_ms;
        // A unit that has routed nothing yet but holds its first tuple can produce nothing
        // older than that tuple's time minus the lateness either: a byte range of a file that
        // waits for the others to reach its time does not hold every window open (it held the
        // frontier at 0, and every value in the reorder buffers, until each range had started).
        self.readers.iter().map(|r| r.low(lateness_ms)).min()
    }

    /// How far in event time this worker may read now (`None`: no bound): a worker whose units
    /// are all ahead of the job's frontier (the oldest time any worker can still produce, and
    /// the values in flight) reads only up to [`EpochPace::span`] past it; the worker whose
    /// units hold the frontier reads on. Why: checkpoint boundaries and live requests' fences
    /// are agreed after the newest value any worker routed, and are complete only when the
    /// frontier passes them: a byte range far ahead in event time put them near its end (2
    /// checkpoints in a 5 s run instead of 20). A held unit keeps its one pending value, so
    /// nothing is buffered. (Kafka partitions follow the other workers by the epoch gossip,
    /// not by this bound.)
    fn span_end(&self) -> Option<i64> {
        if self.kafka.is_some() {
            return None;
        }
        let Settings { window_ms, lateness_ms, .. } = self.job.settings;
        let step = window_ms.clamp(1, EPOCH_STEP_MS) as u64;
        let frontier = self.probe.with_frontier(|f| f.first().copied())?;
        let own = self.units_low()?;
        if own - own % step <= frontier {
            return None;
        }
        // The frontier may stay behind the reading by a paced worker's reach: reading that far
        // more keeps the workers ahead from waiting on the pace (`super::epoch_pace`).
        let span = self.pace.span(lateness_ms.max(0) as u64, step, self.job.pacer.per_second().is_some());
        Some(frontier.saturating_add(span).min(i64::MAX as u64) as i64)
    }

    /// Advance the input's epoch to the oldest event time any of this worker's inputs can still
    /// produce (`kafka_low`: its partitions'), in steps, when it is due (`urgent`, or at the
    /// pace of `super::epoch_pace`); `held`: it read nothing, being a span ahead of the frontier.
    fn advance_epoch(&mut self, kafka_low: Option<u64>, (urgent, held): (bool, bool)) {
        if !self.pace.due(self.router.tuples, urgent) {
            return;
        }
        let window_ms = self.job.settings.window_ms;
        let low = self.units_low().into_iter().chain(kafka_low).min();
        // In steps of EPOCH_STEP_MS (or the window): every advance is progress traffic
        // between all workers and processes.
        let step = window_ms.clamp(1, EPOCH_STEP_MS) as u64;
        // Not past the units on their way to this worker (`super::handover`).
        let low = low.map(|l| l - l % step);
        let low = match self.handover.as_ref() {
            Some(h) => low.map(|l| h.board().advance(self.me, l, true)),
            None => low,
        };
        if let Some(low) = low
            && low > self.epoch
        {
            self.pace.advanced(self.router.tuples, low - self.epoch, (REACH_STEPS * step, held));
            self.advance_to(low);
        }
    }

    /// Advance the input's epoch to `epoch` (later), and tell the process' progress and rescales.
    fn advance_to(&mut self, epoch: u64) {
        self.epoch = epoch;
        self.input.advance_to(self.epoch);
        self.job.stats.epoch.store(self.plan.borrow().window_of(self.epoch as i64) as i64, Ordering::Relaxed);
        // A rescale has moved once the job's frontier (not this worker's input alone) is in its fence's window.
        if let Some(done) = self.probe.with_frontier(|f| f.first().copied()) {
            let window = self.plan.borrow().window_of(done.min(i64::MAX as u64) as i64);
            self.job.hub.rescale_board().set_open_window(window as i64);
        }
    }

    /// Commit the Kafka partitions' offsets of the windows the dataflow is done with.
    fn commit_kafka(&mut self) {
        if self.job.handoff.as_ref().is_some_and(|h| h.taking()) {
            // Catching up to take over: the group's offsets are the running job's to commit
            // (this job has written none of those windows' answers yet).
            return;
        }
        if let Some(k) = self.kafka.as_mut() {
            // Timestamps are event-time ms and a window's answers travel at its last ms: the
            // windows before the frontier's window are done.
            let done = self.probe.with_frontier(|f| f.first().copied());
            k.maybe_commit(done.map(|f| if f == u64::MAX { f } else { self.plan.borrow().window_of(f as i64) }));
        }
    }

    /// The input has ended and every live request is answered: publish the last counts, close
    /// the inputs, and step until the dataflow is done.
    fn finish(mut self, worker: &mut Worker) {
        self.router.flush_stats(0);
        debug_assert!(self.router.batch.is_empty(), "every read round sends what it routed");
        drop(self.input);
        drop(self.gossip);
        drop(self.load);
        self.device_reports.iter_mut().for_each(|r| r.send(true));
        while !self.probe.done() {
            worker.step_or_park(Some(Duration::from_millis(1)));
            // Devices' answers met by asks the draining dataflow made (`edge::relay`).
            self.device_reports.iter_mut().for_each(|r| r.hand_on());
        }
        // Every ask its device has not answered by now gets an error line (`edge::devices::owed`).
        self.job.devices.iter().for_each(|d| d.give_up_all(&self.plan.borrow()));
        self.device_reports.iter_mut().for_each(|r| r.hand_on());
        if let Some(k) = self.kafka {
            k.finish();
        }
    }
}

/// The start's first step: the request script, broadcast from worker 0 to every worker, in
/// order; the plan built from it, the fences that apply live requests and schedule
/// checkpoints, and the checkpoint the job resumes from.
fn plan_and_fences(worker: &mut Worker, job: &Shared) -> (Rc<RefCell<Plan>>, Fences, Option<Arc<Resume>>) {
    let Settings { window_ms, workers_per_process, .. } = job.settings;
    let (me, peers) = (worker.index(), worker.peers());
    let text = crate::dataflow::receive_script(worker, job.requests.as_ref());
    let plan = build_plan(&text, (me, peers), job);
    // The process' first worker takes its live requests (HTTP, and later the request topic).
    let intake_hub = me.is_multiple_of(workers_per_process.max(1)).then(|| job.hub.clone());
    if let Some(hub) = &intake_hub {
        // The script's synopses are live from the start (GET /synopses, and what HTTP checks
        // queries against).
        hub.set_synopses(plan.borrow().live_synopses());
        let routing = plan.borrow().routing_version();
        hub.rescale_board().resumed(routing.active_workers(), routing.rescales().len());
    }
    let intake = intake_hub.is_some();
    let mut fences = Fences::build(worker, window_ms as u64, intake_hub);
    let resume = job.recovery.as_ref().and_then(|(r, ..)| r.clone());
    if let Some((_, every, first_id, live)) = &job.recovery {
        fences.checkpoint_every(*every, *first_id, live.requests.clone(), resume.is_some());
        // The intake worker syncs the requests it takes to its process' request log.
        fences.log_requests(intake.then(|| live.take_log()).flatten(), live.next_at);
    }
    if job.handoff.as_ref().is_some_and(|h| h.taking()) {
        // The directory is the running job's until it hands off.
        fences.pause_checkpoints();
    }
    (plan, fences, resume)
}

/// The `Reading` the records of a worker's Kafka partitions are routed through; a resumed job's
/// skips the values before the checkpoint's boundary.
fn kafka_reading(resume: Option<&Resume>) -> Reading {
    let mut kafka_unit = Reading::new(0, Source::Kafka);
    if let Some(resume) = resume {
        // Values before the checkpoint's boundary were counted before it.
        kafka_unit.marks.skip_before = resume.boundary_ms.min(i64::MAX as u64) as i64;
    }
    kafka_unit
}
