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
//! again, is dropped, and an ask made again for an id answered (a resumed job applying its
//! logged requests again) does not wait.
//!
//! Where each line goes in the output: at the input time its ask was made at, or at the newest
//! checkpoint boundary a worker of the process copied the table at ([`DeviceReplies::copy_at`])
//! if that is later. So a line handed on after some worker's copy at `b` is after `b`'s cut, and
//! the table keeps each answer handed on with its line's time, which a later copy at `b` (the
//! process' last, the one a resumed job starts from) carries as a pair to hand on again
//! (`checkpoint`): a restart neither loses such a line nor writes one twice.
//!
//! How long an answer handed on is kept: only in a job with checkpoints
//! ([`DeviceReplies::copied_by`]; nothing else reads them), and there until every worker of the
//! process has copied the table at a boundary after its line's time. A worker's next copy is at
//! a later boundary than its last, and a copy at `b` carries only the answers whose lines are at
//! or after `b`, so no copy can still need an answer whose line is before the oldest of the
//! workers' last boundaries ([`DeviceReplies::kept_handed`]). No count caps them: dropping one a
//! copy still needs loses its line in a restart.
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
/// would be kept for ever). Answers handed on are not capped (see the module doc).
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
    /// Answers handed on (an error given instead included), by ask id, each with its line's
    /// time: a copy at a boundary at or before that time carries them as ready pairs. Kept only
    /// while a copy may still need them (see the module doc).
    handed: BTreeMap<u64, Ready>,
    /// The newest boundary a worker of the process copied the table at (0: none).
    copied_through: u64,
    /// A job with checkpoints: the workers that copy the table; `None`: nobody copies it, so
    /// no answer handed on is kept.
    copiers: Option<Copiers>,
}

/// The workers of a process that copy its table at every checkpoint boundary, and the boundary
/// each copied it at last.
#[derive(Debug)]
struct Copiers {
    /// How many workers the process has: until each has copied once, none is past any boundary.
    workers: usize,
    /// By worker: the boundary of its last copy.
    last: BTreeMap<usize, u64>,
}

impl Copiers {
    /// The oldest boundary a worker of the process copied the table at last (0 while some worker
    /// has not copied it yet): every later copy is at a boundary after it.
    fn floor(&self) -> u64 {
        if self.last.len() < self.workers {
            return 0;
        }
        self.last.values().copied().min().unwrap_or(0)
    }
}

/// An ask met by its device's answer, to hand on: the input time to write its line at (the
/// one the home made the ask at, or a later boundary: see the module doc), the ask, the synopsis
/// the device answered for and its answer.
pub type Ready = (u64, Ask, u32, DeviceAnswer);

/// What became of a device's answer handed to [`DeviceReplies::answer_came`].
#[derive(Debug, PartialEq)]
pub enum Came {
    /// Its ask waited here (now taken out): hand the answer on now. With the input time to
    /// write its line at (the ask's, or a later boundary: see the module doc).
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

    /// A job with checkpoints: the process' `workers` workers each copy the table at every
    /// checkpoint boundary ([`DeviceReplies::copy_at`]), so the answers handed on are kept until
    /// every worker has copied the table past their lines (see the module doc). Without this
    /// call none is kept: nothing would read them.
    ///
    /// ```
    /// use saams_operators::ask::{Ask, AskWhat, DeviceAnswer};
    /// use saams_operators::device_replies::DeviceReplies;
    /// let ask = |id| Ask { id, syn: 0, home: 0, spread: false, request_id: serde_json::json!(1), uid: None,
    ///                      what: AskWhat::Query(serde_json::json!([1])), origin: None, device_answers: true };
    /// let answer = || DeviceAnswer { device: "pi".into(), line: "{}".into(), saved: None };
    /// let (plain, checkpointed) = (DeviceReplies::default(), DeviceReplies::default());
    /// checkpointed.copied_by(2);
    /// for replies in [&plain, &checkpointed] {
    ///     replies.ask_made(&ask(1), 100);
    ///     replies.answer_came(1, 0, answer());
    /// }
    /// assert_eq!((plain.kept_handed(), checkpointed.kept_handed()), (0, 1));
    /// checkpointed.copy_at(0, 60_000);
    /// assert_eq!(checkpointed.kept_handed(), 1, "worker 1 may still copy at a boundary before its line");
    /// checkpointed.copy_at(1, 60_000);
    /// assert_eq!(checkpointed.kept_handed(), 0, "both copied past it");
    /// ```
    pub fn copied_by(&self, workers: usize) {
        let mut t = self.lock();
        if t.copiers.is_none() {
            t.copiers = Some(Copiers { workers: workers.max(1), last: BTreeMap::new() });
        }
    }

    /// How many answers handed on the table keeps for later copies (see the module doc).
    pub fn kept_handed(&self) -> usize {
        self.lock().handed.len()
    }

