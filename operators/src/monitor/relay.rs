//! Site messages made elsewhere — by a monitored stream's sites running on an edge device
//! (`saams-edge`) — relayed to the coordinator: the cloud job routes each as a record of the
//! monitored stream's group whose value is [`crate::Val::Part`] with the bytes
//! [`encode_relayed`] makes, and [`super::MonitorSites::monitor_sites`] passes it on as the site
//! message it is instead of feeding a site of its own.
//!
//! Why relay rather than a path of its own: the envelopes then meet the coordinator exactly as
//! the job's own sites' do (at their send time, in the same exchange), so an answer sees the
//! same messages whether the sites ran in the job or on the devices, and the words counted are
//! the words the devices sent.
//!
//! Each relayed message has the time the coordinator takes it at — an envelope its send time
//! (in its own bytes: relaying adds a tag and a length, no more), a refusal report its items'
//! event time — so a device's refusals count in the same answers as the job's own sites' do (at
//! their item's time, [`super::hosted::Refusals`]).
//!
//! ```
//! use saams_operators::monitor::SiteOut;
//! use saams_operators::monitor::relay::{decode_relayed, encode_relayed};
//! let report = SiteOut::Stats { refused: 4, newest: -5 };
//! assert_eq!(decode_relayed(&encode_relayed(17, &report)), Ok((17, report)));
//! // An envelope is taken at its send time: bytes that are none do not decode.
//! assert!(decode_relayed(&encode_relayed(17, &SiteOut::Envelope(vec![1, 2, 3]))).is_err());
//! assert!(decode_relayed(&[7]).is_err());
//! ```

use saams::api::monitor::SLIDING_WINDOW_MONITOR_ID;
use saams::codec::{Reader, Writer};
use saams_monitoring::fallback::Envelope;
use serde_json::Value as Json;

use super::{MonitorPlan, SiteOut};

/// The bytes of a relayed site message: a tag (0 an envelope, 1 the site's bookkeeping) and the
/// message's fields; bookkeeping with `at`, the event time of the items it counts (an envelope is
/// taken at its send time, which its bytes hold: `at` is not written for it).
pub fn encode_relayed(at: i64, out: &SiteOut) -> Vec<u8> {
    let mut w = Writer::new();
    match out {
        SiteOut::Envelope(bytes) => {
            w.u8(0);
            w.len_bytes(bytes);
        }
        SiteOut::Stats { refused, newest } => {
            w.u8(1);
            w.i64(at);
            w.varint(*refused);
            w.i64(*newest);
        }
    }
    w.into_inner()
}

/// Read a relayed site message: the time it is taken at, and the message.
///
/// # Errors
/// Bytes [`encode_relayed`] did not make, an envelope that does not decode.
pub fn decode_relayed(bytes: &[u8]) -> Result<(i64, SiteOut), String> {
    let e = |e: saams::SynopsisError| format!("relayed site message: {e}");
    let mut r = Reader::new(bytes);
    let relayed = match r.u8().map_err(e)? {
        0 => {
            let envelope = r.len_bytes().map_err(e)?.to_vec();
            let sent = Envelope::decode(&envelope).map_err(|e| format!("relayed site message: {e}"))?.time;
            (sent, SiteOut::Envelope(envelope))
        }
        1 => {
            let at = r.i64().map_err(e)?;
            (at, SiteOut::Stats { refused: r.varint().map_err(e)?, newest: r.i64().map_err(e)? })
        }
        k => return Err(format!("relayed site message: unknown tag {k}")),
    };
    r.finish().map_err(e)?;
    Ok(relayed)
}

/// The sending site and send time of an envelope's bytes (what a cloud job checks of a
/// device's messages before it relays them).
///
/// # Errors
/// Bytes that are no envelope.
pub fn envelope_site_time(bytes: &[u8]) -> Result<(u32, i64), String> {
    let e = Envelope::decode(bytes).map_err(|e| e.to_string())?;
    Ok((e.site, e.time))
}

impl MonitorPlan {
    /// The index of the monitored stream named by what it is — dataset, stream, field and its
    /// construct parameters as [`MonitorPlan::params_text`] writes them — as a device names it:
    /// the one not deleted first, else the newest deleted (a device's messages of the windows
    /// before the delete's fence).
    pub fn index_named(&self, (dataset, stream, field): (&str, &str, &str), params: &str) -> Option<u32> {
        let same = |m: &&super::Monitored| {
            m.dataset == dataset && m.stream == stream && m.field == field && params_text(&m.spec) == params
        };
        let live = self.monitored.iter().position(|m| m.until.is_none() && same(&m));
        let any = || self.monitored.iter().rposition(|m| same(&m));
        live.or_else(any).map(|i| i as u32)
    }

    /// Monitored stream `i`'s construct parameters as text (what [`MonitorPlan::index_named`] reads).
    pub fn params_text(&self, i: u32) -> String {
        self.monitored.get(i as usize).map(|m| params_text(&m.spec)).unwrap_or_default()
    }
}

/// A monitor's parameters as JSON text, with its kind's id in front (no synopsis' parameters
/// read the same).
fn params_text(spec: &saams::api::monitor::MonitorSpec) -> String {
    let mut params = vec![Json::from(SLIDING_WINDOW_MONITOR_ID)];
    params.extend(super::live::monitor_params(spec));
    Json::Array(params).to_string()
}
