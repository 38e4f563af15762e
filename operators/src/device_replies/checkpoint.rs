//! The durable part of a process' table of devices' replies ([`super::DeviceReplies`]) in its
//! checkpoints, and the table a resumed process starts from.
//!
//! Why it must be kept: an ad-hoc query or SAVE of a synopsis resident on a device is answered
//! by the device, whenever it comes; the ask waits in the table meanwhile. A job restarted from
//! a checkpoint does not make the asks of the live requests before its cut again (their
//! requests are applied again from the request log, their asks were made), so without the
//! table the device's answer found no ask (kept for ever, never handed on), and an answer
//! handed on before the cut, sent again by the device, was not known as a replay.
//!
//! What a copy at boundary `b` holds ([`DeviceReplies::copy_at`]):
//! - the asks waiting, except those of the script's end (made at the end of the input, made
//!   again there by a resumed job);
//! - the answers that came before their asks (an answer read before the partials topic's
//!   checkpointed position is not read again);
//! - the ids of the asks answered (the last 1024), so a device answering again after the
//!   restart is dropped as a replay;
//! - the asks met by their answers whose lines go after the cut: those not handed on yet (each
//!   at `b` if it was made before: from this copy on, the process hands it on there,
//!   [`DeviceReplies::take_ready`]), and those handed on with a line at or after `b` (handed on
//!   after another worker's copy at `b`): a resumed job hands them on again, their lines being
//!   after the cut. Their ids are among those answered, so the device's answer read again is a
//!   replay, and the ask a resumed job makes again for its request finds it answered
//!   ([`DeviceReplies::ask_made`]);
//! - the ids of the asks of live requests fenced after `b` that a worker *sent* before `b`
//!   (an ordinary ad-hoc query's or SAVE's: their answer lines are before the cut): a resumed
//!   job, which applies those requests again from its request logs, does not make them again
//!   ([`RestoredReplies::sent_before`]). Unlike the rest, every worker's copy adds its own.
//!
//! Every worker of the process copies the table when it takes its part; the copies are
//! numbered in the order they were taken ([`RepliesCopy::taken`]), and a resumed job starts from
//! each process' last one: it was taken after every worker of that process had passed `b`, so
//! every ask made before `b` was made then. A job resumed with another shape gives each process
//! the asks and answers of the synopses its own plan homes on its workers, and every process
//! every id answered.
//!
//! # Layout (version [`VERSION`])
//!
//! Magic `SADR`, the version (u16), `taken` (u64), then five vectors, each a varint count and
//! its items: the waiting asks (the input time the ask was made at, u64; the ask as JSON text),
//! the early answers (ask id u64, synopsis u32, the answer), the ids answered (u64 each), the
//! ready pairs (input time u64, synopsis u32, the ask as JSON text, the answer), and the ids of
//! asks sent before the boundary (u64 each; version 2 on, version 1 read as none). An answer is
//! its device and line (strings), then a flag: 0, or 1 and a SAVE's file (a string) and bytes.
//! Strings and byte strings are a varint length and the bytes; integers little-endian. The part
//! that carries the bytes has a CRC of its own ([`saams::checkpoint`]).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use saams::codec::{Reader, Writer};

use super::{DeviceReplies, Ready, answered};
use crate::ask::{Ask, DeviceAnswer};

/// The four bytes a copy starts with.
const MAGIC: [u8; 4] = *b"SADR";
/// The layout this build writes (and the newest it reads; version 1 had no ids sent before).
pub const VERSION: u16 = 2;
/// An ask's input time when it was made at the end of the input (the script's end asks).
const AT_END: u64 = u64::MAX;

/// The order of the copies taken in this process.
static TAKEN: AtomicU64 = AtomicU64::new(0);

/// The durable part of a process' table, as one worker copied it at a checkpoint.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RepliesCopy {
    /// The copy's place among its process' copies: a later copy has a higher one.
    pub taken: u64,
    /// Asks waiting for their device's answer, each with the input time it was made at.
    pub waiting: Vec<(Ask, u64)>,
    /// Answers that came before their asks: (ask id, synopsis, answer).
    pub early: Vec<(u64, u32, DeviceAnswer)>,
    /// Ids of asks answered.
    pub answered: Vec<u64>,
    /// Asks met by their answers, to hand on after a restart.
    pub ready: Vec<Ready>,
    /// Ids of the asks of requests fenced after the boundary that were sent before it.
    pub sent_before: Vec<u64>,
}

