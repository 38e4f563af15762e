//! Requests: the plan every worker compiles from the request script (and the log of a
//! checkpoint it resumes from), live requests applied at their fences and answered, the live
//! registry for `GET /synopses`, and requests read from stdin while the job runs.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use saams::api::request::{parse_requests, read_log, requests_from_value};
use saams_operators::Plan;
use saams_operators::ask::{Ask, AskWhat, split_reply, to_every_worker};

use crate::control::hub::Hub;
use crate::control::intake::Intake;
use crate::dataflow::RecInput;
use crate::edge::refusals::resident_on;
use crate::sink::file::LineSink;

use super::config::Shared;

/// The plan every worker compiles from the same request script; worker 0 speaks for them
/// (unknown-field notes, the script's own answers).
pub(super) fn build_plan(text: &str, (me, peers): (usize, usize), job: &Shared) -> Rc<RefCell<Plan>> {
    let settings = job.settings;
    let mut intake = Intake::new(settings.strict_requests);
    let (requests, notes) = intake.vet(parse_requests(text));
    if me == 0 {
        notes.iter().for_each(|n| eprintln!("{n}"));
        job.stats.request_warnings.fetch_add(intake.warnings(), Ordering::Relaxed);
    }
    let windows = (settings.window_ms, settings.default_window);
    let active = settings.active_workers.unwrap_or(peers);
    let mut plan = match Plan::build_active(&requests, (peers, active), windows, job.store.clone()) {
        Ok(plan) => plan,
        Err(e) => {
            // Checked with the flags already; a plan cannot start otherwise.
            eprintln!("saams: {e}");
            std::process::exit(2);
        }
    };
    plan.update = !settings.no_synopses;
    // The process' workers publish their synopses' figures where its HTTP side reads them.
    plan.published = job.hub.published();
    plan.routing_mut().workers_per_process = settings.workers_per_process;
    plan.routing_mut().rescale_batch = settings.rescale_batch;
    let resume = job.recovery.as_ref().and_then(|(r, ..)| r.clone());
    if me == 0 && resume.is_none() {
        // (A resumed job wrote them before its first checkpoint.)
        let mut lines: Vec<String> = plan.script_answers().iter().map(|e| e.to_json_line()).collect();
        lines.extend(plan.monitor.errors.iter().cloned());
        job.sink.write_all(lines.iter());
    }
    if let Some((.., live)) = &job.recovery {
        // The checkpoint's request log, then the acknowledged requests beyond it (the request
        // log's), each at its fence.
        let boundary = resume.as_ref().map_or(0, |r| r.boundary_ms);
        let mut intake = Intake::new(settings.strict_requests);
        for r in &live.requests {
            let (requests, _) = intake.vet(read_log(&r.text));
            let applied = plan.extend(&requests, r.fence_ms, None);
            if me == 0 && r.fence_ms > boundary {
                // Acknowledgements after the checkpoint's cut (see `take_applied`), held until
                // a checkpoint past their fence is committed: one at a boundary before it, whose
                // request log lacks the request, must not cut the output with them in it.
                let open = Some(boundary);
                job.sink.write_at(r.fence_ms - 1, open, applied.lines.iter().map(|l| split_reply(l).1));
                // And the asks whose answers were after it, or never given: sent again, once
                // (`send_asks_again`).
                let asks = match &resume {
                    Some(resume) => resume.asks_again(applied.asks),
                    None => applied.asks,
                };
                plan.checkpoints.get_mut().asks_again.extend(asks.into_iter().map(|ask| (r.fence_ms, ask)));
            }
        }
    }
    if let Some(resume) = resume
        && let Err(e) = resume.fill(&plan)
    {
        eprintln!("saams: --checkpoints: {e}");
        std::process::exit(2);
    }
    Rc::new(RefCell::new(plan))
}

/// Write and send what applying live requests gave, for the requests this worker took (worker 0
/// also for the script's): acknowledgements and errors to the output and back to whoever waits,
/// asks into the tuple input (they reach every worker). True if synopses were constructed or
/// deleted (routes and the registry rows change).
pub(super) fn take_applied(
    plan: &RefCell<Plan>,
    me: usize,
    sink: &LineSink,
    hub: &Hub,
    input: &mut RecInput,
    epoch: u64,
) -> bool {
    send_asks_again(plan, hub, input, epoch);
    let applied = plan.borrow_mut().take_applied();
    if applied.is_empty() {
        return false;
    }
    let changed = applied.iter().any(|a| !a.registry.is_empty() || a.monitors_changed);
    note_rescales(plan, me, hub);
    if changed && me.is_multiple_of(plan.borrow().routing.workers_per_process.max(1)) {
        // Before the acknowledgements: a client that sends the next request on one (a delete
        // after its construct) finds the synopsis in the registry HTTP checks against.
        hub.set_synopses(plan.borrow().live_synopses());
    }
    for a in applied {
        if a.origin.map_or(me != 0, |(worker, _)| worker as usize != me) {
            continue;
        }
        for line in &a.lines {
            let (origin, body) = split_reply(line);
            // Just before the request's fence: with checkpoints, the cut of a checkpoint at a
            // boundary after it holds the acknowledgement and its request log the request; a
            // job resumed from one at or before it applies the request again and acknowledges it
            // again (the cut did not hold it). Every boundary agreed after the fence is at or
            // after it (a boundary is the window after the newest routed, which only grows), so
            // the line needs holding only past a boundary already open. (A resumed job's logged
            // requests have fences agreed in an earlier life: `build_plan` holds their lines.)
            let open = plan.borrow().checkpoints.borrow().boundaries.keys().next().copied();
            sink.write_at(a.fence.saturating_sub(1), open, std::iter::once(body));
            if let Some((_, ticket)) = origin {
                hub.reply(ticket, body.to_string());
            }
        }
        for ask in a.asks {
            send_ask(plan, hub, input, (epoch, a.fence), ask);
        }
    }
    input.flush();
    changed
}

