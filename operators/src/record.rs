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

/// One tuple's value for one update group: the compact form that crosses the exchange (no stream
/// names, no field names: the group says which; the target worker follows from group, sequence
/// and window, [`crate::plan::Plan::target`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rec {
    /// The update group ([`crate::plan::Plan::groups`]).
    pub group: u32,
    /// Event time (ms since the epoch); its window is [`crate::plan::Plan::window_of`] it.
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

/// A synopsis' merged state after a window, on its way to the worker answering pair queries.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Snapshot {
    /// The synopsis.
    pub syn: u32,
    /// The window whose close produced it.
    pub window: u64,
    /// Items summarized.
    pub items: u64,
    /// The worker it goes to.
    pub dest: u32,
    /// The state.
    pub state: SynBox,
}

/// What the update, merge and fold operators emit: answer lines, partials, snapshots.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Out {
    /// One estimation, as a JSON line (no newline).
    Line(String),
    /// Partials to merge.
    Partial(Partial),
    /// A merged state for pair queries.
    Snapshot(Snapshot),
}
