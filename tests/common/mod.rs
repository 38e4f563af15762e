//! Test helpers shared by the per-kind test targets: seeded streams and the real sample data.
#![allow(dead_code)]

use std::path::PathBuf;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};

/// A seeded Zipf(`s`) stream of `n` keys over the domain `1..=domain`.
pub fn zipf_stream(n: usize, domain: u64, s: f64, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let zipf = Zipf::new(domain as f64, s).expect("valid Zipf parameters");
    (0..n).map(|_| zipf.sample(&mut rng) as u64).collect()
}

/// The shared datasets folder, as the build script's locator found it (`build/test_env.rs`:
/// `$SAAMS_DATASETS`, else the default it names). Tests that read it carry
/// `#[cfg_attr(saams_no_datasets, ignore = "…")]`, so they show as ignored where it is absent.
pub fn datasets_dir() -> PathBuf {
    PathBuf::from(env!("SAAMS_DATASETS_DIR"))
}

/// One numeric or text column of a shared CSV file, by header name; rows where it is empty are
/// skipped. Panics if the file or column is missing: the datasets are part of the test setup.
pub fn csv_column(relative: &str, column: &str) -> Vec<String> {
    let path = datasets_dir().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines.next().expect("header row");
    let idx = header.split(',').position(|h| h == column).unwrap_or_else(|| panic!("no column {column}"));
    lines.filter_map(|l| l.split(',').nth(idx)).filter(|v| !v.is_empty()).map(str::to_string).collect()
}

/// A numeric column of a shared CSV file.
pub fn csv_numbers(relative: &str, column: &str) -> Vec<f64> {
    csv_column(relative, column).iter().filter_map(|v| v.parse::<f64>().ok()).collect()
}

/// SPY tick prices (250 k real trades).
pub fn spy_prices() -> Vec<f64> {
    csv_numbers("stocks/tick/equity_usa_SPY_tick_trade.csv", "Price")
}

/// SPY tick volumes.
pub fn spy_volumes() -> Vec<f64> {
    csv_numbers("stocks/tick/equity_usa_SPY_tick_trade.csv", "Volume")
}

/// AIS MMSI values (80 k reports, 8.5 k distinct vessels).
pub fn ais_mmsi() -> Vec<String> {
    csv_column("ais/noaa_marinecadastre_AIS_2022-01-03_sample.csv", "MMSI")
}

/// AIS speeds over ground, with the "not available" sentinel 102.3 removed.
pub fn ais_speed() -> Vec<f64> {
    csv_numbers("ais/noaa_marinecadastre_AIS_2022-01-03_sample.csv", "SOG")
        .into_iter()
        .filter(|s| *s != 102.3)
        .collect()
}

/// Every single-byte flip and every truncation of an encoding must be refused by the decoder
/// (the envelope's CRC and length checks, then the kind's own payload checks), never accepted
/// and never a panic.
pub fn assert_every_flip_and_truncation_fails(bytes: &[u8]) {
    for i in 0..bytes.len() {
        let mut flipped = bytes.to_vec();
        flipped[i] ^= 0x5a;
        assert!(saams::registry::decode(&flipped).is_err(), "flip at byte {i} was accepted");
        assert!(saams::registry::decode(&bytes[..i]).is_err(), "truncation to {i} bytes was accepted");
    }
}

/// The committed golden file `tests/golden/<file>` holds exactly `bytes`: what this build writes
/// for the same stream, so neither a kind's byte layout nor its hashing or update rule can change
/// unnoticed (the round trip of every golden file alone would not see a new hash).
///
/// Blessing is a separate, explicit command — `SAAMS_BLESS_GOLDEN=1 cargo test --release -p saams`
/// writes the files instead of comparing — and never happens under `cargo test -- --ignored`.
/// A new format version adds files; it never rewrites old ones.
pub fn assert_golden(file: &str, bytes: &[u8]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(file);
    if std::env::var_os("SAAMS_BLESS_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("bless {}: {e}", path.display()));
        return;
    }
    let golden = std::fs::read(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (write it with SAAMS_BLESS_GOLDEN=1 cargo test --release -p saams)", path.display())
    });
    assert!(golden == bytes, "{file}: this build writes other bytes than the committed golden file");
}
