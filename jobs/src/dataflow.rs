//! The `saams` job's dataflows, as every worker builds them: the request script's broadcast,
//! the tuple dataflow (registry join → update → tree merge → fold → answers → set changes →
//! sink, and replies to whoever waits), and the epoch gossip of Kafka inputs.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use differential_dataflow::input::Input as _;
use saams_operators::ask::{Origin, split_reply};
use saams_operators::monitor::{MonitorCoordinator as _, MonitorSites as _};
use saams_operators::registry::Entry;
use saams_operators::{
    AnswerPairs, FoldPartials, JoinRegistry, MergeTree, Plan, Rec, SetChanges, SplitMonitored, UpdateSynopses,
};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::operators::Exchange as _;
use timely::dataflow::operators::vec::{Broadcast, Map as _};
use timely::dataflow::operators::{Concat, Input, Inspect, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

use crate::control::hub::Hub;
use crate::edge::devices::Devices;
use crate::sink::file::LineSink;

/// The tuple input: routed values (and asks and fence markers) at event-time epochs.
pub type RecInput = InputHandle<u64, CapacityContainerBuilder<Vec<Rec>>>;

/// The request script, sent by worker 0 (`text`), as every worker receives it (in order).
pub fn receive_script(worker: &mut Worker, text: Option<&String>) -> String {
    let received: Rc<RefCell<Vec<String>>> = Rc::default();
    let mut input: InputHandle<u64, CapacityContainerBuilder<Vec<String>>> = InputHandle::new();
    let probe = {
        let received = received.clone();
        worker.dataflow::<u64, _, _>(|scope| {
            let (probe, _) = scope
                .input_from(&mut input)
                .broadcast()
                .inspect(move |s: &String| received.borrow_mut().push(s.clone()))
                .probe();
            probe
        })
    };
    if let (0, Some(text)) = (worker.index(), text) {
        input.send(text.clone());
    }
    drop(input);
    // Park between steps: on a cluster a process' workers start as soon as their own connections
    // are up, and may wait here for up to a second (timely accepts connections once a second)
    // before worker 0's process sends the script. `step_while` spun a core all that time (0.5 to
    // 0.7 CPU-seconds of every `-n 2` run on loopback, taken from the other process' core).
    while !probe.done() {
        worker.step_or_park(Some(std::time::Duration::from_millis(1)));
    }
    received.borrow().concat()
}

/// Build the tuple dataflow for `plan`: its input and the probe of its end. Answer lines go to
/// `sink` (and the continuous ones to the `hub`'s recent answers); those someone waits for also go back to the worker that took the request, which
/// hands them to its process' `hub`. The script's registry takes effect at time 0 (worker 0
/// feeds it); live requests change the plan at their fences ([`crate::control::fence`]).
pub fn build(
    worker: &mut Worker,
    plan: &Rc<RefCell<Plan>>,
    sink: Arc<LineSink>,
    (hub, devices): (Arc<Hub>, Option<Arc<Devices>>),
) -> (RecInput, ProbeHandle<u64>) {
    let mut input: RecInput = InputHandle::new();
    let probe = ProbeHandle::new();
    if let Some(devices) = &devices {
        if let Err(e) = plan.borrow_mut().attach_device_replies(devices.relay().replies(), worker.index()) {
            eprintln!("saams: --checkpoints: {e}");
            std::process::exit(2);
        }
        relay_answers(devices, &plan.borrow(), &sink, &hub);
    }
    let at = plan.clone();
    let recent = hub.clone();
    let mut registry = worker.dataflow::<u64, _, _>(|scope| {
        // The registry: a differential collection of (dataset, stream) → synopsis entries
        // that the routed values join at their window (raw tuples never enter differential).
        let (registry, entries) = scope.new_collection::<Entry, isize>();
        // Values of monitored streams go to their sites and coordinators (`monitor`).
        let (values, monitored) = scope.input_from(&mut input).split_monitored();
        let window_ms = plan.borrow().routing.window_ms;
        let monitor_lines = monitored.monitor_sites(plan.clone()).monitor_coordinator(plan.clone(), window_ms);
        let mut stream = values.join_registry(entries, plan.clone()).update_synopses(plan.clone());
        for k in 1..=plan.borrow().merge_stages() {
            stream = stream.merge_stage(plan.clone(), k);
        }
        stream
            .fold_partials(plan.clone())
            .answer_pairs(plan.clone())
            .set_changes(plan.clone())
            .concat(monitor_lines)
            .inspect_core(move |event| {
                // With checkpoints, lines at or after an open boundary wait for its commit.
                if let Ok((stamp, lines)) = event {
                    let time = stamp.least().copied().unwrap_or(0);
                    let open = at.borrow().checkpoints.borrow().boundaries.keys().next().copied();
                    if let Some(devices) = &devices {
                        // A job merging devices' shipments: each answer names the devices.
                        let window = at.borrow().window_of(i64::try_from(time).unwrap_or(i64::MAX));
                        let named: Vec<String> =
                            lines.iter().map(|l| devices.name_in(split_reply(l).1, time, window)).collect();
                        sink.write_at(time, open, named.iter().map(String::as_str));
                        recent.answers().record(named.iter().map(String::as_str));
                        return;
                    }
                    sink.write_at(time, open, lines.iter().map(|l| split_reply(l).1));
                    // The page's recent answers (kept only while HTTP serves them).
                    recent.answers().record(lines.iter().map(|l| split_reply(l).1));
                }
            })
            .flat_map(|line: String| match split_reply(&line) {
                (Some(origin), body) => Some((origin, body.to_string())),
                (None, _) => None,
            })
            .exchange(|((worker, _), _): &(Origin, String)| u64::from(*worker))
            .inspect(move |((_, ticket), line): &(Origin, String)| hub.reply(*ticket, line.clone()))
            .probe_with(&probe);
        registry
    });
    if worker.index() == 0 {
        for (entry, time, diff) in plan.borrow().registry_updates() {
            registry.update_at(entry, time, diff);
        }
    }
    registry.close();
    (input, probe)
}

/// A job merging devices: the devices' answers its readers hand on at once
/// ([`crate::edge::relay`]) go where the dataflow's lines go: to the sink, named as the
/// dataflow names its lines, and to this process' hub when someone waits here. (Held weakly:
/// the devices' table holds this, and must not keep the sink or itself alive.)
fn relay_answers(devices: &Arc<Devices>, plan: &Plan, sink: &Arc<LineSink>, hub: &Arc<Hub>) {
    let (named, sink, hub) = (Arc::downgrade(devices), Arc::downgrade(sink), Arc::downgrade(hub));
    let window_ms = plan.routing.window_ms.max(1) as u64;
    let write = Box::new(move |(time, open): (u64, Option<u64>), device: &str, body: &str| {
        if let (Some(sink), Some(devices)) = (sink.upgrade(), named.upgrade()) {
            let line = devices.name_answer(body, (time, time - time % window_ms), device);
            sink.write_at(time, open, std::iter::once(line));
        }
    });
    let reply = Box::new(move |ticket: u64, body: String| {
        if let Some(hub) = hub.upgrade() {
            hub.reply(ticket, body);
        }
    });
    let shape = (devices.process(), plan.routing.workers_per_process as u64);
    devices.relay().outlets(crate::edge::relay::Outlets { write, reply }, shape);
}

/// Epoch gossip for Kafka input: every worker's own epoch (while it has active partitions)
/// reaches every worker of every process (the newest lands in `heard`), so a process whose
/// partitions are all idle follows the others instead of holding their windows open.
pub fn gossip(worker: &mut Worker, heard: Rc<Cell<u64>>) -> InputHandle<u64, CapacityContainerBuilder<Vec<u64>>> {
    let mut handle = InputHandle::new();
    worker.dataflow::<u64, _, _>(|scope| {
        scope.input_from(&mut handle).broadcast().inspect(move |low: &u64| heard.set(heard.get().max(*low)));
    });
    handle
}

/// A worker's load report on the wire: its global index, nanoseconds parked, bytes left in
/// its files and its Kafka lag (`u64::MAX`: none).
pub type LoadReport = (u64, u64, u64, u64);

/// The input a worker sends its load reports into.
pub type LoadInput = InputHandle<u64, CapacityContainerBuilder<Vec<LoadReport>>>;

/// Load reports for `--autoscale`: every worker of every process sends its own
/// ([`crate::stats::WorkerLoad`]) to worker 0, whose process keeps the latest of each in
/// `load` (the autoscaler there decides for the whole job).
pub fn load_reports(worker: &mut Worker, load: Arc<crate::stats::Stats>) -> LoadInput {
    let mut handle = InputHandle::new();
    worker.dataflow::<u64, _, _>(|scope| {
        scope.input_from(&mut handle).exchange(|_: &LoadReport| 0).inspect(move |r: &LoadReport| {
            let some = |x: u64| (x != u64::MAX).then_some(x);
            let report = crate::stats::WorkerLoad { parked_ns: r.1, file_bytes: some(r.2), kafka_records: some(r.3) };
            load.job_load.report(r.0 as usize, report);
        });
    });
    handle
}

/// The input a worker sends messages about moving units into: each to one worker (global
/// index).
pub type MoveInput<T> = InputHandle<u64, CapacityContainerBuilder<Vec<(u64, T)>>>;

/// Input units moving between processes (`job::handover`): every worker's messages (offers,
/// answers, epochs, a unit's encoded reader) reach the worker each names, whose `inbox` they
/// land in, in the order sent. The sender advances the input's time after what it sent (an
/// exchange straight behind an input hands data on only then: see the test below). Why a
/// dataflow: it is the channel every worker already has to every other, across processes.
pub fn reader_moves<T: timely::ExchangeData + Clone>(worker: &mut Worker, inbox: Rc<RefCell<Vec<T>>>) -> MoveInput<T> {
    let mut handle = InputHandle::new();
    worker.dataflow::<u64, _, _>(|scope| {
        scope
            .input_from(&mut handle)
            .exchange(|(to, _): &(u64, T)| *to)
            .inspect(move |(_, message): &(u64, T)| inbox.borrow_mut().push(message.clone()));
    });
    handle
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// An epoch sent into the gossip and flushed reaches every worker while the gossip's input
    /// stays at its first time (it never advances). Why a test: an exchange straight behind an
    /// input keeps what it was handed until the input's time moves on (the load reports of
    /// `load_reports` never arrived while they were only flushed); the gossip's broadcast passes
    /// through an operator first, whose output is pushed on at the end of each of its runs.
    #[test]
    fn a_flushed_epoch_reaches_every_worker_without_the_input_advancing() {
        // Each worker steps until both heard the epoch (or time is up), so the sender's input
        // stays open (closing it would push what it holds on, too) until the other heard it.
        let both_heard = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let heard_by = timely::execute(timely::Config::process(2), move |worker| {
            let heard = Rc::new(Cell::new(0));
            let mut input = gossip(worker, heard.clone());
            if worker.index() == 1 {
                input.send(7);
                input.flush();
            }
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut counted = false;
            while both_heard.load(std::sync::atomic::Ordering::SeqCst) < 2 && Instant::now() < deadline {
                worker.step_or_park(Some(Duration::from_millis(1)));
                if !counted && heard.get() == 7 {
                    counted = true;
                    both_heard.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
            heard.get()
        })
        .unwrap()
        .join()
        .into_iter()
        .map(|r| r.unwrap())
        .collect::<Vec<u64>>();
        assert_eq!(heard_by, [7, 7], "heard by each worker");
    }
}