impl DeviceReplies {
    /// Worker `worker`'s copy of the table at a checkpoint at `boundary` (see the module doc for
    /// what it holds). The answers handed on that no later copy needs go now
    /// ([`DeviceReplies::copied_by`]).
    ///
    /// ```
    /// use saams_operators::ask::{Ask, AskWhat, DeviceAnswer};
    /// use saams_operators::device_replies::DeviceReplies;
    /// let ask = Ask { id: 5, syn: 0, home: 0, spread: false, request_id: serde_json::json!(1), uid: None,
    ///                 what: AskWhat::Query(serde_json::json!([1])), origin: None, device_answers: true };
    /// let replies = DeviceReplies::default();
    /// replies.ask_made(&ask, 100);
    /// replies.ask_made(&Ask { id: 6, ..ask.clone() }, u64::MAX); // the script's, at the end
    /// let copy = replies.copy_at(0, 60_000);
    /// assert_eq!(copy.waiting, vec![(ask, 100)]);
    /// assert!(copy.taken < replies.copy_at(0, 60_000).taken);
    /// ```
    pub fn copy_at(&self, worker: usize, boundary: u64) -> RepliesCopy {
        let mut t = self.lock();
        t.copied_through = t.copied_through.max(boundary);
        if let Some(copiers) = t.copiers.as_mut() {
            copiers.last.insert(worker, boundary);
            // No later copy of any worker is at or before `floor` (see the module doc).
            let floor = copiers.floor();
            t.handed.retain(|_, (at, ..)| *at >= floor);
        }
        let mut waiting: Vec<(Ask, u64)> =
            t.waiting.values().filter(|(_, made)| *made != AT_END).map(|(ask, made)| (ask.clone(), *made)).collect();
        waiting.sort_by_key(|(ask, _)| ask.id);
        let not_handed = t.ready.iter().map(|(made, ask, syn, answer)| ((*made).max(boundary), ask, syn, answer));
        let handed_after =
            t.handed.values().filter(|(at, ..)| *at >= boundary).map(|(at, ask, syn, a)| (*at, ask, syn, a));
        RepliesCopy {
            taken: TAKEN.fetch_add(1, Ordering::Relaxed),
            waiting,
            early: t.early.iter().map(|(&id, (syn, answer))| (id, *syn, (**answer).clone())).collect(),
            answered: t.answered.iter().copied().collect(),
            ready: not_handed.chain(handed_after).map(|(at, ask, syn, a)| (at, ask.clone(), *syn, a.clone())).collect(),
            sent_before: Vec::new(),
        }
    }

    /// Start the table from `copy`: the asks, answers and ready pairs of the synopses
    /// `homed_here` says this process homes, and every id answered.
    pub fn restore(&self, copy: &RepliesCopy, homed_here: impl Fn(u32) -> bool) {
        let mut t = self.lock();
        for &id in &copy.answered {
            answered(&mut t, id);
        }
        for (ask, made) in copy.waiting.iter().filter(|(ask, _)| homed_here(ask.syn)) {
            if !t.answered.contains(&ask.id) {
                t.waiting.insert(ask.id, (ask.clone(), *made));
            }
        }
        for (id, syn, answer) in copy.early.iter().filter(|(_, syn, _)| homed_here(*syn)) {
            if !t.answered.contains(id) {
                t.early.insert(*id, (*syn, Box::new(answer.clone())));
            }
        }
        t.ready.extend(copy.ready.iter().filter(|(_, ask, ..)| homed_here(ask.syn)).cloned());
    }
}

