//! Fences: how requests that arrive while the job runs take effect at a window every worker
//! agrees on, without pausing the job.
//!
//! Three small dataflows beside the tuple dataflow:
//!
//! 1. **forward**: a process' intake worker (its first) hands the bodies its [`Hub`] took (HTTP,
//!    stdin, the request topic) to worker 0, the sequencer. Any process can take requests.
//! 2. **requests**: worker 0 broadcasts them, in the order it got them, at a *request epoch*
//!    (a counter, one per batch), and advances; the input's frontier passing an epoch tells every
//!    worker it has all of that epoch's requests, in the same order.
//! 3. **positions**: each worker answers every epoch with the newest window it has routed a value
//!    of, and from then on holds values of later windows back (readers keep them pending). When
//!    the positions of an epoch are all in, every worker computes the same fence: the window after
//!    the newest anyone routed. No value of the fence's window or later was routed with the old
//!    plan, so a construct counts exactly the values from its fence on, for any `-w`/`-n`.
//!
//! Then every worker still reading sends a fence marker ([`saams_operators::ask::fence_marker`])
//! through the tuple exchange and applies the requests ([`Plan::apply_through`]); the update
//! operator applies them on the marker if the worker has not yet, so no window at or after the
//! fence closes anywhere before the requests are in the plan. The worker that took a request
//! writes its acknowledgement (with the fence: `effectiveFrom`) and sends its asks.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use saams::api::request::{Parsed, log_text};
use saams::checkpoint::LoggedRequest;
use saams_operators::Plan;
use serde::{Deserialize, Serialize};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

use saams::api::estimation::Estimation;
use saams_operators::ask::{Origin, reply_line};
use saams_operators::plan::Applied;

use crate::control::hub::Hub;
use crate::control::request_log::{RequestLog, TopicRecord};
use crate::edge::refusals::{asks_a_device, body_refusal};

/// A body of requests on its way: who took it, the ticket waiting there, the requests as the
/// hub vetted them (typed: serialized by timely between processes, never parsed again).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Body {
    /// The worker that took it (its process' intake worker); `u32::MAX` for the request script.
    pub origin: u32,
    /// The ticket waiting for replies there (a detached body's: nobody waits); the request
    /// log's id of its requests.
    pub ticket: u64,
    /// The requests.
    pub requests: Parsed,
    /// The request topic's record they came from (its request log keeps it).
    pub source: Option<TopicRecord>,
}

type Handle<D> = InputHandle<u64, CapacityContainerBuilder<Vec<D>>>;

/// One worker's side of the fence protocol.
pub struct Fences {
    me: usize,
    window_ms: u64,
    hub: Option<Arc<Hub>>,
    forward: Option<Handle<Body>>,
    forwarded: Rc<RefCell<Vec<Body>>>,
    forward_probe: ProbeHandle<u64>,
    requests: Option<Handle<Body>>,
    received: Rc<RefCell<BTreeMap<u64, Vec<Body>>>>,
    request_probe: ProbeHandle<u64>,
    request_epoch: u64,
    positions: Option<Handle<u64>>,
    heard: Rc<RefCell<BTreeMap<u64, u64>>>,
    position_probe: ProbeHandle<u64>,
    /// Request epochs this worker has answered with its position (those before it).
    positioned: u64,
    /// Request epochs before this one have their fence.
    agreed_before: u64,
    /// While epochs await their fence: the newest window this worker may route.
    hold: Option<u64>,
    /// Worker 0: how often to ask for a checkpoint, the next id, when it last asked, and
    /// whether the last one is still being written.
    checkpoints: Option<CheckpointClock>,
    /// Live requests received, by epoch, until their fence is agreed.
    unlogged: BTreeMap<u64, Vec<Body>>,
    /// Live requests with their fences, in the order applied (a checkpoint's request log).
    log: Vec<LoggedRequest>,
    /// The intake worker of a job with checkpoints: the process' request log, where the
    /// requests it took are synced before they are acknowledged.
    durable: Option<RequestLog>,
    /// The next live request's place in the order every worker applies them (the request log's
    /// `at`).
    next_at: u64,
    /// A hand-off ([`crate::handoff`]): the checkpoint after which this job writes nothing.
    final_checkpoint: Option<u64>,
}

