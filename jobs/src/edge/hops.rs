//! Devices' answers crossing processes ([`super::relay::Hop`]): a dataflow of its own from
//! every worker to every worker, exchanged by the hop's target worker, acted on as each hop
//! arrives ([`super::relay::Relay::arrived`]).
//!
//! Why not the tuple input: a record given to an input handle reaches another worker only when
//! the handle is flushed *and* the exchange after it is flushed, which timely does when the
//! handle's epoch advances; the tuple input's epoch follows the devices' data, which does not
//! move while they are quiet (the answer waited, and the client got a 504). Here each send is
//! followed by an advance of this input's own epoch, which nothing else waits for, and the
//! receiving operator acts on arrival, not on the frontier.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use saams_operators::Plan;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::InputHandle;
use timely::dataflow::operators::{Exchange, Input, Inspect};
use timely::worker::Worker;

use super::devices::Devices;
use super::relay::Hop;

/// One worker's end of the hops between processes.
pub struct AnswerHops {
    input: InputHandle<u64, CapacityContainerBuilder<Vec<Hop>>>,
    devices: Arc<Devices>,
    plan: Rc<RefCell<Plan>>,
}

impl AnswerHops {
    /// Build the dataflow (every worker of every process does, in the same order as the job's
    /// other dataflows); hops arriving at this worker are handed to its process' relay with
    /// this worker's `plan`.
    pub fn build(worker: &mut Worker, devices: Arc<Devices>, plan: &Rc<RefCell<Plan>>) -> Self {
        let mut input = InputHandle::new();
        let (relay, at) = (devices.clone(), plan.clone());
        worker.dataflow::<u64, _, _>(|scope| {
            scope
                .input_from(&mut input)
                .exchange(|hop: &Hop| u64::from(hop.target()))
                .inspect(move |hop: &Hop| relay.relay().arrived(&at.borrow(), hop.clone()));
        });
        AnswerHops { input, devices, plan: plan.clone() }
    }

    /// Hand on the asks this process' homes met with answers that came first, then send the
    /// hops this process' relay holds (any worker of the process may: each goes to its target),
    /// and advance so that they leave now.
    pub fn send(&mut self) {
        self.devices.relay().hand_on_ready(&self.plan.borrow());
        let hops = self.devices.relay().take_hops();
        if hops.is_empty() {
            return;
        }
        for hop in hops {
            self.input.send(hop);
        }
        let next = self.input.time() + 1;
        self.input.advance_to(next);
    }
}
