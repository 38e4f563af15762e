//! The cloud's side of a device's answer ([`super::asks`]): handed on to whoever waits (the
//! HTTP client, the output) as soon as it comes, instead of waiting for the cloud's progress.
//!
//! Why it may: the device answered from its state at the ask's fence, once no value of a window
//! before the fence could still come to it, so the answer is final when it arrives; the cloud
//! adds nothing to it (its own state of the synopsis is only a query view). Sent through the
//! tuple input to the synopsis' home instead, it waited in the input's buffer until the
//! reader's epoch moved on, which it does not while every device is quiet.
//!
//! How: the process' workers share one table ([`DeviceReplies`], in every worker's plan) where
//! the synopsis' home keeps the asks it made waiting. When the home is in the reader's process,
//! the reader takes the ask out and hands the answer on ([`Relay::deliver`]) with the line the
//! home would have written (the same output line, at the ask's input time, or at the newest
//! checkpoint boundary the process copied its table at if later, so that a restart hands it
//! on again exactly when its line is after the cut: [`saams_operators::device_replies`]). An
//! answer that came before its ask is met by the home, which leaves the pair ready; the
//! process' next worker to go round hands it on the same way ([`Relay::hand_on_ready`]). Every answer line names the device
//! that answered ([`super::devices::Devices::name_answer`]). Across processes ([`Hop`]), through a dataflow of its own
//! ([`super::hops`]) that is advanced after every send and acts on arrival:
//! - a synopsis homed in another process: the answer goes to the home, whose process' table
//!   holds the ask, and is handed on there ([`Relay::arrived`]);
//! - a client waiting in another process: the line is written to the output where it is handed
//!   on, and its body goes to the worker that took the request, whose process' hub replies.

use std::sync::{Arc, Mutex, OnceLock};

use saams::api::estimation::Estimation;
use saams_operators::Plan;
use saams_operators::answer::hand_on;
use saams_operators::ask::{Ask, DeviceAnswer, split_reply};
use saams_operators::device_replies::{Came, DeviceReplies, Ready};
use serde::{Deserialize, Serialize};

/// Writes an answer line (untagged) of device `device` to the output at input time `time`
/// with the checkpoint boundary `open` (the job's sink): `write((time, open), device, line)`.
pub type Write = Box<dyn Fn((u64, Option<u64>), &str, &str) + Send + Sync>;

/// Gives an answer line's body to the client waiting in this process with `ticket` (the hub).
pub type Reply = Box<dyn Fn(u64, String) + Send + Sync>;

/// Where the lines of devices' answers go in a process.
pub struct Outlets {
    /// To the output.
    pub write: Write,
    /// To the client waiting here.
    pub reply: Reply,
}

/// What crosses to a worker of another process ([`super::hops`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Hop {
    /// A device's answer for the home worker of the synopsis it answers (where the ask waits).
    Answer {
        /// The synopsis' home worker.
        home: u32,
        /// The input time it was read at (its line goes at its ask's: `device_replies`).
        time: u64,
        /// The ask it answers.
        id: u64,
        /// The synopsis.
        syn: u32,
        /// The device's answer.
        answer: DeviceAnswer,
    },
    /// The body of an answer line for the client a worker took.
    Reply {
        /// The worker that took the request.
        worker: u32,
        /// Its ticket there.
        ticket: u64,
        /// The answer line's body.
        body: String,
    },
}

impl Hop {
    /// The worker it goes to.
    pub fn target(&self) -> u32 {
        match self {
            Hop::Answer { home, .. } => *home,
            Hop::Reply { worker, .. } => *worker,
        }
    }
}

/// One process' devices' answers and where they go.
#[derive(Default)]
pub struct Relay {
    replies: Arc<DeviceReplies>,
    outlets: OnceLock<Outlets>,
    /// This process' index and the job's workers per process.
    shape: OnceLock<(u64, u64)>,
    /// Hops to other processes, sent by the next worker of this process to send
    /// ([`super::hops::AnswerHops::send`]).
    outbox: Mutex<Vec<Hop>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay").field("replies", &self.replies).finish_non_exhaustive()
    }
}

/// What became of a device's answer admitted by the reader ([`Relay::admit`]).
pub enum Admitted {
    /// The line to hand on now ([`Relay::deliver`]), and the input time to write it at when
    /// that is not the reader's: the ask's, or the boundary the process last copied its table
    /// at if later ([`saams_operators::device_replies`]; the end of the input for the script's
    /// asks).
    Now(String, Option<u64>),
    /// Kept here until the home makes its ask.
    Kept,
    /// For the synopsis' home in another process ([`Relay::send_home`]): the answer back.
    Elsewhere(DeviceAnswer),
}

impl Relay {
    /// The table the process' plans share.
    pub fn replies(&self) -> Arc<DeviceReplies> {
        self.replies.clone()
    }

    /// Where answers go, in process `process` of a job of `per_process` workers per process
    /// (set once, when the dataflow is built; a second call is ignored).
    pub fn outlets(&self, outlets: Outlets, (process, per_process): (u64, u64)) {
        let _ = self.outlets.set(outlets);
        let _ = self.shape.set((process, per_process.max(1)));
    }

