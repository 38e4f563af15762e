//! GK quantiles (kind 8): the value at any rank of a numeric stream, and the rank of any value,
//! within `εN` — deterministically, in a few kilobytes, and mergeable without losing ε. Use it
//! for latency percentiles, price medians, or any order statistic whose error must be bounded
//! whatever the data and however the stream was split across workers.
//!
//! ```
//! use saams::gk_quantiles::GkQuantiles;
//! use saams::{Datum, Query, Synopsis};
//! let mut parts: Vec<GkQuantiles> = (0..4).map(|_| GkQuantiles::with_epsilon(0.01).unwrap()).collect();
//! for i in 0..40_000u32 {
//!     parts[(i % 4) as usize].update(Datum::Num(f64::from(i)));
//! }
//! let mut all = parts.pop().unwrap();
//! for p in &parts {
//!     all.merge(p).unwrap();
//! }
//! let p99 = all.estimate(&Query::Quantile(0.99)).unwrap().as_f64().unwrap();
//! assert!((p99 - 39_600.0).abs() <= 400.0);
//! ```
//!
//! # Update order
//!
//! Not order-sensitive ([`crate::Kind::is_order_sensitive`] is false): its answer means the same
//! for any order of the items, but its state (which tuples are kept and compressed) depends on the
//! order of the updates, so the engine feeds it in event-time order (then arrival sequence) for
//! answers that do not depend on the number of workers or the split of the input.
//!
//! # Merge order
//!
//! A merge combines both summaries and compresses at the running total, so the kept tuples (and
//! the answers' bounds) depend on the merge order: the engine's tree merge keeps GK partials as a
//! list and merges them at the home in bin order (`saams_operators::merge_tree`).

pub(crate) mod codec;
mod sketch;

pub use sketch::{BUFFER, GkQuantiles};
