//! AMS: updates, exact merges, F2 / count / inner-product bounds against exact answers, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use saams::ams::Ams;
use saams::{Datum, Synopsis};

/// A sketch fed `keys` as numbers.
fn sketch_of(keys: &[u64], depth: u64, buckets: u64, seed: u64) -> Ams {
    let mut a = Ams::new(depth, buckets, seed).unwrap();
    for k in keys {
        a.update(Datum::Num(*k as f64));
    }
    a
}
