//! What a device ships to the cloud job over the partials topic: one [`Shipment`] per Kafka
//! record, in a small binary form with a CRC, so a forged or damaged record is refused before
//! anything is read from it.
//!
//! A record is `SAED`, the format version (1), the CRC-32 of the rest, then the body: the kind
//! (hello, data, goodbye, a device's answer to an ask), the device id, the sequence number and, for data, the window and per
//! update group of the device's plan the synopses it feeds (named by what they are: dataset,
//! stream, field, kind and construct parameters, so the cloud finds them whatever its own
//! indices) and either their partials (the codec bytes), their whole states (the checkpoint
//! codec's bytes, from a device that is the stream's only reader), their query views (a device
//! that keeps them resident) or the raw values as compact records (time from the window's start,
//! sequence number and value); on a window's last record, the window the device moved on to.
//!
//! ```
//! use saams_jobs::edge::shipment::{Body, GroupData, GroupShip, RawValue, Shipment, SynId};
//! use saams_operators::Val;
//! let syn = SynId { dataset: "F".into(), stream: "A".into(), field: "price".into(), synopsis_id: 4, params: "[8,4,1]".into() };
//! let raw = vec![RawValue { time: 61_500, seq: 3, val: Val::Num(2.5) }];
//! let ship = Shipment {
//!     device: "pi-1".into(),
//!     seq: 0,
//!     body: Body::Data {
//!         window: 60_000,
//!         raw_bytes: 40,
//!         groups: vec![GroupShip { synopses: vec![syn], data: GroupData::Raw(raw) }],
//!         through: Some(120_000),
//!     },
//! };
//! let bytes = ship.encode();
//! assert_eq!(Shipment::decode(&bytes).unwrap(), ship);
//! let mut forged = bytes.clone();
//! *forged.last_mut().unwrap() ^= 1;
//! assert!(Shipment::decode(&forged).unwrap_err().contains("CRC"));
//! ```

use saams::codec::{Reader, Writer};
use saams_operators::Val;

/// The first bytes of every record of a partials topic.
pub const MAGIC: &[u8; 4] = b"SAED";
/// The format version this build writes and reads.
pub const VERSION: u8 = 1;

/// A synopsis named by what it is, the same in the cloud's plan and the device's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SynId {
    /// Dataset.
    pub dataset: String,
    /// Stream (empty: dataset-wide).
    pub stream: String,
    /// Field.
    pub field: String,
    /// The kind's API id.
    pub synopsis_id: u64,
    /// The construct parameters as JSON text.
    pub params: String,
}

/// One raw value of an update group, as the device read it.
#[derive(Clone, Debug, PartialEq)]
pub struct RawValue {
    /// Event time (ms).
    pub time: i64,
    /// The device's arrival sequence number.
    pub seq: u64,
    /// The value.
    pub val: Val,
}

/// What a device ships for one update group in one window.
#[derive(Clone, Debug, PartialEq)]
pub enum GroupData {
    /// The partials of every synopsis of the group (codec bytes, in the group's order) and the
    /// values they summarize.
    Partials {
        /// Values summarized.
        items: u64,
        /// One partial per synopsis of [`GroupShip::synopses`].
        parts: Vec<Vec<u8>>,
    },
    /// The raw values (the cloud updates the synopses from them).
    Raw(Vec<RawValue>),
    /// The whole states of every synopsis of the group as at the window's close (exact codec
    /// bytes, zero runs packed, in the group's order): the device is the only one reading the
    /// stream and fed them as the cloud's owner would, so the cloud installs them in place of
    /// its own ([`crate::edge::device`]).
    Whole {
        /// Values of this shipment the states cover (the window counts them).
        items: u64,
        /// Values the states summarize in their open period.
        period_items: u64,
        /// One state per synopsis of [`GroupShip::synopses`].
        states: Vec<Vec<u8>>,
    },
    /// The query views of every synopsis of the group as at the window's close (their compact
    /// form, [`saams_operators::query_view`]): the device keeps the states (`saams-edge
    /// --resident`) and ships what the continuous queries read; the cloud holds the views in
    /// their place.
    View {
        /// Values of the window the views cover (all of the window's: nothing of a resident
        /// group is shipped raw).
        items: u64,
        /// Values the states summarize in their open period.
        period_items: u64,
        /// One view per synopsis of [`GroupShip::synopses`].
        views: Vec<Vec<u8>>,
    },
    /// The messages of a monitored stream's sites run on the device ([`crate::edge::monitor_site`]):
    /// each a relayed site message ([`saams_operators::monitor::relay`]), in the order sent.
    /// [`GroupShip::synopses`] names the monitored stream (kind 14).
    Sites(Vec<Vec<u8>>),
}

