//! Frequent items (kind 13): a wrapper around Apache DataSketches' `FrequentItemsSketch`
//! (a Misra–Gries variant with a reverse-purge hash map).
//!
//! It answers "how often did v occur?" with deterministic lower/upper bounds and "which items
//! occur in at least a fraction s of the stream?" with no false negatives, in space set by
//! `lgMaxMapSize` (the map holds at most 0.75 · 2^lgMaxMapSize items; the per-item error is at
//! most 3.5/2^lgMaxMapSize · N). It merges through the library's merge and keeps the library's
//! own serialization as its payload.
//!
//! ## DataSketches 0.6 notes
//! - Items are stored as a saams type implementing the library's `FrequentItemValue` (numbers
//!   by canonical bits, strings as strings), so both round-trip exactly; the library's error
//!   constructors are crate-private, so our item decoder builds errors with `Error::new`.
//! - The library serializes items in hash-slot order, which depends on insertion history: a
//!   decoded-and-re-encoded sketch would list them differently. Our payload sorts them (still a
//!   valid DataSketches image), so equal sketches give equal bytes.
//! - Its deserializer trusts the image's map size (up to 2^30 slots) for an eager allocation;
//!   we check it against the envelope before calling it.
//! - `update` and `merge` panic when the total weight would overflow u64; we check first.
//! - Updating is about 2× slower than the library's `u64` sketch (enum slots of 24 bytes
//!   instead of 8); that is the price of exact string items.
//!
//! ```
//! use saams::frequent_items::FrequentItems;
//! use saams::{Datum, EstimateValue, Query, Synopsis, Value};
//! let mut s = FrequentItems::new(6).unwrap();
//! for i in 0..10_000u32 {
//!     let v = if i % 3 == 0 { 7.0 } else { f64::from(i) };
//!     s.update(Datum::Num(v));
//! }
//! let c = s.estimate(&Query::Count(Value::Num(7.0))).unwrap();
//! assert!(c.lower <= 3334.0 && 3334.0 <= c.upper);
//! let top = s.estimate(&Query::FrequentItems { support: 0.3 }).unwrap();
//! let EstimateValue::Items(items) = top.value else { panic!() };
//! assert_eq!(items[0].0, Value::Num(7.0));
//! ```
//!
//! # Update order
//!
//! Not order-sensitive ([`crate::Kind::is_order_sensitive`] is false): its answer means the same
//! for any order of the items, but its state (which items the purges keep, and the library's
//! hash-slot order) depends on the order of the updates, so the engine feeds it in event-time order
//! (then arrival sequence) for answers that do not depend on the number of workers or the split of
//! the input.
//!
//! # Merge order
//!
//! A merge past the map's capacity purges by the median counter, so the merged counters depend on
//! the merge order: the engine's tree merge keeps Frequent Items partials as a list and merges them
//! at the home in bin order (`saams_operators::merge_tree`).

mod codec;
mod image;
mod sketch;

pub(crate) use codec::decode;
pub use sketch::{FrequentItems, MAX_LG_MAX_MAP_SIZE};