/// A resumed job's worker 0: send the asks of the logged live requests fenced after the
/// checkpoint's boundary again ([`build_plan`]). Their answers' lines were after the cut, so
/// without them an ad-hoc query or SAVE acknowledged before the kill was never answered; one of
/// a synopsis resident on a device still waited for its device's answer, which the restored
/// table keeps as an answer come first (or drops as a replay of one handed on again from it).
///
/// When: at once in a job that merges no devices' shipments, and for an ask the restored state
/// marked resident; else as soon as the job knows its synopsis resident (from the device's
/// shipments it reads again) or the input reaches its fence (a checkpoint from before the
/// device's first shipment restores no view, and the devices' table is empty at the start:
/// sent then, it was answered from the view as of the start).
fn send_asks_again(plan: &RefCell<Plan>, hub: &Hub, input: &mut RecInput, epoch: u64) {
    let due: Vec<(u64, Ask)> = {
        let p = plan.borrow();
        let mut checkpoints = p.checkpoints.borrow_mut();
        if checkpoints.asks_again.is_empty() {
            return;
        }
        let devices = checkpoints.replies_attached;
        let (due, wait) = std::mem::take(&mut checkpoints.asks_again).into_iter().partition(|(fence, ask)| {
            !devices || epoch >= *fence || ask.device_answers || device_answering(&p, hub, ask).is_some()
        });
        checkpoints.asks_again = wait;
        due
    };
    if due.is_empty() {
        return;
    }
    for (fence, ask) in due {
        send_ask(plan, hub, input, (epoch, fence), ask);
    }
    input.flush();
}

/// Send `ask` of a request applied at `fence` into the tuple input at `epoch` (it reaches every
/// worker). One made at a fence is marked answered by its device when its synopsis is resident
/// on one; one sent before an agreed checkpoint boundary that is before its fence is noted
/// (its answer line is before that checkpoint's cut: `Checkpointing::sent_before`).
fn send_ask(plan: &RefCell<Plan>, hub: &Hub, input: &mut RecInput, (epoch, fence): (u64, u64), mut ask: Ask) {
    if fence > 0 {
        ask.device_answers |= device_answering(&plan.borrow(), hub, &ask).is_some();
        let plan = plan.borrow();
        let mut checkpoints = plan.checkpoints.borrow_mut();
        if checkpoints.boundaries.range(epoch.saturating_add(1)..fence).next().is_some() {
            checkpoints.sent.push((ask.id, epoch, fence));
        }
    }
    let peers = plan.borrow().routing.peers;
    for copy in to_every_worker(ask.into_rec(epoch.min(i64::MAX as u64) as i64), peers) {
        input.send(copy);
    }
}

/// The device that answers `ask` (made at a fence): the one its synopsis is resident on, for
/// an ad-hoc query or SAVE ([`crate::edge::asks`]).
fn device_answering(plan: &Plan, hub: &Hub, ask: &Ask) -> Option<String> {
    if !matches!(ask.what, AskWhat::Query(_) | AskWhat::Save(_)) {
        return None;
    }
    let spec = plan.routing.synopses.get(ask.syn as usize)?;
    resident_on(&hub.devices()?, (&spec.dataset, &spec.stream, spec.synopsis_id))
}

/// Tell the process' rescale board about rescales the plan applied since it last looked (the
/// process' first worker; every process applies every rescale).
pub(super) fn note_rescales(plan: &RefCell<Plan>, me: usize, hub: &Hub) {
    let plan = plan.borrow();
    if !me.is_multiple_of(plan.routing.workers_per_process.max(1)) {
        return;
    }
    let board = hub.rescale_board();
    for r in plan.routing.rescales().iter().skip(board.seen()) {
        // Moving until its last batch's fence: another rescale is refused until then.
        board.applied(r.active_workers, r.until, r.moves);
    }
}

/// `--requests -`: every JSON value on stdin (a request object or an array of them, on one
/// line or several) goes to the hub as it completes and takes effect at the next fence, like a
/// request posted over HTTP. Malformed JSON ends the reading (the stream cannot be resynchronized)
/// with a message; the job goes on. A job `taking_over` reads its stdin once it has taken over
/// (what was written before waits in the pipe); a value read while the job takes no requests
/// (it hands off to another, or its input has ended) is refused with a message.
pub(super) fn follow_stdin_requests(hub: Arc<Hub>, taking_over: bool) {
    std::thread::spawn(move || {
        while taking_over && !hub.is_open() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let stdin = std::io::stdin().lock();
        for value in serde_json::Deserializer::from_reader(stdin).into_iter::<serde_json::Value>() {
            match value {
                Ok(v) => {
                    if !hub.submit_detached_if_open(requests_from_value(&v), None) {
                        eprintln!(
                            "saams: requests on stdin: this job takes no requests now (it hands off to another job, or its input has ended); not taken: {v}"
                        );
                    }
                }
                Err(e) => {
                    eprintln!("saams: requests on stdin: {e}; no more requests are read from stdin");
                    return;
                }
            }
        }
    });
}