/// The origin of a body that asks for a checkpoint (its ticket is the checkpoint's id).
const CHECKPOINT_ORIGIN: u32 = u32::MAX - 1;

/// The origin of a body that asks for the job's last checkpoint: a new job takes over from it
/// ([`crate::handoff`]).
const LAST_CHECKPOINT_ORIGIN: u32 = u32::MAX - 2;

/// Worker 0's checkpoint schedule: a checkpoint is asked for every interval (wall clock), the
/// next only once the last one is written.
struct CheckpointClock {
    every: std::time::Duration,
    next_id: u64,
    last: std::time::Instant,
    writing: bool,
    /// A job taking over another's directory asks for none until it holds the directory.
    paused: bool,
    /// The next checkpoint asked for is the job's last (a new job takes over from it);
    /// `Some(true)` once it has been asked for.
    last_one: Option<bool>,
}

impl Fences {
    /// Build the three dataflows on this worker. `hub` is the process' hand-off, given to its
    /// intake worker only.
    pub fn build(worker: &mut Worker, window_ms: u64, hub: Option<Arc<Hub>>) -> Fences {
        let me = worker.index();
        let (forward, forwarded, forward_probe) = forward_dataflow(worker);
        let (mut requests, received, request_probe) = request_dataflow(worker);
        let (mut positions, heard, position_probe) = position_dataflow(worker);
        // Epoch 0 is the request script's (applied before the dataflow starts): live ones from 1.
        requests.advance_to(1);
        positions.advance_to(1);
        Fences {
            me,
            window_ms: window_ms.max(1),
            forward: hub.is_some().then_some(forward),
            hub,
            forwarded,
            forward_probe,
            requests: (me == 0).then_some(requests),
            received,
            request_probe,
            request_epoch: 1,
            positions: Some(positions),
            heard,
            position_probe,
            positioned: 1,
            agreed_before: 1,
            hold: None,
            checkpoints: None,
            unlogged: BTreeMap::new(),
            log: Vec::new(),
            durable: None,
            next_at: 0,
            final_checkpoint: None,
        }
    }

    /// Worker 0 asks for a checkpoint every `every` (wall clock), with ids from `first_id` on;
    /// the live requests applied before (`log`, from a checkpoint restored) are kept in the log.
    /// A resumed job asks for its first at once: its output is held until then.
    pub fn checkpoint_every(
        &mut self,
        every: std::time::Duration,
        first_id: u64,
        log: Vec<LoggedRequest>,
        resumed: bool,
    ) {
        self.log = log;
        if self.me == 0 {
            let now = std::time::Instant::now();
            let last = if resumed { now.checked_sub(every).unwrap_or(now) } else { now };
            self.checkpoints =
                Some(CheckpointClock { every, next_id: first_id, last, writing: false, paused: false, last_one: None });
        }
    }

    /// Worker 0 of a job taking over another's directory ([`crate::handoff`]): no checkpoint is
    /// asked for until [`Fences::resume_checkpoints`] (the directory is the other job's).
    pub fn pause_checkpoints(&mut self) {
        if let Some(c) = self.checkpoints.as_mut() {
            c.paused = true;
        }
    }

    /// Worker 0 of a job that has taken over: checkpoints from now on (the first at once), with
    /// ids from `next_id` (after those of the job it took over from).
    pub fn resume_checkpoints(&mut self, next_id: u64) {
        if let Some(c) = self.checkpoints.as_mut() {
            c.paused = false;
            c.next_id = c.next_id.max(next_id);
            c.last = std::time::Instant::now().checked_sub(c.every).unwrap_or(c.last);
        }
    }

    /// Worker 0 of a job another takes over from: the next checkpoint, asked for at once (after
    /// the one being written, if any), is the job's last ([`Fences::final_checkpoint`]).
    pub fn hand_off(&mut self) {
        if let Some(c) = self.checkpoints.as_mut()
            && c.last_one.is_none()
        {
            c.last_one = Some(false);
        }
    }

