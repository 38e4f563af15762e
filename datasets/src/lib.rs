//! Stock and AIS parsers, seeded generators, scaled streams and exact oracles.
#![deny(missing_docs)]
