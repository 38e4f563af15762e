//! Sliding-window DFT (kind 4): the first coefficients of a stream's normalized recent window,
//! and the StatStream correlation estimate between two streams (Zhu & Shasha, VLDB 2002).
//!
//! Correlating thousands of streams pairwise is quadratic in raw points; StatStream instead
//! keeps, per stream, the few leading DFT coefficients of its z-normalized sliding window,
//! because the Euclidean distance of normalized windows — and so their Pearson correlation —
//! is preserved by the (unitary) DFT and concentrated in the first coefficients for the
//! smooth series markets produce. SaaMS uses this synopsis for correlation estimation.
//!
//! Semantics (reference parameters `[interval s, basic window, sliding window, #coefficients]`,
//! e.g. `[1, 500, 2000, 8]`):
//! - With event time ([`crate::Synopsis::update_at`]) values are aggregated per `interval`
//!   seconds: the point of an interval is the **last value** seen in it (the interval's "close",
//!   as in market bars). An interval without items repeats the previous interval's point (last
//!   observation carried forward), so two streams' windows cover the same intervals. The
//!   current interval becomes a point when an item of a later interval arrives. A late item
//!   (earlier interval than the current one) updates the current interval.
//! - Plain [`crate::Synopsis::update`] adds one point per call (no time aggregation).
//! - The window is the last `sliding window` points, advanced every `basic window` points (the
//!   StatStream digest period): points of an incomplete basic window wait.
//!
//! ```
//! use saams::dft::Dft;
//! use saams::{Datum, PairQuery, Query, Synopsis};
//! let mut a = Dft::new(1.0, 16, 64, 4).unwrap();
//! let mut b = Dft::new(1.0, 16, 64, 4).unwrap();
//! for i in 0..200 {
//!     let x = (i as f64 / 10.0).sin();
//!     a.update(Datum::Num(x));
//!     b.update(Datum::Num(2.0 * x + 1.0));
//! }
//! let c = a.estimate_pair(&b, &PairQuery::Correlation).unwrap();
//! assert!(c.lower <= 1.0 && c.upper >= 0.999);
//! // Normalization makes the coefficients scale- and level-free.
//! let (x, y) = (a.coefficients(), b.coefficients());
//! assert!(x.iter().zip(&y).all(|(p, q)| (p.0 - q.0).abs() < 1e-12 && (p.1 - q.1).abs() < 1e-12));
//! ```
//!
//! # Update order
//!
//! Order-sensitive ([`crate::Kind::is_order_sensitive`]): its sliding window is the most recent
//! items, and its aggregation interval is in event time, so the engine feeds it item by item in
//! event-time order (then arrival sequence), from a reorder buffer that the watermark drains.

mod codec;
mod sketch;
mod spectrum;

pub(crate) use codec::decode;
pub use sketch::{Dft, MAX_WINDOW};
pub use spectrum::Spectrum;