    /// The checkpoint after which this job writes nothing (every worker learns it with the
    /// checkpoint's request): a new job takes over from it.
    pub fn final_checkpoint(&self) -> Option<u64> {
        self.final_checkpoint
    }

    /// The intake worker of a job that has just taken over: the requests it takes from now on
    /// are synced to `log` before they are acknowledged.
    pub fn set_request_log(&mut self, log: RequestLog) {
        self.durable = Some(log);
    }

    /// Sync the live requests this worker takes to `log` before they are acknowledged (its
    /// process' request log: given to the intake worker only); `next_at` is where the order of
    /// applied requests goes on (the same on every worker).
    pub fn log_requests(&mut self, log: Option<RequestLog>, next_at: u64) {
        self.durable = log;
        self.next_at = next_at;
    }

    /// Worker 0 has written its part of the last checkpoint: the next may be asked for.
    pub fn checkpoint_written(&mut self) {
        if let Some(c) = self.checkpoints.as_mut() {
            c.writing = false;
            c.last = std::time::Instant::now();
        }
    }

    /// The live requests applied so far with their fences (a checkpoint's request log).
    pub fn request_log(&self) -> &[LoggedRequest] {
        &self.log
    }

    /// The newest window this worker may route now (`None`: any).
    pub fn hold(&self) -> Option<u64> {
        self.hold
    }

    /// Whether a request epoch awaits its fence: this worker holds its routing back for one,
    /// or (worker 0) it has sent one not yet agreed. A worker whose input ends meanwhile keeps
    /// its epoch where it is until the fence is agreed: at the end of the input (`DONE`) the
    /// dataflow's frontier would pass the fence before the plan has it, and an operator would
    /// copy its state at a checkpoint boundary it has already processed past.
    pub fn agreeing(&self) -> bool {
        self.hold.is_some() || (self.requests.is_some() && self.request_epoch > self.agreed_before)
    }

    /// The request script and every live request have been applied and no more can come.
    pub fn finished(&self, plan: &Plan) -> bool {
        self.requests.is_none()
            && self.forward.is_none()
            && self.request_probe.done()
            && self.received.borrow().keys().all(|&e| e < plan.applied_before())
    }

    /// Stop taking requests: this worker's readers are done (its hub's later requests are refused).
    pub fn stop_forwarding(&mut self) {
        self.forward = None;
        if let Some(hub) = &self.hub {
            for s in hub.drain() {
                let e = saams::api::estimation::Estimation::error(
                    serde_json::json!("job"),
                    None,
                    0,
                    "the job's input has ended: requests are no longer taken",
                );
                hub.reply(s.ticket, e.to_json_line());
            }
        }
    }

    /// One round of the protocol. `newest_routed` is the newest window this worker has routed
    /// a value of. Returns the (request epoch, fence) pairs agreed now, oldest first: the job
    /// sends their markers and applies them. Bodies of ad-hoc queries and SAVEs only need no
    /// fence: they are answered at once ([`Plan::ask_now`], into the plan's applied list),
    /// except in a job that logs its requests (checkpoints) and for those a device answers.
    pub fn poll(&mut self, plan: &RefCell<Plan>, newest_routed: u64) -> Vec<(u64, u64)> {
        self.forward_bodies(plan);
        self.sequence();
        self.take_positions(plan, newest_routed);
        self.agreed()
    }

