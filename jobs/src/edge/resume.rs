//! A device's state file (`saams-edge --state FILE`): what makes its shipments exactly once
//! across a kill and a restart over the same input, `--ship-every` included.
//!
//! Before a device produces a batch of shipments it writes (atomically: a temporary file,
//! fsync, rename, fsync of the directory) which tuples of its input they hold — those numbered
//! `from` to `upto` (the device's count of tuples read) — their window, the sequence number of
//! the first, and whether they ship the open window so far (`--ship-every`) or close it. The
//! batch's content is a function of those tuples alone, so a device restarted over the same
//! input skips the tuples before `from`, reads those up to `upto` into the same window, ships
//! the same batch again under the same sequence numbers, and goes on: the cloud refuses the
//! copies it merged before the kill as replays and merges those it had not (the write-ahead
//! order means a batch produced is always one the file names). So nothing is counted twice
//! and nothing is lost, whenever the kill came; the device resumes from its own file, not from
//! what the cloud acknowledged (the cloud's refusals do the rest).
//!
//! A device that keeps groups whole or resident also records the states it keeps, as they were
//! when the batch's window opened, and where that window's tuples start (`window_from`): it reads
//! the window again from there ([`super::kept`]). The file is then one JSON line, then those
//! states' bytes. A resident device's byte budgets as the window opened ([`super::budget`])
//! are in the JSON line (`budgets`), so the batch shipped again takes the same forms.
//!
//! A following device whose input went quiet and that took an ask's fence as its watermark
//! (`--idle-after`) records that fence too, and the count of tuples it had read then
//! ([`HeldBelow`]), rewriting its last batch's record at once: a device restarted from it holds
//! below the fence from the same tuple on, so the values it refused as late before the kill it
//! refuses again, and the window it shipped at the fence it ships again (the cloud refuses the
//! copies).
//!
//! ```
//! use saams_jobs::edge::resume::Resume;
//! let dir = std::env::temp_dir().join(format!("saams-resume-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let file = dir.join("pi-1.state");
//! let _ = std::fs::remove_file(&file);
//! assert_eq!(Resume::read(&file).unwrap(), None);
//! let r = Resume { window: 60_000, seq: 2, from: 40, upto: 57, open: true, ..Resume::default() };
//! r.write(&file).unwrap();
//! assert_eq!(Resume::read(&file).unwrap(), Some(r));
//! // A device keeping states whole records them after the header line, as bytes.
//! let k = Resume { window_from: Some(31), kept: vec![0, 10, 255], ..Resume::default() };
//! k.write(&file).unwrap();
//! assert_eq!(Resume::read(&file).unwrap(), Some(k));
//! std::fs::write(&file, "{").unwrap();
//! assert!(Resume::read(&file).unwrap_err().contains("pi-1.state"));
//! ```

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The batch of shipments a device is about to produce, as its state file records it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    /// The window (start, ms) the batch ships.
    pub window: u64,
    /// The sequence number of its first shipment.
    pub seq: u64,
    /// The device's count of tuples read before the first tuple the batch holds.
    pub from: u64,
    /// The count after the last one it holds.
    pub upto: u64,
    /// The batch ships the open window so far (`--ship-every`), not its close.
    pub open: bool,
    /// With states kept whole or resident: the count of tuples read before the first of the
    /// batch's window, from where a restarted device reads it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_from: Option<u64>,
    /// The idle fence the device took as its watermark (`--idle-after`), if any: values of
    /// windows before it read after it are late, across a restart too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_below: Option<HeldBelow>,
    /// With resident groups: their budgets when the window opened ([`super::budget`]), so a
    /// restarted device chooses the same forms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<super::budget::GroupBudget>,
    /// Those states when the window opened ([`super::kept`]'s bytes), after the JSON line.
    #[serde(skip)]
    pub kept: Vec<u8>,
}

/// An idle fence a device took as its watermark ([`super::device::DeviceWindows::hold_below`]):
/// the window from which on values are taken, and the device's count of tuples read when it
/// took it. A restarted device reads its input again up to that count as before, then closes
/// the windows before the fence and holds below it, as it did before the kill.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldBelow {
    /// The fence (ms): values of earlier windows are late.
    pub window: u64,
    /// The count of tuples read when the device took it.
    pub at: u64,
}

impl Resume {
    /// The state in `file`, `None` when there is none yet.
    ///
    /// # Errors
    /// An unreadable or damaged file, named.
    pub fn read(file: &Path) -> Result<Option<Resume>, String> {
        match std::fs::read(file) {
            Ok(bytes) => {
                let header = bytes.iter().position(|&b| b == b'\n').unwrap_or(bytes.len());
                let mut resume: Resume = serde_json::from_slice(&bytes[..header])
                    .map_err(|e| format!("{}: not a device state file: {e}", file.display()))?;
                resume.kept = bytes.get(header + 1..).unwrap_or_default().to_vec();
                Ok(Some(resume))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", file.display())),
        }
    }

    /// Replace `file` with this state, durably, before the batch is produced.
    ///
    /// # Errors
    /// The file cannot be written or synced.
    pub fn write(&self, file: &Path) -> Result<(), String> {
        let err = |e: std::io::Error| format!("{}: {e}", file.display());
        let tmp = file.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp).map_err(err)?;
        let mut bytes = serde_json::to_vec(self).expect("a state serializes");
        if self.window_from.is_some() {
            bytes.push(b'\n');
            bytes.extend_from_slice(&self.kept);
        }
        f.write_all(&bytes).map_err(err)?;
        f.sync_all().map_err(err)?;
        std::fs::rename(&tmp, file).map_err(err)?;
        let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(err)
    }
}
