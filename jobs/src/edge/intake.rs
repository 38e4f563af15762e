//! The cloud job's side of the partials topic ([`Intake`]): each record is checked (CRC, device,
//! replayed sequence, closed window, synopses this job maintains) and becomes records of the
//! tuple input — a device's partials of an update group as one [`Val::Part`] record of the
//! group at the window's start, its raw values as the group's values — so they meet this job's
//! own partials in the update operator and the tree merge.
//!
//! Exactly once per (device, window, sequence): a device's records come in order (one
//! partition per device), so the newest (window, sequence) merged per device is all it takes
//! to refuse a replay (a device restarted after a kill ships its windows again). A checkpoint
//! records the partition's offset at its boundary, so a restarted job reads again exactly the
//! shipments whose windows it has not answered, and refuses (as late) those of windows it has.

use std::collections::HashMap;

use saams::Synopsis;
use saams_operators::ask::DeviceAnswer;
use saams_operators::device_part::DevicePart;
use saams_operators::plan::Mode;
use saams_operators::query_view::QueryView;
use saams_operators::record::unpack_zero_runs;
use saams_operators::{Plan, Rec, Val};
use serde_json::Value as Json;

use super::devices::Devices;
use super::monitor_site::{SiteOwners, site_recs};
use super::relay::Admitted;
use super::resident::resident_group;
use super::shipment::{Answered, Body, GroupData, GroupShip, Shipment, SynId};

/// Bit 62 marks the sequence numbers of a device's values, above 22 bits of the device id's
/// hash and 40 bits of the device's own sequence number: they never meet those of files
/// (unit << 40 | line) or of Kafka records (bit 63).
const DEVICE_BIT: u64 = 1 << 62;

/// What a group of a shipment became.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Raw,
    Partials,
    Whole,
    /// Query views of a group resident on the device.
    View,
    /// A monitored stream's site messages ([`super::monitor_site`]).
    Sites,
}

/// Why a record was refused: the reason (for the dead letter) and whether it came late.
pub type Refusal = (String, bool);

/// One worker's reader of the partials topic.
pub struct Intake {
    devices: std::sync::Arc<Devices>,
    /// Per device: the newest (window, sequence) merged.
    merged: HashMap<String, (u64, u64)>,
    /// Per partition: the newest window merged (its watermark: an older window is late, even
    /// inside one poll of records).
    newest: HashMap<i32, u64>,
    /// Which device runs each monitored stream's site.
    sites: SiteOwners,
    /// Devices' answers to asks of synopses homed in another process: (ask, synopsis, home) and
    /// the answer, sent there ([`Intake::take_answers`]).
    elsewhere: Vec<((u64, u32, u32), DeviceAnswer)>,
    /// Devices' answers handed on at once ([`super::relay`]): the line, tagged for whoever
    /// waits, the checkpoint boundary open when it came, the device, and the input time to
    /// write it at if not the reader's ([`super::relay::Admitted::Now`]).
    relayed: Vec<(String, Option<u64>, String, Option<u64>)>,
    /// Per partition: the devices heard on it that have not said goodbye. A partition without
    /// any is *vacant*, and stops holding windows sooner ([`Intake::vacancies`]).
    assigned: HashMap<i32, std::collections::BTreeSet<String>>,
    /// Partitions whose vacancy changed since the worker last asked.
    vacancies: Vec<(i32, bool)>,
}

/// The sequence-number base of `device`'s values.
fn device_base(device: &str) -> u64 {
    DEVICE_BIT | (saams::hash::hash_bytes(device.as_bytes(), 0xED6E) & 0x3F_FFFF) << 40
}

impl Intake {
    /// A reader filling `devices`.
    pub fn new(devices: std::sync::Arc<Devices>) -> Intake {
        Intake {
            devices,
            merged: HashMap::new(),
            newest: HashMap::new(),
            sites: SiteOwners::default(),
            elsewhere: Vec::new(),
            relayed: Vec::new(),
            assigned: HashMap::new(),
            vacancies: Vec::new(),
        }
    }

