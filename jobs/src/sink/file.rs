//! File sinks: estimation lines to stdout or a file, rejected input to the dead-letter file, and
//! snapshot files confined to the snapshot directory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use saams_operators::SnapshotStore;

use crate::atomic_file::{StagedFile, sync_dir, temp_number};

mod take_over;

/// A line sink shared by the workers of a process; counts the lines.
///
/// With checkpoints ([`LineSink::hold_until_commit`]) the file is cut at every checkpoint: the
/// lines before the cut are those of event times before its boundary, and a restarted job cuts
/// the file back to the length the checkpoint recorded and writes what follows again, the same way
/// — each line once. A line travels at an event time `t`; it is written at once when `t` is before
/// every boundary not yet committed (every boundary agreed later is after it: a boundary lies past
/// every value routed when it is agreed), and held otherwise, from the moment the frontier passes
/// an open boundary until that checkpoint is committed ([`LineSink::commit`]) — a short while, not
/// a whole interval.
pub struct LineSink {
    out: Mutex<Box<dyn Write + Send>>,
    lines: AtomicU64,
    /// Bytes written (after the restart point, for a resumed file).
    bytes: AtomicU64,
    /// The file behind the writer (fsynced at every commit; set later for a sink
    /// [attached](LineSink::attach) when its job takes over another's output).
    file: std::sync::OnceLock<File>,
    /// With checkpoints: lines waiting for one; `None`: every line is written at once.
    held: Option<Mutex<Held>>,
    /// A hand-off (`crate::handoff`): lines of event times before the first or at or after
    /// the second are another job's to write, and dropped here.
    span: (AtomicU64, AtomicU64),
}

/// Lines waiting for a checkpoint to be committed.
#[derive(Default)]
struct Held {
    /// The lines with their event times, in the order they came.
    lines: Vec<(u64, String)>,
    /// Boundaries whose checkpoint a worker of this process has taken and the process has not
    /// committed yet.
    uncommitted: std::collections::BTreeSet<u64>,
}

impl LineSink {
    /// Open `-` (stdout) or a file (created or truncated).
    ///
    /// # Errors
    /// When the file cannot be created.
    pub fn open(target: &str) -> Result<LineSink, String> {
        LineSink::open_at(target, None)
    }