impl RepliesCopy {
    /// The copy's bytes (layout in the module doc).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.bytes(&MAGIC);
        w.u16(VERSION);
        w.u64(self.taken);
        w.varint(self.waiting.len() as u64);
        for (ask, made) in &self.waiting {
            w.u64(*made);
            put_ask(&mut w, ask);
        }
        w.varint(self.early.len() as u64);
        for (id, syn, answer) in &self.early {
            w.u64(*id);
            w.u32(*syn);
            put_answer(&mut w, answer);
        }
        w.varint(self.answered.len() as u64);
        for id in &self.answered {
            w.u64(*id);
        }
        w.varint(self.ready.len() as u64);
        for (made, ask, syn, answer) in &self.ready {
            w.u64(*made);
            w.u32(*syn);
            put_ask(&mut w, ask);
            put_answer(&mut w, answer);
        }
        w.varint(self.sent_before.len() as u64);
        for id in &self.sent_before {
            w.u64(*id);
        }
        w.into_inner()
    }

    /// Check the bytes and rebuild the copy.
    ///
    /// # Errors
    /// A message naming the field for bytes that are not a copy: a wrong magic, an unknown
    /// version, truncated bytes, a count larger than the bytes left can hold, bad UTF-8 or
    /// JSON, a flag other than 0 or 1, trailing bytes.
    ///
    /// ```
    /// use saams_operators::device_replies::RepliesCopy;
    /// let copy = RepliesCopy { taken: 3, answered: vec![7, 9], ..RepliesCopy::default() };
    /// assert_eq!(RepliesCopy::decode(&copy.encode()).unwrap(), copy);
    /// let e = RepliesCopy::decode(b"SAMC\x04\x00").unwrap_err();
    /// assert!(e.contains("not a copy of the devices' replies"), "{e}");
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<RepliesCopy, String> {
        let head = &bytes[..bytes.len().min(4)];
        if head != MAGIC {
            return Err(format!(
                "not a copy of the devices' replies: it starts with {head:02x?}, a copy with \"SADR\""
            ));
        }
        let mut r = Fields(Reader::new(&bytes[4..]));
        let version = r.field("the version", Reader::u16)?;
        if !(1..=VERSION).contains(&version) {
            return Err(format!(
                "the devices' replies: version {version} is not supported (this build reads 1 to {VERSION})"
            ));
        }
        let mut copy = RepliesCopy { taken: r.field("taken", Reader::u64)?, ..RepliesCopy::default() };
        for i in 0..r.count("waiting asks", 8 + 1)? {
            let made = r.field("a waiting ask's input time", Reader::u64)?;
            copy.waiting.push((r.ask(i)?, made));
        }
        for _ in 0..r.count("early answers", 8 + 4 + 3)? {
            let id = r.field("an early answer's ask", Reader::u64)?;
            let syn = r.field("an early answer's synopsis", Reader::u32)?;
            copy.early.push((id, syn, r.answer(id)?));
        }
        for _ in 0..r.count("asks answered", 8)? {
            copy.answered.push(r.field("an ask answered", Reader::u64)?);
        }
        for i in 0..r.count("ready asks", 8 + 4 + 1 + 3)? {
            let made = r.field("a ready ask's input time", Reader::u64)?;
            let syn = r.field("a ready ask's synopsis", Reader::u32)?;
            let ask = r.ask(i)?;
            let answer = r.answer(ask.id)?;
            copy.ready.push((made, ask, syn, answer));
        }
        if version >= 2 {
            for _ in 0..r.count("asks sent before the boundary", 8)? {
                copy.sent_before.push(r.field("an ask sent before the boundary", Reader::u64)?);
            }
        }
        r.0.finish().map_err(|e| format!("the devices' replies: {e}"))?;
        Ok(copy)
    }

    /// One copy of the table from every process' copies, `(process, copy)`: the last each
    /// process took (see the module doc), joined.
    ///
    /// ```
    /// use saams_operators::device_replies::RepliesCopy;
    /// let copy = |taken, answered: &[u64]| RepliesCopy { taken, answered: answered.to_vec(), ..RepliesCopy::default() };
    /// let joined = RepliesCopy::join(vec![(0, copy(4, &[1])), (0, copy(6, &[1, 2])), (1, copy(5, &[3]))]);
    /// assert_eq!(joined.answered, vec![1, 2, 3]);
    /// ```
    pub fn join(copies: Vec<(u32, RepliesCopy)>) -> RepliesCopy {
        let mut last: BTreeMap<u32, RepliesCopy> = BTreeMap::new();
        // Every worker's own (see the module doc).
        let mut sent_before: Vec<u64> = copies.iter().flat_map(|(_, c)| c.sent_before.iter().copied()).collect();
        sent_before.sort_unstable();
        sent_before.dedup();
        for (process, copy) in copies {
            if last.get(&process).is_none_or(|l| l.taken < copy.taken) {
                last.insert(process, copy);
            }
        }
        let mut joined = RepliesCopy::default();
        for copy in last.into_values() {
            joined.taken = joined.taken.max(copy.taken);
            joined.waiting.extend(copy.waiting);
            joined.early.extend(copy.early);
            joined.answered.extend(copy.answered);
            joined.ready.extend(copy.ready);
        }
        joined.answered.sort_unstable();
        joined.answered.dedup();
        joined.sent_before = sent_before;
        joined
    }
}

/// The table a resumed job's process starts from, shared by its workers (the checkpoint's, in
/// each worker's plan): the first of them to attach the process' table installs it.
#[derive(Debug)]
pub struct RestoredReplies {
    /// The checkpoint resumed from.
    id: u64,
    /// The joined copy, until installed; `None` from the start when the checkpoint kept none.
    copy: Mutex<Option<RepliesCopy>>,
    /// Whether the checkpoint's parts kept a table (parts of format version 4 and later).
    kept: bool,
    /// The joined copy's [`RepliesCopy::sent_before`].
    sent_before: std::collections::BTreeSet<u64>,
}

impl RestoredReplies {
    /// What checkpoint `id` kept (`None`: its parts kept no table).
    pub fn new(id: u64, copy: Option<RepliesCopy>) -> RestoredReplies {
        let sent_before = copy.iter().flat_map(|c| c.sent_before.iter().copied()).collect();
        RestoredReplies { id, kept: copy.is_some(), copy: Mutex::new(copy), sent_before }
    }