    /// The partitions whose vacancy changed since the last call: `(partition, true)` when its
    /// last device said goodbye, `(partition, false)` when a device was first heard on it. The
    /// worker tells its partitions' clocks ([`crate::kafka::KafkaInput::set_vacant`]).
    pub fn vacancies(&mut self) -> Vec<(i32, bool)> {
        std::mem::take(&mut self.vacancies)
    }

    /// `device` is heard on `partition` (`here`), or said goodbye there.
    fn assign(&mut self, partition: i32, device: &str, here: bool) {
        let devices = self.assigned.entry(partition).or_default();
        let was_vacant = devices.is_empty();
        if here {
            devices.insert(device.to_string());
        } else {
            devices.remove(device);
        }
        if was_vacant != devices.is_empty() {
            self.vacancies.push((partition, devices.is_empty()));
        }
    }

    /// Read one record of `partition`: `Ok(Some((time, recs, clock)))` to send into the tuple input at event time
    /// `time` (the window's start), the partition's clock then at event time `clock` (the
    /// window the device moved on to, on a window's last record: [`Body::Data`]'s `through`;
    /// else `time`), `Ok(None)` for a hello or goodbye, `Err` for a refused one
    /// (counted per device; the caller dead-letters it). `late_below`: the oldest event time
    /// this worker may still send (older windows are closed or closing).
    ///
    /// # Errors
    /// A damaged or forged record, a replayed sequence, a closed window, a synopsis this job does
    /// not maintain (or maintains in another update group shape).
    pub fn admit(
        &mut self,
        plan: &Plan,
        (partition, payload): (i32, &[u8]),
        late_below: i64,
    ) -> Result<Option<(i64, Vec<Rec>, i64)>, Refusal> {
        let ship = Shipment::decode(payload).map_err(|e| {
            self.devices.unreadable();
            (e, false)
        })?;
        let size = payload.len() as u64;
        self.assign(partition, &ship.device, !matches!(ship.body, Body::Goodbye { .. }));
        let (window, raw_bytes, groups, through) = match ship.body {
            Body::Hello { resident } => {
                self.devices.touch(&ship.device, |r| {
                    r.state = "live";
                    r.resident = resident;
                });
                return Ok(None);
            }
            Body::Goodbye { .. } => {
                self.devices.touch(&ship.device, |r| r.state = "left");
                return Ok(None);
            }
            Body::Answer(answered) => return self.answer(plan, &ship.device, answered).map(|()| None),
            Body::Data { window, raw_bytes, groups, through } => (window, raw_bytes, groups, through),
        };
        let device = ship.device;
        if groups.is_empty() {
            return Ok(self.position(partition, &device, window, late_below).map(|(t, recs)| (t, recs, t)));
        }
        if let Some(&last) = self.merged.get(&device)
            && (window, ship.seq) <= last
        {
            self.devices.touch(&device, |r| r.replayed += 1);
            return Err((format!("replayed: {device} window {window} sequence {} was merged", ship.seq), false));
        }
        let time = i64::try_from(window).unwrap_or(i64::MAX);
        let newest =
            self.newest.get(&partition).map_or(late_below, |&w| late_below.max(i64::try_from(w).unwrap_or(i64::MAX)));
        if time < newest {
            self.devices.touch(&device, |r| r.late += 1);
            let reason = format!("late: window {window} of {device} is closed ({} ms behind)", newest - time);
            return Err((reason, true));
        }
        let base = device_base(&device);
        let mut recs = Vec::new();
        let (mut partial_groups, mut raw_groups) = (0, 0);
        let mut read = Vec::new();
        for g in &groups {
            match self.group_recs(plan, (window, base | ship.seq), g, &device, &mut recs) {
                Ok((group, form)) => {
                    read.push((group, form));
                    if form == Form::Raw { raw_groups += 1 } else { partial_groups += 1 }
                }
                Err(e) => {
                    self.devices.touch(&device, |r| r.refused += 1);
                    return Err((format!("{device} window {window}: {e}"), false));
                }
            }
        }
        self.note_readers(plan, &device, &read);
        self.merged.insert(device.clone(), (window, ship.seq));
        // The device moved on to `through`: its older windows are closed here too.
        let newest = window.max(through.unwrap_or(0)).max(self.newest.get(&partition).copied().unwrap_or(0));
        self.newest.insert(partition, newest);
        self.devices.cover(window, &device);
        self.devices.touch(&device, |r| {
            r.state = "live";
            r.last_window = Some(r.last_window.map_or(window, |w| w.max(window)));
            r.last_seq = ship.seq;
            r.shipments += 1;
            r.shipped_bytes += size;
            r.raw_bytes += raw_bytes;
            r.partial_groups += partial_groups;
            r.raw_groups += raw_groups;
        });
        Ok(Some((time, recs, through.map_or(time, |t| i64::try_from(t).unwrap_or(i64::MAX)))))
    }

