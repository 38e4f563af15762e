//! The loop every worker runs: receive the request script, build the dataflow, then read its
//! units (and Kafka partitions) round by round, applying live requests at their fences and
//! writing checkpoints, until the input ends and every live request is answered.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use saams_operators::ask::{fence_marker, to_every_worker};

use crate::checkpoint::marks::SourceMarks;
use crate::control::fence::Fences;
use crate::source::kafka::KafkaInput;

use super::checkpoints::{want_boundaries, write_checkpoints};
use super::config::{Settings, Shared};
use super::generated::generated_routes;
use super::reading::{Pending, Reading, Source, open_readers, resume_readers};
use super::requests::{build_plan, registry_rows, take_applied};
use super::routing::{Router, read_units};

/// Granularity (event-time ms) of the input's epoch when windows are longer: the watermark
/// that releases values inside a window moves in these steps.
const EPOCH_STEP_MS: i64 = 60_000;

/// The most event time (ms) the reading loop runs ahead of what the dataflow has processed.
const MAX_LAG_MS: i64 = 4 * EPOCH_STEP_MS;

/// The input's epoch once a worker's input has ended while the job still takes requests: far
/// past any event time, so it holds nobody's windows back, yet a time asks can still be sent at.
const DONE_EPOCH: u64 = 1 << 62;

