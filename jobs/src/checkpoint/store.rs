//! The checkpoint directory: atomic, durable writes; finding the newest complete checkpoint;
//! pruning (layout and rules in [`crate::checkpoint`]).

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use saams::checkpoint::{CheckpointPart, Manifest, PartEntry, file_crc32};

/// Every temporary file starts with this; finding and pruning never take one for a real file.
pub const TEMP_PREFIX: &str = ".tmp-";

/// Makes temporary names unique among the threads of this process (the pid separates processes).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The folder of checkpoint `id`: zero-padded so names sort by id.
///
/// ```
/// assert_eq!(saams_jobs::checkpoint::folder_name(42), "0000000042");
/// ```
pub fn folder_name(id: u64) -> String {
    format!("{id:010}")
}

/// The file a worker's part is written to.
///
/// ```
/// assert_eq!(saams_jobs::checkpoint::part_file_name(1, 3), "part-p1-w3.bin");
/// ```
pub fn part_file_name(process: u32, worker: u32) -> String {
    format!("part-p{process}-w{worker}.bin")
}

/// The file a process' manifest is written to.
///
/// ```
/// assert_eq!(saams_jobs::checkpoint::manifest_file_name(0), "manifest-p0.json");
/// ```
pub fn manifest_file_name(process: u32) -> String {
    format!("manifest-p{process}.json")
}

