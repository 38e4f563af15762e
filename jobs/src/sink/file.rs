//! File sinks: estimation lines to stdout or a file, rejected input to the dead-letter file, and
//! snapshot files confined to the snapshot directory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use saams_operators::SnapshotStore;

/// A line sink shared by the workers of a process; counts the lines.
pub struct LineSink {
    out: Mutex<Box<dyn Write + Send>>,
    lines: AtomicU64,
}

impl LineSink {
    /// Open `-` (stdout) or a file (created or truncated).
    ///
    /// # Errors
    /// When the file cannot be created.
    pub fn open(target: &str) -> Result<LineSink, String> {
        let w: Box<dyn Write + Send> = if target == "-" {
            Box::new(BufWriter::new(std::io::stdout()))
        } else {
            Box::new(BufWriter::new(File::create(target).map_err(|e| format!("cannot create {target}: {e}"))?))
        };
        Ok(LineSink { out: Mutex::new(w), lines: AtomicU64::new(0) })
    }

    /// A sink that drops every line (still counted).
    pub fn discard() -> LineSink {
        LineSink { out: Mutex::new(Box::new(std::io::sink())), lines: AtomicU64::new(0) }
    }

    /// Write lines (a newline is added to each).
    pub fn write_all<'a>(&self, lines: impl IntoIterator<Item = &'a String>) {
        let mut out = match self.out.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut n = 0;
        for l in lines {
            // A closed stdout (e.g. `| head`) is not worth stopping the job for.
            let _ = out.write_all(l.as_bytes()).and_then(|_| out.write_all(b"\n"));
            n += 1;
        }
        self.lines.fetch_add(n, Ordering::Relaxed);
    }

    /// Lines written so far.
    pub fn count(&self) -> u64 {
        self.lines.load(Ordering::Relaxed)
    }

    /// Flush buffered lines.
    pub fn flush(&self) {
        if let Ok(mut out) = self.out.lock() {
            let _ = out.flush();
        }
    }
}

/// Snapshot files live in one directory; names that leave it are refused.
pub struct SnapshotDir {
    dir: Option<PathBuf>,
}

impl SnapshotDir {
    /// Snapshots under `dir` (none configured: every SAVE/LOAD is refused).
    pub fn new(dir: Option<PathBuf>) -> SnapshotDir {
        SnapshotDir { dir }
    }

    fn resolve(&self, file: &str) -> Result<PathBuf, String> {
        let dir = self.dir.as_ref().ok_or("no snapshot directory: start saams with --snapshots DIR")?;
        let rel = Path::new(file);
        let confined = !file.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
        if !confined {
            return Err(format!("{file:?} is outside the snapshot directory (use a plain relative name)"));
        }
        Ok(dir.join(rel))
    }
}

impl SnapshotStore for SnapshotDir {
    fn load(&self, file: &str) -> Result<Vec<u8>, String> {
        let path = self.resolve(file)?;
        std::fs::read(&path).map_err(|e| format!("cannot read snapshot {file:?}: {e}"))
    }

    fn save(&self, file: &str, bytes: &[u8]) -> Result<(), String> {
        let path = self.resolve(file)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, bytes).map_err(|e| format!("cannot write snapshot {file:?}: {e}"))
    }

    fn check(&self, file: &str) -> Result<(), String> {
        self.resolve(file).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_names_are_confined() {
        let s = SnapshotDir::new(Some(PathBuf::from("/tmp/snaps")));
        assert!(s.check("cm.bin").is_ok());
        assert!(s.check("sub/cm.bin").is_ok());
        assert!(s.check("../cm.bin").is_err());
        assert!(s.check("/etc/passwd").is_err());
        assert!(s.check("").is_err());
        assert!(SnapshotDir::new(None).check("cm.bin").is_err());
    }
}
