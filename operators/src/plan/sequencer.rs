//! The live-request sequencer: requests received while the job runs, kept per request epoch
//! until their fence is agreed, then handed out in epoch order to be applied; the ids of
//! requests without one and of the asks they make; and what applying them gave, until the job
//! takes it.

use std::collections::BTreeMap;

use saams::api::request::{Request, RequestError};
use serde_json::{Value as Json, json};

use super::apply::RequestEffects;
use super::data::{Applied, Mode};
use super::routing::Routing;
use crate::ask::{Ask, AskWhat, Origin};

/// Requests as parsed (an error for each that could not be).
type Parsed = Vec<Result<Request, RequestError>>;

/// Requests received while running, in the order every worker applies them: per request epoch,
/// the bodies (who took them, the vetted requests) and, once agreed, their fence.
#[derive(Debug, Default)]
pub(crate) struct Staged {
    /// Who took each body of requests, and the requests.
    pub(crate) bodies: Vec<(Option<Origin>, Parsed)>,
    /// The fence agreed for the epoch.
    fence: Option<u64>,
    /// The epoch asks for a checkpoint (its id) at its fence.
    pub(crate) checkpoint: Option<u64>,
}

/// Live requests in the order every worker applies them, and what applying them gave.
#[derive(Debug, Default)]
pub struct Sequencer {
    /// Live requests received, by request epoch, not applied yet.
    staged: BTreeMap<u64, Staged>,
    /// Request epochs before this one are applied.
    applied_before: u64,
    /// What applying them gave, for the job to write and send.
    applied: Vec<Applied>,
    /// Requests applied so far (the script's and live ones): ids for requests without one.
    requests_seen: u64,
    /// Asks made so far (their ids).
    asks_made: u64,
    /// Asks this worker made at once ([`super::Plan::ask_now`]).
    asked_now: u64,
    /// The fence requests are applied at, and what applying them gave besides the tables.
    pub effects: RequestEffects,
}

impl Sequencer {
    /// A sequencer after a request script of `script_len` requests.
    pub(crate) fn after_script(script_len: usize) -> Sequencer {
        Sequencer { requests_seen: script_len as u64, ..Sequencer::default() }
    }

    /// The id of the next live request, should it have none (`req-N`, counting the script's).
    pub(crate) fn next_generated_id(&mut self) -> Json {
        self.requests_seen += 1;
        json!(format!("req-{}", self.requests_seen))
    }

    /// The id of the next request answered now, should it have none.
    pub(crate) fn next_ask_now_id(&self) -> Json {
        json!(format!("ask-{}", self.asked_now + 1))
    }

    /// Keep the requests of request epoch `epoch` (taken by `origin`) until their fence is agreed.
    pub fn receive(&mut self, epoch: u64, origin: Option<Origin>, requests: Parsed) {
        if epoch >= self.applied_before {
            self.staged.entry(epoch).or_default().bodies.push((origin, requests));
        }
    }

    /// Request epoch `epoch` asks for checkpoint `id` at its fence.
    pub fn receive_checkpoint(&mut self, epoch: u64, id: u64) {
        if epoch >= self.applied_before {
            self.staged.entry(epoch).or_default().checkpoint = Some(id);
        }
    }

    /// Request epochs before this one are applied.
    pub fn applied_before(&self) -> u64 {
        self.applied_before
    }

    /// Epoch `epoch` is agreed at `fence` (unless it already had a fence); false when it is
    /// already applied.
    pub(crate) fn agree(&mut self, epoch: u64, fence: u64) -> bool {
        if epoch < self.applied_before {
            return false;
        }
        self.staged.entry(epoch).or_default().fence.get_or_insert(fence);
        true
    }

    /// The oldest staged epoch up to `epoch`, with the fence it takes effect at (its own, or
    /// `fence`), taken out and counted as applied.
    pub(crate) fn next_through(&mut self, epoch: u64, fence: u64) -> Option<(u64, Staged)> {
        let entry = self.staged.first_entry()?;
        if *entry.key() > epoch {
            return None;
        }
        let (e, staged) = entry.remove_entry();
        self.applied_before = e + 1;
        Some((staged.fence.unwrap_or(fence), staged))
    }

    /// Queue what applying gave, for the job to write and send.
    pub fn push_applied(&mut self, applied: Applied) {
        self.applied.push(applied);
    }

    /// What applying live requests gave since the last call.
    pub fn take_applied(&mut self) -> Vec<Applied> {
        std::mem::take(&mut self.applied)
    }

    /// The asks of the requests just applied at a fence, numbered in the order every worker
    /// makes them.
    pub(crate) fn take_fence_asks(&mut self, routing: &Routing, origin: Option<Origin>) -> Vec<Ask> {
        let counter = &mut self.asks_made;
        make_asks(std::mem::take(&mut self.effects.asked), routing, origin, || {
            *counter += 1;
            *counter
        })
    }

    /// The asks of requests answered now by worker `origin.0` alone, numbered apart from those
    /// every worker makes at fences.
    pub(crate) fn take_asks_now(&mut self, routing: &Routing, origin: Origin) -> Vec<Ask> {
        let counter = &mut self.asked_now;
        make_asks(std::mem::take(&mut self.effects.asked), routing, Some(origin), || {
            *counter += 1;
            (1 << 63) | (u64::from(origin.0) << 40) | *counter
        })
    }
}

/// Asks of `asked` (synopsis, request id, uid, what), numbered by `next_id`.
fn make_asks(
    asked: Vec<(u32, Json, Option<Json>, AskWhat)>,
    routing: &Routing,
    origin: Option<Origin>,
    mut next_id: impl FnMut() -> u64,
) -> Vec<Ask> {
    asked
        .into_iter()
        .map(|(syn, request_id, uid, what)| {
            let id = next_id();
            let s = &routing.synopses[syn as usize];
            let mut what = what;
            if let AskWhat::Pair(pair) = &mut what {
                // The pair is answered where the named synopsis' merged state is.
                pair.answer_home = s.home as u32;
            }
            let spread = s.mode != Mode::Owned;
            Ask { id, syn, home: s.home as u32, spread, request_id, uid, what, origin, device_answers: false }
        })
        .collect()
}
