//! Moving owned synopses' state at a rescale's fence ([`crate::plan::rescale`]).
//!
//! A rescale at fence `F` gives an owned update group a new owner from window `F` on; values of
//! earlier windows still go to the old owner ([`crate::plan::Group::owner_at`]). The old owner
//! closes every window before `F` as usual, then sends the group's merged states — the open
//! period, a sliding synopsis' panes, the last answered window, the LOADs merged — encoded as
//! the checkpoints encode them (`encode_exact`), through a timely exchange (a feedback edge
//! into the same operator) to the new owner. The new owner closes nothing at or after `F` (its
//! watermark is held at `F`) until every state due to it at `F` is installed, so it feeds no
//! value of the fence's window to an empty state. Nothing else moves: values of windows from
//! `F` on were routed to the new owner, and the old owner's reorder buffers hold none.
//!
//! A rescale with `binsPerFence` (`--rescale-batch`) gives each group the fence of its bin's
//! batch ([`crate::plan::rescale::batch_fences`]): the moves here are per (fence, group), so a
//! batched migration is the same protocol at successive fences, each new owner waiting only for
//! the states due to it at each.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use saams::SynopsisError;
use saams::api::window::{Span, WindowType};
use saams::codec::{Reader, Writer};
use serde::{Deserialize, Serialize};

use crate::plan::{Mode, Plan};
use crate::window::{Held, Pane};

/// Moves sent by this process, and the bytes of state they carried.
static MOVED: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// (group moves sent, bytes of encoded state in them) by this process' workers so far.
pub fn moved_totals() -> (u64, u64) {
    (MOVED[0].load(Ordering::Relaxed), MOVED[1].load(Ordering::Relaxed))
}

/// An owned group's state on its way to its new owner at a rescale's fence.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Move {
    /// The new owner.
    pub to: u32,
    /// The update group.
    pub group: u32,
    /// The fence (window start, ms).
    pub fence: u64,
    /// Its synopses' states (none for a synopsis that held nothing yet).
    pub states: Vec<MovedState>,
}

/// One synopsis' held state, encoded as the checkpoints encode it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MovedState {
    syn: u32,
    state: Vec<u8>,
    items: u64,
    since: Option<u64>,
    fed_to: u64,
    /// Sliding: closed panes (start, values, state).
    panes: Vec<(u64, u64, Vec<u8>)>,
    /// Tumbling and sliding: the last answered window (type, start, end, state, values).
    last: Option<(WindowType, i64, i64, Vec<u8>, u64)>,
    /// Live LOADs merged into it.
    loads: usize,
}

impl MovedState {
    /// Synopsis `syn`'s held state with the live LOADs merged into it, in the checkpoints'
    /// exact codec (also what a resident device keeps in its state file, `saams-edge --state`).
    pub fn encode(syn: u32, held: &Held, loads: usize) -> MovedState {
        MovedState {
            syn,
            state: held.state.encode_exact(),
            items: held.items,
            since: held.since,
            fed_to: held.fed_to,
            panes: held.panes.iter().map(|p| (p.start, p.items, p.state.encode_exact())).collect(),
            last: held
                .last
                .as_ref()
                .map(|(span, state, items)| (span.kind, span.start, span.end, state.encode_exact(), *items)),
            loads,
        }
    }

    /// The synopsis it is the state of.
    pub fn syn(&self) -> u32 {
        self.syn
    }

    /// Append it to `w` (a device's state file).
    pub fn write(&self, w: &mut Writer) {
        w.varint(u64::from(self.syn));
        w.len_bytes(&self.state);
        w.varint(self.items);
        w.varint(self.since.map_or(0, |s| s + 1));
        w.varint(self.fed_to);
        w.varint(self.panes.len() as u64);
        for (start, items, bytes) in &self.panes {
            w.varint(*start);
            w.varint(*items);
            w.len_bytes(bytes);
        }
        match &self.last {
            None => w.u8(0),
            Some((kind, start, end, bytes, items)) => {
                w.u8(match kind {
                    WindowType::Landmark => 1,
                    WindowType::Tumbling => 2,
                    WindowType::Sliding => 3,
                });
                w.i64(*start);
                w.i64(*end);
                w.len_bytes(bytes);
                w.varint(*items);
            }
        }
        w.varint(self.loads as u64);
    }