impl GroupShip {
    /// The bytes this group takes in a shipment of `window`: what a device compares to choose
    /// each group's form.
    pub fn encoded_len(&self, window: u64) -> usize {
        let mut w = Writer::new();
        encode_group(&mut w, window, self);
        w.into_inner().len()
    }
}

/// One update group of a shipment: the synopses it feeds and what is shipped for them.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupShip {
    /// The synopses the group feeds, in the device plan's order.
    pub synopses: Vec<SynId>,
    /// Partials or raw values.
    pub data: GroupData,
}

/// What a record says.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// A device starts (or restarts): it is counted as live from now on.
    Hello {
        /// It keeps the groups of the streams it reads resident (`saams-edge --resident`): the
        /// cloud takes their synopses as resident on it from its first shipment of any form
        /// ([`crate::edge::budget`]: raw values and whole states too), not its first view. A
        /// record without the flag (an older device's) says no.
        resident: bool,
    },
    /// What the device read in one job window (start, ms).
    Data {
        /// The window's start (ms).
        window: u64,
        /// What shipping the window's values raw costs (the encoded raw form, in bytes): what
        /// the device compared this record with ([`crate::edge::device`]).
        raw_bytes: u64,
        /// Per update group.
        groups: Vec<GroupShip>,
        /// On the last record of a window the device closed because it read a tuple of a later
        /// window: that window's start. The device ships nothing older from then on (it refuses
        /// older tuples as late), so the cloud's clock of its partition moves there at once
        /// instead of waiting for the next window's shipment, one window later. Why: a window's
        /// answer waited for the device's next window to close (a whole window, an hour at the
        /// paper's setting), where a following device's position (`saams-edge --follow`) let it
        /// close as soon as the device moved on. `None` on every other record (a window shipped
        /// so far with `--ship-every`, its earlier records, a window closed by the input's end).
        through: Option<u64>,
    },
    /// A device stops cleanly after shipping every window before `through` (ms).
    Goodbye {
        /// The end of the last window it shipped.
        through: u64,
    },
    /// A device's answer to an ad-hoc query or SAVE of a synopsis resident on it, asked at a
    /// fence ([`crate::edge::asks`]).
    Answer(Answered),
}

/// What a device answers for a synopsis resident on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Answered {
    /// The ask's id (the same on the device and in the cloud: both number the asks of live
    /// requests in the order they apply them).
    pub ask: u64,
    /// The synopsis asked.
    pub synopsis: SynId,
    /// The answer line, as the cloud's owner would write it from the state.
    pub line: String,
    /// A SAVE's snapshot (file, the state's bytes): the cloud writes it.
    pub saved: Option<(String, Vec<u8>)>,
}

/// One record of the partials topic.
#[derive(Clone, Debug, PartialEq)]
pub struct Shipment {
    /// The device's id.
    pub device: String,
    /// Its sequence number within the window (data), 0 otherwise.
    pub seq: u64,
    /// What it says.
    pub body: Body,
}

