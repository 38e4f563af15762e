//! One site of a monitored stream as its host keeps it — a worker of the job
//! ([`super::MonitorSites`]) or an edge device (`saams-edge`) — and the refusals it counts:
//! one place for how a value becomes an item, how a site is advanced, copied at a checkpoint
//! boundary and how its refusals are stamped, so a site sends the same messages wherever it
//! runs.

use std::collections::BTreeMap;

use saams::api::monitor::MonitorSpec;
use saams_monitoring::MonitorError;
use saams_monitoring::fallback::Envelope;
use saams_monitoring::live::LiveSite;
use serde::{Deserialize, Serialize};

use saams::checkpoint::MonitorState;

use super::{MonitorPlan, Monitored, SiteOut, state};
use crate::record::Val;

/// A site's state and the newest event time it took: what a checkpoint copies of it
/// ([`super::state`]; the field order is the copy's layout).
#[derive(Serialize, Deserialize)]
pub struct HostedSite {
    site: LiveSite,
    /// The newest event time taken.
    newest: i64,
}

/// The sites a host runs, by (monitored stream index, site).
pub type HostedSites = BTreeMap<(u32, usize), HostedSite>;

/// Items refused, by (event time, monitored stream): each count is sent at its time, so the
/// coordinator counts it before answering at or after that time, whatever the schedule, and a
/// checkpoint at `b` holds exactly the refusals of items before `b` (those at or after it are
/// read, and refused, again).
pub type Refusals = BTreeMap<(u64, u32), u64>;

/// Site `key` of monitored stream `m` in `sites`, made at its first value (`None`: the
/// stream's configuration makes no site, which its construct's checks rule out).
pub fn hosted<'a>(sites: &'a mut HostedSites, key: (u32, usize), m: &Monitored) -> Option<&'a mut HostedSite> {
    match sites.entry(key) {
        std::collections::btree_map::Entry::Occupied(e) => Some(e.into_mut()),
        std::collections::btree_map::Entry::Vacant(v) => {
            let site = LiveSite::new(m.config(), m.policy(), key.1).ok()?;
            Some(v.insert(HostedSite { site, newest: i64::MIN }))
        }
    }
}

/// The copies of `sites` at boundary `b` (each processed its events before `b`, no later),
/// keyed by (monitored stream, site) in the checkpoints' encoding ([`super::state`]): what a
/// job's checkpoint and a device's state file (`saams-edge --state`) hold of them.
///
/// # Errors
/// A site not processed up to `b` exactly.
pub fn copy_hosted(sites: &HostedSites, plan: &MonitorPlan, b: i64) -> Result<Vec<MonitorState>, MonitorError> {
    let mut out = Vec::with_capacity(sites.len());
    for (&(group, site), h) in sites {
        let Some(m) = plan.monitored.get(group as usize) else { continue };
        out.push(state::encode(group, Some(site as u32), m, &h.copy_at(b)?));
    }
    Ok(out)
}

/// The site a copy ([`copy_hosted`]) holds, checked against `plan`'s monitored stream.
///
/// # Errors
/// A copy of a stream or site the plan has not, or bytes that are not a site's copy.
pub fn restore_hosted(copy: &MonitorState, plan: &MonitorPlan) -> Result<HostedSite, String> {
    plan.stream_of(copy).and_then(|m| state::decode::<HostedSite>(copy, m))
}

/// The tracked item of a value: the spec's whole number of a number, or of text that reads as
/// one (a part is no value).
pub fn tracked_item(spec: &MonitorSpec, val: &Val) -> Option<u64> {
    match val {
        Val::Num(x) => spec.item_of(*x),
        Val::Str(s) => s.trim().parse::<f64>().ok().and_then(|x| spec.item_of(x)),
        Val::Part(_) => None,
    }
}

/// The refusal reports of `refused`, each `(time, monitored stream, message)`: sent at its
/// items' event time (a negative time at 0).
pub fn refusal_reports(refused: Refusals) -> impl Iterator<Item = (u64, u32, SiteOut)> {
    refused.into_iter().map(|((t, group), n)| (t, group, SiteOut::Stats { refused: n, newest: i64::MIN }))
}

impl HostedSite {
    /// Take `val` of monitored stream `group` at event time `time`, arrival sequence `seq`:
    /// true when the site took it, else it is counted in `refused` at its time (no item, a
    /// negative time, later than the site allows).
    pub fn take(
        &mut self,
        (spec, group): (&MonitorSpec, u32),
        (time, seq): (i64, u64),
        val: &Val,
        refused: &mut Refusals,
    ) -> bool {
        let pushed = match tracked_item(spec, val) {
            Some(x) if time >= 0 => self.site.push(time, seq, x).is_ok(),
            _ => false,
        };
        if pushed {
            self.newest = self.newest.max(time);
        } else {
            *refused.entry((time.max(0) as u64, group)).or_insert(0) += 1;
        }
        pushed
    }

    /// Process every event before `to` (`i64::MAX`: the end of the input, everything still
    /// due): the envelopes to send.
    pub fn advance(&mut self, to: i64) -> Vec<Envelope> {
        // The site refuses nothing `take` accepted (it checked every item): nothing to count.
        self.site.advance_to(to).unwrap_or_default()
    }

    /// The site as a checkpoint at boundary `b` copies it, once it was advanced to `b`.
    ///
    /// # Errors
    /// When the site has not processed exactly the events before `b`.
    pub fn copy_at(&self, b: i64) -> Result<HostedSite, MonitorError> {
        Ok(HostedSite { site: self.site.copy_at(b)?, newest: self.newest })
    }

    /// The site's bookkeeping at the end of the input: the newest event time it took.
    pub fn final_stats(&self) -> SiteOut {
        SiteOut::Stats { refused: 0, newest: self.newest }
    }
}