    /// The intake worker hands its hub's bodies to worker 0.
    fn forward_bodies(&mut self, plan: &RefCell<Plan>) {
        let (Some(hub), Some(forward)) = (&self.hub, self.forward.as_mut()) else { return };
        let bodies = hub.drain();
        if bodies.is_empty() {
            return;
        }
        let mut forwarded = false;
        let devices = hub.devices();
        for s in bodies {
            if let Some(refused) = devices.as_ref().and_then(|table| body_refusal(table, &s.requests)) {
                // As `POST /requests` refuses it (it checked before it queued the body).
                plan.borrow_mut().push_applied(refused_body(&s.requests, &refused.message, (self.me as u32, s.ticket)));
                continue;
            }
            // An ad-hoc query or SAVE a device answers needs a fence: sequenced. So does one in a
            // job that logs its requests (checkpoints): logged at its fence, a resumed job applies
            // it again and writes its answer line if it was after the checkpoint's cut
            // (`send_asks_again`), which an answer given at once, logged nowhere, lost.
            let asks_device =
                devices.as_ref().is_some_and(|table| s.requests.iter().flatten().any(|r| asks_a_device(table, r)));
            if Plan::reads_only(&s.requests) && !asks_device && self.durable.is_none() {
                let mut plan = plan.borrow_mut();
                let applied = plan.ask_now(&s.requests, (self.me as u32, s.ticket));
                plan.push_applied(applied);
                continue;
            }
            forward.send(Body { origin: self.me as u32, ticket: s.ticket, requests: s.requests, source: s.source });
            forwarded = true;
        }
        if !forwarded {
            return;
        }
        // An input hands exchanged data on when its epoch closes (flushing is not enough); the
        // forward dataflow's times mean nothing.
        let next = forward.time() + 1;
        forward.advance_to(next);
    }

    /// Worker 0 broadcasts what it was handed, one request epoch per round; it stops when every
    /// intake has stopped forwarding.
    fn sequence(&mut self) {
        let Some(input) = self.requests.as_mut() else { return };
        let mut bodies = std::mem::take(&mut *self.forwarded.borrow_mut());
        if self.forward.is_some()
            && let Some(c) = self.checkpoints.as_mut()
            && !c.writing
            && !c.paused
            && c.last_one != Some(true)
            && (c.last_one.is_some() || c.last.elapsed() >= c.every)
        {
            // A checkpoint takes effect at a fence like a request: the window after the newest
            // any worker has routed.
            let origin = if c.last_one.is_some() { LAST_CHECKPOINT_ORIGIN } else { CHECKPOINT_ORIGIN };
            c.last_one = c.last_one.map(|_| true);
            bodies.push(Body { origin, ticket: c.next_id, requests: Vec::new(), source: None });
            c.next_id += 1;
            c.writing = true;
        }
        if !bodies.is_empty() {
            for b in bodies {
                input.send(b);
            }
            self.request_epoch += 1;
            input.advance_to(self.request_epoch);
        } else if self.forward.is_none() && self.forward_probe.done() {
            // Every intake has stopped (a probe reads as done before its first progress, so
            // worker 0, itself an intake, waits for its own stop first).
            self.requests = None;
        }
    }

    /// Answer every complete request epoch with this worker's position, and hold back later
    /// windows until its fence is agreed.
    fn take_positions(&mut self, plan: &RefCell<Plan>, newest_routed: u64) {
        let complete: Vec<(u64, Vec<Body>)> = {
            let received = self.received.borrow();
            received
                .range(self.positioned..)
                .filter(|(e, _)| !self.request_probe.less_equal(*e))
                .map(|(e, b)| (*e, b.clone()))
                .collect()
        };
        for (epoch, bodies) in complete {
            let mut plan = plan.borrow_mut();
            for body in bodies {
                if body.origin == CHECKPOINT_ORIGIN || body.origin == LAST_CHECKPOINT_ORIGIN {
                    plan.receive_checkpoint(epoch, body.ticket);
                    if body.origin == LAST_CHECKPOINT_ORIGIN {
                        self.final_checkpoint = Some(body.ticket);
                    }
                    continue;
                }
                self.unlogged.entry(epoch).or_default().push(body.clone());
                let origin = (body.origin != u32::MAX).then_some((body.origin, body.ticket));
                plan.receive(epoch, origin, body.requests);
            }
            drop(plan);
            if let Some(input) = self.positions.as_mut() {
                input.send(newest_routed);
                input.advance_to(epoch + 1);
                input.flush();
            }
            self.positioned = epoch + 1;
            self.hold = Some(self.hold.map_or(newest_routed, |h| h.min(newest_routed)));
        }
        if self.request_probe.done() && self.received.borrow().range(self.positioned..).next().is_none() {
            self.positions = None;
        }
    }

