//! A device's windows ([`DeviceWindows`]): the values it read, per update group of its plan, for
//! the job window open now, and at its close the shipment — whichever of two forms is smaller:
//!
//! - **raw**: every group's values as compact records (time from the window's start, sequence
//!   number, value);
//! - **partials**: the groups whose synopses all merge exactly (Count-Min, HyperLogLog, Bloom,
//!   AMS: [`saams::Kind::merges_exactly`]) as one partial per synopsis (zero runs packed), the
//!   other groups raw.
//!
//! So a shipment never costs more than the raw form, by construction. Order-dependent kinds
//! (DFT, LSH, window quantiles, GK, KLL, Lossy Counting, Sticky Sampling, FrequentItems, CPC)
//! go raw by default: a stream split over devices cannot feed them in event order from
//! partials, and their partials would not merge bit for bit; the cloud feeds them in (event
//! time, sequence) order as it feeds its own values.
//!
//! A device that is its streams' only reader ([`DeviceWindows::sole_reader`], `saams-edge
//! --sole-reader`) keeps their owned groups **whole**: at each window's close it feeds them the
//! window's values in (event time, sequence) order, as the cloud's owner would, into states
//! that are the cloud's (the cloud installs what the device ships, and feeds what it ships raw,
//! so both start each window from the same state), and ships per group the smaller of the raw
//! values and the whole states (the checkpoint codec's exact bytes). The cloud installs them in
//! place of its own at the window's close, so its answers are those of the raw run.
//!
//! A device that keeps them *resident* ([`DeviceWindows::resident`], `saams-edge --resident`)
//! feeds them the same way but ships, at each window's close, only their query views
//! ([`super::resident`]): the states stay here, and nothing of those groups is shipped before
//! the close.
//!
//! State is one job window of values (the raw form must be at hand to ship it) and the whole
//! groups' synopses: a device is as bounded as its window, rate and synopses.

use std::collections::{BTreeMap, HashMap};

use saams::api::Tuple;
use saams::{Datum, Synopsis};
use saams_operators::answer;
use saams_operators::plan::Mode;
use saams_operators::record::pack_zero_runs;
use saams_operators::update::MovedState;
use saams_operators::window::Held;
use saams_operators::{Plan, Val};

use super::budget::GroupBudget;
use super::resident::{resident_group, view_bytes};
use super::shipment::{Body, GroupData, GroupShip, RawValue, Shipment, SynId};

/// What a device counted since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounts {
    /// Tuples read.
    pub tuples: u64,
    /// Tuples older than the open window (refused: the window was shipped).
    pub late: u64,
    /// Windows shipped.
    pub windows: u64,
    /// Windows shipped with partials (at least one group), and all raw.
    pub partial_windows: u64,
    /// See `partial_windows`.
    pub raw_windows: u64,
    /// Bytes shipped (the records as produced).
    pub shipped_bytes: u64,
    /// Bytes the raw form of the same windows takes.
    pub raw_bytes: u64,
    /// Groups shipped as whole states (a window's group each).
    pub whole_groups: u64,
    /// Groups shipped as query views (a window's resident group each).
    pub view_groups: u64,
    /// Resident groups shipped as raw values (a window's group each: the cloud's copy was a
    /// real state and views did not pay, [`super::budget`]); their whole states count in
    /// `whole_groups`.
    pub resident_raw_groups: u64,
    /// The request script's ad-hoc queries and SAVEs of synopses resident here answered at the
    /// end of the input ([`DeviceWindows::end_answers`]).
    pub script_answers: u64,
}

impl std::ops::AddAssign for DeviceCounts {
    /// Another device's counts added, field by field (several devices' totals). Kept beside the
    /// fields so that a new counter is not left out of the sums (the federated experiment's own
    /// sum missed `resident_raw_groups`).
    fn add_assign(&mut self, c: DeviceCounts) {
        let DeviceCounts {
            tuples,
            late,
            windows,
            partial_windows,
            raw_windows,
            shipped_bytes,
            raw_bytes,
            whole_groups,
            view_groups,
            resident_raw_groups,
            script_answers,
        } = c;
        self.tuples += tuples;
        self.late += late;
        self.windows += windows;
        self.partial_windows += partial_windows;
        self.raw_windows += raw_windows;
        self.shipped_bytes += shipped_bytes;
        self.raw_bytes += raw_bytes;
        self.whole_groups += whole_groups;
        self.view_groups += view_groups;
        self.resident_raw_groups += resident_raw_groups;
        self.script_answers += script_answers;
    }
}

