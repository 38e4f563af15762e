//! The JSON API's types: data tuples, requests, estimations (see `docs/api.md`).

pub mod time;
pub mod tuple;

pub use tuple::{Tuple, TupleError};
