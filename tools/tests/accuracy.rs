//! The accuracy dashboard runs every kind on the shared real data and each promised bound holds.

use std::process::Command;

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn every_kind_meets_its_promised_bound_on_the_real_data() {
    let datasets = env!("SAAMS_DATASETS_DIR");
    let out =
        Command::new(env!("CARGO_BIN_EXE_accuracy")).args(["--datasets", datasets]).output().expect("run accuracy");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "accuracy failed: {stderr}");
    assert!(!stdout.contains("MISSED"), "a bound was missed:\n{stdout}");
    assert!(!stdout.contains("error:"), "an evaluation failed:\n{stdout}");
    for kind in saams::Kind::ALL {
        assert!(stdout.lines().any(|l| l.starts_with(kind.name())), "no row for {kind}:\n{stdout}");
    }
    assert!(stderr.contains("missed=0 errors=0"), "{stderr}");
}
