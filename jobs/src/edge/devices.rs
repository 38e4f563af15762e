//! The devices a cloud job hears from ([`Devices`]): who is live, how far each has shipped, what
//! it shipped and what it would have cost raw, and what was refused — shared by the process'
//! workers (which read the partials topic) and its HTTP side (`GET /devices`, `/metrics`).
//!
//! A device's partition is read by one worker, so under `-n > 1` each process hears from some
//! of the devices only: the processes exchange their tables ([`super::reports`]) and `GET
//! /devices` on any of them lists every device, with the process that reads it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;

use super::control::{Control, Publish};

pub mod owed;

/// One device as the cloud job sees it.
#[derive(Clone, Debug)]
pub struct DeviceRow {
    /// Said hello (or shipped) and neither said goodbye nor went silent.
    pub state: &'static str,
    /// When the last record of it came.
    pub last_heard: Instant,
    /// The newest window it shipped (start, ms).
    pub last_window: Option<u64>,
    /// The sequence number of its newest shipment merged.
    pub last_seq: u64,
    /// Bytes of its records (shipments as they came over the topic).
    pub shipped_bytes: u64,
    /// What its windows would have cost raw (the devices' own comparison).
    pub raw_bytes: u64,
    /// Update groups shipped as partials, and as raw values.
    pub partial_groups: u64,
    /// See `partial_groups`.
    pub raw_groups: u64,
    /// Shipments merged.
    pub shipments: u64,
    /// Shipments refused because their window had closed.
    pub late: u64,
    /// Shipments refused as replays (a sequence number already merged).
    pub replayed: u64,
    /// Shipments refused for another reason (unknown synopsis, mismatch with the plan).
    pub refused: u64,
    /// The update groups it ships whole (`saams-edge --sole-reader`): (dataset, stream, field).
    pub whole: BTreeSet<(String, String, String)>,
    /// It follows the control topic (`saams-edge --follow`: it shipped a position), so live
    /// requests (a LOAD's snapshot, an ad-hoc query of a synopsis resident on it) reach it.
    pub follows: bool,
    /// It said in its hello that it keeps its streams' groups resident (`saams-edge
    /// --resident`).
    pub resident: bool,
}

impl DeviceRow {
    fn new(now: Instant) -> DeviceRow {
        DeviceRow {
            state: "live",
            last_heard: now,
            last_window: None,
            last_seq: 0,
            shipped_bytes: 0,
            raw_bytes: 0,
            partial_groups: 0,
            raw_groups: 0,
            shipments: 0,
            late: 0,
            replayed: 0,
            refused: 0,
            whole: BTreeSet::new(),
            follows: false,
            resident: false,
        }
    }
}

/// The devices of one process, and the windows each covered.
#[derive(Debug)]
pub struct Devices {
    rows: Mutex<BTreeMap<String, DeviceRow>>,
    /// Per window (start, ms): the devices whose shipments for it were merged.
    covered: Mutex<BTreeMap<u64, BTreeSet<String>>>,
    /// Refused records whose device id could not be read (a bad CRC, not a shipment).
    unreadable: Mutex<u64>,
    timeout: Duration,
    /// Where the job writes its control records for the devices ([`super::control`]).
    control: std::sync::OnceLock<Publisher>,
    /// Per update group of one stream: the first device whose values of it were merged in this
    /// process, and whether that device ships it whole ([`Devices::one_reader`]).
    readers: Mutex<BTreeMap<u32, (String, bool)>>,
    /// This process' index (in its rows of `GET /devices`).
    process: u64,
    /// The tables the other processes reported last ([`Devices::report`]), by process, with
    /// when each came.
    others: Mutex<BTreeMap<u64, (serde_json::Value, Instant)>>,
    /// Per synopsis (dataset, stream, synopsisID) resident on a device: the device
    /// ([`super::resident`]; ad-hoc requests for it are refused, naming it).
    resident: Mutex<BTreeMap<(String, String, u64), String>>,
    /// The devices' answers to asks, handed on as they come ([`super::relay`]).
    relay: super::relay::Relay,
    /// Per device: the asks it owed that were answered with an error instead (it said goodbye
    /// without answering, or the job ended first: [`Devices::give_up`]), counted where the ask
    /// waited.
    unanswered: Mutex<BTreeMap<String, u64>>,
    /// When the waiting asks were last checked against the devices' states.
    checked: Mutex<Option<Instant>>,
}

