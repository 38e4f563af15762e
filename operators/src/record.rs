//! What flows between the operators: routed tuple values, synopsis partials, answer lines.

use saams::{Datum, Synopsis, registry};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A field value: numbers travel without allocation; text only when a field is text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Val {
    /// A number.
    Num(f64),
    /// Text.
    Str(String),
}

impl Val {
    /// Borrow as the synopses' [`Datum`].
    #[inline]
    pub fn datum(&self) -> Datum<'_> {
        match self {
            Val::Num(x) => Datum::Num(*x),
            Val::Str(s) => Datum::Str(s),
        }
    }
}

/// One tuple's value for one update group, with where it goes: the compact form that crosses
/// the exchange (no stream names, no field names: the group says which).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rec {
    /// The update group ([`crate::plan::Plan::groups`]).
    pub group: u32,
    /// The worker it is routed to (computed once, by the reading worker).
    pub target: u32,
    /// Event-time window start (ms).
    pub window: u64,
    /// Event time (ms since the epoch).
    pub time: i64,
    /// Arrival sequence, independent of the number of workers (input unit, line).
    pub seq: u64,
    /// The field's value.
    pub val: Val,
}

/// A synopsis that can cross process boundaries: serialized as its codec bytes.
#[derive(Clone, Debug)]
pub struct SynBox(pub Box<dyn Synopsis>);

impl Serialize for SynBox {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0.encode())
    }
}

impl<'de> Deserialize<'de> for SynBox {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes: Vec<u8> = serde::de::Deserialize::deserialize(d)?;
        registry::decode(&bytes).map(SynBox).map_err(D::Error::custom)
    }
}

/// Partials of one synopsis for one window on their way to the synopsis' home worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Partial {
    /// The synopsis ([`crate::plan::Plan::synopses`]).
    pub syn: u32,
    /// The window they summarize.
    pub window: u64,
    /// Items summarized.
    pub items: u64,
    /// Partials with their bin (merge order at the home worker).
    pub parts: Vec<(u64, SynBox)>,
}

/// What the update and merge operators emit: answer lines and partials.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Out {
    /// One estimation, as a JSON line (no newline).
    Line(String),
    /// Partials to merge.
    Partial(Partial),
}
