//! The monitoring kind's state in checkpoints: a site's or a coordinator's copy, as the bytes of
//! a [`MonitorState`] (the checkpoint part stores them opaque).
//!
//! A copy is the protocol's whole state — the sites' windows, counters, quantile summaries and
//! fallback periods, the coordinator's root, its exact window of forwarded items and the words
//! and bytes received so far — written with serde in bincode after a format byte, together
//! with the monitored stream's name and its protocol configuration: a copy restored into
//! another stream (another request script, or a live construct applied in another order) is
//! refused by name, not silently fed another stream's items. Bincode, not a hand-written
//! layout: the protocols' state is a dozen nested structures of the monitoring crate, and the
//! copy only has to come back into the same build's structures (the checkpoint part's CRC
//! guards the bytes; a copy that does not decode is a clear error at start).
//!
//! Copies are keyed by (stream, site), never by worker: which worker hosts a site
//! (`site mod W`) or a coordinator (`stream mod W`) depends on the job's shape, what a site
//! holds does not (a value goes to site `seq mod k` whatever `-w`/`-n`), so a job resumed with
//! another number of workers or processes takes each copy where its own plan hosts it: the
//! sites' state is rebinned exactly.

use saams::checkpoint::MonitorState;
use saams_monitoring::Config;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{MonitorPlan, Monitored};

/// The first byte of every copy (a change of what a copy holds needs a new one).
const COPY_FORMAT: u8 = 1;

/// What a copy is of: the monitored stream's dataset, stream and field, and the protocol's
/// configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Identity {
    dataset: String,
    stream: String,
    field: String,
    config: Config,
}

impl Identity {
    fn of(m: &Monitored) -> Identity {
        Identity { dataset: m.dataset.clone(), stream: m.stream.clone(), field: m.field.clone(), config: m.config() }
    }
}

#[derive(Serialize)]
struct Written<'a, T> {
    of: Identity,
    state: &'a T,
}

#[derive(Deserialize)]
struct Read<T> {
    of: Identity,
    state: T,
}

/// The checkpoint bytes of `state`, a site's (`site` given) or the coordinator's of monitored
/// stream `group`, `m`.
///
/// # Panics
/// Never for the monitoring crate's states (bincode writes every serde value to a vector).
pub(super) fn encode<T: Serialize>(group: u32, site: Option<u32>, m: &Monitored, state: &T) -> MonitorState {
    let mut bytes = vec![COPY_FORMAT];
    bincode::serialize_into(&mut bytes, &Written { of: Identity::of(m), state })
        .expect("bincode writes a monitor's state to a vector");
    MonitorState { group, site, bytes }
}

/// The state a copy holds, checked against the monitored stream `m` it is restored into.
///
/// # Errors
/// When the bytes are not a copy of this build's, or the copy is of another stream or
/// configuration.
pub(super) fn decode<T: DeserializeOwned>(copy: &MonitorState, m: &Monitored) -> Result<T, String> {
    let what = match copy.site {
        Some(site) => format!("site {site} of monitored stream {}", copy.group),
        None => format!("the coordinator of monitored stream {}", copy.group),
    };
    let body = match copy.bytes.split_first() {
        Some((&COPY_FORMAT, body)) => body,
        Some((&other, _)) => return Err(format!("{what}: copy format {other}, this build reads {COPY_FORMAT}")),
        None => return Err(format!("{what}: an empty copy")),
    };
    let c: Read<T> = bincode::deserialize(body).map_err(|e| format!("{what}: the copy does not decode: {e}"))?;
    let here = Identity::of(m);
    if c.of != here {
        return Err(format!(
            "{what} was {}/{} {} ({:?}); this job monitors {}/{} {} ({:?}) there",
            c.of.dataset, c.of.stream, c.of.field, c.of.config, here.dataset, here.stream, here.field, here.config
        ));
    }
    Ok(c.state)
}

impl MonitorPlan {
    /// The monitored stream a checkpoint's copy belongs to, if this plan has it and the site is
    /// one of its sites.
    ///
    /// # Errors
    /// When the plan has no such stream or site: the job was started with another request
    /// script, or its live requests were not applied as logged.
    pub(super) fn stream_of(&self, copy: &MonitorState) -> Result<&Monitored, String> {
        let m = self.monitored.get(copy.group as usize).ok_or_else(|| {
            format!("monitored stream {} is not in this job's plan ({} monitored)", copy.group, self.monitored.len())
        })?;
        match copy.site {
            Some(site) if site as usize >= m.spec.sites => Err(format!(
                "monitored stream {} ({}/{} {}) has {} sites, the checkpoint has site {site}",
                copy.group, m.dataset, m.stream, m.field, m.spec.sites
            )),
            _ => Ok(m),
        }
    }
}
