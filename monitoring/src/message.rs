//! The messages a site sends to the root, their cost in words, and their binary encoding.
//!
//! **Words** count the numbers a message carries (an item, a count, a stamp; a list adds one
//! word for its length). The site id and the send time travel in the transport envelope (the
//! Kafka key and record timestamp) and are not counted, as in the paper's model where each site
//! has its own link to the root.
//!
//! **Bytes** are the length of [`Message::encode`]: one tag byte (message type and channel),
//! then unsigned LEB128 varints written with [`saams::codec::Writer`]; stamps are zigzag
//! varints, and sorted lists are delta-coded. [`Message::decode`] is its checked inverse. The
//! types also derive serde, so the same values can travel as JSON if a consumer prefers.

use saams::codec::{Reader, Writer, unzigzag, zigzag};
use serde::{Deserialize, Serialize};

use crate::error::MonitorError;

/// Which tracked statistic a message updates: one site runs several trackers side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Channel {
    /// Basic counting at ε.
    Count,
    /// Approximate counting at ε.
    Items,
    /// The basic counting half of frequent items (ε/24).
    FrequentTotal,
    /// The approximate counting half of frequent items (11ε/24).
    FrequentItems,
    /// Quantile summaries.
    Quantiles,
}

impl Channel {
    /// Every channel, in tag order.
    pub const ALL: [Channel; 5] =
        [Channel::Count, Channel::Items, Channel::FrequentTotal, Channel::FrequentItems, Channel::Quantiles];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Channel::Count => "count",
            Channel::Items => "items",
            Channel::FrequentTotal => "frequent_total",
            Channel::FrequentItems => "frequent_items",
            Channel::Quantiles => "quantiles",
        }
    }

    fn tag(self) -> u8 {
        self as u8
    }

    fn from_tag(t: u8) -> Option<Channel> {
        Channel::ALL.get(usize::from(t)).copied()
    }
}

/// One site → root message.
///
/// ```
/// use saams_monitoring::{Channel, Message};
/// let m = Message::ItemCount { channel: Channel::Items, item: 42, value: 7 };
/// assert_eq!(m.words(), 2);
/// let bytes = m.encode();
/// assert_eq!(bytes.len(), 3);
/// assert_eq!(Message::decode(&bytes).unwrap(), m);
/// assert!(Message::decode(&bytes[..2]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Message {
    /// Seed BC up/down event: the site's estimated window count.
    Count {
        /// The tracker.
        channel: Channel,
        /// The estimated count.
        value: u64,
    },
    /// Seed AC: the site's estimated window count of `item` (the item is on at the root).
    ItemCount {
        /// The tracker.
        channel: Channel,
        /// The item.
        item: u64,
        /// Its estimated count.
        value: u64,
    },
    /// Seed AC: `item` is turned off (counts as 0 at the root until it is sent again).
    ItemOff {
        /// The tracker.
        channel: Channel,
        /// The item.
        item: u64,
    },
    /// Quantiles: the site's summary, `(item, weight)` ascending by item; a weight stands for
    /// that many half copies of the items up to this one since the previous entry (every site
    /// uses the same unit, and the root's rule is scale-free).
    Summary {
        /// The summary entries.
        entries: Vec<(u64, u64)>,
    },
    /// Quantiles: changes to the summary the root holds for this site: `(item, weight)` sets
    /// an entry, weight 0 removes it.
    SummaryPatch {
        /// The changed entries, ascending by item.
        entries: Vec<(u64, u64)>,
    },
    /// Forward/backward: the backward part of the window count (items stamped in `(s, p]` for
    /// the cut `s = t − W`, `p` the phase's split) as level crossings: the root's estimate at cut
    /// `s` is `step × #{ticks > s}`. Sent at a phase start and when the site's total leaves the
    /// range its granularity was chosen for; it replaces the previous one.
    Backward {
        /// The tracker.
        channel: Channel,
        /// The level spacing.
        step: u64,
        /// The cuts at which the backward count falls below the next level, ascending.
        ticks: Vec<i64>,
    },
    /// Forward/backward: per-item backward level crossings (items not listed are 0) and the
    /// forward step of [`Message::ForwardTick`]; replaces every item's backward part.
    BackwardItems {
        /// The tracker.
        channel: Channel,
        /// The level spacing.
        step: u64,
        /// What one [`Message::ForwardTick`] adds.
        forward_step: u64,
        /// `(item, ticks)`, ascending by item, each tick list ascending.
        items: Vec<(u64, Vec<i64>)>,
    },
    /// Forward/backward: the estimated count of items stamped after the phase's split.
    Forward {
        /// The tracker.
        channel: Channel,
        /// The count.
        value: u64,
    },
    /// Forward/backward: one item's estimated count stamped after the phase's split.
    ForwardItem {
        /// The tracker.
        channel: Channel,
        /// The item.
        item: u64,
        /// Its count.
        value: u64,
    },
    /// Forward/backward: one item's forward count rose by another forward step.
    ForwardTick {
        /// The tracker.
        channel: Channel,
        /// The item.
        item: u64,
    },
}

fn write_ticks(w: &mut Writer, ticks: &[i64]) {
    w.varint(ticks.len() as u64);
    let mut prev = 0i64;
    for (i, &s) in ticks.iter().enumerate() {
        if i == 0 {
            w.varint(zigzag(s));
        } else {
            w.varint(zigzag(s.wrapping_sub(prev)));
        }
        prev = s;
    }
}