/// A [`Publish`] (a closure, which has no `Debug`).
struct Publisher(Publish);

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Publisher")
    }
}

/// Windows kept in [`Devices`]' coverage (older ones are answered).
const COVERED_WINDOWS: usize = 4096;

impl Devices {
    /// A table whose devices are `gone` after `timeout` without a record.
    pub fn new(timeout: Duration) -> Devices {
        Devices {
            rows: Mutex::default(),
            covered: Mutex::default(),
            unreadable: Mutex::new(0),
            timeout,
            control: std::sync::OnceLock::new(),
            readers: Mutex::default(),
            process: 0,
            others: Mutex::default(),
            resident: Mutex::default(),
            relay: super::relay::Relay::default(),
            unanswered: Mutex::default(),
            checked: Mutex::default(),
        }
    }

    /// How long a device may be silent before it is `gone` (`--device-timeout`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The devices' answers to asks and where they go ([`super::relay`]).
    pub fn relay(&self) -> &super::relay::Relay {
        &self.relay
    }

    /// This process' index.
    pub fn process(&self) -> u64 {
        self.process
    }

    /// The table of process `process` of the job.
    pub fn of_process(self, process: usize) -> Devices {
        Devices { process: process as u64, ..self }
    }

    /// Write control records with `publish` from now on (set once; later calls are ignored).
    pub fn set_control(&self, publish: Publish) {
        let _ = self.control.set(Publisher(publish));
    }

    /// Write `record` to the control topic (nothing without one).
    pub fn publish(&self, record: &Control) {
        if let Some(p) = self.control.get() {
            (p.0)(record);
        }
    }

    /// Change the row of `device` (created live when first heard of).
    pub fn touch(&self, device: &str, change: impl FnOnce(&mut DeviceRow)) {
        let now = Instant::now();
        let mut rows = self.rows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let row = rows.entry(device.to_string()).or_insert_with(|| DeviceRow::new(now));
        row.last_heard = now;
        change(row);
    }

    /// A stream's groups shipped whole by one device must have no other reader (the whole
    /// states would overwrite the other's values): `Err(the first reader)` for a whole state of
    /// a group another device shipped first, or a second device's shipment of a group one device
    /// ships whole. Checked by every worker of the process (devices' partitions are spread over
    /// them), not across processes.
    pub fn one_reader(&self, group: u32, device: &str, whole: bool) -> Result<(), String> {
        let readers = self.readers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match readers.get(&group) {
            Some((first, first_whole)) if first != device && (*first_whole || whole) => Err(first.clone()),
            _ => Ok(()),
        }
    }

    /// Note that `device`'s values of stream group `group` were merged (`whole`: as whole states).
    pub fn read_by(&self, group: u32, device: &str, whole: bool) {
        let mut readers = self.readers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        readers.entry(group).or_insert_with(|| (device.to_string(), false)).1 |= whole;
    }

    /// True when `device` said in its hello that it keeps its groups resident.
    pub fn says_resident(&self, device: &str) -> bool {
        let rows = self.rows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        rows.get(device).is_some_and(|r| r.resident)
    }

    /// Note that the synopses of update group `group` are resident on `device` (it shipped their
    /// query views).
    pub fn resident(&self, plan: &saams_operators::Plan, group: u32, device: &str) {
        let mut resident = self.resident.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for &s in &plan.routing.groups[group as usize].synopses {
            let spec = &plan.routing.synopses[s as usize];
            let key = (spec.dataset.clone(), spec.stream.clone(), spec.synopsis_id);
            if resident.get(&key).is_none_or(|d| d != device) {
                resident.insert(key, device.to_string());
            }
        }
    }

    /// Count a record refused before its device could be read.
    pub fn unreadable(&self) {
        *self.unreadable.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
    }

    /// Note that `device`'s shipment for `window` was merged.
    pub fn cover(&self, window: u64, device: &str) {
        let mut covered = self.covered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        covered.entry(window).or_default().insert(device.to_string());
        while covered.len() > COVERED_WINDOWS {
            covered.pop_first();
        }
    }