    /// Note `device` as the reader of the stream groups of its merged shipment (`read`), and
    /// the groups it ships whole (`GET /devices`' `wholeGroups`, which a LOAD into them is
    /// refused by when it does not follow: [`super::refusals`]), and the synopses resident on it (their
    /// query views: ad-hoc requests for them are refused, naming it).
    fn note_readers(&self, plan: &Plan, device: &str, read: &[(u32, Form)]) {
        for &(group, form) in read {
            // A monitored stream's site messages: no group of the routing (its sites' owners
            // are checked by `site_recs`).
            if form == Form::Sites {
                continue;
            }
            let g = &plan.routing.groups[group as usize];
            if !g.stream.is_empty() {
                self.devices.read_by(group, device, matches!(form, Form::Whole | Form::View));
            }
            // Resident from the first shipment of any form of a device that said so in its
            // hello (its budget may ship raw values or whole states first: `super::budget`).
            if form == Form::View
                || (!g.stream.is_empty() && self.devices.says_resident(device) && resident_group(plan, group))
            {
                self.devices.resident(plan, group, device);
            }
            if form == Form::Whole {
                let kept = (g.dataset.clone(), g.stream.clone(), g.field.clone());
                self.devices.touch(device, |r| {
                    r.whole.insert(kept);
                });
            }
        }
    }

    /// The records of one group of a shipment of `device` (appended to `recs`): its group here
    /// and its form, checked.
    fn group_recs(
        &mut self,
        plan: &Plan,
        (window, seq): (u64, u64),
        g: &GroupShip,
        device: &str,
        recs: &mut Vec<Rec>,
    ) -> Result<(u32, Form), String> {
        let (group, form) = match &g.data {
            GroupData::Sites(m) => site_recs(plan, (window, seq), (g, m), (device, &mut self.sites), recs)
                .map(|group| (group, Form::Sites)),
            _ => to_recs(plan, (device, window), seq, g, recs),
        }?;
        self.one_reader(plan, device, group, form)?;
        Ok((group, form))
    }

    /// Refuse a whole state of a stream's group that another device shipped first, and a
    /// second device's shipment of a group one device ships whole ([`Devices::one_reader`]).
    fn one_reader(&self, plan: &Plan, device: &str, group: u32, form: Form) -> Result<(), String> {
        if form == Form::Sites {
            return Ok(());
        }
        let Err(first) = self.devices.one_reader(group, device, matches!(form, Form::Whole | Form::View)) else {
            return Ok(());
        };
        let stream = &plan.routing.groups[group as usize].stream;
        Err(format!(
            "stream {stream} is read by {first} and {device}: its order-dependent synopses cannot be kept whole on one \
             device (start its devices without --sole-reader)"
        ))
    }
}

impl Intake {
    /// A device's answer to an ask of a synopsis resident on it ([`super::asks`]): handed on at
    /// once when its synopsis is homed in this process (its ask waits here: [`super::relay`]),
    /// else sent to the home's process, which hands it on ([`Intake::take_answers`]).
    ///
    /// # Errors
    /// A synopsis this job does not maintain (counted as refused for the device), an answer to
    /// an ask answered already (counted as replayed).
    fn answer(&mut self, plan: &Plan, device: &str, answered: Answered) -> Result<(), Refusal> {
        self.devices.touch(device, |r| r.state = "live");
        let Some(syn) = find(plan, &answered.synopsis) else {
            self.devices.touch(device, |r| r.refused += 1);
            let id = &answered.synopsis;
            let why = format!(
                "{device}: an answer for an unknown synopsis: kind {} over {}/{}",
                id.synopsis_id, id.dataset, id.stream
            );
            return Err((why, false));
        };
        let home = plan.routing.synopses[syn as usize].home as u32;
        let answer = DeviceAnswer { device: device.to_string(), line: answered.line, saved: answered.saved };
        let ask = (answered.ask, syn, home);
        match self.devices.relay().admit(plan, ask, answer) {
            Ok(Admitted::Now(line, at)) => {
                let open = plan.checkpoints.borrow().boundaries.keys().next().copied();
                self.relayed.push((line, open, device.to_string(), at));
            }
            Ok(Admitted::Kept) => {}
            Ok(Admitted::Elsewhere(answer)) => self.elsewhere.push((ask, answer)),
            Err(why) => {
                self.devices.touch(device, |r| r.replayed += 1);
                return Err((why, false));
            }
        }
        Ok(())
    }