    /// Read one written by [`MovedState::write`].
    ///
    /// # Errors
    /// Bytes that are not one.
    pub fn read(r: &mut Reader<'_>) -> Result<MovedState, SynopsisError> {
        let syn = u32::try_from(r.varint()?).map_err(|_| SynopsisError::Codec("a synopsis number too large".into()))?;
        let state = r.len_bytes()?.to_vec();
        let (items, since, fed_to) = (r.varint()?, r.varint()?.checked_sub(1), r.varint()?);
        let mut panes = Vec::new();
        for _ in 0..r.count(3)? {
            panes.push((r.varint()?, r.varint()?, r.len_bytes()?.to_vec()));
        }
        let kind = match r.u8()? {
            0 => None,
            1 => Some(WindowType::Landmark),
            2 => Some(WindowType::Tumbling),
            3 => Some(WindowType::Sliding),
            k => return Err(SynopsisError::Codec(format!("window type {k}"))),
        };
        let last = match kind {
            Some(kind) => Some((kind, r.i64()?, r.i64()?, r.len_bytes()?.to_vec(), r.varint()?)),
            None => None,
        };
        let loads = r.varint()? as usize;
        Ok(MovedState { syn, state, items, since, fed_to, panes, last, loads })
    }

    fn bytes(&self) -> usize {
        self.state.len()
            + self.panes.iter().map(|p| p.2.len()).sum::<usize>()
            + self.last.as_ref().map_or(0, |l| l.3.len())
    }

    /// The held state again (synopsis, state, LOADs merged), checked against the synopsis it is
    /// for.
    ///
    /// # Errors
    /// A state that does not decode or is not of its synopsis' kind.
    pub fn decode(self, plan: &Plan) -> Result<(u32, Held, usize), String> {
        let spec = plan.routing.synopses.get(self.syn as usize).ok_or("a moved state of an unknown synopsis")?;
        let decode = |bytes: &[u8]| {
            let state = crate::query_view::decode_state(bytes).map_err(|e| format!("synopsis {}: {e}", self.syn))?;
            if state.kind() != spec.kind {
                return Err(format!("synopsis {} is a {}, its moved state a {}", self.syn, spec.kind, state.kind()));
            }
            Ok(state)
        };
        let mut held = Held::restored(decode(&self.state)?, self.items, (self.since, self.fed_to));
        for (start, items, bytes) in &self.panes {
            held.panes.push_back(Pane { start: *start, state: decode(bytes)?, items: *items });
        }
        if let Some((kind, start, end, bytes, items)) = &self.last {
            held.last = Some((Span { kind: *kind, start: *start, end: *end }, decode(bytes)?, *items));
        }
        Ok((self.syn, held, self.loads))
    }
}

/// A worker's moves: the owned groups it gives away and those it waits for, by (fence, group).
#[derive(Default)]
pub(super) struct Moves {
    /// The routing version these were read from.
    version: Option<u64>,
    /// Fences at or before this one were done before this worker started (a resumed job's
    /// checkpoint holds their outcome).
    done_through: u64,
    /// To give away: (fence, group) → the new owner.
    owed: BTreeMap<(u64, u32), usize>,
    /// To wait for: (fence, group).
    expected: BTreeMap<(u64, u32), ()>,
    /// Sent or installed (an installed state may arrive before this worker read its move).
    done: HashSet<(u64, u32)>,
}

impl Moves {
    /// Moves of a job resumed from a checkpoint at `boundary`: those at or before it are done.
    pub(super) fn after(boundary: u64) -> Moves {
        Moves { done_through: boundary, ..Moves::default() }
    }