    /// Open `-` (stdout) or a file, keeping its first `keep` bytes (a resumed job: the length a
    /// checkpoint recorded; the file must be at least that long) or none (`None`: created or
    /// truncated).
    ///
    /// # Errors
    /// When the file cannot be created, or is shorter than `keep`.
    pub fn open_at(target: &str, keep: Option<u64>) -> Result<LineSink, String> {
        if target == "-" {
            return Ok(LineSink::from_writer(Box::new(BufWriter::new(std::io::stdout()))));
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(keep.is_none())
            .open(target)
            .map_err(|e| format!("cannot create {target}: {e}"))?;
        let start = keep.unwrap_or(0);
        if let Some(keep) = keep {
            let len = file.metadata().map_err(|e| format!("{target}: {e}"))?.len();
            if len < keep {
                return Err(format!(
                    "{target} is {len} bytes, shorter than the {keep} bytes the checkpoint recorded: it is not this job's output"
                ));
            }
            file.set_len(keep).map_err(|e| format!("cannot cut {target} back to {keep} bytes: {e}"))?;
        }
        let mut writer = file.try_clone().map_err(|e| format!("{target}: {e}"))?;
        std::io::Seek::seek(&mut writer, std::io::SeekFrom::Start(start)).map_err(|e| format!("{target}: {e}"))?;
        // Only a regular file is synced (`/dev/null` and pipes refuse fsync).
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        let sink = LineSink::from_writer(Box::new(BufWriter::new(writer)));
        sink.bytes.store(start, Ordering::Relaxed);
        if regular {
            let _ = sink.file.set(file);
        }
        Ok(sink)
    }

    /// A sink over any writer, e.g. a Kafka producer adapter sending one record per line.
    pub fn from_writer(w: Box<dyn Write + Send>) -> LineSink {
        LineSink {
            out: Mutex::new(w),
            lines: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            file: std::sync::OnceLock::new(),
            held: None,
            span: (AtomicU64::new(0), AtomicU64::new(u64::MAX)),
        }
    }

    /// A sink that drops every line (still counted).
    pub fn discard() -> LineSink {
        LineSink::from_writer(Box::new(std::io::sink()))
    }

    /// Cut the output at checkpoints ([`LineSink::commit`]).
    #[must_use]
    pub fn hold_until_commit(mut self) -> LineSink {
        self.held = Some(Mutex::new(Held::default()));
        self
    }

    /// Write lines (a newline is added to each), before any checkpoint boundary.
    pub fn write_all<L: AsRef<str>>(&self, lines: impl IntoIterator<Item = L>) {
        self.write_at(0, None, lines);
    }

    /// Write lines that travel at event time `time` (ms). `open` is the oldest checkpoint
    /// boundary the writing worker has agreed and not yet handed to [`LineSink::begin`]; with
    /// checkpoints, lines at or after it (or after a boundary begun and not committed) are held
    /// until that checkpoint is committed.
    pub fn write_at<L: AsRef<str>>(&self, time: u64, open: Option<u64>, lines: impl IntoIterator<Item = L>) {
        if !self.writes(time) {
            return;
        }
        if let Some(held) = &self.held {
            let mut held = lock(held);
            let before = open.into_iter().chain(held.uncommitted.first().copied()).min().unwrap_or(u64::MAX);
            if time >= before {
                held.lines.extend(lines.into_iter().map(|l| (time, l.as_ref().to_string())));
                return;
            }
            // Written under the lock: a commit cannot come in between.
            self.write_now(lines);
            return;
        }
        self.write_now(lines);
    }

    /// A worker has taken its part of the checkpoint at `boundary`: lines at or after it are
    /// held until the process commits it.
    pub fn begin(&self, boundary: u64) {
        if let Some(held) = &self.held {
            lock(held).uncommitted.insert(boundary);
        }
    }

    fn write_now<L: AsRef<str>>(&self, lines: impl IntoIterator<Item = L>) {
        let mut out = lock(&self.out);
        let (mut n, mut bytes) = (0, 0);
        for l in lines {
            // A closed stdout (e.g. `| head`) is not worth stopping the job for.
            let _ = out.write_all(l.as_ref().as_bytes()).and_then(|_| out.write_all(b"\n"));
            n += 1;
            bytes += l.as_ref().len() as u64 + 1;
        }
        self.lines.fetch_add(n, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A checkpoint at `boundary` (ms) is written: write the held lines of earlier times (in the
    /// order they came) and not at or after an older boundary still uncommitted, flush and
    /// fsync. Returns the output's length then (what a restart keeps). A detached sink
    /// ([`LineSink::detached`]) writes none: they wait for it to be attached.
    ///
    /// # Errors
    /// When the file cannot be flushed or synced.
    pub fn commit(&self, boundary: u64) -> Result<u64, String> {
        // The lock is held to the end: no line may be written between the cut and its length.
        let guard = self.held.as_ref().map(lock);
        if let Some(mut held) = guard {
            held.uncommitted.remove(&boundary);
            let before = held.uncommitted.first().map_or(boundary, |&open| open.min(boundary));
            let (ready, later): (Vec<_>, Vec<_>) =
                std::mem::take(&mut held.lines).into_iter().partition(|(t, _)| *t < before);
            held.lines = later;
            self.write_now(ready.into_iter().map(|(_, l)| l));
            return self.sync();
        }
        self.sync()
    }

    fn sync(&self) -> Result<u64, String> {
        lock(&self.out).flush().map_err(|e| format!("flushing the output: {e}"))?;
        if let Some(f) = self.file.get() {
            f.sync_data().map_err(|e| format!("syncing the output: {e}"))?;
        }
        Ok(self.bytes.load(Ordering::Relaxed))
    }

    /// The job ends: write every held line.
    pub fn release_all(&self) {
        if let Some(held) = &self.held {
            let mut held = lock(held);
            let all = std::mem::take(&mut held.lines);
            self.write_now(all.into_iter().filter(|(t, _)| self.writes(*t)).map(|(_, l)| l));
        }
    }

    /// Lines held now (they wait for a checkpoint's commit).
    pub fn held_lines(&self) -> usize {
        self.held.as_ref().map_or(0, |h| lock(h).lines.len())
    }

    /// Lines written so far.
    pub fn count(&self) -> u64 {
        self.lines.load(Ordering::Relaxed)
    }

    /// Flush buffered lines.
    pub fn flush(&self) {
        let _ = self.try_flush();
    }

    /// Flush buffered lines to the operating system, reporting a failure.
    ///
    /// ```
    /// use saams_jobs::sink::file::LineSink;
    /// let path = std::env::temp_dir().join(format!("saams-try-flush-{}.jsonl", std::process::id()));
    /// let sink = LineSink::open(&path.display().to_string()).unwrap();
    /// sink.write_all(["{\"a\":1}"]);
    /// assert_eq!(std::fs::read_to_string(&path).unwrap(), ""); // still buffered
    /// sink.try_flush().unwrap();
    /// assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// The writer's error, with this sink's lines counted so far.
    pub fn try_flush(&self) -> Result<(), String> {
        lock(&self.out).flush().map_err(|e| format!("flushing a line sink after {} line(s): {e}", self.count()))
    }

    /// Flush buffered lines and make them durable (`fdatasync` of the file; standard output is
    /// only flushed): what a Kafka input does before committing offsets, so that not even a
    /// machine crash after the commit loses the lines of the records before it (a restart does
    /// not read those records again). A commit runs at most once a second per worker.
    ///
    /// ```
    /// use saams_jobs::sink::file::LineSink;
    /// let path = std::env::temp_dir().join(format!("saams-try-sync-{}.jsonl", std::process::id()));
    /// let sink = LineSink::open(&path.display().to_string()).unwrap();
    /// sink.write_all(["{\"a\":1}"]);
    /// assert_eq!(std::fs::read_to_string(&path).unwrap(), ""); // still buffered
    /// sink.try_sync().unwrap();
    /// assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    ///
    /// # Errors
    /// The writer's or the file system's error.
    pub fn try_sync(&self) -> Result<(), String> {
        self.sync().map(|_| ())
    }
}

/// A lock that a panicked holder does not poison for the others (a line sink keeps writing).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Snapshot files live in one directory; names that leave it are refused.
///
/// A name is a plain relative path (`cm.bin`, `day1/cm.bin`): no `..`, no absolute path, no
/// component starting with [`TEMP_PREFIX`]. Symlinks inside the directory are followed only as far
/// as they stay inside it: every existing component is resolved (`canonicalize`) and must land
/// under the directory's own resolved path, so `link/x` with `link -> /elsewhere` is refused for
/// SAVE and LOAD alike. Missing subdirectories are created by SAVE one level at a time, each
/// checked the same way.
///
/// SAVE is atomic: the bytes go to a fresh temporary file in the target's directory, are fsynced,
/// and the temporary file is renamed over the target, then the directory is fsynced. A crash at
/// any point leaves either the old snapshot or the new one, never a torn file; a temporary file a
/// crash leaves behind is never read as a snapshot (its name cannot be asked for).
///
/// A process that swaps directories for symlinks *while* SAVE runs can still race the checks
/// (std has no `openat`/`O_NOFOLLOW` walk); the directory is meant to be owned by the job.
pub struct SnapshotDir {
    dir: Option<PathBuf>,
}

/// Temporary files of an in-flight SAVE start with this; names with a component starting with it
/// are refused, so a temporary file left by a crash is never loaded or overwritten by name.
///
/// ```
/// use saams_jobs::sink::file::{SnapshotDir, TEMP_PREFIX};
/// use saams_operators::SnapshotStore;
/// let dir = std::env::temp_dir().join(format!("saams-doc-temp-prefix-{}", std::process::id()));
/// let store = SnapshotDir::new(Some(dir.clone()));
/// store.save("cm.bin", b"bytes").unwrap();
/// assert_eq!(store.load("cm.bin").unwrap(), b"bytes");
/// assert!(store.load(&format!("{TEMP_PREFIX}1-0")).unwrap_err().contains("reserved"));
/// std::fs::remove_dir_all(dir).unwrap();
/// ```
pub const TEMP_PREFIX: &str = ".saams-tmp-";

/// How to treat a missing directory on the way to a file.
#[derive(Clone, Copy, PartialEq)]
enum Missing {
    /// SAVE: create it (and check it, like an existing one).
    Create,
    /// LOAD: the file cannot exist.
    Fail,
    /// check: fine, SAVE will create it.
    Allow,
}

impl SnapshotDir {
    /// Snapshots under `dir` (none configured: every SAVE/LOAD is refused).
    pub fn new(dir: Option<PathBuf>) -> SnapshotDir {
        SnapshotDir { dir }
    }

    /// The lexical check: a plain relative name, no temporary-file component.
    fn name<'a>(&self, file: &'a str) -> Result<(&PathBuf, &'a Path), String> {
        let dir = self.dir.as_ref().ok_or("no snapshot directory: start saams with --snapshots DIR")?;
        let rel = Path::new(file);
        let confined = !file.is_empty() && rel.components().all(|c| matches!(c, Component::Normal(_)));
        if !confined {
            return Err(format!("{file:?} is outside the snapshot directory (use a plain relative name)"));
        }
        if rel.components().any(|c| c.as_os_str().to_string_lossy().starts_with(TEMP_PREFIX)) {
            return Err(format!("{file:?}: names starting with {TEMP_PREFIX:?} are reserved for temporary files"));
        }
        Ok((dir, rel))
    }

    /// The path `file` names, with every existing component resolved and checked to stay in
    /// the snapshot directory. `None` when a directory on the way is missing and `missing` is
    /// [`Missing::Allow`].
    fn resolve(&self, file: &str, missing: Missing) -> Result<Option<PathBuf>, String> {
        let (dir, rel) = self.name(file)?;
        if missing == Missing::Create {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let root = match std::fs::canonicalize(dir) {
            Ok(root) => root,
            Err(_) if missing == Missing::Allow => return Ok(None),
            Err(e) => return Err(format!("snapshot directory {}: {e}", dir.display())),
        };
        let outside = || format!("{file:?} leads outside the snapshot directory (through a symlink)");
        let mut at = root.clone();
        let mut parts = rel.components().peekable();
        while let Some(part) = parts.next() {
            let next = at.join(part);
            let last = parts.peek().is_none();
            match std::fs::symlink_metadata(&next) {
                Ok(_) => {
                    // Exists (maybe as a symlink): where it really is must be inside the root.
                    let real = std::fs::canonicalize(&next).map_err(|_| {
                        format!(
                            "{file:?}: {} is a symlink to nothing",
                            next.strip_prefix(&root).unwrap_or(&next).display()
                        )
                    })?;
                    if !real.starts_with(&root) {
                        return Err(outside());
                    }
                    if !last && !real.is_dir() {
                        return Err(format!("{file:?}: {} is not a directory", real.display()));
                    }
                    at = real;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => match (missing, last) {
                    (_, true) => at = next,
                    (Missing::Allow, false) => return Ok(None),
                    (Missing::Fail, false) => return Err(format!("cannot read snapshot {file:?}: {e}")),
                    (Missing::Create, false) => {
                        std::fs::create_dir(&next)
                            .or_else(|e| if next.is_dir() { Ok(()) } else { Err(e) })
                            .map_err(|e| format!("cannot create {}: {e}", next.display()))?;
                        // Created by us or, racing, by someone else: check it like an existing one.
                        let real = std::fs::canonicalize(&next).map_err(|e| format!("{}: {e}", next.display()))?;
                        if !real.starts_with(&root) {
                            return Err(outside());
                        }
                        at = real;
                    }
                },
                Err(e) => return Err(format!("snapshot {file:?}: {e}")),
            }
        }
        Ok(Some(at))
    }

    /// The first half of SAVE: the bytes in an fsynced temporary file next to the target.
    fn write_temp(&self, file: &str, bytes: &[u8]) -> Result<StagedFile, String> {
        let target = self.resolve(file, Missing::Create)?.ok_or("unreachable: SAVE creates directories")?;
        if target.is_dir() {
            return Err(format!("cannot write snapshot {file:?}: it is a directory"));
        }
        let parent = target.parent().ok_or_else(|| format!("{file:?} has no directory"))?;
        let temp = parent.join(format!("{TEMP_PREFIX}{}-{}", std::process::id(), temp_number()));
        StagedFile::write(temp, target, bytes).map_err(|e| format!("cannot write snapshot {file:?}: {e}"))
    }

    /// The second half of SAVE: rename over the target, then make the rename durable.
    fn commit(pending: StagedFile, file: &str) -> Result<(), String> {
        let parent = pending.target().parent().unwrap_or(Path::new(".")).to_path_buf();
        pending.rename().map_err(|e| format!("cannot write snapshot {file:?}: {e}"))?;
        sync_dir(&parent).map_err(|e| format!("snapshot {file:?} written but its directory not synced: {e}"))
    }
}

impl SnapshotStore for SnapshotDir {
    fn load(&self, file: &str) -> Result<Vec<u8>, String> {
        let path = self.resolve(file, Missing::Fail)?.ok_or("unreachable: LOAD fails on missing directories")?;
        let meta = std::fs::metadata(&path).map_err(|e| format!("cannot read snapshot {file:?}: {e}"))?;
        if !meta.is_file() {
            // A directory, FIFO or device is no snapshot (and reading a FIFO would block the worker).
            return Err(format!("cannot read snapshot {file:?}: not a regular file"));
        }
        std::fs::read(&path).map_err(|e| format!("cannot read snapshot {file:?}: {e}"))
    }

    fn save(&self, file: &str, bytes: &[u8]) -> Result<(), String> {
        let pending = self.write_temp(file, bytes)?;
        SnapshotDir::commit(pending, file)
    }

    fn check(&self, file: &str) -> Result<(), String> {
        self.resolve(file, Missing::Allow).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory holding `snaps/` (the snapshot directory) and `outside/` (where no
    /// snapshot may go), removed when dropped.
    struct Scratch {
        base: PathBuf,
    }

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let base = std::env::temp_dir().join(format!("saams-snapshots-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&base);
            std::fs::create_dir_all(base.join("snaps")).unwrap();
            std::fs::create_dir_all(base.join("outside")).unwrap();
            std::fs::write(base.join("outside/secret"), b"not a snapshot").unwrap();
            Scratch { base }
        }

        fn store(&self) -> SnapshotDir {
            SnapshotDir::new(Some(self.snaps()))
        }

        fn snaps(&self) -> PathBuf {
            self.base.join("snaps")
        }

        fn outside(&self) -> PathBuf {
            self.base.join("outside")
        }

        /// Names in the snapshot directory's top level.
        fn listing(&self) -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(self.snaps())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.base);
        }
    }

    #[test]
    fn held_lines_are_written_at_the_commit_after_their_time_and_a_resumed_file_is_cut_back() {
        let scratch = Scratch::new("held");
        let path = scratch.base.join("out.jsonl");
        let target = path.display().to_string();
        let sink = LineSink::open_at(&target, None).unwrap().hold_until_commit();
        sink.write_all(["script answer"]);
        // A worker agreed on a checkpoint at 60 000: lines before it go out, later ones wait.
        sink.write_at(59_999, Some(60_000), ["window 0"]);
        sink.write_at(60_000, Some(60_000), ["window 1"]);
        sink.flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "script answer\nwindow 0\n");
        assert_eq!(sink.held_lines(), 1);
        // Its part is written (the plan forgets the boundary, the sink holds on to it).
        sink.begin(60_000);
        sink.write_at(60_500, None, ["window 1b"]);
        let kept = sink.commit(60_000).unwrap();
        assert_eq!(kept, 23, "the cut: the lines before 60 000");
        assert_eq!(sink.held_lines(), 2, "window 1 and 1b wait for the next commit");
        sink.write_at(120_500, Some(120_000), ["window 2"]);
        sink.begin(120_000);
        assert_eq!(sink.commit(120_000).unwrap(), 42, "window 1 and 1b");
        sink.write_at(130_000, Some(180_000), ["lost with the crash"]);
        drop(sink);
        // A restart from the first commit: the file is cut back to it, later lines come again.
        let again = LineSink::open_at(&target, Some(kept)).unwrap().hold_until_commit();
        again.write_at(60_000, None, ["window 1"]);
        again.release_all();
        again.flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "script answer\nwindow 0\nwindow 1\n");
        let short = LineSink::open_at(&target, Some(10_000)).err().unwrap();
        assert!(short.contains("shorter than the 10000 bytes"), "{short}");
        // Without holding, lines go straight to the writer.
        let direct = LineSink::open_at("/dev/null", None).unwrap();
        direct.write_at(5, Some(0), ["x"]);
        assert_eq!(direct.commit(0), Ok(2), "/dev/null is not synced, and that is no error");
    }

    /// A job taking over whose process commits a checkpoint before its sink is attached (the
    /// hand-off's barrier keeps that from happening; the sink does not rely on it): nothing is
    /// written to nowhere, the held lines wait for the attach.
    #[test]
    fn a_detached_sink_writes_nothing_at_a_commit_and_everything_from_its_boundary_once_attached() {
        let scratch = Scratch::new("detached");
        let path = scratch.base.join("out.jsonl");
        let sink = LineSink::detached();
        sink.write_at(30_000, None, ["before the boundary"]);
        sink.write_at(90_000, None, ["window 1"]);
        sink.begin(120_000);
        sink.write_at(150_000, None, ["window 2"]);
        assert_eq!(sink.commit(120_000).unwrap(), 0);
        assert_eq!(sink.held_lines(), 3, "a detached sink's commit writes nothing");
        sink.attach(&path.display().to_string(), Some(0), 60_000).unwrap();
        sink.flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "window 1\nwindow 2\n");
    }

    #[test]
    fn snapshot_names_are_confined() {
        let s = SnapshotDir::new(Some(PathBuf::from("/tmp/saams-no-such-snapshot-dir")));
        assert!(s.check("cm.bin").is_ok());
        assert!(s.check("sub/cm.bin").is_ok());
        assert!(s.check("../cm.bin").is_err());
        assert!(s.check("/etc/passwd").is_err());
        assert!(s.check("").is_err());
        assert!(SnapshotDir::new(None).check("cm.bin").is_err());
    }

    #[test]
    fn save_load_overwrite_and_new_subdirectories() {
        let d = Scratch::new("roundtrip");
        let s = d.store();
        s.save("cm.bin", b"one").unwrap();
        assert_eq!(s.load("cm.bin").unwrap(), b"one");
        s.save("cm.bin", b"two, longer").unwrap();
        assert_eq!(s.load("cm.bin").unwrap(), b"two, longer");
        // A path through subdirectories that do not exist yet: checked, created, written.
        assert!(s.check("day1/hour3/cm.bin").is_ok());
        assert!(s.load("day1/hour3/cm.bin").unwrap_err().contains("cannot read snapshot"));
        s.save("day1/hour3/cm.bin", b"three").unwrap();
        assert_eq!(std::fs::read(d.snaps().join("day1/hour3/cm.bin")).unwrap(), b"three");
        assert_eq!(s.load("day1/hour3/cm.bin").unwrap(), b"three");
        // No temporary file is left behind by a SAVE that completed.
        assert_eq!(d.listing(), ["cm.bin", "day1"]);
        // A directory is no snapshot, and cannot be overwritten by one.
        assert!(s.load("day1").unwrap_err().contains("not a regular file"));
        assert!(s.save("day1", b"x").unwrap_err().contains("directory"));
        // The snapshot directory itself is created on the first SAVE.
        let fresh = SnapshotDir::new(Some(d.base.join("created/later")));
        fresh.save("x.bin", b"4").unwrap();
        assert_eq!(fresh.load("x.bin").unwrap(), b"4");
    }

    #[test]
    fn dot_dot_absolute_empty_and_temporary_names_are_refused() {
        let d = Scratch::new("lexical");
        let s = d.store();
        for name in ["../outside/secret", "sub/../../outside/secret", "a/./../b", "", "/etc/passwd"] {
            assert!(s.load(name).unwrap_err().contains("outside the snapshot directory"), "{name}");
            assert!(s.save(name, b"x").unwrap_err().contains("outside the snapshot directory"), "{name}");
            assert!(s.check(name).is_err(), "{name}");
        }
        let abs = d.outside().join("secret");
        let abs = abs.to_str().unwrap();
        assert!(s.load(abs).is_err());
        assert!(s.save(abs, b"x").is_err());
        assert_eq!(std::fs::read(d.outside().join("secret")).unwrap(), b"not a snapshot");
        for name in [".saams-tmp-1-0", "sub/.saams-tmp-x"] {
            assert!(s.save(name, b"x").unwrap_err().contains("reserved"), "{name}");
            assert!(s.load(name).unwrap_err().contains("reserved"), "{name}");
        }
        assert!(d.listing().is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_file_leading_outside_is_refused() {
        use std::os::unix::fs::symlink;
        let d = Scratch::new("symfile");
        let s = d.store();
        symlink(d.outside().join("secret"), d.snaps().join("leak")).unwrap();
        assert!(s.load("leak").unwrap_err().contains("outside the snapshot directory"));
        assert!(s.save("leak", b"overwritten").unwrap_err().contains("outside the snapshot directory"));
        assert!(s.check("leak").is_err());
        assert_eq!(std::fs::read(d.outside().join("secret")).unwrap(), b"not a snapshot");
        // A symlink to nothing is refused too: it could be made to point anywhere later.
        symlink(d.outside().join("missing"), d.snaps().join("dangling")).unwrap();
        assert!(s.save("dangling", b"x").unwrap_err().contains("symlink to nothing"));
        assert!(s.load("dangling").is_err());
        assert!(!d.outside().join("missing").exists());
        // A symlink that stays inside is fine: SAVE replaces the file it points to.
        s.save("real.bin", b"v1").unwrap();
        symlink(d.snaps().join("real.bin"), d.snaps().join("alias.bin")).unwrap();
        assert_eq!(s.load("alias.bin").unwrap(), b"v1");
        s.save("alias.bin", b"v2").unwrap();
        assert_eq!(std::fs::read(d.snaps().join("real.bin")).unwrap(), b"v2");
        assert!(std::fs::symlink_metadata(d.snaps().join("alias.bin")).unwrap().file_type().is_symlink());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_parent_leading_outside_is_refused() {
        use std::os::unix::fs::symlink;
        let d = Scratch::new("symdir");
        let s = d.store();
        symlink(d.outside(), d.snaps().join("link")).unwrap();
        assert!(s.load("link/secret").unwrap_err().contains("outside the snapshot directory"));
        assert!(s.save("link/x", b"x").unwrap_err().contains("outside the snapshot directory"));
        // ...also when the rest of the path does not exist yet: nothing is created out there.
        assert!(s.save("link/new/x", b"x").unwrap_err().contains("outside the snapshot directory"));
        assert!(s.check("link/x").is_err());
        assert!(s.check("link/new/x").is_err());
        assert!(!d.outside().join("x").exists());
        assert!(!d.outside().join("new").exists());
        // A symlinked parent deeper down, in a directory SAVE created, is checked the same way.
        s.save("sub/ok.bin", b"ok").unwrap();
        symlink(d.outside(), d.snaps().join("sub/link")).unwrap();
        assert!(s.save("sub/link/x", b"x").unwrap_err().contains("outside the snapshot directory"));
        // A directory symlink that stays inside is followed.
        symlink(d.snaps().join("sub"), d.snaps().join("alias")).unwrap();
        s.save("alias/y.bin", b"y").unwrap();
        assert_eq!(std::fs::read(d.snaps().join("sub/y.bin")).unwrap(), b"y");
        assert_eq!(s.load("alias/ok.bin").unwrap(), b"ok");
    }

    #[test]
    fn a_crash_between_write_and_rename_keeps_the_old_snapshot() {
        let d = Scratch::new("crash");
        let s = d.store();
        s.save("cm.bin", b"old snapshot").unwrap();
        // The first half of a SAVE: the new bytes are in a synced temporary file; then the
        // process dies before the rename (nothing cleans up).
        let pending = s.write_temp("cm.bin", b"new snapshot").unwrap();
        assert_eq!(std::fs::read(pending.temp()).unwrap(), b"new snapshot");
        let leftover = pending.temp().file_name().unwrap().to_string_lossy().into_owned();
        std::mem::forget(pending);
        assert_eq!(s.load("cm.bin").unwrap(), b"old snapshot");
        assert_eq!(d.listing(), [leftover.clone(), "cm.bin".to_string()]);
        // The leftover cannot be loaded, or written over, by name.
        assert!(s.load(&leftover).unwrap_err().contains("reserved"));
        assert!(s.save(&leftover, b"x").is_err());
        // The next SAVE works as usual (its temporary file has another name).
        s.save("cm.bin", b"newer snapshot").unwrap();
        assert_eq!(s.load("cm.bin").unwrap(), b"newer snapshot");
        // A completed two-step SAVE is the same as save().
        let pending = s.write_temp("cm.bin", b"committed").unwrap();
        SnapshotDir::commit(pending, "cm.bin").unwrap();
        assert_eq!(s.load("cm.bin").unwrap(), b"committed");
        assert_eq!(d.listing(), [leftover, "cm.bin".to_string()]);
    }
}
