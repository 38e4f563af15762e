//! A device's snapshot store ([`ShippedSnapshots`]): a device has no snapshot directory (the
//! cloud job's `--snapshots` is on another machine), so the snapshot files its plan LOADs are
//! those the cloud's control records carry ([`super::control::snapshots_of`]), and what its
//! plan SAVEs (a resident synopsis' state, asked for by the cloud) is kept here for the device
//! to ship: the cloud writes the file.
//!
//! Why a store and not a special case in the plan: the device applies the cloud's requests
//! with the cloud's code ([`saams_operators::Plan`]), so a LOAD merges into the same synopsis,
//! at the same fence, as the cloud's, and a SAVE's answer is the cloud's own line.
//!
//! ```
//! use saams_jobs::edge::snapshots::ShippedSnapshots;
//! use saams_operators::plan::SnapshotStore;
//! let store = ShippedSnapshots::default();
//! assert!(store.load("cm.bin").unwrap_err().contains("--follow"));
//! store.add(&[("cm.bin".to_string(), "00ff".to_string())].into()).unwrap();
//! assert_eq!(store.load("cm.bin").unwrap(), vec![0, 255]);
//! assert!(store.add(&[("x".to_string(), "zz".to_string())].into()).is_err());
//! store.save("out.bin", &[7]).unwrap();
//! assert_eq!(store.take_saved("out.bin"), Some(vec![7]));
//! assert_eq!(store.take_saved("out.bin"), None);
//! ```

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use saams::api::request::{Action, parse_requests};
use saams_operators::Plan;
use saams_operators::plan::SnapshotStore;

use super::control::{Snapshots, unhex};
use super::device::DeviceWindows;

/// The snapshot files a device was sent, and the states its plan saved.
#[derive(Debug, Default)]
pub struct ShippedSnapshots {
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    saved: Mutex<BTreeMap<String, Vec<u8>>>,
}

impl ShippedSnapshots {
    /// Keep the files of a control record (a later copy of a name replaces the earlier).
    ///
    /// # Errors
    /// A file whose text is not hex (nothing of the record is kept).
    pub fn add(&self, snapshots: &Snapshots) -> Result<(), String> {
        let mut decoded = Vec::with_capacity(snapshots.len());
        for (file, text) in snapshots {
            let bytes = unhex(text).ok_or_else(|| format!("snapshot {file} of the control topic is not hex"))?;
            decoded.push((file.clone(), bytes));
        }
        self.files.lock().unwrap_or_else(PoisonError::into_inner).extend(decoded);
        Ok(())
    }

    /// The state the plan saved to `file` (taken: the device ships it once).
    pub fn take_saved(&self, file: &str) -> Option<Vec<u8>> {
        self.saved.lock().unwrap_or_else(PoisonError::into_inner).remove(file)
    }
}

impl SnapshotStore for ShippedSnapshots {
    fn load(&self, file: &str) -> Result<Vec<u8>, String> {
        let files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        files.get(file).cloned().ok_or_else(|| {
            format!(
                "{file}: the cloud job did not send this snapshot (a device loads only the snapshots of the cloud's \
                 control records: saams-edge --follow)"
            )
        })
    }

    fn save(&self, file: &str, bytes: &[u8]) -> Result<(), String> {
        self.saved.lock().unwrap_or_else(PoisonError::into_inner).insert(file.to_string(), bytes.to_vec());
        Ok(())
    }

    /// Every name: the cloud checks it against its snapshot directory before it asks.
    fn check(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
}

/// A device that does not follow the cloud job cannot have the snapshots its script LOADs
/// (they are in the cloud's directory): refused at its start when one is LOADed into a synopsis
/// it keeps whole, whose state the cloud would take from this device without the snapshot
/// (into the others the cloud merges, its own state has it).
pub fn loads_kept_whole(script: &str, plan: &Plan, windows: &DeviceWindows) -> Result<(), String> {
    for req in parse_requests(script).into_iter().flatten() {
        let Action::Load { file } = &req.action else { continue };
        let kept = plan.routing.synopses.iter().enumerate().any(|(s, spec)| {
            req.names_synopsis(&spec.dataset, &spec.stream, spec.synopsis_id, &spec.field)
                && windows.keeps_whole_synopsis(plan, s as u32)
        });
        if kept {
            return Err(format!(
                "the request script LOADs {file} into synopsisID {} on stream {:?} of dataset {:?}, which this device \
                 keeps whole (--sole-reader/--resident): the snapshot is in the cloud job's directory; run the device \
                 with --follow (the cloud sends it the snapshot)",
                req.synopsis_id, req.stream_id, req.dataset_key
            ));
        }
    }
    Ok(())
}