/// Per group kept whole, at a window's close ([`Kept`]).
pub(super) type Wholes = BTreeMap<u32, Kept>;

/// A group kept whole at a window's close.
pub(super) struct Kept {
    /// The window's values fed.
    pub(super) items: u64,
    /// The values its states summarize in their open period.
    pub(super) period_items: u64,
    /// The states (exact codec bytes, zero runs packed) before the window's live LOADs merged,
    /// one per synopsis shipped: what the cloud installs, then merges them into.
    pub(super) states: Vec<Vec<u8>>,
    /// A resident group's query views after the LOADs merged (the cloud cannot merge into a
    /// view), one per synopsis shipped.
    pub(super) views: Option<Vec<Vec<u8>>>,
    /// Every synopsis fed began the window from its constructed state (a tumbling window's
    /// new period, or none fed before): the cloud's copy did too, whatever form it held.
    pub(super) fresh: bool,
}

/// The open window of a device and what it has read in it.
pub struct DeviceWindows {
    device: String,
    /// The open window (start, ms) and its values per update group.
    open: Option<(u64, BTreeMap<u32, Vec<RawValue>>)>,
    /// The sequence number of the next value read.
    next_seq: u64,
    /// The sequence number of the open window's next shipment (several with `--ship-every`).
    pub(super) ship_seq: u64,
    /// Counters.
    pub counts: DeviceCounts,
    /// Keep the owned groups of the streams read whole ([`DeviceWindows::sole_reader`]).
    sole_reader: bool,
    /// Keep them resident and ship their query views ([`DeviceWindows::resident`]).
    resident: bool,
    /// Per synopsis of a group kept whole: its state, as the cloud's owner holds it.
    pub(super) held: HashMap<u32, Held>,
    /// Per synopsis of a group kept whole: how many of its live LOADs are merged into it.
    pub(super) loaded: HashMap<u32, usize>,
    /// The open window's values of groups kept whole already shipped raw (`--ship-every`):
    /// fed at the window's close with the rest.
    shipped_open: BTreeMap<u32, Vec<RawValue>>,
    /// The device's watermark when no window is open: values of older windows are late
    /// ([`DeviceWindows::hold_below`]).
    floor: u64,
    /// What the state file records of the states kept here ([`super::kept`]).
    pub(super) kept: KeptPoints,
    /// Per resident group: what the cloud holds of it and the bytes saved against raw
    /// ([`super::budget`]).
    pub(super) budgets: BTreeMap<u32, GroupBudget>,
}

impl DeviceWindows {
    /// No window open yet.
    pub fn new(device: &str) -> DeviceWindows {
        DeviceWindows {
            device: device.to_string(),
            open: None,
            next_seq: 0,
            ship_seq: 0,
            counts: DeviceCounts::default(),
            sole_reader: false,
            resident: false,
            held: HashMap::new(),
            loaded: HashMap::new(),
            shipped_open: BTreeMap::new(),
            floor: 0,
            kept: KeptPoints::default(),
            budgets: BTreeMap::new(),
        }
    }

    /// A device restarted from its state file ([`super::resume`]): `window` open with nothing
    /// read in it yet, its next shipment numbered `seq`, its next tuple `from`.
    pub fn resumed(device: &str, window: u64, seq: u64, from: u64) -> DeviceWindows {
        let mut windows = DeviceWindows {
            open: Some((window, BTreeMap::new())),
            next_seq: from,
            ship_seq: seq,
            ..DeviceWindows::new(device)
        };
        windows.kept.open_from = from;
        windows
    }

    /// The device's id.
    pub(super) fn device_id(&self) -> &str {
        &self.device
    }

    /// How many tuples the device has read (the number of the next one).
    pub fn read_count(&self) -> u64 {
        self.next_seq
    }

