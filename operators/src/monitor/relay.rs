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
//! Each relayed message carries the time the coordinator takes it at — an envelope's send time,
//! a refusal report's items' event time — so a device's refusals count in the same answers as
//! the job's own sites' do (at their item's time, [`super::hosted::Refusals`]).
//!
//! ```
//! use saams_operators::monitor::SiteOut;
//! use saams_operators::monitor::relay::{decode_relayed, encode_relayed};
//! for out in [SiteOut::Envelope(vec![1, 2, 3]), SiteOut::Stats { refused: 4, newest: -5 }] {
//!     assert_eq!(decode_relayed(&encode_relayed(17, &out)), Ok((17, out)));
//! }
//! assert!(decode_relayed(&[7]).is_err());
//! ```

use saams::api::monitor::SLIDING_WINDOW_MONITOR_ID;
use saams::codec::{Reader, Writer};
use serde_json::Value as Json;

use super::{MonitorPlan, SiteOut};

/// The bytes of a relayed site message taken at event time `at`: a tag (0 an envelope, 1 the
/// site's bookkeeping), the time and the message's fields.
pub fn encode_relayed(at: i64, out: &SiteOut) -> Vec<u8> {
    let mut w = Writer::new();
    match out {
        SiteOut::Envelope(bytes) => {
            w.u8(0);
            w.i64(at);
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
/// Bytes [`encode_relayed`] did not make (the envelope inside is checked by the coordinator).
pub fn decode_relayed(bytes: &[u8]) -> Result<(i64, SiteOut), String> {
    let e = |e: saams::SynopsisError| format!("relayed site message: {e}");
    let mut r = Reader::new(bytes);
    let tag = r.u8().map_err(e)?;
    let at = r.i64().map_err(e)?;
    let out = match tag {
        0 => SiteOut::Envelope(r.len_bytes().map_err(e)?.to_vec()),
        1 => SiteOut::Stats { refused: r.varint().map_err(e)?, newest: r.i64().map_err(e)? },
        k => return Err(format!("relayed site message: unknown tag {k}")),
    };
    r.finish().map_err(e)?;
    Ok((at, out))
}

/// The sending site and send time of an envelope's bytes (what a cloud job checks of a
/// device's messages before it relays them).
///
/// # Errors
/// Bytes that are no envelope.
pub fn envelope_site_time(bytes: &[u8]) -> Result<(u32, i64), String> {
    let e = saams_monitoring::fallback::Envelope::decode(bytes).map_err(|e| e.to_string())?;
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
