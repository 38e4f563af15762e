//! The JSON API's types: data tuples, requests, estimations (see `docs/api.md`).

pub mod estimation;
pub mod request;
pub mod time;
pub mod tuple;

pub use tuple::{Tuple, TupleError};