    /// Epochs whose positions are all in: their fences (the window after the newest routed).
    fn agreed(&mut self) -> Vec<(u64, u64)> {
        let heard = self.heard.clone();
        let mut heard = heard.borrow_mut();
        let mut agreed = Vec::new();
        while let Some((&epoch, &newest)) = heard.first_key_value() {
            if self.position_probe.less_equal(&epoch) {
                break;
            }
            heard.remove(&epoch);
            let fence = newest - newest % self.window_ms + self.window_ms;
            self.log_agreed(epoch, fence);
            agreed.push((epoch, fence));
            self.agreed_before = epoch + 1;
        }
        if self.agreed_before >= self.positioned {
            self.hold = None;
        }
        agreed
    }
}

impl Fences {
    /// The live requests of epochs up to `epoch`, agreed at `fence`: into the checkpoints'
    /// request log, and those this worker took into its process' request log, synced before
    /// the caller acknowledges them (one sync for all of them: group commit).
    fn log_agreed(&mut self, epoch: u64, fence: u64) {
        let mut own = Vec::new();
        for (_, bodies) in self.unlogged.range(..=epoch) {
            for b in bodies {
                let request = LoggedRequest { fence_ms: fence, text: log_text(&b.requests), id: Some(b.ticket) };
                if b.origin as usize == self.me {
                    own.push((self.next_at, request.clone(), b.source));
                }
                self.next_at += 1;
                self.log.push(request);
            }
        }
        self.unlogged.retain(|&e, _| e > epoch);
        if let Some(log) = self.durable.as_mut()
            && let Err(e) = log.append_read(&own)
        {
            // The requests are applied on every worker and cannot be taken back: stop before
            // acknowledging them; a restart applies those its checkpoint and this log hold.
            eprintln!(
                "saams: request log {}: {e}; stopping before acknowledging requests that are not on disk",
                log.file().display()
            );
            std::process::exit(2);
        }
    }
}

/// What a body refused for its devices gives ([`crate::edge::refusals`]): an error line for
/// each of its requests (none is applied), for the output and whoever waits.
fn refused_body(requests: &Parsed, why: &str, origin: Origin) -> Applied {
    let lines = requests
        .iter()
        .map(|r| {
            let (id, uid, syn) = match r {
                Ok(req) => {
                    (req.request_id.clone().unwrap_or(serde_json::Value::Null), req.uid.clone(), req.synopsis_id)
                }
                Err(_) => (serde_json::Value::Null, None, 0),
            };
            let line = Estimation::error(id, uid, syn, format!("not applied: {why}")).to_json_line();
            reply_line(Some(origin), line)
        })
        .collect();
    Applied { origin: Some(origin), lines, ..Applied::default() }
}

/// Shared with a dataflow's inspect closure: what reached this worker.
type Shared<T> = Rc<RefCell<T>>;

/// The bodies of each request epoch, as the broadcast delivered them.
type ByEpoch = Shared<BTreeMap<u64, Vec<Body>>>;

/// The forward dataflow: an intake worker's bodies, exchanged to worker 0.
fn forward_dataflow(worker: &mut Worker) -> (Handle<Body>, Shared<Vec<Body>>, ProbeHandle<u64>) {
    let forwarded: Shared<Vec<Body>> = Rc::default();
    let mut forward = InputHandle::new();
    let sink = forwarded.clone();
    let probe = worker.dataflow::<u64, _, _>(|scope| {
        let (probe, _) = scope
            .input_from(&mut forward)
            .exchange_to_sequencer()
            .inspect(move |b: &Body| sink.borrow_mut().push(b.clone()))
            .probe();
        probe
    });
    (forward, forwarded, probe)
}

/// The requests dataflow: worker 0's sequenced bodies, broadcast, kept by request epoch.
fn request_dataflow(worker: &mut Worker) -> (Handle<Body>, ByEpoch, ProbeHandle<u64>) {
    let received: ByEpoch = Rc::default();
    let mut requests = InputHandle::new();
    let sink = received.clone();
    let probe = worker.dataflow::<u64, _, _>(|scope| {
        let (probe, _) = scope
            .input_from(&mut requests)
            .broadcast()
            .inspect_core(move |event| {
                if let Ok((stamp, bodies)) = event
                    && let Some(&t) = stamp.least()
                {
                    sink.borrow_mut().entry(t).or_default().extend(bodies.iter().cloned());
                }
            })
            .probe();
        probe
    });
    (requests, received, probe)
}