    /// This device is the only one reading its streams: their owned groups (order-dependent
    /// kinds included) are kept whole here and shipped as whole states where that is smaller.
    /// The cloud refuses whole states of a stream another device ships too.
    #[must_use]
    pub fn sole_reader(mut self) -> DeviceWindows {
        self.sole_reader = true;
        self
    }

    /// A sole reader ([`DeviceWindows::sole_reader`]) that keeps its streams' groups
    /// *resident* ([`super::resident`]): their states never leave the device; each window ships
    /// their query views, what the continuous queries read.
    #[must_use]
    pub fn resident(mut self) -> DeviceWindows {
        self.sole_reader = true;
        self.resident = true;
        self
    }

    /// True when group `g` is kept whole here.
    fn keeps_whole(&self, plan: &Plan, g: u32) -> bool {
        let group = &plan.routing.groups[g as usize];
        self.sole_reader
            && group.mode == Mode::Owned
            && !group.stream.is_empty()
            && (!mergeable(plan, g) || self.is_resident(plan, g))
    }

    /// True when synopsis `s` is of a group kept whole here (on the streams it reads).
    pub fn keeps_whole_synopsis(&self, plan: &Plan, s: u32) -> bool {
        plan.routing
            .synopses
            .get(s as usize)
            .is_some_and(|spec| spec.group != u32::MAX && self.keeps_whole(plan, spec.group))
    }

    /// True when group `g` is resident here (only its views are shipped).
    pub(super) fn is_resident(&self, plan: &Plan, g: u32) -> bool {
        self.resident && resident_group(plan, g)
    }

    /// Feed window `window`'s values of the groups kept whole (those shipped raw earlier in the
    /// window too) to their states, as the cloud's owner feeds them, and return the states as
    /// at the window's close.
    fn feed_whole(&mut self, plan: &Plan, window: u64, groups: &BTreeMap<u32, Vec<RawValue>>) -> Wholes {
        let mut shipped = std::mem::take(&mut self.shipped_open);
        let mut out = Wholes::new();
        let cadence = plan.routing.window_ms as u64;
        for g in groups.keys().chain(shipped.keys()).copied().collect::<std::collections::BTreeSet<u32>>() {
            if !self.keeps_whole(plan, g) {
                continue;
            }
            let mut values = shipped.remove(&g).unwrap_or_default();
            values.extend(groups.get(&g).into_iter().flatten().cloned());
            values.sort_by_key(|v| (v.time, v.seq));
            let batch: Vec<Datum<'_>> = values.iter().map(|v| v.val.datum()).collect();
            let resident = self.is_resident(plan, g);
            let (mut period_items, mut states, mut views, mut fresh) = (0, Vec::new(), Vec::new(), true);
            for &s in &plan.routing.groups[g as usize].synopses {
                let spec = &plan.routing.synopses[s as usize];
                if spec.is_deleted() {
                    continue;
                }
                let held = self.held.entry(s).or_insert_with(|| Held::new(spec.initial.as_ref()));
                if plan.live.is_live(s, window) {
                    held.enter(spec.windowing(), window, &mut |_, _, _| {});
                    fresh &= held.items == 0;
                    if spec.kind.is_order_sensitive() {
                        values.iter().for_each(|v| held.state.update_at(v.val.datum(), v.time));
                    } else {
                        held.state.update_batch(&batch);
                    }
                    held.items += values.len() as u64;
                }
                period_items = held.items;
                let live = plan.live.is_live(s, window);
                // Live LOADs merge where the cloud's owner merges them: after the window's
                // values, before its answers. A whole state is taken before (the cloud merges
                // them into it after installing it), a view after (the cloud cannot merge into
                // a view: the device's answers have them).
                let done = self.loaded.entry(s).or_insert(0);
                states.push(pack_zero_runs(&held.state.encode_exact()));
                if live {
                    merge_loads(plan, s, window, held, done);
                }
                if resident {
                    views.push(view_bytes(plan, s, held.state.as_ref()));
                }
                if live {
                    held.close(spec.windowing(), window, cadence, &mut |_, _, _| {});
                }
            }
            let views = resident.then_some(views);
            out.insert(g, Kept { items: values.len() as u64, period_items, states, views, fresh });
        }
        out
    }

