//! Ad-hoc queries and SAVEs answered now, from the current state, while the job runs.
//!
//! A live ad-hoc request becomes an [`Ask`]: the worker that took the request sends it into the
//! tuple input as a marker record ([`Ask::into_rec`], group [`ASK_GROUP`]), which the exchange
//! hands to every worker. There it does not wait for the watermark:
//!
//! - an owned synopsis is answered on the spot by its owner, from its merged state;
//! - a spread synopsis: every worker sends its open windows' partials of it ([`AskPart`]) straight
//!   to the synopsis' home, which answers once it has every worker's part and has folded every
//!   window some worker had already closed: its merged closed windows plus the parts of the windows
//!   it has not folded. Nothing is counted twice (a window is either folded or taken from the parts)
//!   and nothing closed is missed.
//!
//! The answer line says what it covers (`tuples`, and `asOf`: the watermark) and goes to the
//! output like any other; when someone waits for it (an HTTP request), it is also tagged with the
//! origin ([`reply_line`]) so the job hands it back to the process that took the request.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::record::{Rec, SynBox, Val};

/// The update group of ask markers in the tuple input (no real group has this index).
pub const ASK_GROUP: u32 = u32::MAX;

/// The update group of fence markers: request epoch `seq` takes effect at fence `val` (ms).
/// Every worker still reading sends one to every worker before it routes any value of the new
/// plan, so a worker applies the requests before it sees such a value, and before its frontier
/// passes the fence.
pub const FENCE_GROUP: u32 = u32::MAX - 1;

/// The fence marker of request epoch `epoch` taking effect at window `fence`, sent at `time`.
///
/// ```
/// use saams_operators::ask::{FENCE_GROUP, fence_marker, fence_of};
/// let rec = fence_marker(4, 120_000, 61_000);
/// assert_eq!(rec.group, FENCE_GROUP);
/// assert_eq!(fence_of(&rec), Some((4, 120_000)));
/// ```
pub fn fence_marker(epoch: u64, fence: u64, time: i64) -> Rec {
    Rec { group: FENCE_GROUP, time, seq: epoch << DESTINATION_BITS, val: Val::Num(fence as f64) }
}

/// The (request epoch, fence) a fence marker carries.
pub fn fence_of(rec: &Rec) -> Option<(u64, u64)> {
    match (&rec.val, rec.group) {
        (Val::Num(f), FENCE_GROUP) => Some((rec.seq >> DESTINATION_BITS, *f as u64)),
        _ => None,
    }
}

/// Low bits of a marker's `seq` that name the worker its copy goes to ([`to_every_worker`]).
const DESTINATION_BITS: u32 = 16;

/// True for marker records (fence markers and asks): they go to every worker, a copy each.
pub fn is_marker(rec: &Rec) -> bool {
    rec.group >= FENCE_GROUP
}

/// One copy of `marker` (a fence marker or an ask record) per worker of `peers`, each addressed
/// to its worker ([`destination_of`]): the reader sends them all, and the exchange moves each to
/// its worker.
///
/// Why not one record that the exchange copies to every worker: timely accounts a message's
/// records where they are produced and again where they are consumed. An exchange that turned
/// one record into `peers` consumed more records at that time than were produced; the surplus
/// hid the next records at that time from the frontier, which then passed values still in
/// flight, and the frontier downstream went back (differential's arrange asserts that it never
/// does).
///
/// ```
/// use saams_operators::ask::{destination_of, fence_marker, fence_of, to_every_worker};
/// let copies: Vec<_> = to_every_worker(fence_marker(4, 120_000, 61_000), 3).collect();
/// assert_eq!(copies.iter().map(destination_of).collect::<Vec<_>>(), vec![0, 1, 2]);
/// assert!(copies.iter().all(|c| fence_of(c) == Some((4, 120_000)) && c.time == 61_000));
/// ```
pub fn to_every_worker(marker: Rec, peers: usize) -> impl Iterator<Item = Rec> {
    let peers = peers.clamp(1, 1 << DESTINATION_BITS) as u64;
    (0..peers).map(move |dest| Rec { seq: marker.seq | dest, ..marker.clone() })
}

/// The worker a marker's copy goes to ([`to_every_worker`]).
pub fn destination_of(rec: &Rec) -> usize {
    (rec.seq & ((1 << DESTINATION_BITS) - 1)) as usize
}

/// Who waits for an answer: the worker that took the request and its ticket there.
pub type Origin = (u32, u64);

/// What an ask wants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AskWhat {
    /// An ad-hoc query with the request's arguments.
    Query(#[serde(with = "json_text")] Json),
    /// Save the synopsis' current state to a snapshot file.
    Save(String),
    /// An ad-hoc pair query: the participants' states at one point of event time, gathered at
    /// the pair's home ([`crate::pair_ask`]).
    Pair(PairAsk),
}

/// A device's answer to an ask of a synopsis resident on it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceAnswer {
    /// The device.
    pub device: String,
    /// The answer line, as the synopsis' owner writes it from the state (not tagged).
    pub line: String,
    /// A SAVE's snapshot file and the state's bytes, for the home to write.
    pub saved: Option<(String, Vec<u8>)>,
}

/// What a pair ask needs besides the ask: its arguments, the synopses whose states the answer
/// needs, where the answer is made, and the point of event time the states are taken at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairAsk {
    /// The query arguments as given.
    #[serde(with = "json_text")]
    pub args: Json,
    /// The synopses whose states the answer needs (the named one first).
    pub participants: Vec<u32>,
    /// The worker that answers (the named synopsis' home): every participant's state goes there.
    pub answer_home: u32,
    /// The window boundary (ms) the states are taken at: every window before it, nothing after
    /// (0 until the update operator sets it from the ask marker's time).
    pub at: u64,
}

