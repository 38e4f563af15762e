//! What the unit tests of several modules share.

/// A snapshot store with no files, for the plans of unit tests (every call is an error naming
/// the file).
pub(crate) struct NoFiles;

impl saams_operators::SnapshotStore for NoFiles {
    fn load(&self, f: &str) -> Result<Vec<u8>, String> {
        Err(f.into())
    }
    fn save(&self, f: &str, _: &[u8]) -> Result<(), String> {
        Err(f.into())
    }
    fn check(&self, f: &str) -> Result<(), String> {
        Err(f.into())
    }
}