impl Shipment {
    /// The record's bytes: magic, version, CRC-32 of the body, body.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.len_bytes(self.device.as_bytes());
        w.varint(self.seq);
        match &self.body {
            Body::Hello { resident } => {
                w.u8(0);
                if *resident {
                    w.u8(1);
                }
            }
            Body::Goodbye { through } => {
                w.u8(2);
                w.varint(*through);
            }
            Body::Answer(a) => {
                w.u8(3);
                w.varint(a.ask);
                encode_syn(&mut w, &a.synopsis);
                w.len_bytes(a.line.as_bytes());
                match &a.saved {
                    None => w.u8(0),
                    Some((file, bytes)) => {
                        w.u8(1);
                        w.len_bytes(file.as_bytes());
                        w.len_bytes(bytes);
                    }
                }
            }
            Body::Data { window, raw_bytes, groups, through } => {
                // Kind 4: a data record with the window the device moved on to (after the groups).
                w.u8(if through.is_some() { 4 } else { 1 });
                w.varint(*window);
                // Fixed width: the raw form's size must not depend on the size it records.
                w.u64(*raw_bytes);
                w.varint(groups.len() as u64);
                for g in groups {
                    encode_group(&mut w, *window, g);
                }
                if let Some(next) = through {
                    w.varint(next.saturating_sub(*window));
                }
            }
        }
        let body = w.into_inner();
        let mut out = Vec::with_capacity(body.len() + 9);
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Read a record.
    ///
    /// # Errors
    /// Not a shipment (magic), another version, a CRC that does not match, a truncated or
    /// malformed body: the reason, for the dead letter.
    pub fn decode(bytes: &[u8]) -> Result<Shipment, String> {
        if bytes.len() < 9 || &bytes[..4] != MAGIC {
            return Err("not a device shipment (no SAED header)".into());
        }
        if bytes[4] != VERSION {
            return Err(format!("shipment format version {} (this build reads {VERSION})", bytes[4]));
        }
        let crc = u32::from_le_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]);
        let body = &bytes[9..];
        if crc32fast::hash(body) != crc {
            return Err("bad CRC: the shipment was damaged or forged".into());
        }
        decode_body(body).map_err(|e| format!("malformed shipment: {e}"))
    }
}

fn encode_syn(w: &mut Writer, s: &SynId) {
    for text in [&s.dataset, &s.stream, &s.field] {
        w.len_bytes(text.as_bytes());
    }
    w.varint(s.synopsis_id);
    w.len_bytes(s.params.as_bytes());
}

fn decode_syn(r: &mut Reader<'_>) -> Result<SynId, String> {
    let (dataset, stream, field) = (text(r)?, text(r)?, text(r)?);
    let synopsis_id = r.varint().map_err(|e| e.to_string())?;
    Ok(SynId { dataset, stream, field, synopsis_id, params: text(r)? })
}

fn encode_group(w: &mut Writer, window: u64, g: &GroupShip) {
    w.varint(g.synopses.len() as u64);
    for s in &g.synopses {
        encode_syn(w, s);
    }
    match &g.data {
        GroupData::Partials { items, parts } => {
            w.u8(0);
            w.varint(*items);
            for p in parts {
                w.len_bytes(p);
            }
        }
        GroupData::Whole { items, period_items, states: blobs }
        | GroupData::View { items, period_items, views: blobs } => {
            w.u8(if matches!(g.data, GroupData::View { .. }) { 3 } else { 2 });
            w.varint(*items);
            w.varint(*period_items);
            for blob in blobs {
                w.len_bytes(blob);
            }
        }
        GroupData::Sites(messages) => {
            w.u8(4);
            w.varint(messages.len() as u64);
            for m in messages {
                w.len_bytes(m);
            }
        }
        GroupData::Raw(values) => {
            w.u8(1);
            w.varint(values.len() as u64);
            let mut last_seq = 0u64;
            for v in values {
                // Times from the window's start, sequence numbers as deltas (they grow).
                w.varint(u64::try_from(v.time).unwrap_or(0).saturating_sub(window));
                w.varint(v.seq.wrapping_sub(last_seq));
                last_seq = v.seq;
                match &v.val {
                    Val::Num(x) => {
                        w.u8(0);
                        w.f64(*x);
                    }
                    Val::Str(s) => {
                        w.u8(1);
                        w.len_bytes(s.as_bytes());
                    }
                    Val::Part(_) => w.u8(2),
                }
            }
        }
    }
}

