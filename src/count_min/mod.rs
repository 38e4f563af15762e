//! Count-Min sketch (Cormode–Muthukrishnan): point frequencies of a stream in fixed memory.
//!
//! Use it when you need "how often did value v occur?" over a stream with too many distinct
//! values to count exactly. The estimate never underestimates, and overestimates by at most
//! εN (N = stream length) with probability at least the configured confidence. The sketch is
//! linear: merging partials built on disjoint parts of a stream gives exactly (bit for bit)
//! the sketch of the whole stream, so parallel workers lose nothing.
//!
//! ```
//! use saams::count_min::CountMin;
//! use saams::{Datum, Query, Synopsis, Value};
//!
//! let mut left = CountMin::with_accuracy(0.01, 0.99, 7).unwrap();
//! let mut right = left.clone();
//! for _ in 0..40 { left.update(Datum::Str("IBM")); }
//! for _ in 0..2 { right.update(Datum::Str("IBM")); right.update(Datum::Num(3.5)); }
//! left.merge(&right).unwrap();
//! let e = left.estimate(&Query::Count(Value::Str("IBM".into()))).unwrap();
//! assert!(e.as_f64().unwrap() >= 42.0); // never underestimates
//! assert!(e.lower <= 42.0 && 42.0 <= e.upper);
//! assert_eq!(left.estimate(&Query::Total).unwrap().as_f64(), Some(44.0));
//! ```
//!
//! # Update order
//!
//! Not order-sensitive ([`crate::Kind::is_order_sensitive`] is false): its state is the same, bit
//! for bit, whatever the order of the updates and however partials are merged, so the engine
//! updates it in batches in any order (a spread partial as the values arrive) and merges spread
//! partials at every stage of the tree merge.

pub mod codec;
mod sketch;

pub use sketch::CountMin;