    /// Hand on the devices' answers admitted since the last call: those handed on here written
    /// now (at `time`, the input's epoch, where the home's line would have been), the others
    /// sent to their synopses' homes in other processes (`super::hops`).
    pub fn take_answers(&mut self, time: u64) {
        for (line, open, device, at) in self.relayed.drain(..) {
            self.devices.relay().deliver((at.unwrap_or(time), open), &device, &line);
        }
        for (ask, answer) in self.elsewhere.drain(..) {
            self.devices.relay().send_home(time, ask, answer);
        }
    }

    /// A device's *position* (a data shipment without groups: it is about to read `window`, and
    /// waits until a worker has routed it; [`super::control`]): routed as no values at the
    /// window's start, so this worker's newest routed window (what fences follow) reaches it.
    /// Nothing is merged, and a position behind what the partition merged (a restarted device
    /// reading its windows again) is dropped: those windows were routed already.
    fn position(&mut self, partition: i32, device: &str, window: u64, late_below: i64) -> Option<(i64, Vec<Rec>)> {
        self.devices.touch(device, |r| {
            r.state = "live";
            r.follows = true;
        });
        let time = i64::try_from(window).unwrap_or(i64::MAX);
        let newest =
            self.newest.get(&partition).map_or(late_below, |&w| late_below.max(i64::try_from(w).unwrap_or(i64::MAX)));
        (time >= newest).then(|| (time, Vec::new()))
    }
}

/// This job's synopsis named `id` (a live one first, else a deleted one), by index.
fn find(plan: &Plan, id: &SynId) -> Option<u32> {
    let params: Vec<Json> = serde_json::from_str(&id.params).ok()?;
    let same = |s: &&saams_operators::plan::SynSpec| {
        s.dataset == id.dataset
            && s.stream == id.stream
            && s.field == id.field
            && s.synopsis_id == id.synopsis_id
            && s.params == params
            && s.group != u32::MAX
    };
    let specs = &plan.routing.synopses;
    let index = |s: &saams_operators::plan::SynSpec| specs.iter().position(|x| std::ptr::eq(x, s));
    specs
        .iter()
        .filter(same)
        .find(|s| !s.is_deleted())
        .or_else(|| specs.iter().find(same))
        .and_then(index)
        .map(|i| i as u32)
}