/// The positions dataflow: every worker's newest routed window per request epoch, broadcast,
/// kept as the newest of all.
fn position_dataflow(worker: &mut Worker) -> (Handle<u64>, Shared<BTreeMap<u64, u64>>, ProbeHandle<u64>) {
    let heard: Shared<BTreeMap<u64, u64>> = Rc::default();
    let mut positions = InputHandle::new();
    let sink = heard.clone();
    let probe = worker.dataflow::<u64, _, _>(|scope| {
        let (probe, _) = scope
            .input_from(&mut positions)
            .broadcast()
            .inspect_core(move |event| {
                if let Ok((stamp, positions)) = event
                    && let Some(&t) = stamp.least()
                {
                    let mut heard = sink.borrow_mut();
                    let newest = heard.entry(t).or_insert(0);
                    *newest = positions.iter().fold(*newest, |a, &b| a.max(b));
                }
            })
            .probe();
        probe
    });
    (positions, heard, probe)
}

/// Extension: send every body to worker 0.
trait ToSequencer<'scope> {
    fn exchange_to_sequencer(self) -> Self;
}

impl<'scope> ToSequencer<'scope> for timely::dataflow::Stream<'scope, u64, Vec<Body>> {
    fn exchange_to_sequencer(self) -> Self {
        use timely::dataflow::operators::generic::Operator;
        self.unary(Exchange::new(|_: &Body| 0), "ToSequencer", |_, _| {
            |input, output| {
                input.for_each_stamp(|stamp, data| output.session(&stamp).give_containers(data));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::file::SnapshotDir;

    #[test]
    fn a_body_reaches_the_sequencer() {
        timely::execute_directly(|worker| {
            let hub = Arc::new(Hub::new());
            hub.open();
            let mut f = Fences::build(worker, 1000, Some(hub.clone()));
            let _t = hub.submit(saams::api::request::parse_requests("{}"), 1);
            let plan = RefCell::new(Plan::build(&[], 1, 1000, Arc::new(SnapshotDir::new(None))));
            // One worker: exchanges deliver at once; see `a body reaches the sequencer` in the
            // job tests for several.
            for _ in 0..100 {
                f.poll(&plan, 0);
                worker.step();
            }
            assert!(f.received.borrow().len() == 1, "{:?}", f.received.borrow());
        });
    }

    /// A paused clock asks for nothing; a hand-off asks at once for the last checkpoint, which
    /// every worker learns with its request, and for none after it.
    #[test]
    fn a_hand_off_asks_for_one_last_checkpoint_at_once() {
        timely::execute_directly(|worker| {
            let hub = Arc::new(Hub::new());
            hub.open();
            let mut f = Fences::build(worker, 1000, Some(hub.clone()));
            f.checkpoint_every(std::time::Duration::ZERO, 7, Vec::new(), false);
            f.pause_checkpoints();
            let plan = RefCell::new(Plan::build(&[], 1, 1000, Arc::new(SnapshotDir::new(None))));
            let mut steps = |f: &mut Fences| {
                for _ in 0..50 {
                    f.poll(&plan, 0);
                    worker.step();
                }
            };
            steps(&mut f);
            assert!(f.received.borrow().is_empty(), "a paused clock asked: {:?}", f.received.borrow());
            // The hand-off's checkpoint is asked for even though the clock would wait an hour.
            f.resume_checkpoints(9);
            f.checkpoints.as_mut().expect("worker 0's clock").every = std::time::Duration::from_secs(3600);
            f.checkpoints.as_mut().expect("worker 0's clock").last = std::time::Instant::now();
            f.hand_off();
            steps(&mut f);
            assert_eq!(f.final_checkpoint(), Some(9), "{:?}", f.received.borrow());
            f.checkpoint_written();
            steps(&mut f);
            let asked: usize = f.received.borrow().values().map(Vec::len).sum();
            assert_eq!(asked, 1, "no checkpoint after the last: {:?}", f.received.borrow());
        });
    }
}