fn read_ticks(r: &mut Reader<'_>) -> Result<Vec<i64>, MonitorError> {
    let n = r.count(1)?;
    let mut out = Vec::with_capacity(n);
    let mut prev = 0i64;
    for i in 0..n {
        let d = unzigzag(r.varint()?);
        let s = if i == 0 { d } else { prev.wrapping_add(d) };
        prev = s;
        out.push(s);
    }
    Ok(out)
}

impl Message {
    /// The words this message costs (see the module docs).
    pub fn words(&self) -> u64 {
        match self {
            Message::Count { .. } | Message::ItemOff { .. } | Message::Forward { .. } | Message::ForwardTick { .. } => {
                1
            }
            Message::ItemCount { .. } | Message::ForwardItem { .. } => 2,
            Message::Summary { entries } | Message::SummaryPatch { entries } => 1 + 2 * entries.len() as u64,
            Message::Backward { ticks, .. } => 2 + ticks.len() as u64,
            Message::BackwardItems { items, .. } => {
                3 + items.iter().map(|(_, ticks)| 2 + ticks.len() as u64).sum::<u64>()
            }
        }
    }

    /// The channel the message belongs to.
    pub fn channel(&self) -> Channel {
        match self {
            Message::Count { channel, .. }
            | Message::ItemCount { channel, .. }
            | Message::ItemOff { channel, .. }
            | Message::Backward { channel, .. }
            | Message::BackwardItems { channel, .. }
            | Message::Forward { channel, .. }
            | Message::ForwardItem { channel, .. }
            | Message::ForwardTick { channel, .. } => *channel,
            Message::Summary { .. } | Message::SummaryPatch { .. } => Channel::Quantiles,
        }
    }

    /// The compact binary encoding (module docs).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        let (kind, channel) = match self {
            Message::Count { channel, .. } => (0u8, *channel),
            Message::ItemCount { channel, .. } => (1, *channel),
            Message::ItemOff { channel, .. } => (2, *channel),
            Message::Summary { .. } => (3, Channel::Quantiles),
            Message::SummaryPatch { .. } => (8, Channel::Quantiles),
            Message::Backward { channel, .. } => (4, *channel),
            Message::BackwardItems { channel, .. } => (5, *channel),
            Message::Forward { channel, .. } => (6, *channel),
            Message::ForwardItem { channel, .. } => (7, *channel),
            Message::ForwardTick { channel, .. } => (9, *channel),
        };
        w.u8((kind << 3) | channel.tag());
        match self {
            Message::Count { value, .. } | Message::Forward { value, .. } => w.varint(*value),
            Message::ItemCount { item, value, .. } | Message::ForwardItem { item, value, .. } => {
                w.varint(*item);
                w.varint(*value);
            }
            Message::ItemOff { item, .. } | Message::ForwardTick { item, .. } => w.varint(*item),
            Message::Summary { entries } | Message::SummaryPatch { entries } => {
                w.varint(entries.len() as u64);
                let mut prev = 0u64;
                for &(item, weight) in entries {
                    w.varint(item.wrapping_sub(prev));
                    prev = item;
                    w.varint(weight);
                }
            }
            Message::Backward { step, ticks, .. } => {
                w.varint(*step);
                write_ticks(&mut w, ticks);
            }
            Message::BackwardItems { step, forward_step, items, .. } => {
                w.varint(*step);
                w.varint(*forward_step);
                w.varint(items.len() as u64);
                let mut prev = 0u64;
                for (item, ticks) in items {
                    w.varint(item.wrapping_sub(prev));
                    prev = *item;
                    write_ticks(&mut w, ticks);
                }
            }
        }
        w.into_inner()
    }

    /// Decode bytes written by [`Message::encode`].
    ///
    /// # Errors
    /// [`MonitorError::Codec`] for truncated or trailing bytes and unknown tags.
    pub fn decode(bytes: &[u8]) -> Result<Message, MonitorError> {
        let mut r = Reader::new(bytes);
        let tag = r.u8()?;
        let channel = Channel::from_tag(tag & 7)
            .ok_or_else(|| MonitorError::Codec(format!("unknown channel tag {}", tag & 7)))?;
        let m = match tag >> 3 {
            0 => Message::Count { channel, value: r.varint()? },
            1 => Message::ItemCount { channel, item: r.varint()?, value: r.varint()? },
            2 => Message::ItemOff { channel, item: r.varint()? },
            3 | 8 => {
                let n = r.count(2)?;
                let mut entries = Vec::with_capacity(n);
                let mut prev = 0u64;
                for _ in 0..n {
                    let item = prev.wrapping_add(r.varint()?);
                    prev = item;
                    entries.push((item, r.varint()?));
                }
                if tag >> 3 == 3 { Message::Summary { entries } } else { Message::SummaryPatch { entries } }
            }
            4 => Message::Backward { channel, step: r.varint()?, ticks: read_ticks(&mut r)? },
            5 => {
                let step = r.varint()?;
                let forward_step = r.varint()?;
                let n = r.count(2)?;
                let mut items = Vec::with_capacity(n);
                let mut prev = 0u64;
                for _ in 0..n {
                    let item = prev.wrapping_add(r.varint()?);
                    prev = item;
                    items.push((item, read_ticks(&mut r)?));
                }
                Message::BackwardItems { channel, step, forward_step, items }
            }
            6 => Message::Forward { channel, value: r.varint()? },
            7 => Message::ForwardItem { channel, item: r.varint()?, value: r.varint()? },
            9 => Message::ForwardTick { channel, item: r.varint()? },
            k => return Err(MonitorError::Codec(format!("unknown message kind {k}"))),
        };
        r.finish()?;
        Ok(m)
    }
}
