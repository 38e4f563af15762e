//! Bloom filter: updates, exact merges, false-positive rate at design capacity, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use saams::bloom_filter::BloomFilter;
use saams::{Datum, Synopsis};

/// A filter fed `keys` as numbers.
fn filter_of(keys: &[u64], n: u64, fpp: f64, seed: u64) -> BloomFilter {
    let mut f = BloomFilter::with_capacity_seed(n, fpp, seed).unwrap();
    for k in keys {
        f.update(Datum::Num(*k as f64));
    }
    f
}