fn text(r: &mut Reader<'_>) -> Result<String, String> {
    let b = r.len_bytes().map_err(|e| e.to_string())?;
    String::from_utf8(b.to_vec()).map_err(|_| "text is not UTF-8".to_string())
}

fn decode_body(body: &[u8]) -> Result<Shipment, String> {
    let e = |e: saams::SynopsisError| e.to_string();
    let mut r = Reader::new(body);
    let device = text(&mut r)?;
    if device.is_empty() {
        return Err("empty device id".into());
    }
    let seq = r.varint().map_err(e)?;
    let body = match r.u8().map_err(e)? {
        0 if r.is_empty() => Body::Hello { resident: false },
        0 => match r.u8().map_err(e)? {
            1 => Body::Hello { resident: true },
            k => return Err(format!("unknown hello flag {k}")),
        },
        2 => Body::Goodbye { through: r.varint().map_err(e)? },
        3 => {
            let ask = r.varint().map_err(e)?;
            let synopsis = decode_syn(&mut r)?;
            let line = text(&mut r)?;
            let saved = match r.u8().map_err(e)? {
                0 => None,
                1 => Some((text(&mut r)?, r.len_bytes().map_err(e)?.to_vec())),
                k => return Err(format!("unknown answer form {k}")),
            };
            Body::Answer(Answered { ask, synopsis, line, saved })
        }
        kind @ (1 | 4) => {
            let window = r.varint().map_err(e)?;
            let raw_bytes = r.u64().map_err(e)?;
            let n = r.count(2).map_err(e)?;
            let mut groups = Vec::with_capacity(n);
            for _ in 0..n {
                groups.push(decode_group(&mut r, window)?);
            }
            let through = match kind {
                4 => match r.varint().map_err(e)? {
                    0 => return Err(format!("window {window} moves on to itself")),
                    ahead => Some(window.checked_add(ahead).ok_or("the next window is past the end of time")?),
                },
                _ => None,
            };
            Body::Data { window, raw_bytes, groups, through }
        }
        k => return Err(format!("unknown record kind {k}")),
    };
    r.finish().map_err(e)?;
    Ok(Shipment { device, seq, body })
}

