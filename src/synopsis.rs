//! The contract every synopsis kind fulfils, and the small value types it speaks.
//!
//! Operators hold synopses as `Box<dyn Synopsis>`: type erasure keeps the dataflow's compile
//! time and code size independent of how many kinds exist, and lets one operator maintain
//! hundreds of synopses of different kinds side by side.

use std::any::Any;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Kind;
use crate::codec::ToBytes;
use crate::error::SynopsisError;

/// One value of a tuple's field, borrowed: what a synopsis is updated with.
///
/// Numbers hash by their bit pattern (with `-0.0` folded onto `0.0`), strings by their bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Datum<'a> {
    /// A numeric field value.
    Num(f64),
    /// A textual field value.
    Str(&'a str),
}

impl Datum<'_> {
    /// The numeric value, if this datum is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Datum::Num(x) => Some(*x),
            Datum::Str(_) => None,
        }
    }

    /// An owned copy.
    pub fn to_owned_value(&self) -> Value {
        match self {
            Datum::Num(x) => Value::Num(*x),
            Datum::Str(s) => Value::Str((*s).to_string()),
        }
    }
}

/// An owned field value: used in queries and in estimations (frequent items, quantiles).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// A number.
    Num(f64),
    /// A string.
    Str(String),
}

impl Value {
    /// Borrow as a [`Datum`].
    pub fn as_datum(&self) -> Datum<'_> {
        match self {
            Value::Num(x) => Datum::Num(*x),
            Value::Str(s) => Datum::Str(s),
        }
    }
}

/// A question asked of one synopsis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Query {
    /// Estimated number of occurrences of a value (CountMin, Lossy/Sticky, AMS, frequent items).
    Count(Value),
    /// Estimated number of distinct values (HyperLogLog, CPC).
    Distinct,
    /// Might the value have been inserted? (Bloom filter).
    Contains(Value),
    /// Items whose frequency is at least `support` × N (Lossy/Sticky Sampling, frequent items).
    FrequentItems {
        /// The support threshold as a fraction of the stream length, in (0, 1].
        support: f64,
    },
    /// Is this value frequent (at the synopsis' own support)? (Sticky Sampling).
    IsFrequent(Value),
    /// Second frequency moment / squared L2 norm (AMS).
    F2,
    /// The value at normalized rank `q` in [0, 1] (GK, window quantiles, KLL).
    Quantile(f64),
    /// The normalized rank of a value (quantile kinds).
    Rank(f64),
    /// The synopsis' own vector: DFT coefficients or an LSH signature.
    Vector,
    /// Number of items summarized.
    Total,
}

/// A question that needs two synopses of the same kind (two streams).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PairQuery {
    /// Pearson correlation of two streams' windows (DFT).
    Correlation,
    /// Inner product of two frequency vectors (AMS).
    InnerProduct,
    /// Cosine similarity of two windows (LSH).
    Similarity,
}

/// What an estimate is: a number, a yes/no, a list of items, or a vector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EstimateValue {
    /// A scalar estimate.
    Number(f64),
    /// A membership answer.
    Bool(bool),
    /// Items with estimated counts, largest first.
    Items(Vec<(Value, f64)>),
    /// A vector (DFT coefficients as re, im pairs; LSH signature bits as 0/1).
    Vector(Vec<f64>),
}

/// An estimate with its error bound: `lower ≤ value ≤ upper` holds with probability
/// `confidence` (1.0 for deterministic guarantees).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The estimate.
    pub value: EstimateValue,
    /// Lower end of the guaranteed interval (scalar estimates; for lists, the error bound per item).
    pub lower: f64,
    /// Upper end of the guaranteed interval.
    pub upper: f64,
    /// Probability that the true answer lies in `[lower, upper]`.
    pub confidence: f64,
}

impl Estimate {
    /// A scalar estimate with its interval.
    pub fn number(value: f64, lower: f64, upper: f64, confidence: f64) -> Estimate {
        Estimate { value: EstimateValue::Number(value), lower, upper, confidence }
    }

    /// The scalar value, if this estimate is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self.value {
            EstimateValue::Number(x) => Some(x),
            _ => None,
        }
    }
}

/// A mergeable, serializable stream synopsis.
///
/// The contract, checked by every kind's tests:
/// - `merge` of synopses built on disjoint parts of a stream gives a synopsis whose guarantee
///   holds for the union (bit-identical to the union's synopsis for linear kinds);
/// - `merge` refuses, with an error, a synopsis of another kind, parameters or seed;
/// - `estimate` never panics: a query the kind cannot answer is an error;
/// - `encode` then [`crate::registry::decode`] gives back an equal synopsis.
///
/// A kind implements only what is its own: its bytes come from its [`ToBytes`] (in its
/// `codec.rs`), and [`SynopsisObject`]'s copy and downcast come with it.
pub trait Synopsis: Send + fmt::Debug + ToBytes + SynopsisObject {
    /// This synopsis' kind.
    fn kind(&self) -> Kind;

