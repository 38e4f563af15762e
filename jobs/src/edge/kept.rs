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
//!
//! A device running monitoring sites ([`super::monitor_site`]) records their copies the same
//! way, after the states ([`super::site_state`]): the sites as they were when the window opened
//! (advanced to its start, before any of its items), so the window read again sends the same
//! messages under the same numbers.

use std::collections::{BTreeMap, HashMap};

use saams::checkpoint::MonitorState;
use saams::codec::{Reader, Writer};
use saams_operators::Plan;
use saams_operators::update::MovedState;
use saams_operators::window::Held;

use super::budget::GroupBudget;
use super::device::{Closed, DeviceWindows};
use super::site_state::{decode_sites, encode_sites};

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

/// The states [`encode`] wrote, by synopsis, and the monitoring sites' copies written after
/// them ([`super::site_state`]; none in a file written without).
///
/// # Errors
/// Bytes that are not those states.
pub fn decode(bytes: &[u8]) -> Result<(BTreeMap<u32, MovedState>, Vec<MonitorState>), String> {
    let err = |e: saams::SynopsisError| format!("the kept states of the device state file: {e}");
    if bytes.is_empty() {
        return Ok((BTreeMap::new(), Vec::new()));
    }
    let mut r = Reader::new(bytes);
    let mut out = BTreeMap::new();
    for _ in 0..r.count(4).map_err(err)? {
        let m = MovedState::read(&mut r).map_err(err)?;
        out.insert(m.syn(), m);
    }
    let sites = if r.is_empty() { Vec::new() } else { decode_sites(&mut r).map_err(err)? };
    r.finish().map_err(err)?;
    Ok((out, sites))
}

/// Where a batch's state file record resumes: the window to open again, its next shipment's
/// number when the batch closes it (`None`: the batch's first), the count of tuples read
/// before the window's first, and the kept states and sites' copies when it opened.
pub struct KeptPoint {
    /// The window.
    pub window: u64,
    /// See [`KeptPoint`].
    pub seq: Option<u64>,
    /// See [`KeptPoint`].
    pub from: u64,
    /// [`decode`]'s bytes.
    pub bytes: Vec<u8>,
    /// The resident groups' budgets when the window opened ([`super::budget`]).
    pub budgets: Vec<GroupBudget>,
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
        let (pending, sites) = decode(states)?;
        self.kept.pending = pending;
        self.kept.at_open = encode(&HashMap::new(), &HashMap::new(), &self.kept.pending);
        self.kept.sites_at_open = if sites.is_empty() { Vec::new() } else { encode_sites(&sites) };
        self.kept.restored_sites = sites;
        Ok(self)
    }

    /// A restarted device's resident groups' budgets as its state file records them (those
    /// when the window open now opened): it chooses the same forms again ([`super::budget`]).
    #[must_use]
    pub fn with_budgets(mut self, budgets: &[GroupBudget]) -> DeviceWindows {
        self.budgets = budgets.iter().map(|b| (b.group, *b)).collect();
        self.kept.budgets_at_open = budgets.to_vec();
        self
    }

    /// The monitoring sites' copies a restarted device read from its state file, to restore
    /// ([`super::monitor_site::DeviceSites::restored`]).
    pub fn take_restored_sites(&mut self) -> Vec<MonitorState> {
        std::mem::take(&mut self.kept.restored_sites)
    }

    /// True when the state file records the kept states and the sites' copies with each batch.
    pub fn keeps_points(&self) -> bool {
        self.kept.on
    }

    /// A window opened: the sites' copies (`encode_sites`'s bytes) as it opened, advanced to its
    /// start.
    pub fn sites_opened(&mut self, sites: Vec<u8>) {
        if self.kept.on {
            self.kept.sites_at_open = sites;
        }
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
    pub(super) fn closing(&mut self, window: u64, seq: u64) {
        if self.kept.on {
            let (states, sites) =
                (std::mem::take(&mut self.kept.at_open), std::mem::take(&mut self.kept.sites_at_open));
            let budgets = std::mem::take(&mut self.kept.budgets_at_open);
            self.kept.closed = Some(Closed { window, seq, from: self.kept.open_from, states, sites, budgets });
        }
    }

    /// A window closed: its states are those the next window opens with.
    pub(super) fn closed(&mut self) {
        if self.kept.on {
            self.kept.at_open = encode(&self.held, &self.loaded, &self.kept.pending);
            self.kept.budgets_at_open = self.budgets();
        }
    }

    /// What a batch whose first shipment is of `window` records of the kept states (`open`: it
    /// ships the open window so far): a close batch resumes in the window it closed — the
    /// window's shipments come first, or, when it shipped none, the sites' messages of later
    /// windows it read nothing in — an open batch in the open window; `None` when none are kept.
    pub fn resume_point(&self, window: u64, open: bool) -> Option<KeptPoint> {
        if !self.kept.on {
            return None;
        }
        // The sites' part after a states' part, empty ones included (a count of none).
        let joined = |states: &[u8], sites: &[u8]| match (states.is_empty(), sites.is_empty()) {
            (_, true) => states.to_vec(),
            (true, false) => [&[0u8][..], sites].concat(),
            (false, false) => [states, sites].concat(),
        };
        match &self.kept.closed {
            Some(c) if !open && c.window <= window && self.open_seq().is_none_or(|(w, _)| w != c.window) => {
                let bytes = joined(&c.states, &c.sites);
                Some(KeptPoint { window: c.window, seq: Some(c.seq), from: c.from, bytes, budgets: c.budgets.clone() })
            }
            _ => Some(KeptPoint {
                window,
                seq: None,
                from: self.kept.open_from,
                bytes: joined(&self.kept.at_open, &self.kept.sites_at_open),
                budgets: self.kept.budgets_at_open.clone(),
            }),
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
        let (states, sites) = decode(&bytes).expect("the kept states");
        assert!(sites.is_empty(), "no sites written, none read");
        assert_eq!(states.keys().copied().collect::<Vec<_>>(), vec![3, 7]);
        let mut again = Writer::new();
        again.varint(2);
        states.values().for_each(|m| m.write(&mut again));
        assert_eq!(again.into_inner(), bytes, "written again, the same bytes");
        assert!(decode(&bytes[..bytes.len() - 1]).is_err(), "a cut file is refused");
        assert!(decode(&[]).expect("none kept").0.is_empty());
        // The sites' copies after the states come back as written.
        let copies = vec![MonitorState { group: 1, site: Some(3), bytes: vec![1, 2, 3] }];
        let with_sites = [bytes.clone(), encode_sites(&copies)].concat();
        assert_eq!(decode(&with_sites).expect("states and sites").1, copies);
        assert!(decode(&with_sites[..with_sites.len() - 1]).is_err(), "a cut sites' part is refused");
    }
}
