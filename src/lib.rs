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
pub mod codec;
pub mod error;
pub mod hash;
pub mod monitoring;
pub mod params;
pub mod registry;
pub mod synopsis;

// Synopsis kinds, one folder each (kind ids as in the API).
// kind 1

// kind 2

// kind 3

// kind 4

// kind 5

// kind 6

// kind 7

// kind 8

// kind 9

// kind 10

// kind 11

// kind 12

// kind 13

// end of kinds

pub use error::SynopsisError;
pub use synopsis::{Datum, Estimate, EstimateValue, Kind, PairQuery, Query, Synopsis, Value, downcast};
