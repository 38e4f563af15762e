//! Where a device's answer ([`crate::ask::DeviceAnswer`]) meets the ask it answers, shared by a
//! process' workers: the synopsis' home puts the asks it keeps waiting here, and the answer is
//! handed on from here as soon as it comes, by the worker reading the device's partition when
//! the home is in its process, else by the home's process' worker it is sent to (the jobs
//! crate's `edge::hops`).
//!
//! Why outside the dataflow: the device answered from its state at the ask's fence, which is
//! exact whenever it comes, so nothing in the cloud needs to wait for it. Sent through the tuple
//! input, the answer waited in the input's buffer until the reading worker's epoch moved on,
//! which a quiet input (every device idle) never does: the client got a 504.
//!
//! Exactly once: an answer is handed on once per ask, when the second of ask and answer comes:
//! the answer's side takes the waiting ask out and hands it on; the home, when the answer came
//! first, leaves the pair *ready* here ([`DeviceReplies::take_ready`]), for the process' relay to
//! hand on as it hands on every answer (one place names the answering device in the output).
//! Ids of asks answered are kept (bounded), so a device restarted after it answered, answering
//! again, is dropped.
//!
//! Exactly one answer also when the device never gives one: the jobs crate gives up on the asks
//! a device owes when it says goodbye without answering, and at the job's end on every ask still
//! waiting
//! ([`DeviceReplies::give_up`]), and hands on an error line in place of the answer; the ask is
//! then noted answered, so an answer coming after it is dropped as a replay is.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use crate::ask::{Ask, DeviceAnswer};

mod checkpoint;
pub use checkpoint::{RepliesCopy, RestoredReplies};

/// Answers kept for asks not seen yet, and ids of asks answered kept to drop replays: beyond
/// this many, the oldest go (an answer to an ask this job never made, e.g. one it refused,
/// would be kept for ever).
const KEPT: usize = 1024;

/// Asks waiting for their device's answer, answers waiting for their ask, asks answered, and
/// asks met by their answers to hand on.
#[derive(Default, Debug)]
struct Table {
    /// Each with the input time it was made at.
    waiting: HashMap<u64, (Ask, u64)>,
    early: BTreeMap<u64, (u32, Box<DeviceAnswer>)>,
    answered: BTreeSet<u64>,
    ready: Vec<Ready>,
}

/// An ask met by its device's answer, to hand on: the input time the home made the ask at, the
/// ask, the synopsis the device answered for and its answer.
pub type Ready = (u64, Ask, u32, DeviceAnswer);

/// What became of a device's answer handed to [`DeviceReplies::answer_came`].
#[derive(Debug, PartialEq)]
pub enum Came {
    /// Its ask waited here (now taken out): hand the answer on now. With the input time the
    /// ask was made at.
    Ask(Box<(Ask, DeviceAnswer)>, u64),
    /// Kept until its ask comes (then ready: [`DeviceReplies::take_ready`]).
    Kept,
    /// Its ask was answered already: a replay, dropped.
    Replayed,
}

/// The asks of synopses resident on devices and the devices' answers, of one process.
///
/// ```
/// use saams_operators::ask::{Ask, AskWhat, DeviceAnswer};
/// use saams_operators::device_replies::{Came, DeviceReplies};
/// let ask = Ask { id: 5, syn: 0, home: 0, spread: false, request_id: serde_json::json!(1), uid: None,
///                 what: AskWhat::Query(serde_json::json!([1])), origin: Some((0, 3)), device_answers: true };
/// let answer = || DeviceAnswer { device: "pi".into(), line: "{}".into(), saved: None };
/// let replies = DeviceReplies::default();
/// replies.ask_made(&ask, 100); // it waits
/// assert!(replies.take_ready().is_empty());
/// assert_eq!(replies.answer_came(5, 0, answer()), Came::Ask(Box::new((ask.clone(), answer())), 100));
/// assert_eq!(replies.answer_came(5, 0, answer()), Came::Replayed); // the device answered again
/// // The answer first: the ask, made at input time 200, takes it, ready to hand on.
/// assert_eq!(replies.answer_came(6, 0, answer()), Came::Kept);
/// replies.ask_made(&Ask { id: 6, ..ask.clone() }, 200);
/// assert_eq!(replies.take_ready(), vec![(200, Ask { id: 6, ..ask }, 0, answer())]);
/// ```
#[derive(Default, Debug)]
pub struct DeviceReplies {
    table: Mutex<Table>,
}