/// One worker: receive the request script, build the dataflows, read its units (and Kafka
/// partitions) until the input ends and every live request is answered, then finish.
pub(super) fn work(worker: &mut timely::worker::Worker, job: &Shared) {
    let Settings { window_ms, lateness_ms, strict_requests, workers_per_process, .. } = job.settings;
    let (stats, sink2, dead2, hub2) = (&job.stats, &job.sink, &job.dead, &job.hub);
    let (kafka_job2, generator, units) = (&job.kafka_job, &job.generator, &job.units);
    let (stop, pacer, requests) = (&job.stop, &job.pacer, &job.requests);
    let me = worker.index();
    let peers = worker.peers();

    // 1. The request script, broadcast from worker 0 to every worker, in order.
    let text = crate::dataflow::receive_script(worker, requests.as_ref());
    let plan = build_plan(&text, (me, peers), job);
    // The process' first worker takes its live requests (HTTP, and later the request topic).
    let intake_hub = me.is_multiple_of(workers_per_process.max(1)).then(|| hub2.clone());
    if let Some(hub) = &intake_hub {
        // The script's synopses are live from the start (GET /synopses, and what HTTP checks
        // queries against).
        hub.set_synopses(registry_rows(&plan.borrow()));
    }
    let mut fences = Fences::build(worker, window_ms as u64, intake_hub, strict_requests);
    let resume = job.recovery.as_ref().and_then(|(r, ..)| r.clone());
    if let Some((_, every, first_id)) = &job.recovery {
        let log = resume.as_ref().map(|r| r.requests().to_vec()).unwrap_or_default();
        fences.checkpoint_every(*every, *first_id, log, resume.is_some());
    }

    // 2. The dataflow.
    let (mut input, probe) = crate::dataflow::build(worker, &plan, sink2.clone(), hub2.clone());

    // 2b. Epoch gossip for Kafka input: every worker's own epoch (while it has active
    //     partitions) reaches every worker of every process, so a process whose partitions are
    //     all idle follows the others instead of holding their windows open.
    let heard = Rc::new(Cell::new(0u64));
    let mut gossip = kafka_job2.is_some().then(|| crate::dataflow::gossip(worker, heard.clone()));
    let mut told = 0u64;

    // 3. Read this worker's units round-robin, a batch at a time; the input's epoch is the
    //    oldest event time (ms) any unit can still produce (its newest time minus the
    //    lateness): the watermark that releases values to their synopses inside a window.
    let mut readers = open_readers(&plan.borrow(), generator.as_ref(), units, (me, peers), dead2.as_deref(), stats);
    let mut ended = Vec::new();
    if let Some(resume) = &resume {
        resume_readers(&mut readers, resume, units, &mut ended, (dead2.as_deref(), stats));
    }
    let mut boundaries_known = 0u64;
    let mut router = Router::new(&plan, me, job);
    if let Some(resume) = &resume {
        // Fences (live requests, checkpoints) fall at or after the boundary resumed from: a
        // checkpoint before it would name the resumed positions with an earlier boundary, and a
        // restart from it would count the values between the two boundaries twice.
        router.newest = router.newest.max((resume.boundary_ms.min(i64::MAX as u64) as i64).saturating_sub(1));
    }
    let checkpointed = job.checkpoints.is_some().then_some(resume.as_deref());
    let mut kafka = kafka_job2.as_ref().and_then(|k| k.worker_input((me, peers), (dead2.clone(), sink2), checkpointed));
    let mut kafka_unit = Reading {
        unit: 0,
        source: Source::Kafka,
        tuple: saams::api::Tuple::default(),
        max_time: i64::MIN,
        pending: None,
        marks: SourceMarks::default(),
    };
    if let Some(resume) = &resume {
        // Values before the checkpoint's boundary were counted before it.
        kafka_unit.marks.skip_before = resume.boundary_ms.min(i64::MAX as u64) as i64;
    }
    let mut epoch = 0u64;
    let mut reading = true;
    loop {
        // Live requests: agree fences, apply them, answer for what this worker took.
        let newest = plan.borrow().window_of(router.newest);
        for (request_epoch, fence) in fences.poll(&plan, newest) {
            if reading {
                // Before any value routed with the new plan: see `control::fence`.
                for copy in to_every_worker(fence_marker(request_epoch, fence, epoch as i64), peers) {
                    input.send(copy);
                }
            }
            plan.borrow_mut().apply_through(request_epoch, fence);
        }
        if take_applied(&plan, me, sink2, hub2, &mut input, epoch) {
            for r in &mut readers {
                if let Source::Generated(g, routes) = &mut r.source {
                    *routes = generated_routes(&plan.borrow(), g);
                }
            }
            router.counts.grow(plan.borrow().groups.len());
        }
        want_boundaries(&plan.borrow(), (&mut readers, kafka.as_mut()), &mut boundaries_known);
        if let Some(c) = &job.checkpoints {
            let at = (&mut readers[..], &mut ended[..], kafka.as_mut(), router.tuples);
            write_checkpoints(&plan, &probe, at, &mut fences, (c, me));
        }
        let active = (!readers.is_empty() || kafka.as_ref().is_some_and(KafkaInput::running)) && !stop.raised();
        if !active && reading {
            // This worker's input ended: stop holding the others' windows back, stop taking
            // requests; keep the input for the asks and fences still to come.
            reading = false;
            fences.stop_forwarding();
            epoch = DONE_EPOCH;
            input.advance_to(epoch);
        }
        if !active {
            if fences.finished(&plan.borrow()) {
                break;
            }
            worker.step_or_park(Some(Duration::from_millis(1)));
            continue;
        }
        let hold_end = fences.hold().map(|h| (h as i64).saturating_add(window_ms));
        let (allowance, routed_before) = (pacer.take(Instant::now()), router.tuples);
        read_units(&mut readers, &mut router, &mut input, (allowance, hold_end), (window_ms, &mut ended));
        let kafka_low = kafka.as_mut().map(|k| {
            if hold_end.is_none() && allowance > router.tuples - routed_before {
                k.poll(allowance - (router.tuples - routed_before), stats, |seq, t| {
                    kafka_unit.max_time = i64::MIN; // lateness is judged per partition by the source
                    let window = plan.borrow().window_of(t.time_ms.unwrap_or(0));
                    let mut t = t;
                    std::mem::swap(&mut kafka_unit.tuple, &mut t);
                    router.route(&mut kafka_unit, seq, Ok(()), &mut input);
                    // The next record parsed on this thread reuses the previous tuple's
                    // allocations.
                    saams_datasets::jsonl::recycle(t);
                    window
                });
                router.send_batch(&mut input);
            }
            k.follow(heard.get());
            let (low, own) = k.low(|t| plan.borrow().window_of(t));
            if let Some(own) = own
                && own > told
                && let Some(g) = gossip.as_mut()
            {
                told = own;
                g.send(own);
                g.flush(); // an input hands data on only when flushed or advanced
            }
            low
        });
        // A unit that has routed nothing yet but holds its first tuple can produce nothing
        // older than that tuple's time minus the lateness either: a byte range of a file that
        // waits for the others to reach its time does not hold every window open (it held the
        // frontier at 0, and every value in the reorder buffers, until each range had started).
        let low = readers
            .iter()
            .map(|r| {
                let newest =
                    if r.max_time == i64::MIN { r.pending.as_ref().map(Pending::time) } else { Some(r.max_time) };
                newest.map_or(0, |t| t.saturating_sub(lateness_ms).max(0) as u64)
            })
            .chain(kafka_low)
            .min();
        // In steps of EPOCH_STEP_MS (or the window): every advance is progress traffic
        // between all workers and processes.
        let step = window_ms.clamp(1, EPOCH_STEP_MS) as u64;
        if let Some(low) = low.map(|l| l - l % step)
            && low > epoch
        {
            epoch = low;
            input.advance_to(epoch);
            stats.epoch.store(plan.borrow().window_of(epoch as i64) as i64, Ordering::Relaxed);
        }
        if router.tuples == routed_before && hold_end.is_none() {
            // Nothing to read right now (a quiet live input): wait for it or for the others.
            worker.step_or_park(Some(Duration::from_millis(1)));
        } else {
            worker.step();
        }
        pacer.settle(allowance, router.tuples - routed_before); // --rate: park until the next batch may be read
        if let Some(wait) = pacer.wait(Instant::now()) {
            worker.step_or_park(Some(wait));
        }
        // Keep a bounded number of windows in flight (each holds its synopses' state until it
        // closes), and a bounded span of event time read but not processed (values queued in
        // the exchanges): park (instead of spinning) while other workers catch up, still taking
        // part in the fences (they may wait for this worker's position). A bound in windows
        // alone let a one-hour window queue 64 hours of values (peak RSS 1.55× that of 60 s).
        let behind = epoch.saturating_sub((64 * window_ms).min(MAX_LAG_MS) as u64);
        if probe.less_than(&behind) {
            worker.step_or_park(Some(Duration::from_millis(1)));
            continue;
        }
        if let Some(k) = kafka.as_mut() {
            // Timestamps are event-time ms and a window's answers travel at its last ms: the
            // windows before the frontier's window are done.
            let done = probe.with_frontier(|f| f.first().copied());
            k.maybe_commit(done.map(|f| if f == u64::MAX { f } else { plan.borrow().window_of(f as i64) }));
        }
    }
    router.flush_stats(0);
    debug_assert!(router.batch.is_empty(), "every read round sends what it routed");
    drop(input);
    drop(gossip);
    while !probe.done() {
        worker.step_or_park(Some(Duration::from_millis(1)));
    }
    if let Some(k) = kafka {
        k.finish();
    }
}
