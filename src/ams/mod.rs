//! AMS "tug-of-war" sketch in its fast form (Alon–Matias–Szegedy; Thorup–Zhang's Fast-AMS,
//! i.e. a Count-Sketch): the second frequency moment F2 = Σ f(v)², point counts, and inner
//! products of two streams' frequency vectors.
//!
//! Use it for the "L2 norm" of a stream (how skewed its values are, self-join size) and for
//! join sizes between two streams. Each of `depth` rows hashes a value to one of `buckets`
//! counters and adds a random ±1; a row's sum of squared counters is an unbiased F2
//! estimate with variance at most 2·F2²/buckets, and the median over rows makes it reliable.
//! The sketch is linear: merging adds the counters, so the merge of partials equals, bit for
//! bit, the sketch of the union. (The reference system summed the partials' L2 values
//! instead, which is not F2 of the union; merging the sketches is.)
//!
//! ```
//! use saams::ams::Ams;
//! use saams::{Datum, PairQuery, Query, Synopsis};
//!
//! let mut a = Ams::new(5, 1024, 1).unwrap();
//! let mut b = a.clone();
//! for i in 0..1000 { a.update(Datum::Num((i % 10) as f64)); } // ten values, 100 times each
//! for i in 0..1000 { b.update(Datum::Num((i % 20) as f64)); } // twenty values, 50 times each
//! let f2 = a.estimate(&Query::F2).unwrap();
//! assert!(f2.lower <= 100_000.0 && 100_000.0 <= f2.upper); // F2 = 10·100²
//! let ip = a.estimate_pair(&b, &PairQuery::InnerProduct).unwrap();
//! assert!(ip.lower <= 50_000.0 && 50_000.0 <= ip.upper); // 10 shared values × 100 × 50
//! a.merge(&b).unwrap();
//! assert_eq!(a.estimate(&Query::Total).unwrap().as_f64(), Some(2000.0));
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

pub use sketch::{Ams, DEFAULT_SEED, row_failure_budget};
