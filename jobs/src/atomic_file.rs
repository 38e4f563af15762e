//! Atomic, durable file writes, shared by the snapshot directory (SAVE) and the checkpoint store:
//! the bytes go to a fresh temporary file beside the target, are fsynced, and the temporary file
//! is renamed over the target; the caller then fsyncs the directory ([`sync_dir`]) when the rename
//! itself must survive a crash. A crash at any point leaves the old file or the new one, never a
//! torn one; a temporary file it leaves behind keeps its own name, which the callers never read as
//! a real file (they give it a prefix of their own and refuse or prune names with it).
//!
//! Why one helper: both callers need the same order of writes, fsyncs and clean-up on failure;
//! the names of their temporary files and their error messages stay theirs.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes temporary names unique among the threads of this process (with the pid, which separates
/// processes, in the callers' names).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A number no other temporary file of this process got: put it, with the pid, into the name of
/// a temporary file.
pub(crate) fn temp_number() -> u64 {
    TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// A written and fsynced temporary file, not yet renamed over its target: the first half of an
/// atomic write. Dropping it without [`rename`](Self::rename) leaves the temporary file, as a
/// crash would.
#[derive(Debug)]
pub(crate) struct StagedFile {
    temp: PathBuf,
    target: PathBuf,
}

impl StagedFile {
    /// Writes `bytes` into a new file at `temp` (it must not exist yet; put it in `target`'s
    /// directory, so the rename stays within one file system) and fsyncs it. On failure the
    /// temporary file is removed.
    ///
    /// # Errors
    /// When `temp` exists or cannot be created, written or synced.
    pub(crate) fn write(temp: PathBuf, target: PathBuf, bytes: &[u8]) -> io::Result<StagedFile> {
        let written = (|| {
            let mut f = OpenOptions::new().write(true).create_new(true).open(&temp)?;
            f.write_all(bytes)?;
            f.sync_all()
        })();
        match written {
            Ok(()) => Ok(StagedFile { temp, target }),
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                Err(e)
            }
        }
    }

    /// The temporary file (the tests look at what a crash before the rename leaves).
    #[cfg(test)]
    pub(crate) fn temp(&self) -> &Path {
        &self.temp
    }

    /// The file this one replaces when renamed.
    pub(crate) fn target(&self) -> &Path {
        &self.target
    }

    /// The second half: renames the temporary file over the target (removing the temporary file
    /// when that fails). The rename is durable only after [`sync_dir`] of the target's directory.
    ///
    /// # Errors
    /// When the rename fails (e.g. the target is a directory).
    pub(crate) fn rename(self) -> io::Result<()> {
        std::fs::rename(&self.temp, &self.target).inspect_err(|_| {
            let _ = std::fs::remove_file(&self.temp);
        })
    }
}

/// Makes the renames in `dir` durable (fsync of the directory).
///
/// # Errors
/// When the directory cannot be opened or synced.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).and_then(|d| d.sync_all())
}

/// Replace `path` with `bytes` atomically (a reader sees the old file or the new one) and
/// durably (the rename survives a crash once this returns): staged in a temporary file beside
/// it named `{temp_prefix}{name}.{pid}.{n}`, renamed, the directory synced. For the small
/// files two jobs or a job and its restart read to agree (hand-off requests, the request
/// topic's script end).
///
/// # Errors
/// The path and what failed.
pub(crate) fn replace_durably(path: &Path, temp_prefix: &str, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(|| std::path::PathBuf::from("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!("{temp_prefix}{name}.{}.{}", std::process::id(), temp_number()));
    StagedFile::write(temp, path.to_path_buf(), bytes)
        .and_then(StagedFile::rename)
        .and_then(|()| sync_dir(&dir))
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temporary directory, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("saams-atomic-file-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn listing(&self) -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(&self.0)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_staged_file_replaces_its_target_only_when_renamed() {
        let d = Scratch::new("replace");
        let target = d.0.join("f.bin");
        std::fs::write(&target, b"old").unwrap();
        let staged = StagedFile::write(d.0.join(".tmp-1"), target.clone(), b"new").unwrap();
        assert_eq!((staged.temp(), staged.target()), (d.0.join(".tmp-1").as_path(), target.as_path()));
        assert_eq!(std::fs::read(&target).unwrap(), b"old", "not renamed yet: the old file stays");
        assert_eq!(std::fs::read(staged.temp()).unwrap(), b"new");
        staged.rename().unwrap();
        sync_dir(&d.0).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(d.listing(), ["f.bin"], "no temporary file left");
    }

    #[test]
    fn failures_leave_no_temporary_file_and_the_target_as_it_was() {
        let d = Scratch::new("failures");
        // The target is a non-empty directory: the rename fails, the temporary file goes.
        std::fs::create_dir(d.0.join("dir")).unwrap();
        std::fs::write(d.0.join("dir/inside"), b"x").unwrap();
        let staged = StagedFile::write(d.0.join(".tmp-2"), d.0.join("dir"), b"new").unwrap();
        assert!(staged.rename().is_err());
        assert_eq!(d.listing(), ["dir"]);
        // The temporary file's directory is missing: nothing is written anywhere.
        assert!(StagedFile::write(d.0.join("missing/.tmp-3"), d.0.join("missing/f"), b"new").is_err());
        assert_eq!(d.listing(), ["dir"]);
        assert!(sync_dir(&d.0.join("missing")).is_err());
    }

    #[test]
    fn temporary_numbers_are_never_repeated() {
        let (a, b) = (temp_number(), temp_number());
        assert!(b > a);
    }
}
