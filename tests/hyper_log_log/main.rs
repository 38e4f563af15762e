//! HyperLogLog: updates, exact merges, accuracy against exact distinct counts, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use saams::hyper_log_log::HyperLogLog;
use saams::{Datum, Synopsis};

/// A sketch fed `keys` as numbers.
fn sketch_of(keys: &[u64], rsd: f64, seed: u64) -> HyperLogLog {
    let mut h = HyperLogLog::with_rsd_seed(rsd, seed).unwrap();
    for k in keys {
        h.update(Datum::Num(*k as f64));
    }
    h
}