fn decode_group(r: &mut Reader<'_>, window: u64) -> Result<GroupShip, String> {
    let e = |e: saams::SynopsisError| e.to_string();
    let n = r.count(5).map_err(e)?;
    let mut synopses = Vec::with_capacity(n);
    for _ in 0..n {
        synopses.push(decode_syn(r)?);
    }
    let data = match r.u8().map_err(e)? {
        0 => {
            let items = r.varint().map_err(e)?;
            let parts = (0..n).map(|_| r.len_bytes().map(<[u8]>::to_vec).map_err(e)).collect::<Result<_, _>>()?;
            GroupData::Partials { items, parts }
        }
        form @ (2 | 3) => {
            let items = r.varint().map_err(e)?;
            let period_items = r.varint().map_err(e)?;
            let blobs = (0..n).map(|_| r.len_bytes().map(<[u8]>::to_vec).map_err(e)).collect::<Result<_, _>>()?;
            if form == 2 {
                GroupData::Whole { items, period_items, states: blobs }
            } else {
                GroupData::View { items, period_items, views: blobs }
            }
        }
        4 => {
            let count = r.count(1).map_err(e)?;
            let messages =
                (0..count).map(|_| r.len_bytes().map(<[u8]>::to_vec).map_err(e)).collect::<Result<_, _>>()?;
            GroupData::Sites(messages)
        }
        1 => {
            let count = r.count(3).map_err(e)?;
            let mut values = Vec::with_capacity(count);
            let mut seq = 0u64;
            for _ in 0..count {
                let time =
                    i64::try_from(window.saturating_add(r.varint().map_err(e)?)).map_err(|_| "time out of range")?;
                seq = seq.wrapping_add(r.varint().map_err(e)?);
                let val = match r.u8().map_err(e)? {
                    0 => Val::Num(r.f64().map_err(e)?),
                    1 => Val::Str(text(r)?.into()),
                    k => return Err(format!("unknown value tag {k}")),
                };
                values.push(RawValue { time, seq, val });
            }
            GroupData::Raw(values)
        }
        k => return Err(format!("unknown group form {k}")),
    };
    Ok(GroupShip { synopses, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resident device's hello says so; an older device's hello (no flag) reads as not
    /// resident; an unknown flag is refused.
    #[test]
    fn a_hello_says_whether_the_device_is_resident() {
        for resident in [false, true] {
            let ship = Shipment { device: "pi-1".into(), seq: 0, body: Body::Hello { resident } };
            assert_eq!(Shipment::decode(&ship.encode()).unwrap(), ship);
        }
        let plain = Shipment { device: "pi-1".into(), seq: 0, body: Body::Hello { resident: false } }.encode();
        let mut body = plain[9..].to_vec();
        body.push(7);
        let mut forged = plain[..5].to_vec();
        forged.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        forged.extend_from_slice(&body);
        assert!(Shipment::decode(&forged).unwrap_err().contains("unknown hello flag 7"));
    }

    /// A window's last record names the window the device moved on to, as a distance that
    /// costs a byte or a few; a record without it (kind 1, an older device's) reads as `None`;
    /// a distance of 0 (the window itself) is refused.
    #[test]
    fn a_data_record_names_the_window_its_device_moved_on_to() {
        let syn = SynId {
            dataset: "F".into(),
            stream: "A".into(),
            field: "price".into(),
            synopsis_id: 1,
            params: "[]".into(),
        };
        let groups = vec![GroupShip { synopses: vec![syn], data: GroupData::Raw(vec![]) }];
        let data = |through| Shipment {
            device: "pi-1".into(),
            seq: 2,
            body: Body::Data { window: 3_600_000, raw_bytes: 9, groups: groups.clone(), through },
        };
        let without = data(None).encode();
        for (through, more) in [(None, 0), (Some(3_601_000), 2), (Some(7_200_000), 4)] {
            let bytes = data(through).encode();
            assert_eq!(Shipment::decode(&bytes).unwrap(), data(through));
            assert_eq!(bytes.len(), without.len() + more, "{through:?}");
        }
        let mut body = data(Some(3_601_000)).encode()[9..].to_vec();
        let last = body.len() - 2;
        body.truncate(last);
        body.push(0);
        let mut forged = without[..5].to_vec();
        forged.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        forged.extend_from_slice(&body);
        assert!(
            Shipment::decode(&forged).unwrap_err().contains("moves on to itself"),
            "{:?}",
            Shipment::decode(&forged)
        );
    }

    /// A device's answer, with and without a SAVE's snapshot, is read back as written; a
    /// damaged one is refused by its CRC.
    #[test]
    fn an_answer_survives_the_record_format() {
        let synopsis = SynId {
            dataset: "F".into(),
            stream: "A".into(),
            field: "price".into(),
            synopsis_id: 1,
            params: "[0.01,0.9,7]".into(),
        };
        let answered = Answered { ask: 3, synopsis, line: r#"{"requestID":201}"#.into(), saved: None };
        for saved in [None, Some(("cm.bin".to_string(), vec![0, 1, 255]))] {
            let ship =
                Shipment { device: "pi-1".into(), seq: 0, body: Body::Answer(Answered { saved, ..answered.clone() }) };
            let mut bytes = ship.encode();
            assert_eq!(Shipment::decode(&bytes).unwrap(), ship);
            bytes[12] ^= 1;
            assert!(Shipment::decode(&bytes).unwrap_err().contains("CRC"));
        }
    }
}
