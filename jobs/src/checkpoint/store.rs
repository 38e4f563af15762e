//! The checkpoint directory: atomic, durable writes; finding the newest complete checkpoint;
//! pruning (layout and rules in [`crate::checkpoint`]).

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use saams::checkpoint::{CheckpointPart, Manifest, PartEntry, file_crc32};

use super::take_over_start;
use crate::atomic_file::{self, StagedFile, temp_number};

/// Every temporary file starts with this; finding and pruning never take one for a real file.
pub const TEMP_PREFIX: &str = ".tmp-";

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
        self.newest_at_most(u64::MAX)
    }

    /// As [`CheckpointStore::newest_with_warnings`], among the checkpoints of ids up to
    /// `at_most` (the processes of a job taking over start from the one its process 0 chose,
    /// while the running job writes newer ones: `crate::handoff`).
    ///
    /// # Errors
    /// When the directory cannot be listed.
    pub fn newest_at_most(&self, at_most: u64) -> Result<(Option<Restored>, Vec<String>), String> {
        let mut warnings = Vec::new();
        for id in self.ids()?.into_iter().rev().filter(|&id| id <= at_most) {
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
    /// one, and the one a take-over under way starts from ([`take_over_start::pinned`]);
    /// remove the rest and the temporary files left in the kept complete ones.
    fn prune(&self) -> Result<(), String> {
        let mut complete = 0usize;
        let mut newest_complete = None;
        let pinned = take_over_start::pinned(&self.dir, crate::clock::now_unix_ms());
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
            if remove && Some(id) != pinned {
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
    let temp = folder.join(format!("{TEMP_PREFIX}{name}.{}.{}", std::process::id(), temp_number()));
    let target = folder.join(name);
    StagedFile::write(temp, target.clone(), bytes)
        .and_then(StagedFile::rename)
        .map_err(|e| format!("cannot write {}: {e}", target.display()))
}

/// Make the renames in `dir` durable.
fn sync_dir(dir: &Path) -> Result<(), String> {
    atomic_file::sync_dir(dir).map_err(|e| format!("cannot sync directory {}: {e}", dir.display()))
}

#[cfg(test)]
mod tests;
