//! CPC distinct counting (kind 12): a wrapper around Apache DataSketches' `CpcSketch`.
//!
//! Compressed Probabilistic Counting answers "how many distinct values?" with about 40 % less
//! serialized space than HyperLogLog for the same accuracy (relative standard error
//! ≈ 0.59/√K for a single sketch with its HIP estimator, ≈ 0.69/√K after a merge, K = 2^lgK).
//! It merges through the library's `CpcUnion`, and its payload is the library's own
//! serialization, so the bytes can be read by any DataSketches implementation.
//!
//! ## DataSketches 0.6 notes
//! - `CpcSketch` has no `merge`: merging goes through a `CpcUnion` and `to_sketch()`, which
//!   switches the result to the (slightly less accurate) ICON estimator.
//! - The default seed constant is crate-private in 0.6; [`DEFAULT_SEED`] repeats its value 9001.
//! - CPC does not count items, so `Total` is unsupported.
//! - Deserialization returned errors (never panicked) on every corruption we tried.
//!
//! ```
//! use saams::cpc::Cpc;
//! use saams::{Datum, Query, Synopsis};
//! let mut s = Cpc::new(11).unwrap();
//! for i in 0..10_000 {
//!     s.update(Datum::Num((i % 5000) as f64));
//! }
//! let d = s.estimate(&Query::Distinct).unwrap();
//! assert!(d.lower <= 5000.0 && 5000.0 <= d.upper);
//! ```
//!
//! # Update order
//!
//! Not order-sensitive ([`crate::Kind::is_order_sensitive`] is false): its answer means the same
//! for any order of the items, but its state (the library's sparse/windowed flavours and its HIP
//! accumulator) depends on the order of the updates, so the engine feeds it in event-time order
//! (then arrival sequence) for answers that do not depend on the number of workers or the split of
//! the input.
//!
//! # Merge order
//!
//! A merge ORs the coupons of both sides and marks the result merged, and a merged sketch answers
//! (the ICON estimate and its bounds) from lgK and the number of coupons alone: merging partials
//! in any tree gives the same answers, so the engine's tree merge reduces CPC partials at every
//! stage (`saams_operators::merge_tree`), though the bytes of the merged state may differ.

mod codec;
mod sketch;

pub(crate) use codec::decode;
pub use sketch::{CPC_CONFIDENCE, Cpc, DEFAULT_SEED};