/// The process a manifest file name belongs to, if it is one.
fn manifest_process(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("manifest-p")?.strip_suffix(".json")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A checkpoint restored from disk: every process' manifest and every part.
#[derive(Clone, Debug, PartialEq)]
pub struct Restored {
    /// The checkpoint.
    pub id: u64,
    /// The manifests, by process (index = process).
    pub manifests: Vec<Manifest>,
    /// The parts of all processes, by process, then worker.
    pub parts: Vec<CheckpointPart>,
    /// Why newer checkpoints were skipped, one line each naming the file and the problem.
    pub warnings: Vec<String>,
}

/// A directory of checkpoints (see [`crate::checkpoint`]). Shared by the workers of a process
/// (`write_part` takes `&self`; the store is `Sync`).
#[derive(Debug)]
pub struct CheckpointStore {
    dir: PathBuf,
    keep: usize,
    /// Checkpoints this store has found complete, so pruning reads each one once.
    verified: Mutex<BTreeSet<u64>>,
}

impl CheckpointStore {
    /// Open (creating when missing) the checkpoint directory `dir`, keeping the newest `keep`
    /// complete checkpoints when pruning.
    ///
    /// # Errors
    /// When `keep` is 0 or the directory cannot be created or is not a directory.
    pub fn open(dir: &Path, keep: usize) -> Result<CheckpointStore, String> {
        if keep == 0 {
            return Err("checkpoints: keep at least 1 checkpoint (got 0)".to_string());
        }
        fs::create_dir_all(dir).map_err(|e| format!("cannot create checkpoint directory {}: {e}", dir.display()))?;
        if !dir.is_dir() {
            return Err(format!("checkpoint directory {} is not a directory", dir.display()));
        }
        Ok(CheckpointStore { dir: dir.to_path_buf(), keep, verified: Mutex::new(BTreeSet::new()) })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn folder(&self, id: u64) -> PathBuf {
        self.dir.join(folder_name(id))
    }

    /// Write a worker's part to `DIR/<id>/part-p<process>-w<worker>.bin`: a temporary file in
    /// that folder, fsynced, renamed. Workers call this concurrently (each its own file).
    ///
    /// # Errors
    /// When the folder or file cannot be created or written.
    pub fn write_part(&self, part: &CheckpointPart) -> Result<PartEntry, String> {
        let folder = self.folder(part.id);
        fs::create_dir_all(&folder)
            .map_err(|e| format!("cannot create checkpoint folder {}: {e}", folder.display()))?;
        let file = part_file_name(part.process, part.worker);
        let bytes = part.encode();
        write_atomically(&folder, &file, &bytes)?;
        Ok(PartEntry { file, bytes: bytes.len() as u64, crc32: file_crc32(&bytes) })
    }

    /// Write this process' manifest to `DIR/<id>/manifest-p<process>.json` (temporary file,
    /// fsync, rename, fsync of the folder and of `DIR`). Written last, it makes this process'
    /// share complete; call it after every part it lists was written. With `prune`, then
    /// remove what the pruning rules in [`crate::checkpoint`] say.
    ///
    /// # Errors
    /// When a listed part is missing or has another length than listed (a bug: the manifest
    /// would make a checkpoint that can never be restored), when writing fails, or when pruning
    /// fails to remove something (the manifest is committed then; the message says so).
    pub fn commit(&self, manifest: &Manifest, prune: bool) -> Result<(), String> {
        let folder = self.folder(manifest.id);
        for entry in &manifest.parts {
            let path = folder.join(&entry.file);
            let len = fs::metadata(&path)
                .map_err(|e| format!("cannot commit checkpoint: part {}: {e}", path.display()))?
                .len();
            if len != entry.bytes {
                return Err(format!(
                    "cannot commit checkpoint: part {} has {len} bytes, the manifest lists {}",
                    path.display(),
                    entry.bytes
                ));
            }
        }
        fs::create_dir_all(&folder)
            .map_err(|e| format!("cannot create checkpoint folder {}: {e}", folder.display()))?;
        write_atomically(&folder, &manifest_file_name(manifest.process), manifest.to_json().as_bytes())?;
        sync_dir(&folder)?;
        sync_dir(&self.dir)?;
        if prune {
            self.prune().map_err(|e| format!("checkpoint {} committed, but pruning failed: {e}", manifest.id))?;
        }
        Ok(())
    }

    /// The newest checkpoint complete for every process, with the reasons newer ones were
    /// skipped in [`Restored::warnings`]; `Ok(None)` when there is none (use
    /// [`CheckpointStore::newest_with_warnings`] to also get the reasons then).
    ///
    /// # Errors
    /// When the directory cannot be listed.
    pub fn newest(&self) -> Result<Option<Restored>, String> {
        Ok(self.newest_with_warnings()?.0)
    }

    /// As [`CheckpointStore::newest`], and the warnings about every checkpoint skipped, also
    /// when none is complete (a job that starts over should say why).
    ///
    /// # Errors
    /// When the directory cannot be listed.
    pub fn newest_with_warnings(&self) -> Result<(Option<Restored>, Vec<String>), String> {
        let mut warnings = Vec::new();
        for id in self.ids()?.into_iter().rev() {
            match self.load(id) {
                Ok((manifests, parts)) => {
                    self.verified.lock().unwrap_or_else(|p| p.into_inner()).insert(id);
                    let restored = Restored { id, manifests, parts, warnings: warnings.clone() };
                    return Ok((Some(restored), warnings));
                }
                Err(e) => warnings.push(format!("checkpoint {} skipped: {e}", self.folder(id).display())),
            }
        }
        Ok((None, warnings))
    }

    /// One more than the largest checkpoint id present, complete or not; 1 for an empty
    /// directory (or one that cannot be listed: `open` checked it could be created).
    pub fn next_id(&self) -> u64 {
        self.ids().ok().and_then(|ids| ids.last().copied()).map_or(1, |id| id.saturating_add(1))
    }

    /// The ids of the checkpoint folders, ascending. Anything else in the directory is ignored.
    fn ids(&self) -> Result<Vec<u64>, String> {
        let listing = fs::read_dir(&self.dir)
            .map_err(|e| format!("cannot list checkpoint directory {}: {e}", self.dir.display()))?;
        let mut ids = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| format!("cannot list checkpoint directory {}: {e}", self.dir.display()))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            // Only the names `folder_name` writes: "01" and "0000000001" must not both be id 1.
            if let Ok(id) = name.parse::<u64>()
                && name == folder_name(id)
                && entry.path().is_dir()
            {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }

    /// Read and check checkpoint `id` completely; the first problem found, naming the file.
    fn load(&self, id: u64) -> Result<(Vec<Manifest>, Vec<CheckpointPart>), String> {
        let folder = self.folder(id);
        let listing = fs::read_dir(&folder).map_err(|e| format!("cannot list {}: {e}", folder.display()))?;
        let mut found = BTreeSet::new();
        for entry in listing {
            let entry = entry.map_err(|e| format!("cannot list {}: {e}", folder.display()))?;
            if let Some(p) = entry.file_name().to_str().and_then(manifest_process) {
                found.insert(p);
            }
        }
        let Some(&first) = found.iter().next() else {
            return Err("no manifest: the checkpoint was never committed".to_string());
        };
        let first_manifest = read_manifest(&folder, first)?;
        let processes = first_manifest.processes;
        let mut manifests = Vec::with_capacity(processes as usize);
        for p in 0..processes {
            let m = if p == first { first_manifest.clone() } else { read_manifest(&folder, p)? };
            let file = manifest_file_name(p);
            let agree = [
                (m.id, id, "id"),
                (m.boundary_ms, first_manifest.boundary_ms, "boundary_ms"),
                (u64::from(m.processes), u64::from(processes), "processes"),
                (u64::from(m.workers), u64::from(first_manifest.workers), "workers"),
                (m.window_ms, first_manifest.window_ms, "window_ms"),
            ];
            for (got, want, field) in agree {
                if got != want {
                    return Err(format!("{file} says {field} {got}, not {want} as the folder and other manifests"));
                }
            }
            if m.process != p {
                return Err(format!("{file} is the manifest of process {}", m.process));
            }
            manifests.push(m);
        }
        if let Some(extra) = found.iter().find(|&&p| p >= processes) {
            return Err(format!("{} present in a job of {processes} processes", manifest_file_name(*extra)));
        }
        let mut parts = Vec::new();
        let mut seen = BTreeSet::new();
        for m in &manifests {
            for entry in &m.parts {
                let part = read_part(&folder, entry)?;
                let agree = [
                    (part.id, m.id, "id"),
                    (part.boundary_ms, m.boundary_ms, "boundary_ms"),
                    (u64::from(part.process), u64::from(m.process), "process"),
                    (u64::from(part.processes), u64::from(m.processes), "processes"),
                    (u64::from(part.workers), u64::from(m.workers), "workers"),
                ];
                for (got, want, field) in agree {
                    if got != want {
                        return Err(format!("{} says {field} {got}, its manifest {want}", entry.file));
                    }
                }
                if !seen.insert((part.process, part.worker)) {
                    return Err(format!("two parts of process {} worker {}", part.process, part.worker));
                }
                parts.push(part);
            }
        }
        parts.sort_by_key(|p| (p.process, p.worker));
        Ok((manifests, parts))
    }

    /// Whether checkpoint `id` is complete, reading it only the first time it is.
    fn is_complete(&self, id: u64) -> bool {
        let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        if verified.contains(&id) {
            return true;
        }
        let complete = self.load(id).is_ok();
        if complete {
            verified.insert(id);
        }
        complete
    }

    /// Keep the newest `keep` complete checkpoints and anything newer than the newest complete
    /// one; remove the rest and the temporary files left in the kept complete ones.
    fn prune(&self) -> Result<(), String> {
        let mut complete = 0usize;
        let mut newest_complete = None;
        for id in self.ids()?.into_iter().rev() {
            let remove = if complete >= self.keep {
                true
            } else if self.is_complete(id) {
                complete += 1;
                newest_complete.get_or_insert(id);
                self.remove_temp_files(id)?;
                false
            } else {
                newest_complete.is_some()
            };
            if remove {
                let folder = self.folder(id);
                match fs::remove_dir_all(&folder) {
                    Ok(()) => {}
                    // Another process pruned it first.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("cannot remove {}: {e}", folder.display())),
                }
                self.verified.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            }
        }
        Ok(())
    }

    /// Remove temporary files from complete checkpoint `id`: every process committed it, so no
    /// write into it is in flight and what is left was abandoned by a crash.
    fn remove_temp_files(&self, id: u64) -> Result<(), String> {
        let folder = self.folder(id);
        let listing = match fs::read_dir(&folder) {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("cannot list {}: {e}", folder.display())),
        };
        for entry in listing.flatten() {
            if entry.file_name().to_str().is_some_and(|n| n.starts_with(TEMP_PREFIX)) {
                match fs::remove_file(entry.path()) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("cannot remove {}: {e}", entry.path().display())),
                }
            }
        }
        Ok(())
    }
}