    /// Take one tuple: its values go to the groups of `plan` it feeds. A tuple of a later window
    /// closes the open one first: its shipments are returned.
    pub fn push(&mut self, plan: &Plan, t: &Tuple) -> Vec<Shipment> {
        let time = t.time_ms.unwrap_or(0).max(0);
        let window = plan.window_of(time);
        self.counts.tuples += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        let shipped = match &self.open {
            _ if window < self.floor => {
                self.counts.late += 1;
                return Vec::new();
            }
            Some((open, _)) if window < *open => {
                self.counts.late += 1;
                return Vec::new();
            }
            Some((open, _)) if window > *open => self.close(plan),
            _ => Vec::new(),
        };
        if self.open.is_none() {
            self.kept.open_from = seq;
        }
        let (_, groups) = self.open.get_or_insert_with(|| (window, BTreeMap::new()));
        let (per_stream, wide) = plan.routes(&t.dataset_key, &t.stream_id);
        for &g in per_stream.iter().chain(wide) {
            if let Some(val) = value_of(plan, g, t) {
                groups.entry(g).or_default().push(RawValue { time, seq, val });
            }
        }
        shipped
    }

    /// [`DeviceWindows::push`], the last record of a window it closes naming the window opened
    /// ([`DeviceWindows::moved_on`]): what `saams-edge` ships for a device without monitored
    /// streams (the federated experiment's devices).
    pub fn push_moving_on(&mut self, plan: &Plan, t: &Tuple) -> Vec<Shipment> {
        let was = self.open_seq().map(|(w, _)| w);
        let mut ships = self.push(plan, t);
        if let (Some(was), Some((now, _))) = (was, self.open_seq())
            && now != was
        {
            self.moved_on(&mut ships, now);
        }
        ships
    }

    /// The device moved on to window `next` (it read a tuple of it): the last of `ships` (the
    /// closed window's records, then any monitored streams' site messages) says so
    /// ([`Body::Data`]'s `through`), so the cloud's clock of this device's partition moves there
    /// at once rather than at the next window's shipment. The bytes it adds are counted as
    /// shipped and, the same, as raw (shipping the values raw would name the next window
    /// alike): here, or, when that record carries site messages, by the caller in its sites'
    /// counters (the bytes are returned then).
    pub fn moved_on(&mut self, ships: &mut [Shipment], next: u64) -> Option<u64> {
        let Some(Shipment { body: Body::Data { window, raw_bytes, groups, through }, .. }) = ships.last_mut() else {
            return None;
        };
        if next <= *window || groups.is_empty() {
            return None;
        }
        *through = Some(next);
        // The record's kind byte only changes; the next window follows as a varint of its distance.
        let mut distance = saams::codec::Writer::new();
        distance.varint(next - *window);
        let added = distance.into_inner().len() as u64;
        *raw_bytes += added;
        if groups.iter().any(|g| matches!(g.data, GroupData::Sites(_))) {
            return Some(added);
        }
        self.counts.shipped_bytes += added;
        self.counts.raw_bytes += added;
        None
    }

    /// From now on, values of windows before `window` are late (refused and counted): a device
    /// whose input went idle took `window` as its watermark ([`super::asks`]), after closing the
    /// windows before it.
    pub fn hold_below(&mut self, window: u64) {
        self.floor = self.floor.max(window);
    }

    /// Close the open window (the input ended, or a later window began): its shipment (what it
    /// read since the last one), or none when no group took a value.
    pub fn close(&mut self, plan: &Plan) -> Vec<Shipment> {
        let Some((window, groups)) = self.open.take() else { return Vec::new() };
        self.closing(window, self.ship_seq);
        let wholes = self.feed_whole(plan, window, &groups);
        let (resident, groups): (BTreeMap<_, _>, BTreeMap<_, _>) =
            groups.into_iter().partition(|(g, _)| self.is_resident(plan, *g) && has_synopses(plan, *g));
        let mut out = self.ship_resident(plan, window, &resident, &wholes);
        // After the resident groups' forms are chosen: the budgets the next window opens with.
        self.closed();
        self.ship_all(plan, window, groups, Some(&wholes), &mut out);
        self.ship_seq = 0;
        out
    }