    /// Whether ask `id`, of a live request fenced after the checkpoint's boundary, was sent
    /// before the boundary: its answer line is before the cut, so a resumed job that applies
    /// the request again does not make the ask again.
    ///
    /// ```
    /// use saams_operators::device_replies::{RepliesCopy, RestoredReplies};
    /// let copy = RepliesCopy { sent_before: vec![12], ..RepliesCopy::default() };
    /// let restored = RestoredReplies::new(7, Some(RepliesCopy::join(vec![(0, copy)])));
    /// assert!(restored.sent_before(12) && !restored.sent_before(13));
    /// assert!(!RestoredReplies::new(7, None).sent_before(12));
    /// ```
    pub fn sent_before(&self, id: u64) -> bool {
        self.sent_before.contains(&id)
    }

    /// Start `replies` from the checkpoint's table (the first call; later ones do nothing), with
    /// the asks and answers of the synopses `homed_here` says this process homes.
    ///
    /// # Errors
    /// When the checkpoint kept no table: it was written by a build that did not keep the asks
    /// waiting for devices (part format 3 or older), so an answer to one of them would be lost
    /// and an answer handed on before it could be handed on again.
    ///
    /// ```
    /// use saams_operators::device_replies::{DeviceReplies, RepliesCopy, RestoredReplies};
    /// let replies = DeviceReplies::default();
    /// let kept = RestoredReplies::new(7, Some(RepliesCopy { answered: vec![3], ..RepliesCopy::default() }));
    /// kept.install(&replies, |_| true).unwrap();
    /// assert_eq!(replies.copy_at(0, 0).answered, vec![3]);
    /// let old = RestoredReplies::new(7, None).install(&replies, |_| true).unwrap_err();
    /// assert!(old.contains("checkpoint 7") && old.contains("format 3 or older"), "{old}");
    /// ```
    pub fn install(&self, replies: &DeviceReplies, homed_here: impl Fn(u32) -> bool) -> Result<(), String> {
        if !self.kept {
            return Err(format!(
                "checkpoint {} was written by a build that did not keep the asks waiting for devices' answers                  (part format 3 or older): a job merging devices cannot resume from it exactly once; resume it                  with that build, or start with another --checkpoints directory",
                self.id
            ));
        }
        let mut copy = self.copy.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(copy) = copy.take() {
            replies.restore(&copy, homed_here);
        }
        Ok(())
    }
}

fn put_str(w: &mut Writer, s: &str) {
    w.len_bytes(s.as_bytes());
}

fn put_ask(w: &mut Writer, ask: &Ask) {
    // The ask's own serialized form (as it crosses the exchange): it holds JSON values.
    put_str(w, &serde_json::to_string(ask).unwrap_or_default());
}

fn put_answer(w: &mut Writer, answer: &DeviceAnswer) {
    put_str(w, &answer.device);
    put_str(w, &answer.line);
    match &answer.saved {
        None => w.u8(0),
        Some((file, bytes)) => {
            w.u8(1);
            put_str(w, file);
            w.len_bytes(bytes);
        }
    }
}

/// A reader whose errors name the field.
struct Fields<'a>(Reader<'a>);

impl<'a> Fields<'a> {
    fn field<T>(
        &mut self,
        what: &str,
        read: impl FnOnce(&mut Reader<'a>) -> Result<T, saams::SynopsisError>,
    ) -> Result<T, String> {
        read(&mut self.0).map_err(|e| format!("the devices' replies: {what}: {e}"))
    }

    fn count(&mut self, what: &str, min_item: usize) -> Result<usize, String> {
        self.field(&format!("the count of {what}"), |r| r.count(min_item))
    }

    fn string(&mut self, what: &str) -> Result<String, String> {
        let bytes = self.field(what, Reader::len_bytes)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| format!("the devices' replies: {what} is not UTF-8"))
    }

    fn ask(&mut self, i: usize) -> Result<Ask, String> {
        let text = self.string(&format!("ask {i}"))?;
        serde_json::from_str(&text).map_err(|e| format!("the devices' replies: ask {i} is not an ask: {e}"))
    }

    fn answer(&mut self, id: u64) -> Result<DeviceAnswer, String> {
        let device = self.string(&format!("the device of ask {id}'s answer"))?;
        let line = self.string(&format!("ask {id}'s answer"))?;
        let saved = match self.field(&format!("ask {id}'s saved flag"), Reader::u8)? {
            0 => None,
            1 => {
                let file = self.string(&format!("ask {id}'s saved file"))?;
                Some((file, self.field(&format!("ask {id}'s saved bytes"), Reader::len_bytes)?.to_vec()))
            }
            b => return Err(format!("the devices' replies: ask {id}'s saved flag is {b}, not 0 or 1")),
        };
        Ok(DeviceAnswer { device, line, saved })
    }
}

#[cfg(test)]
mod tests;
