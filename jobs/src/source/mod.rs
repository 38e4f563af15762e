//! Sources: where tuples and requests come from. Each worker reads its own share of the input.

pub mod file;
pub mod generated;
pub mod group_batch;
pub mod route_cache;
pub mod stop;
pub mod stripes;
