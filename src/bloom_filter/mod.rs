//! Bloom filter (cache-line blocked): set membership with no false negatives.
//!
//! Use it to ask "has this value been seen?" of a stream whose set of values is too large to
//! keep. A "no" is always right; a "yes" is wrong with probability at most the configured
//! false-positive rate `fpp` while at most the designed number of distinct values `n` were
//! inserted. All `k` bits of a value live in one 512-bit block (one cache line), so an insert
//! or a query touches one cache line instead of `k`; the filter is sized with the exact
//! false-positive rate of that layout (Putze, Sanders, Singler 2007), so it still meets `fpp`.
//! Merging is bitwise OR: the merged filter equals, bit for bit, the filter of the union.
//!
//! ```
//! use saams::bloom_filter::BloomFilter;
//! use saams::{Datum, EstimateValue, Query, Synopsis, Value};
//!
//! let mut a = BloomFilter::with_capacity(1000, 0.01).unwrap();
//! let mut b = a.clone();
//! a.update(Datum::Str("IBM"));
//! b.update(Datum::Num(367_000_000.0));
//! a.merge(&b).unwrap();
//! assert!(a.contains(Datum::Str("IBM")) && a.contains(Datum::Num(367_000_000.0)));
//! let e = a.estimate(&Query::Contains(Value::Str("ORCL".into()))).unwrap();
//! assert_eq!(e.value, EstimateValue::Bool(false));
//! assert_eq!(e.confidence, 1.0); // a negative answer is certain
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

pub use sketch::{BloomFilter, DEFAULT_SEED, blocked_false_positive_rate};