impl DeviceReplies {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // Every operation leaves the table consistent.
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The home made `ask` (its device answers it) at input time `time`: ready with the
    /// device's answer if it came already ([`DeviceReplies::take_ready`]), else it waits here.
    pub fn ask_made(&self, ask: &Ask, time: u64) {
        let mut t = self.lock();
        match t.early.remove(&ask.id) {
            Some((syn, answer)) => {
                answered(&mut t, ask.id);
                t.ready.push((time, ask.clone(), syn, *answer));
            }
            None => {
                t.waiting.insert(ask.id, (ask.clone(), time));
            }
        }
    }

    /// The asks met by their answers since the last call, to hand on.
    pub fn take_ready(&self) -> Vec<Ready> {
        std::mem::take(&mut self.lock().ready)
    }

    /// A device answered ask `id` (for synopsis `syn`): see [`Came`].
    pub fn answer_came(&self, id: u64, syn: u32, answer: DeviceAnswer) -> Came {
        let mut t = self.lock();
        if t.answered.contains(&id) {
            return Came::Replayed;
        }
        if let Some((ask, made)) = t.waiting.remove(&id) {
            answered(&mut t, id);
            return Came::Ask(Box::new((ask, answer)), made);
        }
        t.early.insert(id, (syn, Box::new(answer)));
        while t.early.len() > KEPT {
            t.early.pop_first();
        }
        Came::Kept
    }

    /// The ask `id` still waiting, left waiting (who waits for it: its origin).
    pub fn waiting(&self, id: u64) -> Option<Ask> {
        self.lock().waiting.get(&id).map(|(ask, _)| ask.clone())
    }

    /// The synopses of the asks waiting (one entry per ask): which devices owe answers.
    pub fn waiting_synopses(&self) -> Vec<u32> {
        self.lock().waiting.values().map(|(ask, _)| ask.syn).collect()
    }

    /// Give up on each waiting ask for which `why` gives a reason (its device left, the job
    /// ends): taken out and noted answered, so its device's answer, should it still come, is
    /// dropped as a replay ([`Came::Replayed`]). Returned with the input time each was made at
    /// and the reason, for the caller to hand an error line on in place of the answer.
    ///
    /// ```
    /// use saams_operators::ask::{Ask, AskWhat, DeviceAnswer};
    /// use saams_operators::device_replies::{Came, DeviceReplies};
    /// let ask = Ask { id: 5, syn: 0, home: 0, spread: false, request_id: serde_json::json!(1), uid: None,
    ///                 what: AskWhat::Query(serde_json::json!([1])), origin: None, device_answers: true };
    /// let replies = DeviceReplies::default();
    /// replies.ask_made(&ask, 100);
    /// replies.ask_made(&Ask { id: 6, syn: 1, ..ask.clone() }, 200);
    /// let gone = replies.give_up(|a| (a.syn == 0).then(|| "pi is gone".to_string()));
    /// assert_eq!(gone, vec![(100, ask.clone(), "pi is gone".to_string())]);
    /// assert_eq!(replies.waiting_synopses(), vec![1]); // the other still waits
    /// let late = DeviceAnswer { device: "pi".into(), line: "{}".into(), saved: None };
    /// assert_eq!(replies.answer_came(5, 0, late), Came::Replayed); // dropped: answered with the error
    /// ```
    pub fn give_up<R>(&self, why: impl Fn(&Ask) -> Option<R>) -> Vec<(u64, Ask, R)> {
        let mut t = self.lock();
        let mut reasons: Vec<(u64, R)> =
            t.waiting.iter().filter_map(|(&id, (ask, _))| why(ask).map(|reason| (id, reason))).collect();
        // In the order they were made (the table is a hash map).
        reasons.sort_unstable_by_key(|&(id, _)| id);
        let mut out = Vec::with_capacity(reasons.len());
        for (id, reason) in reasons {
            if let Some((ask, made)) = t.waiting.remove(&id) {
                answered(&mut t, id);
                out.push((made, ask, reason));
            }
        }
        out
    }
}

/// Note ask `id` answered (the oldest ids beyond [`KEPT`] go).
fn answered(t: &mut Table, id: u64) {
    t.answered.insert(id);
    while t.answered.len() > KEPT {
        t.answered.pop_first();
    }
}