/// The records of one group of a shipment (appended to `recs`): its update group here and its form.
fn to_recs(
    plan: &Plan,
    (device, window): (&str, u64),
    seq: u64,
    g: &GroupShip,
    recs: &mut Vec<Rec>,
) -> Result<(u32, Form), String> {
    let mut indices = Vec::with_capacity(g.synopses.len());
    for id in &g.synopses {
        let s = find(plan, id).ok_or_else(|| {
            format!(
                "unknown synopsis: kind {} over {}/{}/{} {}",
                id.synopsis_id, id.dataset, id.stream, id.field, id.params
            )
        })?;
        indices.push(s);
    }
    let Some(&first) = indices.first() else { return Err("a group without synopses".into()) };
    let group = plan.routing.synopses[first as usize].group;
    if indices.iter().any(|&s| plan.routing.synopses[s as usize].group != group) {
        return Err("its synopses are in different update groups here".into());
    }
    let time = i64::try_from(window).unwrap_or(i64::MAX);
    match &g.data {
        GroupData::Raw(values) => {
            let end = window.saturating_add(plan.routing.window_ms as u64);
            let base = seq & !((1 << 40) - 1);
            for v in values {
                if v.time < time || v.time as u64 >= end || matches!(v.val, Val::Part(_)) {
                    return Err(format!("a raw value at {} outside its window", v.time));
                }
                recs.push(Rec { group, time: v.time, seq: base | (v.seq & ((1 << 40) - 1)), val: v.val.clone() });
            }
            Ok((group, Form::Raw))
        }
        GroupData::View { items, period_items, views } => {
            let spec = &plan.routing.groups[group as usize];
            if spec.mode != Mode::Owned || spec.stream.is_empty() {
                return Err("query views of an update group not owned by one worker for one stream here".into());
            }
            let decoded = decode_views(plan, &indices, (device, &g.synopses), views)?;
            let part = DevicePart { items: *items, parts: decoded, whole: Some(*period_items) };
            recs.push(Rec { group, time, seq, val: Val::Part(part.encode().into_boxed_slice()) });
            Ok((group, Form::View))
        }
        GroupData::Whole { items, period_items, states } => {
            let spec = &plan.routing.groups[group as usize];
            if spec.mode != Mode::Owned || spec.stream.is_empty() {
                return Err("whole states of an update group not owned by one worker for one stream here".into());
            }
            let decoded = decode_states(plan, &indices, states, |_| true)?;
            let part = DevicePart { items: *items, parts: decoded, whole: Some(*period_items) };
            recs.push(Rec { group, time, seq, val: Val::Part(part.encode().into_boxed_slice()) });
            Ok((group, Form::Whole))
        }
        GroupData::Sites(_) => Err("site messages of a group of synopses".into()),
        GroupData::Partials { items, parts } => {
            let mode = plan.routing.groups[group as usize].mode;
            let ordered = plan.routing.groups[group as usize].ordered;
            if !matches!(mode, Mode::Exact { .. } | Mode::Owned) || ordered {
                return Err("partials of an update group whose synopses do not merge exactly here".into());
            }
            let decoded = decode_states(plan, &indices, parts, saams::Kind::merges_exactly)?;
            let part = DevicePart { items: *items, parts: decoded, whole: None };
            recs.push(Rec { group, time, seq, val: Val::Part(part.encode().into_boxed_slice()) });
            Ok((group, Form::Partials))
        }
    }
}

/// A synopsis state named by its index in this job's plan.
type Indexed = (u32, Box<dyn saams::Synopsis>);

/// The states shipped for synopses `indices` (zero runs packed), each of the kind this job
/// keeps and one `allowed`.
fn decode_states(
    plan: &Plan,
    indices: &[u32],
    states: &[Vec<u8>],
    allowed: impl Fn(saams::Kind) -> bool,
) -> Result<Vec<Indexed>, String> {
    let mut decoded = Vec::with_capacity(states.len());
    for (&s, bytes) in indices.iter().zip(states) {
        let syn = unpack_zero_runs(bytes).and_then(|b| saams::registry::decode(&b).map_err(|e| e.to_string()));
        let syn = syn.map_err(|e| format!("state of synopsis {s}: {e}"))?;
        let spec = &plan.routing.synopses[s as usize];
        if syn.kind() != spec.kind || !allowed(spec.kind) {
            return Err(format!("state of synopsis {s}: a {} where a {} is kept", syn.kind().name(), spec.kind.name()));
        }
        decoded.push((s, syn));
    }
    Ok(decoded)
}

/// The query views shipped by `device` for synopses `indices` (named `ids`), each of the kind
/// this job keeps.
fn decode_views(
    plan: &Plan,
    indices: &[u32],
    (device, ids): (&str, &[SynId]),
    views: &[Vec<u8>],
) -> Result<Vec<Indexed>, String> {
    let mut decoded: Vec<Indexed> = Vec::with_capacity(views.len());
    for ((&s, id), bytes) in indices.iter().zip(ids).zip(views) {
        let view =
            QueryView::decode_compact(bytes, device, &id.params).map_err(|e| format!("view of synopsis {s}: {e}"))?;
        let spec = &plan.routing.synopses[s as usize];
        if view.kind() != spec.kind {
            return Err(format!("view of synopsis {s}: a {} where a {} is kept", view.kind().name(), spec.kind.name()));
        }
        decoded.push((s, Box::new(view)));
    }
    Ok(decoded)
}
