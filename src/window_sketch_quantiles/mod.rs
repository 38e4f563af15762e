//! Window sketch quantiles (kind 10): medians, percentiles and ranks over the last `W` items of
//! a stream, within `εW` ranks, deterministically. Old items leave the answer as the window
//! slides, in whole blocks, so the memory stays bounded by the window and ε rather than the
//! stream. Partials of consecutive stretches of a stream merge in time order.
//!
//! ```
//! use saams::window_sketch_quantiles::WindowSketchQuantiles;
//! use saams::{Datum, Query, Synopsis};
//! let (mut early, mut late) =
//!     (WindowSketchQuantiles::with_accuracy(0.02, 1000).unwrap(), WindowSketchQuantiles::with_accuracy(0.02, 1000).unwrap());
//! for i in 0..3000u32 {
//!     early.update(Datum::Num(f64::from(i)));
//! }
//! for i in 0..500u32 {
//!     late.update(Datum::Num(-f64::from(i)));
//! }
//! early.merge(&late).unwrap(); // the window: 2500..2999 then 0, -1, ..., -499
//! let e = early.estimate(&Query::Rank(0.0)).unwrap();
//! assert!((e.as_f64().unwrap() - 0.5).abs() <= 0.02);
//! ```
//!
//! # Update order
//!
//! Order-sensitive ([`crate::Kind::is_order_sensitive`]): its answer is over the last `W` items,
//! and blocks expire in arrival order, so the engine feeds it item by item in event-time order
//! (then arrival sequence), from a reorder buffer that the watermark drains.

pub(crate) mod codec;
mod sketch;

pub use sketch::WindowSketchQuantiles;
