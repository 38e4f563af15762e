//! # saams — stream synopses with real merges, error bounds and a versioned codec
//!
//! Every synopsis kind implements [`Synopsis`]: update with items, merge partials built on
//! disjoint parts of a stream, estimate with an error bound, encode to versioned bytes.
//! [`registry::construct`] builds one from the JSON API's `synopsisID` and parameter list;
//! [`registry::decode`] turns bytes back into a synopsis of whatever kind they hold.
//!
//! This crate has no timely and no I/O: the engine (`saams-operators`, `saams-jobs`) and the
//! dataset tools build on it.
#![deny(missing_docs)]

pub mod api;
pub mod checkpoint;
pub mod codec;
mod counting_table;
pub mod error;
pub mod hash;
mod kind;
pub mod params;
pub mod registry;
pub mod synopsis;

// Synopsis kinds, one folder each (kind ids as in the API).
// kind 1
pub mod count_min;
pub use count_min::CountMin;
mod linear_hash;

// kind 2
pub mod hyper_log_log;
pub use hyper_log_log::HyperLogLog;

// kind 3
pub mod bloom_filter;
pub use bloom_filter::BloomFilter;

// kind 4
pub mod dft;
pub use dft::Dft;

// kind 5
pub mod lossy_counting;
pub use lossy_counting::LossyCounting;

// kind 6
pub mod sticky_sampling;
pub use sticky_sampling::StickySampling;

// kind 7
pub mod ams;
pub use ams::Ams;

// kind 8
pub mod gk_quantiles;
pub use gk_quantiles::GkQuantiles;

// kind 9
pub mod lsh;
pub use lsh::Lsh;

// kind 10
pub mod window_sketch_quantiles;
pub use window_sketch_quantiles::WindowSketchQuantiles;

// kind 11
pub mod kll;
pub use kll::Kll;

// kind 12
pub mod cpc;
pub use cpc::Cpc;

// kind 13
pub mod frequent_items;
pub use frequent_items::FrequentItems;

// end of kinds

pub use error::SynopsisError;
pub use kind::Kind;
pub use synopsis::{Datum, Estimate, EstimateValue, PairQuery, Query, Synopsis, SynopsisObject, Value, downcast};

/// The README's Rust examples run as doc tests, so the usage shown there stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The Rust examples of `docs/synopses.md` (the library's use) run as doc tests.
#[doc = include_str!("../docs/synopses.md")]
#[cfg(doctest)]
pub struct SynopsesDocDoctests;

/// The Rust examples of `docs/api.md` (the reference's requests, verbatim) run as doc tests.
#[doc = include_str!("../docs/api.md")]
#[cfg(doctest)]
pub struct ApiDocDoctests;