/// One ad-hoc query or SAVE, answered from the current state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    /// Unique per job: (origin worker << 40) | its count.
    pub id: u64,
    /// The synopsis ([`crate::plan::Routing::synopses`] index).
    pub syn: u32,
    /// Its home worker: where its merged state is (and where the parts of a spread one meet).
    pub home: u32,
    /// Spread over workers (every worker sends its open partials), or owned by `home` alone.
    pub spread: bool,
    /// The request's id.
    #[serde(with = "json_text")]
    pub request_id: Json,
    /// The request's uid.
    #[serde(with = "json_text_option")]
    pub uid: Option<Json>,
    /// What is asked.
    pub what: AskWhat,
    /// Who waits for the answer, if anyone.
    pub origin: Option<Origin>,
    /// The edge device the synopsis is resident on answers this ask made at a fence (set by
    /// the worker that sends it): its owner keeps it waiting for that answer.
    #[serde(default)]
    pub device_answers: bool,
}

impl Ask {
    /// The marker record that carries the ask to every worker through the tuple exchange.
    ///
    /// ```
    /// use saams_operators::ask::{ASK_GROUP, Ask, AskWhat};
    /// let ask = Ask { id: 7, syn: 2, home: 1, spread: true, request_id: serde_json::json!(9), uid: None,
    ///                 what: AskWhat::Query(serde_json::json!([1.5])), origin: Some((0, 3)), device_answers: false };
    /// let rec = ask.clone().into_rec(60_000);
    /// assert_eq!((rec.group, rec.time), (ASK_GROUP, 60_000));
    /// assert_eq!(Ask::from_rec(&rec), Some(ask));
    /// ```
    pub fn into_rec(self, time: i64) -> Rec {
        let text = serde_json::to_string(&self).unwrap_or_default();
        // `seq` is left for the destination of each worker's copy (the id is in the text).
        Rec { group: ASK_GROUP, time, seq: 0, val: Val::Str(text.into()) }
    }

    /// The ask a marker record carries (`None` for anything else).
    pub fn from_rec(rec: &Rec) -> Option<Ask> {
        match (&rec.val, rec.group) {
            (Val::Str(s), ASK_GROUP) => serde_json::from_str(s).ok(),
            _ => None,
        }
    }
}

/// One worker's contribution to a spread synopsis' ask: its open windows' partials.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AskPart {
    /// The ask.
    pub ask: Ask,
    /// Windows before this one (start, ms) were closed by this worker when it answered: their
    /// partials are on their way to the home (or folded there).
    pub closed_before: u64,
    /// Open partials: (window, bin, values, partial).
    pub parts: Vec<(u64, u64, u64, SynBox)>,
}

/// Tag a line for the worker waiting for it: `\u{1}worker:ticket\u{1}line`. Lines of the output
/// never start with `\u{1}` (they are JSON objects).
///
/// ```
/// use saams_operators::ask::{reply_line, split_reply};
/// let tagged = reply_line(Some((3, 12)), "{}".to_string());
/// assert_eq!(split_reply(&tagged), (Some((3, 12)), "{}"));
/// assert_eq!(split_reply("{}"), (None, "{}"));
/// assert_eq!(reply_line(None, "{}".to_string()), "{}");
/// ```
pub fn reply_line(origin: Option<Origin>, line: String) -> String {
    match origin {
        None => line,
        Some((worker, ticket)) => format!("\u{1}{worker}:{ticket}\u{1}{line}"),
    }
}

/// The origin a line is tagged with, and the line itself ([`reply_line`]).
pub fn split_reply(line: &str) -> (Option<Origin>, &str) {
    let Some(rest) = line.strip_prefix('\u{1}') else { return (None, line) };
    let Some((tag, body)) = rest.split_once('\u{1}') else { return (None, line) };
    let parsed = tag.split_once(':').and_then(|(w, t)| Some((w.parse().ok()?, t.parse().ok()?)));
    match parsed {
        Some(origin) => (Some(origin), body),
        None => (None, line),
    }
}

/// JSON values cross processes as their text: timely's wire format (bincode) cannot carry
/// self-describing values such as `serde_json::Value`.
mod json_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value as Json;

    pub fn serialize<S: Serializer>(v: &Json, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        let text = String::deserialize(d)?;
        serde_json::from_str(&text).map_err(serde::de::Error::custom)
    }
}

/// As [`json_text`], for an optional value (`""` for none).
mod json_text_option {
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value as Json;

    pub fn serialize<S: Serializer>(v: &Option<Json>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.as_ref().map(Json::to_string).unwrap_or_default())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Json>, D::Error> {
        let text = String::deserialize(d)?;
        if text.is_empty() {
            return Ok(None);
        }
        serde_json::from_str(&text).map(Some).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asks cross processes in timely's wire format (bincode), which cannot carry
    /// self-describing values: the JSON fields travel as text.
    #[test]
    fn an_ask_part_survives_the_wire_format() {
        let ask = Ask {
            id: 3,
            syn: 1,
            home: 0,
            spread: true,
            request_id: serde_json::json!({"a": [1, "x"]}),
            uid: Some(serde_json::json!("u")),
            what: AskWhat::Query(serde_json::json!([1.5, "price"])),
            origin: Some((1, 9)),
            device_answers: true,
        };
        let part = AskPart { ask: ask.clone(), closed_before: 60_000, parts: Vec::new() };
        let bytes = bincode::serialize(&part).expect("encode");
        let back: AskPart = bincode::deserialize(&bytes).expect("decode");
        assert_eq!(back.ask, ask);
        let none = Ask { uid: None, ..ask };
        let back: Ask = bincode::deserialize(&bincode::serialize(&none).expect("encode")).expect("decode");
        assert_eq!(back, none);
    }
}
