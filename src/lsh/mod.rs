//! Random-hyperplane LSH (kind 9): a bit signature of a stream's recent window whose Hamming
//! distance to another stream's signature estimates the angle between the two windows
//! (Charikar, STOC 2002), and band keys that hash similar streams together.
//!
//! SaaMS lists LSH for correlation estimation (its Table 2: "Window Size, Compression Ratio,
//! #Workers") and uses "compressed LSH signatures as the hash key" so that similar streams are
//! routed to the same worker for pairwise comparison. Our reading of the reference parameters
//! `[window, dimensions, bands]` (e.g. `[100, 500, 20]`):
//! - `window`: the signature describes the last `window` values of the stream;
//! - `dimensions`: the number of random hyperplanes = signature bits (the "compression": a
//!   window of `window` doubles becomes `dimensions` bits);
//! - `bands`: the signature is cut into `bands` bands of `dimensions / bands` rows; each band
//!   hashes to a key ([`Lsh::band_keys`]), and streams sharing a key are candidate pairs
//!   (the paper's "#Workers": band keys are what one partitions streams by).
//! - an optional 4th parameter is the hyperplane seed (default [`DEFAULT_SEED`]).
//!
//! Windows are mean-centered before projecting, so the estimated cosine similarity is the
//! Pearson correlation of the two windows — the quantity SaaMS estimates with it.
//!
//! ```
//! use saams::lsh::Lsh;
//! use saams::{Datum, PairQuery, Synopsis};
//! let mut a = Lsh::new(64, 256, 16, 7).unwrap();
//! let mut b = Lsh::new(64, 256, 16, 7).unwrap();
//! for i in 0..64 {
//!     let x = (i as f64 / 5.0).sin();
//!     a.update(Datum::Num(x));
//!     b.update(Datum::Num(3.0 * x + 2.0)); // same shape, other scale and level
//! }
//! let s = a.estimate_pair(&b, &PairQuery::Similarity).unwrap();
//! assert_eq!(s.as_f64(), Some(1.0));
//! assert_eq!(a.band_keys().unwrap(), b.band_keys().unwrap());
//! ```
//!
//! # Update order
//!
//! Order-sensitive ([`crate::Kind::is_order_sensitive`]): its signature is of the window of the
//! most recent items, so the engine feeds it item by item in event-time order (then arrival
//! sequence), from a reorder buffer that the watermark drains.

mod codec;
mod sketch;

pub(crate) use codec::decode;
pub use sketch::{DEFAULT_SEED, LSH_CONFIDENCE, Lsh, MAX_MATRIX};
