//! Sources: where tuples and requests come from. Each worker reads its own share of the input.

pub mod kafka;
