//! Helpers shared by the operator tests.

use saams_operators::plan::SnapshotStore;

/// A snapshot store with no files: the tests' request scripts never save or load snapshots, so
/// any attempt is an error.
pub struct NoSnapshots;

impl SnapshotStore for NoSnapshots {
    fn load(&self, file: &str) -> Result<Vec<u8>, String> {
        Err(format!("no snapshot {file}"))
    }
    fn save(&self, file: &str, _: &[u8]) -> Result<(), String> {
        Err(format!("no snapshot {file}"))
    }
    fn check(&self, file: &str) -> Result<(), String> {
        Err(format!("no snapshot {file}"))
    }
}
