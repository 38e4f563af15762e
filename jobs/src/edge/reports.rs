//! The device tables of a job's processes, exchanged so that `GET /devices` on any process lists
//! every device ([`DeviceReports`]).
//!
//! Why a dataflow of its own: a device's partition is read by one worker of one process, and
//! the processes share nothing but timely's channels. The first worker of each process
//! broadcasts its process' table ([`Devices::report`]) every [`REPORT_MS`] to every worker, as
//! the autoscaler's load reports and the Kafka epoch gossip travel; the first worker of each
//! process keeps what the others sent ([`Devices::heard_from`]). The table is small (a row per
//! device) and a job of one process sends none. Every worker also sends the devices' answers
//! its process hands to another ([`AnswerHops`]) as it goes round.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use saams_operators::Plan;
use std::time::{Duration, Instant};

use timely::container::CapacityContainerBuilder;
use timely::dataflow::InputHandle;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Input, Inspect};
use timely::worker::Worker;

use super::devices::Devices;
use super::hops::AnswerHops;

/// How often a process sends its device table to the others (ms).
pub const REPORT_MS: u64 = 500;

/// A process' table on the wire: its index and the table's JSON text.
type Report = (u64, String);

/// One worker's end of the exchange of device tables.
pub struct DeviceReports {
    input: InputHandle<u64, CapacityContainerBuilder<Vec<Report>>>,
    devices: Arc<Devices>,
    /// This process' index, when this worker sends its table (the first worker of a process of
    /// a job of several).
    sends: Option<u64>,
    last: Option<Instant>,
    hops: AnswerHops,
}

impl DeviceReports {
    /// Build the exchange (every worker of every process does, in the same order as the
    /// job's other dataflows). `(me, workers_per_process, processes)`: this worker's global
    /// index and the job's shape.
    pub fn build(
        worker: &mut Worker,
        (devices, plan): (Arc<Devices>, &Rc<RefCell<Plan>>),
        (me, per_process, processes): (usize, usize, usize),
    ) -> Self {
        let mut input = InputHandle::new();
        let keeper = devices.clone();
        let first_of_process = me.is_multiple_of(per_process.max(1));
        worker.dataflow::<u64, _, _>(|scope| {
            scope.input_from(&mut input).broadcast().inspect(move |(process, table): &Report| {
                if !first_of_process {
                    return;
                }
                if let Err(e) = keeper.heard_from(*process, table) {
                    eprintln!("saams: {e}");
                }
            });
        });
        let sends = (processes > 1 && first_of_process).then_some((me / per_process.max(1)) as u64);
        let hops = AnswerHops::build(worker, devices.clone(), plan);
        DeviceReports { input, devices, sends, last: None, hops }
    }

    /// Hand on the devices' answers this process holds ([`AnswerHops::send`]): what the job's
    /// end, whose tables were sent, still does.
    pub fn hand_on(&mut self) {
        self.hops.send();
    }

    /// Send the devices' answers waiting to cross to another process ([`AnswerHops::send`]),
    /// and this process' table if it is this worker's to send and [`REPORT_MS`] have passed
    /// (`now`: send it whatever the time, as the input ends).
    pub fn send(&mut self, now: bool) {
        self.hops.send();
        let Some(process) = self.sends else { return };
        if !now && self.last.is_some_and(|t| t.elapsed() < Duration::from_millis(REPORT_MS)) {
            return;
        }
        self.last = Some(Instant::now());
        self.input.send((process, self.devices.report().to_string()));
        // Advanced, not only flushed: the broadcast holds its buffer until the time moves on.
        let next = self.input.time() + 1;
        self.input.advance_to(next);
    }
}