    /// Ship what the open window read so far, and keep it open (`--ship-every`): the next
    /// shipment of the window carries the next sequence number and only what is read after.
    /// Groups kept whole go raw here (their states are only the cloud's at a window's close);
    /// their values are kept to feed them at the close.
    pub fn ship_open(&mut self, plan: &Plan) -> Vec<Shipment> {
        let Some((window, taken)) = self.take_open(plan) else { return Vec::new() };
        let mut out = Vec::new();
        self.ship_all(plan, window, taken, None, &mut out);
        out
    }

    /// A restarted device has read again the tuples of its open window it had shipped with
    /// `--ship-every` before the kill ([`super::kept`]): leave the open window as their
    /// shipment left it, without shipping them again.
    pub fn forget_shipped(&mut self, plan: &Plan) {
        self.take_open(plan);
    }

    /// Take the open window's values to ship them before its close: all but the resident
    /// groups', which stay (their views at the close cover all of it); those of groups kept
    /// whole are kept to be fed at the close.
    fn take_open(&mut self, plan: &Plan) -> Option<(u64, BTreeMap<u32, Vec<RawValue>>)> {
        let resident: Vec<u32> = match &self.open {
            Some((_, groups)) => groups.keys().copied().filter(|&g| self.is_resident(plan, g)).collect(),
            None => Vec::new(),
        };
        let (window, groups) = self.open.as_mut()?;
        let kept: BTreeMap<u32, Vec<RawValue>> = resident.iter().filter_map(|g| groups.remove_entry(g)).collect();
        let (window, taken) = (*window, std::mem::replace(groups, kept));
        for (&g, values) in &taken {
            if self.keeps_whole(plan, g) {
                self.shipped_open.entry(g).or_default().extend(values.iter().cloned());
            }
        }
        Some((window, taken))
    }

    /// Ship `groups`' values in `window` as one shipment, or, when their raw form is over
    /// [`MAX_RECORD_BYTES`], as the shipments of its two halves (each the smaller of its forms),
    /// with successive sequence numbers. `wholes`: the states of groups kept whole, at the
    /// window's close (each shipment of a group may carry them: they cover the whole window).
    fn ship_all(
        &mut self,
        plan: &Plan,
        window: u64,
        groups: BTreeMap<u32, Vec<RawValue>>,
        wholes: Option<&Wholes>,
        out: &mut Vec<Shipment>,
    ) {
        let values: usize = groups.values().map(Vec::len).sum();
        if values > 1 {
            let raw = Body::Data { window, raw_bytes: 0, groups: raw_groups(plan, &groups), through: None };
            let raw = Shipment { device: self.device.clone(), seq: self.ship_seq, body: raw };
            if raw.encode().len() as u64 > MAX_RECORD_BYTES {
                let (first, second) = halves(groups, values / 2);
                self.ship_all(plan, window, first, wholes, out);
                self.ship_all(plan, window, second, wholes, out);
                return;
            }
        }
        if let Some(ship) = self.ship(plan, window, &groups, (self.ship_seq, wholes)) {
            self.ship_seq += 1;
            out.push(ship);
        }
    }

    /// `groups`' values in `window` as shipment `seq`: each group the smaller of its raw values
    /// and its summary (partials where its synopses merge exactly, whole states where `wholes`
    /// has them), so never more than the raw form.
    fn ship(
        &mut self,
        plan: &Plan,
        window: u64,
        groups: &BTreeMap<u32, Vec<RawValue>>,
        (seq, wholes): (u64, Option<&Wholes>),
    ) -> Option<Shipment> {
        if groups.is_empty() {
            return None;
        }
        let raw = Shipment {
            device: self.device.clone(),
            seq,
            body: Body::Data { window, raw_bytes: 0, groups: raw_groups(plan, groups), through: None },
        };
        let raw_len = raw.encode().len() as u64;
        let (mut chosen, mut summarized, mut whole) = (Vec::with_capacity(groups.len()), false, 0);
        let Body::Data { groups: raw_groups, .. } = raw.body else { return None };
        for (raw_group, (&g, values)) in
            raw_groups.into_iter().zip(groups.iter().filter(|(g, _)| has_synopses(plan, **g)))
        {
            let summary = if mergeable(plan, g) {
                Some(partials_of(plan, g, values))
            } else {
                wholes.and_then(|w| w.get(&g)).map(|kept| GroupData::Whole {
                    items: values.len() as u64,
                    period_items: kept.period_items,
                    states: kept.states.clone(),
                })
            };
            let summary = summary.map(|data| GroupShip { synopses: raw_group.synopses.clone(), data });
            match summary {
                Some(s) if s.encoded_len(window) < raw_group.encoded_len(window) => {
                    summarized = true;
                    whole += u64::from(matches!(s.data, GroupData::Whole { .. }));
                    chosen.push(s);
                }
                _ => chosen.push(raw_group),
            }
        }
        if summarized {
            self.counts.partial_windows += 1;
        } else {
            self.counts.raw_windows += 1;
        }
        let chosen = Shipment {
            device: self.device.clone(),
            seq,
            body: Body::Data { window, raw_bytes: raw_len, groups: chosen, through: None },
        };
        self.counts.windows += 1;
        self.counts.whole_groups += whole;
        self.counts.raw_bytes += raw_len;
        self.counts.shipped_bytes += chosen.encode().len() as u64;
        Some(chosen)
    }

