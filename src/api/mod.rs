//! The JSON API's types: data tuples, requests, estimations (see `docs/api.md`).

pub mod estimation;
pub mod monitor;
pub mod registry;
pub mod request;
pub mod time;
pub mod tuple;
pub mod window;
pub mod wire_json;

pub use tuple::{Tuple, TupleError};
