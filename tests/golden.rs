//! Golden bytes: every file under `tests/golden/` decodes, and re-encodes to the same bytes,
//! so a change of any kind's byte layout cannot slip in unnoticed. A new format version adds
//! files; it never edits old ones.

use std::path::PathBuf;

fn golden_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "bin")).collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn every_golden_file_round_trips_to_identical_bytes() {
    for path in golden_files() {
        let bytes = std::fs::read(&path).unwrap();
        let synopsis = saams::registry::decode(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(synopsis.encode(), bytes, "{} re-encodes differently", path.display());
    }
}

#[test]
fn every_kind_has_golden_files() {
    let files = golden_files();
    for kind in saams::Kind::ALL {
        let found = files.iter().any(|p| {
            std::fs::read(p).ok().and_then(|b| saams::registry::decode(&b).ok()).is_some_and(|s| s.kind() == kind)
        });
        assert!(found, "no golden file holds a {kind}");
    }
}