    /// Per kind: the states kept whole here (how many, and the bytes each takes in a shipment
    /// now: exact codec bytes, zero runs packed), to tell what whole shipments are made of.
    pub fn whole_state_bytes(&self) -> BTreeMap<&'static str, (u64, u64)> {
        let mut out: BTreeMap<&'static str, (u64, u64)> = BTreeMap::new();
        for held in self.held.values() {
            let e = out.entry(held.state.kind().name()).or_default();
            e.0 += 1;
            e.1 += pack_zero_runs(&held.state.encode_exact()).len() as u64;
        }
        out
    }

    /// The window open now (start, ms) and its next shipment's sequence number, if any.
    pub fn open_seq(&self) -> Option<(u64, u64)> {
        self.open.as_ref().map(|(w, _)| (*w, self.ship_seq))
    }

    /// The end of the window open now, if any.
    pub fn open_end(&self, plan: &Plan) -> Option<u64> {
        self.open.as_ref().map(|(w, _)| w.saturating_add(plan.routing.window_ms as u64))
    }
}

/// Merge synopsis `s`'s live LOADs due by `window` into `held` ([`answer::merge_loads`]); a
/// merge that fails is said on stderr (the cloud's own merge fails the same way and answers it).
fn merge_loads(plan: &Plan, s: u32, window: u64, held: &mut Held, done: &mut usize) {
    let mut errors = Vec::new();
    answer::merge_loads(plan, s, window, held.state.as_mut(), done, &mut errors);
    errors.iter().for_each(|e| eprintln!("saams-edge: {e}"));
}

/// A record of the partials topic stays under this many bytes (brokers refuse records over
/// their `message.max.bytes`, 1 MB by default): a window's values beyond it are shipped in
/// several shipments of the same window.
pub const MAX_RECORD_BYTES: u64 = 900_000;

/// `groups` split after its first `n` values (in group order).
fn halves(
    groups: BTreeMap<u32, Vec<RawValue>>,
    n: usize,
) -> (BTreeMap<u32, Vec<RawValue>>, BTreeMap<u32, Vec<RawValue>>) {
    let (mut first, mut second, mut taken) = (BTreeMap::new(), BTreeMap::new(), 0);
    for (g, mut values) in groups {
        if taken >= n {
            second.insert(g, values);
            continue;
        }
        if taken + values.len() > n {
            let rest = values.split_off(n - taken);
            second.insert(g, rest);
        }
        taken += values.len();
        first.insert(g, values);
    }
    (first, second)
}

/// The value tuple `t` gives update group `g` (the cloud's router reads it the same way).
fn value_of(plan: &Plan, g: u32, t: &Tuple) -> Option<Val> {
    let group = &plan.routing.groups[g as usize];
    let datum = match group.field.as_str() {
        "streamID" => Datum::Str(&t.stream_id),
        "dataSetKey" => Datum::Str(&t.dataset_key),
        f => t.field(f)?,
    };
    match datum {
        Datum::Num(x) => Some(Val::Num(x)),
        Datum::Str(s) => match saams_datasets::parse_f64(saams_datasets::trim(s)) {
            Some(x) if x.is_finite() => Some(Val::Num(x)),
            _ if group.numeric => None,
            _ => Some(Val::Str(s.into())),
        },
    }
}