    /// True when `worker` is in this process.
    fn is_here(&self, worker: u32) -> bool {
        let (process, per_process) = self.shape.get().copied().unwrap_or((0, u64::MAX));
        u64::from(worker) / per_process == process
    }

    /// A device's answer to ask `id` of synopsis `syn` (homed on worker `home`), read by a
    /// worker of this process.
    ///
    /// # Errors
    /// A replay: the device answered that ask already (it restarted after answering).
    pub fn admit(
        &self,
        plan: &Plan,
        (id, syn, home): (u64, u32, u32),
        answer: DeviceAnswer,
    ) -> Result<Admitted, String> {
        if !self.is_here(home) {
            return Ok(Admitted::Elsewhere(answer));
        }
        let device = answer.device.clone();
        match self.replies.answer_came(id, syn, answer) {
            Came::Ask(both, at) => Ok(Admitted::Now(hand_on(plan, &both.0, (syn, &both.1)), Some(at))),
            Came::Kept => Ok(Admitted::Kept),
            Came::Replayed => Err(format!(
                "replayed: {device} answered ask {id} again, or after it was given up on; it was answered once"
            )),
        }
    }

    /// Send a device's answer to ask `id` of synopsis `syn` to its home worker `home` in another
    /// process ([`Admitted::Elsewhere`]), read at input time `time`.
    pub fn send_home(&self, time: u64, (id, syn, home): (u64, u32, u32), answer: DeviceAnswer) {
        self.outbox.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(Hop::Answer {
            home,
            time,
            id,
            syn,
            answer,
        });
    }

    /// The hops waiting to be sent.
    pub fn take_hops(&self) -> Vec<Hop> {
        std::mem::take(&mut *self.outbox.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Hand `line` (device `device`'s answer, tagged for whoever waits) on: written to the
    /// output here at input time `time`, checkpoint boundary `open`, and to the waiting client,
    /// here or in its process.
    pub fn deliver(&self, (time, open): (u64, Option<u64>), device: &str, line: &str) {
        let Some(outlets) = self.outlets.get() else {
            eprintln!("saams: a device's answer with nowhere to go (no dataflow yet): {line}");
            return;
        };
        let (origin, body) = split_reply(line);
        (outlets.write)((time, open), device, body);
        match origin {
            Some((worker, ticket)) if self.is_here(worker) => (outlets.reply)(ticket, body.to_string()),
            Some((worker, ticket)) => self
                .outbox
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(Hop::Reply { worker, ticket, body: body.to_string() }),
            None => {}
        }
    }

    /// Hand on the asks of this process' homes met by answers that came first
    /// ([`DeviceReplies::take_ready`]; `plan`: the calling worker's).
    pub fn hand_on_ready(&self, plan: &Plan) {
        for ready in self.replies.take_ready() {
            self.hand_on(plan, ready);
        }
    }

    /// Hand on `answer` to `ask` (of synopsis `syn`, met at input time `time`): a SAVE's
    /// snapshot written, the line to the output and to whoever waits.
    fn hand_on(&self, plan: &Plan, (time, ask, syn, answer): Ready) {
        let line = hand_on(plan, &ask, (syn, &answer));
        let open = plan.checkpoints.borrow().boundaries.keys().next().copied();
        self.deliver((time, open), &answer.device, &line);
    }

    /// Hand on, in place of the answer, an error line for each ask waiting here that `owed`
    /// says will not be answered: `owed(ask)` gives the device that owes it and why it gave no
    /// answer (it left, the job ending). The ask is then answered (its device's answer, should it
    /// still come, is dropped as a replay: [`DeviceReplies::give_up`]). Returns the devices of
    /// the asks given up, one entry per ask.
    pub fn give_up(&self, plan: &Plan, owed: impl Fn(&Ask) -> Option<(String, String)>) -> Vec<String> {
        let instead = |ask: &Ask, (device, why): &(String, String)| {
            let line = Estimation::error(ask.request_id.clone(), ask.uid.clone(), 0, why.clone()).to_json_line();
            DeviceAnswer { device: device.clone(), line, saved: None }
        };
        let given = self.replies.give_up(owed, instead);
        let mut devices = Vec::with_capacity(given.len());
        for (pair, (device, why)) in given {
            eprintln!("saams: ask {} (request {}) not answered: {why}", pair.1.id, pair.1.request_id);
            devices.push(device);
            // Written at the ask's own time (the end's for the script's asks, which name no
            // devices), or the boundary the process last copied its table at if later.
            self.hand_on(plan, pair);
        }
        devices
    }

    /// A hop from another process arrived at its worker here (`plan`: that worker's).
    pub fn arrived(&self, plan: &Plan, hop: Hop) {
        match hop {
            Hop::Answer { id, syn, answer, .. } => {
                let device = answer.device.clone();
                match self.replies.answer_came(id, syn, answer) {
                    Came::Ask(both, at) => self.hand_on(plan, (at, both.0, syn, both.1)),
                    // Ready when the home's ask comes (`DeviceReplies::ask_made`).
                    Came::Kept => {}
                    Came::Replayed => saams_operators::device_part::refuse(&format!(
                        "device {device} answered ask {id} again: dropped"
                    )),
                }
            }
            Hop::Reply { ticket, body, .. } => {
                if let Some(outlets) = self.outlets.get() {
                    (outlets.reply)(ticket, body);
                }
            }
        }
    }
}
