//! Sticky Sampling (kind 6): the frequent items of a stream from a sample that thins out as the
//! stream grows, with a probabilistic guarantee (`1 − δ`) and memory independent of the stream
//! length in expectation. It is Lossy Counting's randomized sibling; its answers are
//! reproducible because the sampling is seeded.
//!
//! ```
//! use saams::sticky_sampling::StickySampling;
//! use saams::{Datum, EstimateValue, Query, Synopsis, Value};
//! let mut a = StickySampling::with_accuracy(0.1, 0.01, 0.01, 1).unwrap();
//! let mut b = a.clone();
//! for i in 0..50_000u32 {
//!     let x = if i % 4 == 0 { 42.0 } else { f64::from(i) + 0.5 };
//!     if i % 2 == 0 { a.update(Datum::Num(x)) } else { b.update(Datum::Num(x)) }
//! }
//! a.merge(&b).unwrap();
//! let e = a.estimate(&Query::FrequentItems { support: 0.1 }).unwrap();
//! let EstimateValue::Items(items) = e.value else { unreachable!() };
//! assert_eq!(items.len(), 1);
//! assert_eq!(items[0].0, Value::Num(42.0));
//! assert!(items[0].1 <= 12_500.0 && items[0].1 >= 12_500.0 - 500.0);
//! ```
//!
//! # Update order
//!
//! Not order-sensitive ([`crate::Kind::is_order_sensitive`] is false): its answer means the same
//! for any order of the items, but its state (which items the seeded sampling keeps as the rate
//! changes) depends on the order of the updates, so the engine feeds it in event-time order (then
//! arrival sequence) for answers that do not depend on the number of workers or the split of the
//! input.
//!
//! # Merge order
//!
//! A merge thins the side with the lower sampling rate with the receiving sketch's coin tosses, so
//! the merged table depends on the merge order: the engine's tree merge keeps Sticky Sampling
//! partials as a list and merges them at the home in bin order (`saams_operators::merge_tree`).

pub(crate) mod codec;
mod sketch;
#[cfg(test)]
mod tests;

pub use sketch::{DEFAULT_SEED, StickySampling};
