//! Checkpoints (`--checkpoints DIR`, `--checkpoint-interval`): the operators copy their state at
//! an agreed window boundary ([`saams_operators::checkpoint`]), every worker writes its part
//! ([`writer`]) with where its inputs stand ([`marks`]), and a restarted job resumes from the
//! newest complete checkpoint with any number of workers and processes ([`recovery`],
//! [`resume`]).
//!
//! Where checkpoints live on disk: a directory of numbered checkpoint folders, written so that
//! a crash at any moment leaves either a complete checkpoint or one a restart skips.
//!
//! The bytes of each file are `saams::checkpoint`'s (binary parts, JSON manifests); this module
//! names the files, writes them atomically and durably, finds the newest complete checkpoint,
//! and prunes old ones.
//!
//! # Directory layout
//!
//! ```text
//! DIR/                                   --checkpoints DIR
//!   0000000007/                          checkpoint id 7 (ids as %010d, so names sort by id)
//!     part-p0-w0.bin                     worker 0 of process 0: its CheckpointPart
//!     part-p0-w1.bin
//!     part-p1-w2.bin                     worker 2, of process 1
//!     part-p1-w3.bin
//!     manifest-p0.json                   process 0's Manifest: its parts with lengths and CRCs
//!     manifest-p1.json                   process 1's
//!     .tmp-part-p1-w3.bin.4242.0         a file being written (or left by a crash)
//!   0000000008/                          the next one
//! ```
//!
//! Every file is first written to a temporary file in its folder whose name starts with
//! [`TEMP_PREFIX`], fsynced, then renamed to its name: a reader never sees half a file under a
//! real name. Each worker writes its own part ([`CheckpointStore::write_part`], concurrently);
//! then each process writes its manifest ([`CheckpointStore::commit`]), which also fsyncs the
//! folder and `DIR` so the renames survive a power cut. A checkpoint is **complete** when the
//! manifests of all its processes are present and parse, and every part they list is present
//! with the listed length and CRC and decodes; [`CheckpointStore::newest`] returns the newest
//! complete one and says why it skipped newer ones.
//!
//! Pruning (on commit) keeps the newest `keep` complete checkpoints, removes every older one,
//! removes incomplete ones older than the newest complete one (a crash left them; no process
//! will finish them), and removes stale temporary files. Checkpoints newer than the newest
//! complete one are left alone: other processes may still be writing them.
//!
//! ```
//! use saams::checkpoint::{CheckpointPart, Manifest, MANIFEST_FORMAT};
//! use saams_jobs::checkpoint::CheckpointStore;
//! let dir = std::env::temp_dir().join(format!("saams-doc-checkpoints-{}", std::process::id()));
//! let store = CheckpointStore::open(&dir, 2).unwrap();
//! assert!(store.newest().unwrap().is_none());
//! let id = store.next_id();
//! assert_eq!(id, 1);
//! let part = CheckpointPart { id, boundary_ms: 10_000, processes: 1, workers: 1, tuples: 42, ..CheckpointPart::default() };
//! let entry = store.write_part(&part).unwrap();
//! assert_eq!(entry.file, "part-p0-w0.bin");
//! let manifest = Manifest {
//!     format: MANIFEST_FORMAT, id, boundary_ms: 10_000, process: 0, processes: 1, workers: 1,
//!     window_ms: 10_000, created_unix_ms: 0, parts: vec![entry], output: None, dead_letters: None,
//!     script: String::new(), requests: vec![], inputs: vec![], output_offsets: None,
//! };
//! store.commit(&manifest, true).unwrap();
//! let restored = store.newest().unwrap().expect("checkpoint 1 is complete");
//! assert_eq!(restored.id, 1);
//! assert_eq!(restored.parts, vec![part]);
//! assert_eq!(restored.manifests, vec![manifest]);
//! assert!(restored.warnings.is_empty());
//! assert_eq!(store.next_id(), 2);
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

pub mod marks;
pub mod recovery;
pub mod resume;
mod store;
pub mod take_over_start;
pub mod writer;

pub use store::{CheckpointStore, Restored, TEMP_PREFIX, folder_name, manifest_file_name, part_file_name};
