//! The cloud's side of a device's answer ([`super::asks`]): handed on to whoever waits (the
//! HTTP client, the output) by the worker that reads it from the partials topic, as soon as it
//! comes, instead of waiting for the cloud's progress.
//!
//! Why it may: the device answered from its state at the ask's fence, once no value of a window
//! before the fence could still come to it, so the answer is final when it arrives; the cloud
//! adds nothing to it (its own state of the synopsis is only a query view). Sent through the
//! tuple input to the synopsis' home instead, it waited in the input's buffer until the
//! reader's epoch moved on, which it does not while every device is quiet.
//!
//! How: the process' workers share one table ([`DeviceReplies`], in every worker's plan) where
//! the synopsis' home keeps the asks it made waiting. The reader takes the ask out and hands the
//! answer on ([`Relay::deliver`]) with the line the home would have written (the same output
//! line, at the same place: the reader's input time, as the home's line had). Only what cannot
//! be handed on in this process still goes through the dataflow to the home: a synopsis homed
//! in another process, or an ask taken by another process (its client waits there).

use std::sync::{Arc, OnceLock};

use saams_operators::Plan;
use saams_operators::answer::hand_on;
use saams_operators::ask::{Ask, AskWhat, DeviceAnswer};
use saams_operators::device_replies::{Came, DeviceReplies};
use serde_json::Value as Json;

/// Writes one answer line, tagged for whoever waits ([`saams_operators::ask::reply_line`]), at
/// input time `time` with the checkpoint boundary `open` (the job's sink and hub).
pub type Deliver = Box<dyn Fn(u64, Option<u64>, &str) + Send + Sync>;

/// One process' devices' answers and where they go.
#[derive(Default)]
pub struct Relay {
    replies: Arc<DeviceReplies>,
    deliver: OnceLock<Deliver>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay").field("replies", &self.replies).finish_non_exhaustive()
    }
}

/// What became of a device's answer admitted by the reader ([`Relay::admit`]).
pub enum Admitted {
    /// The line to hand on now ([`Relay::deliver`]).
    Now(String),
    /// Kept here until the home makes its ask.
    Kept,
    /// To the synopsis' home through the dataflow, as an ask record.
    ToHome(Ask),
}

impl Relay {
    /// The table the process' plans share.
    pub fn replies(&self) -> Arc<DeviceReplies> {
        self.replies.clone()
    }

    /// Where answers go (set once, when the dataflow is built; a second call is ignored).
    pub fn deliver_with(&self, deliver: Deliver) {
        let _ = self.deliver.set(deliver);
    }

    /// A device's answer to ask `id` of synopsis `syn` (homed on worker `home`), read by a
    /// worker of process `process` (`plan`'s workers per process).
    ///
    /// # Errors
    /// A replay: the device answered that ask already (it restarted after answering).
    pub fn admit(
        &self,
        plan: &Plan,
        process: u64,
        (id, syn, home): (u64, u32, u32),
        answer: DeviceAnswer,
    ) -> Result<Admitted, String> {
        let per_process = plan.routing.workers_per_process.max(1) as u64;
        let here = |worker: u32| u64::from(worker) / per_process == process;
        let waits_here = self.replies.waiting(id).is_none_or(|a| a.origin.is_none_or(|(w, _)| here(w)));
        if !here(home) || !waits_here {
            return Ok(Admitted::ToHome(to_home(id, syn, home, answer)));
        }
        let device = answer.device.clone();
        match self.replies.answer_came(id, syn, answer) {
            Came::Ask(both) => Ok(Admitted::Now(hand_on(plan, &both.0, (syn, &both.1)))),
            Came::Kept => Ok(Admitted::Kept),
            Came::Replayed => Err(format!("replayed: {device} answered ask {id} again; it was handed on once")),
        }
    }

    /// Hand `line` on (written at input time `time`, checkpoint boundary `open`).
    pub fn deliver(&self, time: u64, open: Option<u64>, line: &str) {
        match self.deliver.get() {
            Some(deliver) => deliver(time, open, line),
            None => eprintln!("saams: a device's answer with nowhere to go (no dataflow yet): {line}"),
        }
    }
}

/// The ask record that carries a device's answer to the synopsis' home.
fn to_home(id: u64, syn: u32, home: u32, answer: DeviceAnswer) -> Ask {
    Ask {
        id,
        syn,
        home,
        spread: false,
        request_id: Json::Null,
        uid: None,
        what: AskWhat::Answered(Box::new(answer)),
        origin: None,
        device_answers: false,
    }
}