    /// The devices whose shipments for `window` were merged, sorted.
    pub fn covering(&self, window: u64) -> Vec<String> {
        let covered = self.covered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        covered.get(&window).map(|s| s.iter().cloned().collect()).unwrap_or_default()
    }

    /// `line` (an answer, an acknowledgement) with the devices it covers added as `devices`
    /// when it answers a window: those whose shipments for the job window closing at `time`
    /// (`window`) were merged. Lines that are no window's answer (acknowledgements, errors, the
    /// end of the input's answers at `u64::MAX`) are left as they are.
    ///
    /// ```
    /// use saams_jobs::edge::devices::Devices;
    /// let d = Devices::new(std::time::Duration::from_secs(5));
    /// d.cover(60_000, "pi-2");
    /// d.cover(60_000, "pi-1");
    /// let line = d.name_in(r#"{"estimate":3,"window":{"type":"landmark"},"tuples":3}"#, 119_999, 60_000);
    /// assert_eq!(line, r#"{"estimate":3,"window":{"type":"landmark"},"tuples":3,"devices":["pi-1","pi-2"]}"#);
    /// assert_eq!(d.name_in(r#"{"accepted":"construct"}"#, 119_999, 60_000), r#"{"accepted":"construct"}"#);
    /// ```
    pub fn name_in(&self, line: &str, time: u64, window: u64) -> String {
        self.name_with(line, (time, window), None)
    }

    /// [`Devices::name_in`] for `device`'s answer to an ask of a synopsis resident on it, which
    /// names `device` too: it answered from its own state, whatever shipments of the window
    /// this process merged (under `-n > 1` another process may have read them).
    ///
    /// ```
    /// use saams_jobs::edge::devices::Devices;
    /// let d = Devices::new(std::time::Duration::from_secs(5));
    /// d.cover(60_000, "pi-2");
    /// let line = d.name_answer(r#"{"estimate":3,"window":{"type":"landmark"}}"#, (119_999, 60_000), "pi-1");
    /// assert_eq!(line, r#"{"estimate":3,"window":{"type":"landmark"},"devices":["pi-1","pi-2"]}"#);
    /// ```
    pub fn name_answer(&self, line: &str, at: (u64, u64), device: &str) -> String {
        self.name_with(line, at, Some(device))
    }

    /// `line` named with the devices covering `window` and `also` ([`Devices::name_in`]).
    fn name_with(&self, line: &str, (time, window): (u64, u64), also: Option<&str>) -> String {
        let answers_window = time != u64::MAX && line.contains("\"window\":{") && line.ends_with('}');
        if !answers_window {
            return line.to_string();
        }
        let mut covering = self.covering(window);
        if let Some(device) = also.filter(|d| !covering.iter().any(|c| c == d)) {
            covering.push(device.to_string());
            covering.sort();
        }
        let names = serde_json::to_string(&covering).unwrap_or_else(|_| "[]".into());
        format!("{},\"devices\":{names}}}", &line[..line.len() - 1])
    }

