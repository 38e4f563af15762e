//! The devices' control topic: how live requests reach running devices at the fence the cloud
//! job agreed for them.
//!
//! A job merging devices (`saams --partials-topic P`) writes to `P.control` (one partition,
//! [`control_topic`]) one JSON line per [`Control`] record:
//!
//! - `start`: the job's request script and the live requests it applied before (a job resumed
//!   from a checkpoint), written by worker 0 when the job starts;
//! - `request`: a live request (construct, delete, LOAD, continuous query, and an ad-hoc query
//!   or SAVE of a synopsis resident on a device) with its fence, the `at`-th in the order every
//!   worker applies them, written by worker 0 when it is agreed;
//! - `routed`: a worker has routed a value (a device's shipment or position) of `window`, with
//!   `applied` live requests in its plan then.
//!
//! A device following the topic (`saams-edge --follow`) builds its plan from `start`, and before
//! it takes the first tuple of a window W it ships a *position* (a data shipment of W without
//! groups) and waits for a `routed` record of W or later whose `applied` requests it has all
//! heard. Why that is enough for the answer of every window to cover exactly the synopses live
//! at it: a fence is the window after the newest any worker routed when the request's epoch was
//! positioned ([`crate::control::fence`]), so a request agreed after a worker routed W has a
//! fence after W, and one agreed before is among the `applied` that worker counted. So no
//! request the device has not heard can take effect at W or earlier, and the device applies the
//! requests it has heard at their fences, between its windows. The price is one round trip to
//! the cloud per window and device (a position is ~30 bytes).
//!
//! A LOAD names a file in the cloud's snapshot directory, which a device does not have: the
//! `start` and `request` records carry the snapshot files their LOADs name (`snapshots`, file →
//! the file's bytes in hex, [`snapshots_of`]), read by worker 0 when it writes the record, so a
//! device merges the same state into the synopses it keeps whole, at the same fence.
//!
//! ```
//! use saams_jobs::edge::control::{Control, control_topic};
//! let line = Control::Routed { window: 60_000, applied: 2 }.to_line();
//! assert_eq!(line, r#"{"routed":{"window":60000,"applied":2}}"#);
//! assert_eq!(Control::parse(line.as_bytes()).unwrap(), Control::Routed { window: 60_000, applied: 2 });
//! assert!(Control::parse(b"{\"routed\":1}").is_err());
//! assert_eq!(control_topic("partials"), "partials.control");
//! ```

use std::collections::BTreeMap;

use saams::api::request::{Action, read_log};
use saams_operators::plan::SnapshotStore;
use serde::{Deserialize, Serialize};

/// The control topic of the partials topic `partials`.
pub fn control_topic(partials: &str) -> String {
    format!("{partials}.control")
}

/// A live request applied at its fence, as the control topic carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// Its place in the order every worker applies live requests (0, 1, …).
    pub at: u64,
    /// The fence (window start, ms) it took effect at.
    pub fence: u64,
    /// Its requests (the checkpoints' request log text: typed requests as JSON).
    pub text: String,
    /// The snapshot files its LOADs name, as the cloud read them ([`snapshots_of`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub snapshots: Snapshots,
}

impl Applied {
    /// The `at`-th live request, agreed at `fence` with its `text`, and the snapshot files its
    /// LOADs name read from `store`.
    pub fn of(at: u64, (fence, text): (u64, &str), store: &dyn SnapshotStore) -> Applied {
        Applied { at, fence, text: text.to_string(), snapshots: snapshots_of(text, store) }
    }
}

/// Snapshot files by name, their bytes in hex (JSON carries no bytes).
pub type Snapshots = BTreeMap<String, String>;

/// One record of the control topic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Control {
    /// The job started: its request script, and the live requests applied before its start
    /// (those of the checkpoint it resumed from).
    Start {
        /// The request script's text.
        script: String,
        /// Live requests already applied, in order.
        log: Vec<Applied>,
        /// The snapshot files the script's LOADs name ([`snapshots_of`]).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        snapshots: Snapshots,
    },
    /// A live request agreed at its fence.
    Request(Applied),
    /// A worker routed a value of `window` with `applied` live requests in its plan.
    Routed {
        /// The window (start, ms).
        window: u64,
        /// Live requests applied by that worker then.
        applied: u64,
    },
}

impl Control {
    /// The record's text (one JSON line without its newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("control records serialize to JSON")
    }

    /// Read a record.
    ///
    /// # Errors
    /// Not a control record: the reason.
    pub fn parse(bytes: &[u8]) -> Result<Control, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("not a control record: {e}"))
    }
}

/// The snapshot files the LOADs of `text` (requests as a script or the request log's text)
/// name, read from `store` (the cloud job's snapshot directory); a file that cannot be read is
/// left out (the cloud's own LOAD of it failed too, and the device's fails the same way).
///
/// ```
/// use saams_jobs::edge::control::{snapshots_of, unhex};
/// use saams_operators::plan::SnapshotStore;
/// struct One;
/// impl SnapshotStore for One {
///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { if f == "cm.bin" { Ok(vec![0, 255]) } else { Err(f.into()) } }
///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
///     fn check(&self, _: &str) -> Result<(), String> { Ok(()) }
/// }
/// let load = |f: &str| format!(r#"{{"dataSetKey":"F","streamID":"A","synopsisID":1,"param":["LOAD_REQUEST","{f}"]}}"#);
/// let files = snapshots_of(&format!("{}\n{}", load("cm.bin"), load("gone.bin")), &One);
/// assert_eq!(files.len(), 1);
/// assert_eq!(unhex(&files["cm.bin"]), Some(vec![0, 255]));
/// ```
pub fn snapshots_of(text: &str, store: &dyn SnapshotStore) -> Snapshots {
    let mut out = Snapshots::new();
    for req in read_log(text).into_iter().flatten() {
        if let Action::Load { file } = &req.action
            && !out.contains_key(file)
            && let Ok(bytes) = store.load(file)
        {
            out.insert(file.clone(), bytes.iter().map(|b| format!("{b:02x}")).collect());
        }
    }
    out
}

/// The bytes of [`snapshots_of`]'s hex text (`None`: not hex).
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// Where a job's workers write control records (a Kafka producer made by the job's Kafka side:
/// this module stays free of it).
pub type Publish = Box<dyn Fn(&Control) + Send + Sync>;
