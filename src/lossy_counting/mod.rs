//! Lossy Counting (kind 5): frequencies of items and the frequent items of a stream, with a
//! deterministic bound — every count is at most `εN` below the truth, and asking for the items
//! above support `s > ε` never misses one (at `s = ε`, none whose count exceeds `εN`). Use it when the answer must not depend on luck; it merges
//! without losing its bound, so per-worker partials combine exactly as well as one summary.
//!
//! ```
//! use saams::lossy_counting::LossyCounting;
//! use saams::{Datum, EstimateValue, Query, Synopsis, Value};
//! let (mut a, mut b) = (LossyCounting::with_epsilon(0.001).unwrap(), LossyCounting::with_epsilon(0.001).unwrap());
//! for i in 0..20_000u32 {
//!     let x = if i % 10 == 0 { 1.0 } else { f64::from(i) + 0.5 };
//!     if i < 10_000 { a.update(Datum::Num(x)) } else { b.update(Datum::Num(x)) }
//! }
//! a.merge(&b).unwrap();
//! let e = a.estimate(&Query::FrequentItems { support: 0.05 }).unwrap();
//! assert_eq!(e.value, EstimateValue::Items(vec![(Value::Num(1.0), 2000.0)]));
//! ```
//!
//! # Update order
//!
//! Not order-sensitive ([`crate::Kind::is_order_sensitive`] is false): its answer means the same
//! for any order of the items, but its state (which counts each bucket boundary prunes) depends on
//! the order of the updates, so the engine feeds it in event-time order (then arrival sequence) for
//! answers that do not depend on the number of workers or the split of the input.
//!
//! # Merge order
//!
//! A merge adds the other side's error bound ⌊n/width⌋ to the entries only one side has and prunes
//! at the new total, so the merged deltas (and which entries survive) depend on the merge order:
//! the engine's tree merge keeps Lossy Counting partials as a list and merges them at the home in
//! bin order (`saams_operators::merge_tree`).

pub(crate) mod codec;
mod sketch;

pub use sketch::LossyCounting;
