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

/// A checkpoint stores [`saams::Synopsis::encode_exact`]: decoded, every kind goes on exactly as
/// the original, update for update (DFT carries its incrementally updated coefficients; the
/// others' plain encoding already is their whole state). KLL is left out: Apache DataSketches'
/// KLL compacts with an unseeded random generator, so even two copies in memory diverge.
#[test]
fn every_kind_decoded_from_its_exact_encoding_goes_on_bit_for_bit() {
    for path in golden_files() {
        let bytes = std::fs::read(&path).unwrap();
        let mut original = saams::registry::decode(&bytes).unwrap();
        if original.kind() == saams::Kind::Kll {
            continue;
        }
        // Move the state off its freshly decoded form first (DFT recomputes on decode).
        let feed = |s: &mut dyn saams::Synopsis, from: u64| {
            for i in from..from + 3_000 {
                let x = ((i * 7919) % 1_000) as f64 / 10.0 + (i as f64 * 0.37).sin();
                s.update_at(saams::Datum::Num(x), 1_700_000_000_000 + 250 * i as i64);
            }
        };
        feed(original.as_mut(), 0);
        let mut copy = saams::registry::decode(&original.encode_exact())
            .unwrap_or_else(|e| panic!("{}: exact encoding does not decode: {e}", path.display()));
        assert!(copy.encode_exact() == original.encode_exact(), "{}: exact round trip", path.display());
        feed(original.as_mut(), 3_000);
        feed(copy.as_mut(), 3_000);
        assert!(copy.encode_exact() == original.encode_exact(), "{}: diverged after more updates", path.display());
        let estimates = |s: &dyn saams::Synopsis| format!("{:?}", s.estimate(&saams::Query::Distinct).ok());
        assert_eq!(estimates(copy.as_ref()), estimates(original.as_ref()), "{}", path.display());
    }
}