/// The synopses group `g` feeds, named by what they are.
pub(super) fn synopsis_ids(plan: &Plan, g: u32) -> Vec<SynId> {
    plan.routing.groups[g as usize]
        .synopses
        .iter()
        .map(|&s| &plan.routing.synopses[s as usize])
        .filter(|s| !s.is_deleted())
        .map(syn_id)
        .collect()
}

/// Synopsis `s` named by what it is.
pub(super) fn syn_id(s: &saams_operators::plan::SynSpec) -> SynId {
    SynId {
        dataset: s.dataset.clone(),
        stream: s.stream.clone(),
        field: s.field.clone(),
        synopsis_id: s.synopsis_id,
        params: serde_json::to_string(&s.params).unwrap_or_default(),
    }
}

/// True when group `g` feeds a synopsis not deleted (a group without one is not shipped).
fn has_synopses(plan: &Plan, g: u32) -> bool {
    plan.routing.groups[g as usize].synopses.iter().any(|&s| !plan.routing.synopses[s as usize].is_deleted())
}

pub(super) fn raw_groups(plan: &Plan, groups: &BTreeMap<u32, Vec<RawValue>>) -> Vec<GroupShip> {
    groups
        .iter()
        .filter(|(g, _)| has_synopses(plan, **g))
        .map(|(&g, values)| GroupShip { synopses: synopsis_ids(plan, g), data: GroupData::Raw(values.clone()) })
        .collect()
}

/// True when group `g`'s synopses can be shipped as partials (their merge is exact).
fn mergeable(plan: &Plan, g: u32) -> bool {
    let group = &plan.routing.groups[g as usize];
    matches!(group.mode, Mode::Owned | Mode::Exact { .. })
        && !group.ordered
        && group.synopses.iter().all(|&s| plan.routing.synopses[s as usize].kind.merges_exactly())
}

/// The partials of mergeable group `g`'s synopses over `values`.
fn partials_of(plan: &Plan, g: u32, values: &[RawValue]) -> GroupData {
    let batch: Vec<Datum<'_>> = values.iter().map(|v| v.val.datum()).collect();
    let parts = plan.routing.groups[g as usize]
        .synopses
        .iter()
        .map(|&s| &plan.routing.synopses[s as usize])
        .filter(|s| !s.is_deleted())
        .map(|spec| {
            let mut part: Box<dyn Synopsis> = spec.fresh.clone();
            part.update_batch(&batch);
            pack_zero_runs(&part.encode())
        })
        .collect();
    GroupData::Partials { items: values.len() as u64, parts }
}

/// Where a device's kept states stand (`saams-edge --state` with groups kept whole,
/// [`super::kept`]).
#[derive(Default)]
pub(super) struct KeptPoints {
    /// Record them at all.
    pub(super) on: bool,
    /// The count of tuples read before the open window's first.
    pub(super) open_from: u64,
    /// The states when the open window opened (encoded).
    pub(super) at_open: Vec<u8>,
    /// The monitoring sites' copies when the open window opened ([`super::site_state`]).
    pub(super) sites_at_open: Vec<u8>,
    /// The resident groups' budgets when the open window opened ([`super::budget`]).
    pub(super) budgets_at_open: Vec<super::budget::GroupBudget>,
    /// The window closed last, as its close batch records it.
    pub(super) closed: Option<Closed>,
    /// The sites' copies read from the state file, for the device's sites to take.
    pub(super) restored_sites: Vec<saams::checkpoint::MonitorState>,
    /// States restored from the state file whose synopses the plan has not had yet (a device
    /// following the job learns its live constructs again as it goes).
    pub(super) pending: BTreeMap<u32, MovedState>,
}

/// The window closed last, as its close batch records it ([`super::kept`]).
pub(super) struct Closed {
    pub(super) window: u64,
    /// Its next shipment's number as it closed.
    pub(super) seq: u64,
    /// The count of tuples read before its first.
    pub(super) from: u64,
    /// The kept states and the sites' copies when it opened.
    pub(super) states: Vec<u8>,
    pub(super) sites: Vec<u8>,
    /// The resident groups' budgets when it opened.
    pub(super) budgets: Vec<super::budget::GroupBudget>,
}
