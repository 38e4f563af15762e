//! `DIR/take-over-start.json`: where process 0 of a job taking over (`saams --take-over`,
//! [`crate::handoff`]) names the checkpoint its processes start from. It lives here, not in the
//! hand-off, because the running job's pruning reads it too ([`pinned`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file's name in the checkpoint directory.
pub const START_FILE: &str = "take-over-start.json";

/// How old a start file may be and still be a take-over's under way (the processes of one job
/// are started together; the file is removed once the job has taken over).
pub const START_FRESH_MS: u64 = 60_000;

/// What `DIR/take-over-start.json` says.
#[derive(Debug, Serialize, Deserialize)]
pub struct Start {
    /// The checkpoint process 0 resumed from.
    pub id: u64,
    /// When it was written (Unix ms).
    pub unix_ms: u64,
}

/// The start file of `dir`, if there is one written since `since` (Unix ms).
pub fn read_start(dir: &Path, since: u64) -> Option<Start> {
    let text = std::fs::read_to_string(dir.join(START_FILE)).ok()?;
    serde_json::from_str::<Start>(&text).ok().filter(|s| s.unix_ms >= since)
}

/// The checkpoint a take-over under way starts from (a fresh start file's), which pruning
/// keeps: the new job's other processes open it after process 0 chose it, and one slow to
/// start (stopped, starved of CPU, a slow host) found it removed as the running job wrote
/// newer ones, and the take-over failed ("no longer complete": found by a test run with the
/// new job's process 1 starved, 2026-12-07).
///
/// ```
/// use saams_jobs::checkpoint::take_over_start::{START_FILE, pinned};
/// let dir = std::env::temp_dir().join(format!("saams-doc-pinned-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// assert_eq!(pinned(&dir, 1_000_000), None);
/// std::fs::write(dir.join(START_FILE), r#"{"id":7,"unix_ms":990000}"#).unwrap();
/// assert_eq!(pinned(&dir, 1_000_000), Some(7));
/// // A start file older than a minute is a take-over that failed: nothing is kept for it.
/// assert_eq!(pinned(&dir, 1_100_000), None);
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn pinned(dir: &Path, now_unix_ms: u64) -> Option<u64> {
    read_start(dir, now_unix_ms.saturating_sub(START_FRESH_MS)).map(|s| s.id)
}
