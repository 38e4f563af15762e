//! Count-Min sketch: updates, exact merges, accuracy against exact counts, codec.

#[path = "../common/mod.rs"]
mod common;

mod accuracy;
mod codec;
mod merge;
mod update;

use saams::count_min::CountMin;
use saams::{Datum, Synopsis};

/// A sketch fed `keys` as numbers.
fn sketch_of(keys: &[u64], epsilon: f64, confidence: f64, seed: u64) -> CountMin {
    let mut cm = CountMin::with_accuracy(epsilon, confidence, seed).unwrap();
    for k in keys {
        cm.update(Datum::Num(*k as f64));
    }
    cm
}