/// Read and parse `manifest-p<process>.json` of a checkpoint folder.
fn read_manifest(folder: &Path, process: u32) -> Result<Manifest, String> {
    let file = manifest_file_name(process);
    let path = folder.join(&file);
    match fs::metadata(&path) {
        Ok(meta) if !meta.is_file() => return Err(format!("{file} is not a regular file")),
        _ => {}
    }
    let text = match fs::read(&path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| format!("{file} is not UTF-8: {e}"))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("{file} missing: process {process} did not commit this checkpoint"));
        }
        Err(e) => return Err(format!("cannot read {file}: {e}")),
    };
    let m = Manifest::from_json(&text).map_err(|e| format!("{file}: {e}"))?;
    if m.process != process {
        return Err(format!("{file} is the manifest of process {}", m.process));
    }
    Ok(m)
}

/// Read a part file and check it against its manifest entry, then decode it.
fn read_part(folder: &Path, entry: &PartEntry) -> Result<CheckpointPart, String> {
    let path = folder.join(&entry.file);
    let file = &entry.file;
    let meta = match fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(format!("part {file} missing")),
        Err(e) => return Err(format!("cannot read part {file}: {e}")),
    };
    if !meta.is_file() {
        return Err(format!("part {file} is not a regular file"));
    }
    // Checked before reading, so a corrupted manifest cannot make us read a huge file.
    if meta.len() != entry.bytes {
        return Err(format!(
            "part {file} has {} bytes, the manifest lists {} (truncated or overwritten)",
            meta.len(),
            entry.bytes
        ));
    }
    let bytes = fs::read(&path).map_err(|e| format!("cannot read part {file}: {e}"))?;
    if bytes.len() as u64 != entry.bytes {
        return Err(format!("part {file} has {} bytes, the manifest lists {}", bytes.len(), entry.bytes));
    }
    let crc = file_crc32(&bytes);
    if crc != entry.crc32 {
        return Err(format!(
            "part {file} has CRC-32 {crc:#010x}, the manifest lists {:#010x} (corrupted)",
            entry.crc32
        ));
    }
    CheckpointPart::decode(&bytes).map_err(|e| format!("part {file}: {e}"))
}

