//! HyperLogLog (Flajolet et al.) with Ertl's improved estimator: the number of distinct
//! values of a stream in a few kilobytes.
//!
//! Use it to count distinct vessels, instruments or prices when keeping the set itself would
//! cost too much. With `m` registers the relative standard error is about `1.04/√m` over the
//! whole range, from a handful of values to billions, without the bias tables or the switch
//! to linear counting of HLL++: Ertl's estimator ("New cardinality estimation algorithms for
//! HyperLogLog sketches", 2017) is unbiased everywhere. Merging is register-wise maximum, so
//! the merge of partials is, bit for bit, the sketch of the union.
//!
//! ```
//! use saams::hyper_log_log::HyperLogLog;
//! use saams::{Datum, Query, Synopsis};
//!
//! let mut a = HyperLogLog::with_rsd(0.02).unwrap();
//! let mut b = a.clone();
//! for i in 0..6000 { a.update(Datum::Num(i as f64)); }
//! for i in 4000..10000 { b.update(Datum::Num(i as f64)); }
//! a.merge(&b).unwrap();
//! let e = a.estimate(&Query::Distinct).unwrap();
//! assert!(e.lower <= 10000.0 && 10000.0 <= e.upper);
//! assert!((e.as_f64().unwrap() - 10000.0).abs() < 400.0);
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

pub use sketch::HyperLogLog;