    /// Add one item.
    fn update(&mut self, item: Datum<'_>);

    /// Add a batch of items (kinds override this when a batch can be processed faster).
    fn update_batch(&mut self, items: &[Datum<'_>]) {
        for item in items {
            self.update(*item);
        }
    }

    /// Add one item observed at event time `time_ms` (milliseconds since the epoch).
    ///
    /// Kinds whose parameters are in time units (DFT's aggregation interval) override this;
    /// the others ignore the time. Callers feed order-sensitive kinds in event-time order.
    fn update_at(&mut self, item: Datum<'_>, time_ms: i64) {
        let _ = time_ms;
        self.update(item);
    }

    /// Fold `other` (same kind, parameters and seed) into `self`.
    ///
    /// For order-sensitive kinds ([`Kind::is_order_sensitive`]: DFT, LSH, window quantiles)
    /// `other` is taken to hold the items that *follow* `self`'s in event time, and the result
    /// equals feeding both parts in that order.
    ///
    /// # Errors
    /// [`SynopsisError::Incompatible`] when kinds, parameters or seeds differ.
    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError>;

    /// Answer a query with its bound.
    ///
    /// # Errors
    /// [`SynopsisError::UnsupportedQuery`] when this kind cannot answer it, or
    /// [`SynopsisError::BadQuery`] for arguments out of range.
    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError>;

    /// Answer a query about this synopsis and another one of the same kind (two streams).
    ///
    /// # Errors
    /// [`SynopsisError::UnsupportedQuery`] by default; kinds with pair queries override it.
    fn estimate_pair(&self, other: &dyn Synopsis, query: &PairQuery) -> Result<Estimate, SynopsisError> {
        let _ = other;
        Err(SynopsisError::UnsupportedQuery { kind: self.kind(), query: format!("{query:?}") })
    }

    /// Memory held by the synopsis' state, in bytes (approximate for pointer-rich kinds).
    fn size_bytes(&self) -> usize;

    /// The synopsis as bytes: codec envelope (magic, version, kind, parameters, seed) + payload,
    /// as the kind's [`ToBytes`] writes them.
    fn encode(&self) -> Vec<u8> {
        self.to_bytes()
    }

    /// The synopsis as bytes that decode to a state that goes on *exactly* as this one would,
    /// update for update (checkpoints need it: a resumed job must answer bit for bit as one that
    /// never stopped). For most kinds that is [`Synopsis::encode`]; a kind whose encoding leaves
    /// out state it derives (DFT's incrementally updated coefficients, recomputed exactly on
    /// decode) adds it in its [`ToBytes::to_exact_bytes`]. [`crate::registry::decode`] reads both.
    fn encode_exact(&self) -> Vec<u8> {
        self.to_exact_bytes()
    }
}

/// What handling a synopsis as a `Box<dyn Synopsis>` needs beyond the kind's own code: a deep
/// copy into a new box, and a view as [`Any`] to downcast to the concrete kind (in `merge` and
/// `estimate_pair`, through [`downcast`]).
///
/// Every `Clone + 'static` synopsis has it from the blanket impl below, so no kind writes it;
/// the methods are called on a `dyn Synopsis` as if they were [`Synopsis`]'s own.
///
/// ```
/// use saams::{CountMin, Datum, Synopsis};
/// let mut cm = CountMin::with_accuracy(0.01, 0.99, 7).unwrap();
/// cm.update(Datum::Str("a"));
/// let boxed: Box<dyn Synopsis> = Box::new(cm);
/// let copy = boxed.clone_box();
/// assert_eq!(copy.encode(), boxed.encode());
/// assert!(copy.as_any().downcast_ref::<CountMin>().is_some());
/// ```
pub trait SynopsisObject {
    /// A deep copy.
    fn clone_box(&self) -> Box<dyn Synopsis>;

    /// For downcasting in `merge` and `estimate_pair`.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Synopsis + Clone + 'static> SynopsisObject for T {
    fn clone_box(&self) -> Box<dyn Synopsis> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Clone for Box<dyn Synopsis> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// Downcast `other` to the concrete type of a `merge`/`estimate_pair` receiver, or say why not.
///
/// # Errors
/// [`SynopsisError::Incompatible`] when `other` is of another kind.
pub fn downcast<T: 'static>(me: Kind, other: &dyn Synopsis) -> Result<&T, SynopsisError> {
    other.as_any().downcast_ref::<T>().ok_or_else(|| SynopsisError::Incompatible {
        kind: me,
        reason: format!("cannot merge a {} into a {}", other.kind(), me),
    })
}