/// Write `bytes` to `folder/name` through a fsynced temporary file and a rename.
fn write_atomically(folder: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = folder.join(format!("{TEMP_PREFIX}{name}.{}.{n}", std::process::id()));
    let target = folder.join(name);
    let written = (|| {
        let mut f = fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&temp, &target)
    })();
    written.map_err(|e| {
        let _ = fs::remove_file(&temp);
        format!("cannot write {}: {e}", target.display())
    })
}

/// Make the renames in `dir` durable.
fn sync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| format!("cannot sync directory {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use saams::checkpoint::{MANIFEST_FORMAT, SourcePosition, StateRole, SynopsisState};

    /// A fresh directory under the system temp dir, removed when the test ends.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!("saams-ckpt-store-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn part(id: u64, process: u32, worker: u32, processes: u32, workers: u32) -> CheckpointPart {
        CheckpointPart {
            id,
            boundary_ms: id * 10_000,
            process,
            worker,
            processes,
            workers,
            synopses: vec![SynopsisState {
                syn: 1,
                role: StateRole::Spread,
                items: id + u64::from(worker),
                loads_merged: 0,
                bytes: vec![worker as u8; 40],
            }],
            previous_sets: vec![],
            sources: vec![SourcePosition {
                source: format!("unit:{worker}"),
                offset: id * 100,
                line: id,
                max_time: Some(id as i64 * 10_000 - 1),
                done: false,
            }],
            tuples: id * 7,
        }
    }

    fn manifest(id: u64, process: u32, processes: u32, workers: u32, parts: Vec<PartEntry>) -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT,
            id,
            boundary_ms: id * 10_000,
            process,
            processes,
            workers,
            window_ms: 10_000,
            created_unix_ms: 0,
            parts,
            output: None,
            dead_letters: None,
            script: String::new(),
            requests: vec![],
            inputs: vec![],
            output_offsets: None,
        }
    }

    /// Write and commit checkpoint `id` of a one-process job with two workers.
    fn checkpoint(store: &CheckpointStore, id: u64, prune: bool) -> Manifest {
        let entries = (0..2).map(|w| store.write_part(&part(id, 0, w, 1, 2)).unwrap()).collect();
        let m = manifest(id, 0, 1, 2, entries);
        store.commit(&m, prune).unwrap();
        m
    }

    /// A checkpoint names its inputs' byte ranges: a job resumes from it in the range layout it
    /// names, its own or the one of an earlier version (ranges of `--chunk-bytes` and a short
    /// last one), and a checkpoint in neither is refused naming this job's own inputs.
    #[test]
    fn resume_takes_the_range_layout_the_checkpoint_names() {
        use crate::checkpoint::resume::Resume;
        let t = TempDir::new("layouts");
        let store = CheckpointStore::open(&t.0, 3).unwrap();
        let equal: Vec<String> = ["range:t.jsonl@0..190", "range:t.jsonl@190..380"].map(String::from).to_vec();
        let fixed: Vec<String> = ["range:t.jsonl@0..200", "range:t.jsonl@200..380"].map(String::from).to_vec();
        let entries = (0..2).map(|w| store.write_part(&part(1, 0, w, 1, 2)).unwrap()).collect();
        let mut m = manifest(1, 0, 1, 2, entries);
        m.inputs = fixed.clone();
        store.commit(&m, true).unwrap();
        let both = [equal.clone(), fixed.clone()];
        let resumed = Resume::newest(&store, 10_000, None, &both).unwrap().expect("a checkpoint");
        assert_eq!((resumed.id, resumed.inputs_at), (1, 1));
        let own = Resume::newest(&store, 10_000, None, &[fixed]).unwrap().expect("a checkpoint");
        assert_eq!(own.inputs_at, 0);
        let err = Resume::newest(&store, 10_000, None, &[equal]).err().expect("other inputs are refused");
        assert!(
            err.contains("read other inputs (range:t.jsonl@0..200")
                && err.contains("this job reads range:t.jsonl@0..190"),
            "{err}"
        );
    }

    fn folders(store: &CheckpointStore) -> Vec<u64> {
        store.ids().unwrap()
    }

    #[test]
    fn empty_directory_has_nothing_and_starts_at_one() {
        let t = TempDir::new("empty");
        let store = CheckpointStore::open(&t.0.join("nested/dir"), 1).unwrap();
        assert!(store.newest().unwrap().is_none());
        assert_eq!(store.next_id(), 1);
        assert!(CheckpointStore::open(&t.0, 0).unwrap_err().contains("at least 1"));
        fs::write(t.0.join("file"), b"x").unwrap();
        assert!(CheckpointStore::open(&t.0.join("file"), 1).is_err());
    }

    #[test]
    fn round_trip_of_one_checkpoint() {
        let t = TempDir::new("round-trip");
        let store = CheckpointStore::open(&t.0, 3).unwrap();
        let m = checkpoint(&store, store.next_id(), true);
        let r = store.newest().unwrap().unwrap();
        assert_eq!(r.id, 1);
        assert_eq!(r.manifests, vec![m]);
        assert_eq!(r.parts, vec![part(1, 0, 0, 1, 2), part(1, 0, 1, 1, 2)]);
        assert!(r.warnings.is_empty());
        assert_eq!(store.next_id(), 2);
        // Only the final names are left: no temporary file.
        let mut names: Vec<String> = fs::read_dir(t.0.join("0000000001"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["manifest-p0.json", "part-p0-w0.bin", "part-p0-w1.bin"]);
    }

    #[test]
    fn workers_write_parts_concurrently() {
        let t = TempDir::new("concurrent");
        let store = CheckpointStore::open(&t.0, 1).unwrap();
        let entries: Vec<PartEntry> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|w| {
                    let store = &store;
                    s.spawn(move || store.write_part(&part(1, 0, w, 1, 4)).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        store.commit(&manifest(1, 0, 1, 4, entries), true).unwrap();
        let r = store.newest().unwrap().unwrap();
        assert_eq!(r.parts.iter().map(|p| p.worker).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    #[test]
    fn two_processes_each_commit_their_manifest() {
        let t = TempDir::new("two-processes");
        let store = CheckpointStore::open(&t.0, 2).unwrap();
        // Process p has workers 2p and 2p + 1.
        let commit = |id: u64, p: u32| {
            let entries = (2 * p..2 * p + 2).map(|w| store.write_part(&part(id, p, w, 2, 4)).unwrap()).collect();
            store.commit(&manifest(id, p, 2, 4, entries), true).unwrap();
        };
        commit(1, 1);
        let (none, warnings) = store.newest_with_warnings().unwrap();
        assert!(none.is_none());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("manifest-p0.json missing"), "{warnings:?}");
        commit(1, 0);
        let r = store.newest().unwrap().unwrap();
        assert_eq!(r.manifests.iter().map(|m| m.process).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(r.parts.iter().map(|p| (p.process, p.worker)).collect::<Vec<_>>(), [(0, 0), (0, 1), (1, 2), (1, 3)]);
        // Checkpoint 2: process 0 commits first; 1 is still the newest complete, and 2 is not pruned.
        commit(2, 0);
        let r = store.newest().unwrap().unwrap();
        assert_eq!(r.id, 1);
        assert!(r.warnings[0].contains("0000000002") && r.warnings[0].contains("manifest-p1.json missing"));
        assert_eq!(folders(&store), [1, 2]);
        commit(2, 1);
        assert_eq!(store.newest().unwrap().unwrap().id, 2);
    }

    /// Checkpoint 1 complete, checkpoint 2 damaged by `damage`: newest is 1, with a warning that
    /// contains `expect`.
    fn newest_skips(name: &str, damage: impl FnOnce(&Path), expect: &str) {
        let t = TempDir::new(name);
        let store = CheckpointStore::open(&t.0, 5).unwrap();
        checkpoint(&store, 1, true);
        checkpoint(&store, 2, true);
        damage(&t.0.join("0000000002"));
        let r = store.newest().unwrap().unwrap();
        assert_eq!(r.id, 1, "{name}");
        assert_eq!(r.warnings.len(), 1, "{name}: {:?}", r.warnings);
        assert!(r.warnings[0].contains("0000000002") && r.warnings[0].contains(expect), "{name}: {:?}", r.warnings);
        assert_eq!(r.parts[0].tuples, 7);
        assert_eq!(store.next_id(), 3, "{name}: ids are never reused");
    }

    #[test]
    fn newest_skips_a_missing_manifest() {
        newest_skips("no-manifest", |f| fs::remove_file(f.join("manifest-p0.json")).unwrap(), "no manifest");
    }

    #[test]
    fn newest_skips_a_truncated_part() {
        newest_skips(
            "truncated",
            |f| {
                let p = f.join("part-p0-w1.bin");
                let b = fs::read(&p).unwrap();
                fs::write(&p, &b[..b.len() - 3]).unwrap();
            },
            "(truncated or overwritten)",
        );
    }

    #[test]
    fn newest_skips_a_flipped_byte() {
        newest_skips(
            "flipped",
            |f| {
                let p = f.join("part-p0-w0.bin");
                let mut b = fs::read(&p).unwrap();
                b[50] ^= 0x10;
                fs::write(&p, &b).unwrap();
            },
            "part part-p0-w0.bin has CRC-32",
        );
    }

    #[test]
    fn newest_skips_a_missing_part() {
        newest_skips("no-part", |f| fs::remove_file(f.join("part-p0-w1.bin")).unwrap(), "part part-p0-w1.bin missing");
    }

    #[test]
    fn newest_skips_a_corrupted_manifest_and_a_part_that_does_not_decode() {
        newest_skips(
            "bad-manifest",
            |f| fs::write(f.join("manifest-p0.json"), "{\"format\": 1, ").unwrap(),
            "manifest-p0.json: manifest is not valid JSON",
        );
        // A part whose length and CRC match its (rewritten) manifest but whose bytes are no part.
        newest_skips(
            "undecodable",
            |f| {
                let junk = b"SAMS not a part at all, but with the listed length and CRC".to_vec();
                fs::write(f.join("part-p0-w0.bin"), &junk).unwrap();
                let mut m = Manifest::from_json(&fs::read_to_string(f.join("manifest-p0.json")).unwrap()).unwrap();
                m.parts[0] =
                    PartEntry { file: "part-p0-w0.bin".into(), bytes: junk.len() as u64, crc32: file_crc32(&junk) };
                fs::write(f.join("manifest-p0.json"), m.to_json()).unwrap();
            },
            "not a checkpoint part",
        );
    }

    #[test]
    fn newest_skips_a_part_of_another_checkpoint() {
        newest_skips(
            "mixed-up",
            |f| {
                let old = f.parent().unwrap().join("0000000001/part-p0-w0.bin");
                let bytes = fs::read(old).unwrap();
                fs::write(f.join("part-p0-w0.bin"), &bytes).unwrap();
                let mut m = Manifest::from_json(&fs::read_to_string(f.join("manifest-p0.json")).unwrap()).unwrap();
                m.parts[0].bytes = bytes.len() as u64;
                m.parts[0].crc32 = file_crc32(&bytes);
                fs::write(f.join("manifest-p0.json"), m.to_json()).unwrap();
            },
            "part-p0-w0.bin says id 1, its manifest 2",
        );
    }

    #[test]
    fn commit_refuses_a_manifest_whose_parts_are_not_there() {
        let t = TempDir::new("commit-check");
        let store = CheckpointStore::open(&t.0, 1).unwrap();
        let mut entry = store.write_part(&part(1, 0, 0, 1, 1)).unwrap();
        entry.bytes += 1;
        let e = store.commit(&manifest(1, 0, 1, 1, vec![entry.clone()]), false).unwrap_err();
        assert!(e.contains("the manifest lists"), "{e}");
        entry.file = "part-p0-w9.bin".into();
        assert!(store.commit(&manifest(1, 0, 1, 1, vec![entry]), false).is_err());
        assert!(!t.0.join("0000000001/manifest-p0.json").exists());
    }

    #[test]
    fn pruning_keeps_the_newest_k_complete() {
        let t = TempDir::new("keep-k");
        let store = CheckpointStore::open(&t.0, 2).unwrap();
        for id in 1..=5 {
            checkpoint(&store, id, true);
            assert_eq!(folders(&store), (id.saturating_sub(1).max(1)..=id).collect::<Vec<_>>());
        }
        // Without `prune`, nothing is removed.
        checkpoint(&store, 6, false);
        assert_eq!(folders(&store), [4, 5, 6]);
        checkpoint(&store, 7, true);
        assert_eq!(folders(&store), [6, 7]);
    }

    #[test]
    fn pruning_handles_incomplete_and_corrupted_checkpoints_and_stale_temp_files() {
        let t = TempDir::new("prune-incomplete");
        let store = CheckpointStore::open(&t.0, 1).unwrap();
        checkpoint(&store, 1, true);
        // 2: a crash after the parts, before the manifest.
        store.write_part(&part(2, 0, 0, 1, 2)).unwrap();
        fs::write(t.0.join("0000000002/.tmp-part-p0-w1.bin.1.0"), b"half").unwrap();
        checkpoint(&store, 3, true);
        assert_eq!(folders(&store), [3], "1 is older than the newest complete; 2 is incomplete and older");
        // 4 is in progress (newer than the newest complete): kept.
        store.write_part(&part(4, 0, 0, 1, 2)).unwrap();
        fs::write(t.0.join("0000000003/.tmp-manifest-p0.json.1.1"), b"{").unwrap();
        store.commit(&manifest(3, 0, 1, 2, store.newest().unwrap().unwrap().manifests[0].parts.clone()), true).unwrap();
        assert_eq!(folders(&store), [3, 4]);
        assert!(!t.0.join("0000000003/.tmp-manifest-p0.json.1.1").exists(), "stale temp file removed");
        // 5 complete but corrupted: it does not count, so 3 (the newest intact one) is kept.
        checkpoint(&store, 5, false);
        let p = t.0.join("0000000005/part-p0-w0.bin");
        let mut b = fs::read(&p).unwrap();
        b[45] ^= 1;
        fs::write(&p, &b).unwrap();
        let fresh = CheckpointStore::open(&t.0, 1).unwrap();
        fresh.prune().unwrap();
        assert_eq!(folders(&fresh), [3, 4, 5]);
        assert_eq!(fresh.newest().unwrap().unwrap().id, 3);
        // Unrelated entries in the directory are left alone, among them numbered folders that
        // are not named as this store names them.
        fs::write(t.0.join("README"), b"mine").unwrap();
        fs::create_dir(t.0.join("03")).unwrap();
        assert_eq!(folders(&fresh), [3, 4, 5]);
        checkpoint(&fresh, 6, true);
        assert_eq!(folders(&fresh), [6]);
        assert!(t.0.join("README").exists() && t.0.join("03").exists());
    }
}
