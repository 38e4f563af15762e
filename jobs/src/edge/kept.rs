//! The states a device keeps whole or resident (`saams-edge --sole-reader`, `--resident`) in its
//! state file (`saams-edge --state`, [`super::resume`]), so a device killed with `kill -9` and
//! restarted resumes them exactly.
//!
//! Why it must: a resident device's states never leave it (the cloud holds only their query
//! views), and a restarted device skips the tuples it shipped, so it can rebuild them neither
//! from the cloud nor from its input. What it keeps: with each batch it records, the states as
//! they were when the batch's window opened — before any of its values was fed — in the
//! checkpoints' exact codec ([`MovedState`]: the open period, a sliding synopsis' panes, the
//! last window answered, the live LOADs merged), and the count of tuples read before that
//! window's first (`window_from`). A restarted device installs those states, skips the tuples
//! before `window_from`, and reads those up to the batch's `from` into the window again without
//! shipping them (what was shipped of them before the kill, with `--ship-every`, it forgets,
//! [`DeviceWindows::forget_shipped`]), then goes on as before the kill: it produces the batch
//! again, the same, and the cloud refuses the copies it merged. So the file holds the groups'
//! synopses — bounded by them, not by the tuples — and the device re-reads at most one window.
//! The states at a window's start are encoded once per window, when the window before closes.

use std::collections::{BTreeMap, HashMap};

use saams::codec::{Reader, Writer};
use saams_operators::Plan;
use saams_operators::update::MovedState;
use saams_operators::window::Held;

use super::device::DeviceWindows;

/// The states kept here, in the checkpoints' exact codec, in synopsis order: `held` with the
/// live LOADs merged into each (`loaded`), and the states restored but not installed yet.
fn encode(held: &HashMap<u32, Held>, loaded: &HashMap<u32, usize>, pending: &BTreeMap<u32, MovedState>) -> Vec<u8> {
    let mut states: BTreeMap<u32, MovedState> =
        held.iter().map(|(&s, h)| (s, MovedState::encode(s, h, loaded.get(&s).copied().unwrap_or(0)))).collect();
    for (&s, m) in pending {
        states.entry(s).or_insert_with(|| m.clone());
    }
    let mut w = Writer::new();
    w.varint(states.len() as u64);
    states.values().for_each(|m| m.write(&mut w));
    w.into_inner()
}

/// The states [`encode`] wrote, by synopsis.
///
/// # Errors
/// Bytes that are not those states.
pub fn decode(bytes: &[u8]) -> Result<BTreeMap<u32, MovedState>, String> {
    let err = |e: saams::SynopsisError| format!("the kept states of the device state file: {e}");
    if bytes.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut r = Reader::new(bytes);
    let mut out = BTreeMap::new();
    for _ in 0..r.count(4).map_err(err)? {
        let m = MovedState::read(&mut r).map_err(err)?;
        out.insert(m.syn(), m);
    }
    r.finish().map_err(err)?;
    Ok(out)
}

impl DeviceWindows {
    /// Record the states kept whole or resident here with each batch ([`Self::resume_point`]).
    #[must_use]
    pub fn keeping_states(mut self) -> DeviceWindows {
        self.kept.on = true;
        self
    }

    /// A device restarted from its state file with kept states (`states`, [`decode`]'s): they
    /// are installed as their synopses reach the plan ([`Self::install_restored`]), and they
    /// are the states of the window open now.
    pub fn with_restored(mut self, states: &[u8]) -> Result<DeviceWindows, String> {
        self.kept.pending = decode(states)?;
        self.kept.at_open = states.to_vec();
        Ok(self)
    }

    /// Install the restored states whose synopses `plan` has (at the start, and after every
    /// live request a following device applies).
    ///
    /// # Errors
    /// A state that does not decode or is not of its synopsis' kind.
    pub fn install_restored(&mut self, plan: &Plan) -> Result<(), String> {
        let ready: Vec<u32> =
            self.kept.pending.keys().copied().filter(|&s| (s as usize) < plan.routing.synopses.len()).collect();
        for s in ready {
            let m = self.kept.pending.remove(&s).expect("a pending state");
            let (s, held, loads) = m.decode(plan).map_err(|e| format!("the device state file: {e}"))?;
            self.held.insert(s, held);
            self.loaded.insert(s, loads);
        }
        Ok(())
    }

    /// A window is about to close: what its batch records (the states when it opened).
    pub(super) fn closing(&mut self, window: u64) {
        if self.kept.on {
            let at_open = std::mem::take(&mut self.kept.at_open);
            self.kept.closed = Some((window, self.kept.open_from, at_open));
        }
    }

    /// A window closed: its states are those the next window opens with.
    pub(super) fn closed(&mut self) {
        if self.kept.on {
            self.kept.at_open = encode(&self.held, &self.loaded, &self.kept.pending);
        }
    }

    /// What a batch of `window` records of the kept states: the count of tuples read before the
    /// window's first, and the states when it opened; `None` when none are kept.
    pub fn resume_point(&self, window: u64) -> Option<(u64, &[u8])> {
        if !self.kept.on {
            return None;
        }
        match &self.kept.closed {
            Some((w, from, states)) if *w == window && self.open_seq().is_none_or(|(open, _)| open != window) => {
                Some((*from, states))
            }
            _ => Some((self.kept.open_from, &self.kept.at_open)),
        }
    }
}

#[cfg(test)]
mod tests {
    use saams::{CountMin, Datum, Synopsis};

    use super::*;

    /// The kept states go through the state file's bytes unchanged (the checkpoints' exact
    /// codec), restored ones not installed yet included; damaged bytes are an error.
    #[test]
    fn kept_states_survive_the_state_file_bytes() {
        let mut cm = CountMin::with_accuracy(0.01, 0.99, 7).expect("a Count-Min");
        let mut held = Held::new(&cm);
        cm.update(Datum::Str("a"));
        held.state.update(Datum::Num(2.5));
        held.items = 1;
        held.since = Some(60_000);
        held.fed_to = 120_000;
        let held: HashMap<u32, Held> = [(3, held)].into_iter().collect();
        let loaded: HashMap<u32, usize> = [(3, 2)].into_iter().collect();
        let pending: BTreeMap<u32, MovedState> = [(7, MovedState::encode(7, &Held::new(&cm), 0))].into_iter().collect();
        let bytes = encode(&held, &loaded, &pending);
        let states = decode(&bytes).expect("the kept states");
        assert_eq!(states.keys().copied().collect::<Vec<_>>(), vec![3, 7]);
        let mut again = Writer::new();
        again.varint(2);
        states.values().for_each(|m| m.write(&mut again));
        assert_eq!(again.into_inner(), bytes, "written again, the same bytes");
        assert!(decode(&bytes[..bytes.len() - 1]).is_err(), "a cut file is refused");
        assert!(decode(&[]).expect("none kept").is_empty());
    }
}
