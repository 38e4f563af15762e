//! The checkpoint directory's tests: round trips, concurrent writers, what `newest` skips and
//! why, and pruning.

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
            since: Some(id * 10_000),
            until: id * 10_000,
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
        monitors: vec![],
        device_replies: vec![],
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
        err.contains("read other inputs (range:t.jsonl@0..200") && err.contains("this job reads range:t.jsonl@0..190"),
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
    let mut names: Vec<String> =
        fs::read_dir(t.0.join("0000000001")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
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

/// A take-over under way names the checkpoint its processes start from: pruning keeps it
/// while the start file is fresh (a process of the new job slow to start opens it late), and
/// removes it once the file is gone.
#[test]
fn pruning_keeps_the_checkpoint_a_take_over_starts_from() {
    let t = TempDir::new("keep-take-over-start");
    let store = CheckpointStore::open(&t.0, 2).unwrap();
    checkpoint(&store, 1, true);
    checkpoint(&store, 2, true);
    let now = crate::clock::now_unix_ms();
    let start = format!(r#"{{"id":2,"unix_ms":{now}}}"#);
    fs::write(t.0.join(take_over_start::START_FILE), start).unwrap();
    for id in 3..=5 {
        checkpoint(&store, id, true);
    }
    assert_eq!(folders(&store), [2, 4, 5]);
    assert_eq!(store.newest_at_most(2).unwrap().0.map(|r| r.id), Some(2));
    fs::remove_file(t.0.join(take_over_start::START_FILE)).unwrap();
    checkpoint(&store, 6, true);
    assert_eq!(folders(&store), [5, 6]);
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