    /// Read the moves of worker `me` from the plan, once per routing version; moves already
    /// sent or installed stay done.
    pub(super) fn refresh(&mut self, plan: &Plan, me: usize) {
        if self.version == Some(plan.routing.version) {
            return;
        }
        self.version = Some(plan.routing.version);
        for (g, group) in plan.routing.groups.iter().enumerate() {
            if group.mode != Mode::Owned {
                continue;
            }
            for (i, &(fence, before)) in group.moved.iter().enumerate() {
                let key = (fence, g as u32);
                if fence <= self.done_through || self.done.contains(&key) {
                    continue;
                }
                let after = group.moved.get(i + 1).map_or(group.owner, |&(_, o)| o);
                if before == me && after != me {
                    self.owed.insert(key, after);
                } else if after == me && before != me {
                    self.expected.insert(key, ());
                }
            }
        }
    }

    /// The watermark this worker may close windows up to: held at the oldest fence whose
    /// states it still waits for.
    pub(super) fn limit(&self, watermark: u64) -> u64 {
        self.expected.keys().next().map_or(watermark, |&(fence, _)| watermark.min(fence))
    }

    /// The oldest fence whose states this worker still waits for (`u64::MAX`: none): a pair
    /// ask at or after it waits for the install ([`crate::pair_ask::components`] sends an ask
    /// at a fence to the new owner).
    pub(super) fn waiting_from(&self) -> u64 {
        self.expected.keys().next().map_or(u64::MAX, |&(fence, _)| fence)
    }

    /// Whether a state is still to give away (the capability it goes out at is kept for it).
    pub(super) fn owes(&self) -> bool {
        !self.owed.is_empty()
    }

    /// Whether anything is still to give away or to wait for.
    pub(super) fn pending(&self) -> bool {
        !self.owed.is_empty() || !self.expected.is_empty()
    }

    /// The groups to give away now that every window before `closed_before` is closed: their
    /// states taken out of `merged` (and `loaded`), encoded.
    pub(super) fn due(
        &mut self,
        plan: &Plan,
        closed_before: u64,
        merged: &mut HashMap<u32, Held, foldhash::fast::RandomState>,
        loaded: &mut HashMap<u32, usize>,
    ) -> Vec<Move> {
        let mut moves = Vec::new();
        while let Some((&(fence, group), &to)) = self.owed.first_key_value() {
            if fence > closed_before {
                break;
            }
            self.owed.remove(&(fence, group));
            self.done.insert((fence, group));
            let mut states = Vec::new();
            for &syn in &plan.routing.groups[group as usize].synopses {
                if let Some(held) = merged.remove(&syn) {
                    states.push(MovedState::encode(syn, &held, loaded.remove(&syn).unwrap_or(0)));
                }
            }
            let bytes: usize = states.iter().map(MovedState::bytes).sum();
            MOVED[0].fetch_add(1, Ordering::Relaxed);
            MOVED[1].fetch_add(bytes as u64, Ordering::Relaxed);
            moves.push(Move { to: to as u32, group, fence, states });
        }
        moves
    }

    /// Install a group's states sent to this worker.
    ///
    /// # Errors
    /// A state that does not decode or is not of its synopsis' kind (the job stops: answers
    /// from then on would be wrong).
    pub(super) fn install(
        &mut self,
        plan: &Plan,
        m: Move,
        merged: &mut HashMap<u32, Held, foldhash::fast::RandomState>,
        loaded: &mut HashMap<u32, usize>,
    ) -> Result<(), String> {
        self.expected.remove(&(m.fence, m.group));
        self.done.insert((m.fence, m.group));
        for state in m.states {
            let (syn, held, loads) = state.decode(plan)?;
            merged.insert(syn, held);
            loaded.insert(syn, loads);
        }
        Ok(())
    }
}