    /// The home made `ask` (its device answers it) at input time `time`: ready with the
    /// device's answer if it came already ([`DeviceReplies::take_ready`]), else it waits here.
    /// Nothing for an ask answered already: made again by a resumed job that applies its logged
    /// requests again, its line is before the checkpoint's cut or handed on again from the
    /// restored table's ready pairs.
    ///
    /// ```
    /// use saams_operators::ask::{Ask, AskWhat, DeviceAnswer};
    /// use saams_operators::device_replies::{Came, DeviceReplies};
    /// let ask = Ask { id: 5, syn: 0, home: 0, spread: false, request_id: serde_json::json!(1), uid: None,
    ///                 what: AskWhat::Query(serde_json::json!([1])), origin: None, device_answers: true };
    /// let replies = DeviceReplies::default();
    /// replies.ask_made(&ask, 100);
    /// let answer = DeviceAnswer { device: "pi".into(), line: "{}".into(), saved: None };
    /// assert!(matches!(replies.answer_came(5, 0, answer), Came::Ask(..)));
    /// replies.ask_made(&ask, 100); // made again: it does not wait
    /// assert_eq!((replies.waiting(5), replies.take_ready().len()), (None, 0));
    /// ```
    pub fn ask_made(&self, ask: &Ask, time: u64) {
        let mut t = self.lock();
        if t.answered.contains(&ask.id) {
            return;
        }
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

    /// The asks met by their answers since the last call, to hand on (each at its line's time:
    /// see the module doc).
    pub fn take_ready(&self) -> Vec<Ready> {
        let mut t = self.lock();
        let through = t.copied_through;
        let ready: Vec<Ready> = std::mem::take(&mut t.ready)
            .into_iter()
            .map(|(made, ask, syn, answer)| (made.max(through), ask, syn, answer))
            .collect();
        for r in &ready {
            handed(&mut t, r.clone());
        }
        ready
    }

    /// A device answered ask `id` (for synopsis `syn`): see [`Came`].
    pub fn answer_came(&self, id: u64, syn: u32, answer: DeviceAnswer) -> Came {
        let mut t = self.lock();
        if t.answered.contains(&id) {
            return Came::Replayed;
        }
        if let Some((ask, made)) = t.waiting.remove(&id) {
            answered(&mut t, id);
            let at = made.max(t.copied_through);
            handed(&mut t, (at, ask.clone(), syn, answer.clone()));
            return Came::Ask(Box::new((ask, answer)), at);
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
    /// dropped as a replay ([`Came::Replayed`]). Returned as pairs to hand on, each with the
    /// answer `instead` makes in place of the device's (an error line) and the reason; the table
    /// keeps them as handed on (see the module doc).
    ///
    /// ```
    /// use saams_operators::ask::{Ask, AskWhat, DeviceAnswer};
    /// use saams_operators::device_replies::{Came, DeviceReplies};
    /// let ask = Ask { id: 5, syn: 0, home: 0, spread: false, request_id: serde_json::json!(1), uid: None,
    ///                 what: AskWhat::Query(serde_json::json!([1])), origin: None, device_answers: true };
    /// let replies = DeviceReplies::default();
    /// replies.ask_made(&ask, 100);
    /// replies.ask_made(&Ask { id: 6, syn: 1, ..ask.clone() }, 200);
    /// let error = |_: &Ask, why: &String| DeviceAnswer { device: "pi".into(), line: why.clone(), saved: None };
    /// let gone = replies.give_up(|a| (a.syn == 0).then(|| "pi is gone".to_string()), error);
    /// assert_eq!(gone, vec![((100, ask.clone(), 0, error(&ask, &"pi is gone".into())), "pi is gone".to_string())]);
    /// assert_eq!(replies.waiting_synopses(), vec![1]); // the other still waits
    /// let late = DeviceAnswer { device: "pi".into(), line: "{}".into(), saved: None };
    /// assert_eq!(replies.answer_came(5, 0, late), Came::Replayed); // dropped: answered with the error
    /// ```
    pub fn give_up<R>(
        &self,
        why: impl Fn(&Ask) -> Option<R>,
        instead: impl Fn(&Ask, &R) -> DeviceAnswer,
    ) -> Vec<(Ready, R)> {
        let mut t = self.lock();
        let mut reasons: Vec<(u64, R)> =
            t.waiting.iter().filter_map(|(&id, (ask, _))| why(ask).map(|reason| (id, reason))).collect();
        // In the order they were made (the table is a hash map).
        reasons.sort_unstable_by_key(|&(id, _)| id);
        let mut out = Vec::with_capacity(reasons.len());
        for (id, reason) in reasons {
            if let Some((ask, made)) = t.waiting.remove(&id) {
                answered(&mut t, id);
                let pair = (made.max(t.copied_through), ask.clone(), ask.syn, instead(&ask, &reason));
                handed(&mut t, pair.clone());
                out.push((pair, reason));
            }
        }
        out
    }
}

/// Keep the pair `ready` handed on, when a later copy may carry it: in a job with checkpoints
/// (its line is at or after the newest boundary copied at, so no worker is past it yet).
fn handed(t: &mut Table, ready: Ready) {
    if t.copiers.is_some() {
        t.handed.insert(ready.1.id, ready);
    }
}

/// Note ask `id` answered (the oldest ids beyond [`KEPT`] go).
fn answered(t: &mut Table, id: u64) {
    t.answered.insert(id);
    while t.answered.len() > KEPT {
        t.answered.pop_first();
    }
}