    /// The rows, with devices silent for longer than the timeout marked `gone`.
    pub fn rows(&self) -> Vec<(String, DeviceRow)> {
        let now = Instant::now();
        let mut rows = self.rows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for row in rows.values_mut() {
            if row.state == "live" && now.duration_since(row.last_heard) > self.timeout {
                row.state = "gone";
            }
        }
        rows.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// This process' table as it reports it to the others: `{"devices":[…],"unreadable":N}`,
    /// a row per device it hears from (as [`Devices::to_json`]'s, without `lagMs`).
    pub fn report(&self) -> serde_json::Value {
        let unreadable = *self.unreadable.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let devices: Vec<_> = self
            .rows()
            .iter()
            .map(|(id, r)| {
                json!({
                    "device": id,
                    "process": self.process,
                    "state": r.state,
                    "lastWindow": r.last_window,
                    "silentMs": r.last_heard.elapsed().as_millis() as u64,
                    "shipments": r.shipments,
                    "shippedBytes": r.shipped_bytes,
                    "rawBytes": r.raw_bytes,
                    "partialGroups": r.partial_groups,
                    "rawGroups": r.raw_groups,
                    "late": r.late,
                    "replayed": r.replayed,
                    "refused": r.refused,
                    "follows": r.follows,
                    "resident": r.resident,
                    "wholeGroups": r.whole.iter().map(|(d, s, f)| json!({"dataset": d, "stream": s, "field": f})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let resident: Vec<_> = self
            .resident
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|((dataset, stream, id), device)| {
                json!({ "dataSetKey": dataset, "streamID": stream, "synopsisID": id, "device": device })
            })
            .collect();
        json!({ "devices": devices, "unreadable": unreadable, "resident": resident })
    }

    /// Keep `report` ([`Devices::report`]), the table process `process` sent last.
    ///
    /// # Errors
    /// It is not a table (the message says why; nothing is kept).
    pub fn heard_from(&self, process: u64, report: &str) -> Result<(), String> {
        let table: serde_json::Value =
            serde_json::from_str(report).map_err(|e| format!("device table of process {process}: {e}"))?;
        if !table["devices"].is_array() {
            return Err(format!("device table of process {process}: no `devices` array"));
        }
        let mut others = self.others.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        others.insert(process, (table, Instant::now()));
        Ok(())
    }

    /// `GET /devices`: `{"devices":[…],"unreadable":N}`, one object per device of every process
    /// (this one's as they are now, the others' as they last reported, silent the longer since),
    /// sorted by device; `newestWindow` is the newest window any device shipped and `lagMs` how
    /// far behind it each device is; `resident` is the flag of the device's hello (it keeps its
    /// streams' groups resident: `saams-edge --resident`).
    ///
    /// ```
    /// use saams_jobs::edge::devices::Devices;
    /// let d = Devices::new(std::time::Duration::from_secs(5)).of_process(0);
    /// d.touch("pi-1", |r| r.last_window = Some(60_000));
    /// let other = Devices::new(std::time::Duration::from_secs(5)).of_process(1);
    /// other.touch("pi-2", |r| (r.last_window, r.resident) = (Some(180_000), true));
    /// d.heard_from(1, &other.report().to_string()).unwrap();
    /// let table = d.to_json();
    /// let rows = table["devices"].as_array().unwrap();
    /// assert_eq!((rows[0]["device"].as_str(), rows[0]["process"].as_u64()), (Some("pi-1"), Some(0)));
    /// assert_eq!((rows[1]["device"].as_str(), rows[1]["process"].as_u64()), (Some("pi-2"), Some(1)));
    /// assert_eq!((rows[0]["lagMs"].as_u64(), rows[1]["lagMs"].as_u64()), (Some(120_000), Some(0)));
    /// // Its hello's flag (`saams-edge --resident`), also for a device another process reads.
    /// assert_eq!((rows[0]["resident"].as_bool(), rows[1]["resident"].as_bool()), (Some(false), Some(true)));
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        let own = self.report();
        let mut devices: Vec<serde_json::Value> = own["devices"].as_array().cloned().unwrap_or_default();
        let mut unreadable = own["unreadable"].as_u64().unwrap_or(0);
        let mut resident: Vec<serde_json::Value> = own["resident"].as_array().cloned().unwrap_or_default();
        let others = self.others.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (process, (table, at)) in others.iter().filter(|(p, _)| **p != self.process) {
            let age = at.elapsed().as_millis() as u64;
            unreadable += table["unreadable"].as_u64().unwrap_or(0);
            resident.extend(table["resident"].as_array().into_iter().flatten().cloned());
            for row in table["devices"].as_array().into_iter().flatten() {
                let mut row = row.clone();
                let silent = row["silentMs"].as_u64().unwrap_or(0) + age;
                row["silentMs"] = silent.into();
                row["process"] = (*process).into();
                if row["state"] == "live" && silent > self.timeout.as_millis() as u64 {
                    row["state"] = "gone".into();
                }
                devices.push(row);
            }
        }
        let newest = devices.iter().filter_map(|r| r["lastWindow"].as_u64()).max();
        for row in &mut devices {
            row["lagMs"] = json!(newest.zip(row["lastWindow"].as_u64()).map(|(n, w)| n - w));
        }
        devices.sort_by(|a, b| {
            (a["device"].as_str(), a["process"].as_u64()).cmp(&(b["device"].as_str(), b["process"].as_u64()))
        });
        resident.sort_by_key(|a| a.to_string());
        resident.dedup();
        let refused = super::refusals::refused_bodies();
        json!({ "devices": devices, "unreadable": unreadable, "resident": resident, "refusedRequests": refused })
    }
}
