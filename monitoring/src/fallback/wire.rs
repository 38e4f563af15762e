//! What a fallback site sends: a protocol [`Message`] of its running instance, a forwarded
//! item, or a switch between the two; and the envelope that carries it (site, sequence number,
//! send time).
//!
//! **Words**: a protocol message costs [`Message::words`]; a forwarded item costs what the
//! naive baseline charges per item — 1 word (the item; its stamp is the send time) when the
//! tardiness is 0, 2 words (item and stamp) otherwise; a switch costs 1 word. **Bytes** are the
//! length of [`SiteMessage::encode`]: a protocol message encodes exactly as [`Message::encode`]
//! (its tag byte's kind is below 16), the others use kinds 16–19. The envelope (site, sequence
//! number, send time) is transport, as in [`crate::Message`]'s model, and is not counted; it
//! has its own encoding ([`Envelope::encode`]) so a message can travel over a byte channel
//! (a timely exchange, a Kafka record).

use saams::codec::{Reader, Writer};
use serde::{Deserialize, Serialize};

use crate::error::MonitorError;
use crate::message::Message;

const ITEM: u8 = 16;
const STAMPED_ITEM: u8 = 17;
const START_PROTOCOL: u8 = 18;
const START_FORWARDING: u8 = 19;

/// One message of a fallback site.
///
/// ```
/// use saams_monitoring::fallback::SiteMessage;
/// use saams_monitoring::{Channel, Message};
/// let m = SiteMessage::StampedItem { stamp: -5, item: 42 };
/// assert_eq!(m.words(), 2);
/// assert_eq!(SiteMessage::decode(&m.encode()).unwrap(), m);
/// let p = Message::Count { channel: Channel::Count, value: 7 };
/// // A protocol message costs and encodes exactly as on its own.
/// assert_eq!(SiteMessage::Protocol(p.clone()).encode(), p.encode());
/// assert_eq!(SiteMessage::Protocol(p.clone()).words(), p.words());
/// assert!(SiteMessage::decode(&[START_PROTOCOL_TAG, 0]).is_err());
/// # const START_PROTOCOL_TAG: u8 = 18 << 3;
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SiteMessage {
    /// A message of the site's protocol instance (running, or draining after a switch to
    /// forwarding).
    Protocol(Message),
    /// A forwarded item stamped at the send time (tardiness 0): 1 word.
    Item {
        /// The item.
        item: u64,
    },
    /// A forwarded item with its stamp (tardiness > 0): 2 words.
    StampedItem {
        /// Its timestamp.
        stamp: i64,
        /// The item.
        item: u64,
    },
    /// From now on the site runs a fresh protocol instance; the root drops what it held of
    /// the previous (drained) one. Items forwarded before stay exact at the root until they
    /// expire. 1 word.
    StartProtocol,
    /// From now on the site forwards its items; its protocol instance takes no more items and
    /// keeps sending until its window is empty (`W` after this message). 1 word.
    StartForwarding,
}

impl SiteMessage {
    /// The words this message costs (module docs).
    pub fn words(&self) -> u64 {
        match self {
            SiteMessage::Protocol(m) => m.words(),
            SiteMessage::Item { .. } | SiteMessage::StartProtocol | SiteMessage::StartForwarding => 1,
            SiteMessage::StampedItem { .. } => 2,
        }
    }

    /// The compact binary encoding (module docs).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        match self {
            SiteMessage::Protocol(m) => return m.encode(),
            SiteMessage::Item { item } => {
                w.u8(ITEM << 3);
                w.varint(*item);
            }
            SiteMessage::StampedItem { stamp, item } => {
                w.u8(STAMPED_ITEM << 3);
                w.varint(((stamp << 1) ^ (stamp >> 63)) as u64);
                w.varint(*item);
            }
            SiteMessage::StartProtocol => w.u8(START_PROTOCOL << 3),
            SiteMessage::StartForwarding => w.u8(START_FORWARDING << 3),
        }
        w.into_inner()
    }

    /// Decode bytes written by [`SiteMessage::encode`].
    ///
    /// # Errors
    /// [`MonitorError::Codec`] for truncated or trailing bytes and unknown tags.
    pub fn decode(bytes: &[u8]) -> Result<SiteMessage, MonitorError> {
        let Some(&tag) = bytes.first() else {
            return Err(MonitorError::Codec("empty message".into()));
        };
        if tag >> 3 < ITEM {
            return Ok(SiteMessage::Protocol(Message::decode(bytes)?));
        }
        if tag & 7 != 0 {
            return Err(MonitorError::Codec(format!("tag {tag} carries a channel it cannot have")));
        }
        let mut r = Reader::new(&bytes[1..]);
        let m = match tag >> 3 {
            ITEM => SiteMessage::Item { item: r.varint()? },
            STAMPED_ITEM => {
                let z = r.varint()?;
                let stamp = ((z >> 1) as i64) ^ -((z & 1) as i64);
                SiteMessage::StampedItem { stamp, item: r.varint()? }
            }
            START_PROTOCOL => SiteMessage::StartProtocol,
            START_FORWARDING => SiteMessage::StartForwarding,
            k => return Err(MonitorError::Codec(format!("unknown message kind {k}"))),
        };
        r.finish()?;
        Ok(m)
    }
}

/// A [`SiteMessage`] with its transport envelope: the sending site, the site's sequence number
/// (0, 1, 2, … per site: the root refuses replays and notices gaps) and the send time.
///
/// ```
/// use saams_monitoring::fallback::{Envelope, SiteMessage};
/// let e = Envelope { site: 3, seq: 9, time: 1_000, message: SiteMessage::Item { item: 5 } };
/// let bytes = e.encode();
/// assert_eq!(Envelope::decode(&bytes).unwrap(), e);
/// assert!(Envelope::decode(&bytes[..bytes.len() - 1]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// The sending site.
    pub site: u32,
    /// The site's sequence number of this message.
    pub seq: u64,
    /// When it was sent (the site's time).
    pub time: i64,
    /// The message.
    pub message: SiteMessage,
}

impl Envelope {
    /// Site, sequence number and time as varints (the time zigzag), then the message's
    /// length-prefixed bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.varint(u64::from(self.site));
        w.varint(self.seq);
        w.varint(((self.time << 1) ^ (self.time >> 63)) as u64);
        w.len_bytes(&self.message.encode());
        w.into_inner()
    }

    /// Decode bytes written by [`Envelope::encode`].
    ///
    /// # Errors
    /// [`MonitorError::Codec`] for malformed bytes.
    pub fn decode(bytes: &[u8]) -> Result<Envelope, MonitorError> {
        let mut r = Reader::new(bytes);
        let site = u32::try_from(r.varint()?).map_err(|_| MonitorError::Codec("site id out of range".into()))?;
        let seq = r.varint()?;
        let z = r.varint()?;
        let time = ((z >> 1) as i64) ^ -((z & 1) as i64);
        let message = SiteMessage::decode(r.len_bytes()?)?;
        r.finish()?;
        Ok(Envelope { site, seq, time, message })
    }
}
