//! The monitoring sites' part of a device's state file (`saams-edge --state` with monitored
//! streams, [`super::kept`]): each site's copy as the window being shipped opened, so a device
//! killed with `kill -9` and restarted resumes the protocol exactly once.
//!
//! Why the sites need it: a site's state (the items of its sliding window, its counters and
//! quantile summaries, what it last sent) is made of every item it took since the monitor
//! began, and a restarted device skips the tuples it shipped; the cloud holds only the
//! messages. So, like the states kept whole, the file records the sites advanced to the open
//! window's start (the checkpoints' copies, [`saams_operators::monitor::hosted::copy_hosted`]),
//! and the restarted device reads that window again into them: the same items at the same
//! times make the same messages, shipped under the same numbers, and the cloud refuses the
//! copies it had merged as replays. What a restart costs: the messages of the batch being
//! produced at the kill (at most one window's, and the expiries of windows read nothing in
//! after it) are sent again and refused; the coordinator counts none twice.
//!
//! Layout after the kept states: a count, then per copy its monitored stream, its site and its
//! bytes (the checkpoint copy's, which name the stream and the protocol's configuration: a copy
//! restored into another stream is refused).

use saams::SynopsisError;
use saams::checkpoint::MonitorState;
use saams::codec::{Reader, Writer};
use saams_operators::Plan;
use saams_operators::monitor::hosted::{copy_hosted, restore_hosted};

use super::monitor_site::DeviceSites;

/// The sites' part of the state file for `copies`.
pub fn encode_sites(copies: &[MonitorState]) -> Vec<u8> {
    let mut w = Writer::new();
    w.varint(copies.len() as u64);
    for c in copies {
        w.varint(u64::from(c.group));
        w.varint(u64::from(c.site.unwrap_or(u32::MAX)));
        w.len_bytes(&c.bytes);
    }
    w.into_inner()
}

/// The copies [`encode_sites`] wrote.
///
/// # Errors
/// Bytes that are not those copies.
pub fn decode_sites(r: &mut Reader<'_>) -> Result<Vec<MonitorState>, SynopsisError> {
    let mut out = Vec::new();
    for _ in 0..r.count(3)? {
        let number = |x: u64| u32::try_from(x).map_err(|_| SynopsisError::Codec("a site's number out of range".into()));
        let group = number(r.varint()?)?;
        let site = Some(number(r.varint()?)?).filter(|&s| s != u32::MAX);
        out.push(MonitorState { group, site, bytes: r.len_bytes()?.to_vec() });
    }
    Ok(out)
}

impl DeviceSites {
    /// A restarted device's sites: the copies its state file holds, installed as their
    /// monitored streams reach the plan ([`DeviceSites::install_restored`]).
    #[must_use]
    pub fn restored(mut self, copies: Vec<MonitorState>) -> DeviceSites {
        self.pending = copies;
        self
    }

    /// Install the restored copies whose monitored streams `plan` has (at the start, and after
    /// every live request a following device applies).
    ///
    /// # Errors
    /// A copy of another stream or configuration, or one that does not decode.
    pub fn install_restored(&mut self, plan: &Plan) -> Result<(), String> {
        let known = plan.monitor.monitored.len();
        let (ready, later): (Vec<MonitorState>, Vec<MonitorState>) =
            std::mem::take(&mut self.pending).into_iter().partition(|c| (c.group as usize) < known);
        self.pending = later;
        for copy in ready {
            let site = copy.site.ok_or("the device state file: a coordinator's copy among the sites")?;
            let hosted = restore_hosted(&copy, &plan.monitor).map_err(|e| format!("the device state file: {e}"))?;
            self.sites.insert((copy.group, site as usize), hosted);
        }
        Ok(())
    }

    /// The sites' part of the state file now, every site advanced to `b` (a window's start)
    /// just before; the copies restored but not installed yet included.
    ///
    /// # Panics
    /// When a site has not processed its events up to `b` exactly (the caller advanced them).
    pub fn copies_at(&self, plan: &Plan, b: i64) -> Vec<u8> {
        if self.sites.is_empty() && self.pending.is_empty() {
            return Vec::new();
        }
        let mut copies = copy_hosted(&self.sites, &plan.monitor, b).expect("the sites advanced to the window's start");
        copies.extend(self.pending.iter().cloned());
        encode_sites(&copies)
    }
}
