//! KLL quantiles (kind 11): a wrapper around Apache DataSketches' `KllSketch<KllFloat<f64>>`.
//!
//! KLL answers "which value sits at rank q?" and "what fraction of the stream is ≤ x?" with a
//! normalized rank error that depends only on `k` (≈ 1.65 % at the default k = 200), in space
//! that grows only logarithmically with the stream. It merges without losing its guarantee,
//! which is what lets partials from many workers be combined. We keep the library's own
//! serialization as our payload, so the bytes inside our envelope can be read by any
//! DataSketches implementation.
//!
//! ## DataSketches 0.6 notes
//! - The `kll` module is behind a cargo feature (off by default); the root `Cargo.toml`
//!   enables `kll`, `cpc` and `frequencies`.
//! - `KllSketch` has no memory-size method: [`crate::Synopsis::size_bytes`] estimates it from
//!   the retained items.
//! - Its `merge` accepts sketches of different `k` (the result takes the smaller one); we refuse
//!   them, as every saams kind refuses differing parameters.
//! - Deserialization returned errors (never panicked) on every corruption we tried, so no
//!   `catch_unwind` is used.
//!
//! ```
//! use saams::kll::Kll;
//! use saams::{Datum, Query, Synopsis};
//! let mut s = Kll::new(200).unwrap();
//! for i in 1..=1000 {
//!     s.update(Datum::Num(i as f64));
//! }
//! let median = s.estimate(&Query::Quantile(0.5)).unwrap();
//! assert!(median.lower <= 500.0 && 500.0 <= median.upper);
//! assert_eq!(s.estimate(&Query::Total).unwrap().as_f64(), Some(1000.0));
//! ```
//!
//! # Update order
//!
//! Not order-sensitive ([`crate::Kind::is_order_sensitive`] is false): its answer means the same
//! for any order of the items, but its state (which items each compaction keeps; the library's
//! compactions are also randomized, unseeded) depends on the order of the updates, so the engine
//! feeds it in event-time order (then arrival sequence) for answers that do not depend on the
//! number of workers or the split of the input.
//!
//! # Merge order
//!
//! KLL keeps its rank-error guarantee over any merge tree, and which items a merge's compactions
//! keep is random already (unseeded), so the engine's tree merge reduces KLL partials at every
//! stage (`saams_operators::merge_tree`): its answers vary between runs, within a guarantee that
//! does not depend on the number of workers.

mod codec;
mod sketch;

pub(crate) use codec::decode;
pub use sketch::{DEFAULT_K, KLL_CONFIDENCE, Kll};
