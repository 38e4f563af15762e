//! Each tool's `--help` starts with what that tool does, not the package's one-line description.

use std::process::Command;

#[test]
fn every_tool_describes_itself() {
    let mut firsts = Vec::new();
    for (bin, word) in [
        (env!("CARGO_BIN_EXE_experiment"), "experiments"),
        (env!("CARGO_BIN_EXE_accuracy"), "error"),
        (env!("CARGO_BIN_EXE_monitor-sim"), "monitoring"),
        (env!("CARGO_BIN_EXE_soak-plot"), "soak"),
        (env!("CARGO_BIN_EXE_adhoc-latency"), "latency"),
    ] {
        let out = Command::new(bin).arg("--help").output().expect("run --help");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let first = text.lines().next().unwrap_or_default().to_string();
        assert!(first.contains(word), "{bin}: {first:?}");
        assert!(!first.contains(env!("CARGO_PKG_DESCRIPTION")), "{bin} shows the package description: {first:?}");
        firsts.push(first);
    }
    firsts.sort();
    firsts.dedup();
    assert_eq!(firsts.len(), 5);
}
