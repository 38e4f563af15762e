// Shared by the build scripts of the crates whose tests need something from outside the clone
// (included with `include!`, so it is no module of any crate).
//
// Why at build time: a test that cannot run here must show as *ignored* with its reason in
// `cargo test`'s own output, never as `ok` having done nothing, and the standard harness only
// knows `#[ignore]` at compile time. So the build script looks for what the tests need and sets
//
// - `saams_no_datasets` when the shared sample data is absent: `$SAAMS_DATASETS`, else
//   `../shared/datasets` beside the clone. The path found is handed to the tests as the
//   compile-time variable `SAAMS_DATASETS_DIR` (absolute), so every test reads the same place.
// - `saams_no_kafka` when `SAAMS_KAFKA_BROKERS` is unset (no broker declared: `scripts/test.sh`
//   starts one and sets it), and `saams_no_durable_kafka` when `SAAMS_KAFKA_DURABLE_BROKERS` is.
//   A broker declared but not listening is a test failure, not a skip.
//
// Cargo reruns the script when those variables change or the data folder changes.
//
// `kafka`: whether this crate has broker tests (only those crates rebuild when the broker
// variables change).
fn emit_test_environment(workspace_root: &std::path::Path, kafka: bool) {
    println!("cargo::rustc-check-cfg=cfg(saams_no_datasets)");
    println!("cargo::rerun-if-env-changed=SAAMS_DATASETS");
    let datasets = match std::env::var_os("SAAMS_DATASETS") {
        Some(dir) if !dir.is_empty() => workspace_root.join(dir),
        _ => workspace_root.join("../shared/datasets"),
    };
    let datasets = std::fs::canonicalize(&datasets).unwrap_or(datasets);
    if datasets.is_dir() {
        println!("cargo::rerun-if-changed={}", datasets.display());
    } else {
        // Nothing is watched for the data to appear (a watched folder is scanned recursively at
        // every build, and the nearest existing one may be the clone or `/`): setting or changing
        // SAAMS_DATASETS reruns this script.
        println!("cargo::rustc-cfg=saams_no_datasets");
    }
    println!("cargo::rustc-env=SAAMS_DATASETS_DIR={}", datasets.display());
    if !kafka {
        return;
    }
    println!("cargo::rustc-check-cfg=cfg(saams_no_kafka)");
    println!("cargo::rustc-check-cfg=cfg(saams_no_durable_kafka)");
    println!("cargo::rerun-if-env-changed=SAAMS_KAFKA_BROKERS");
    println!("cargo::rerun-if-env-changed=SAAMS_KAFKA_DURABLE_BROKERS");
    if std::env::var_os("SAAMS_KAFKA_BROKERS").is_none_or(|v| v.is_empty()) {
        println!("cargo::rustc-cfg=saams_no_kafka");
    }
    if std::env::var_os("SAAMS_KAFKA_DURABLE_BROKERS").is_none_or(|v| v.is_empty()) {
        println!("cargo::rustc-cfg=saams_no_durable_kafka");
    }
}
