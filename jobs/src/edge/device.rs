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
//! always go raw: a stream split over devices cannot feed them in event order from partials,
//! and their partials would not merge bit for bit; the cloud feeds them in (event time,
//! sequence) order as it feeds its own values.
//!
//! State is one job window of values (the raw form must be at hand to ship it), whatever the
//! synopses: a device is as bounded as its window and rate.

use std::collections::BTreeMap;

use saams::api::Tuple;
use saams::{Datum, Synopsis};
use saams_operators::plan::Mode;
use saams_operators::record::pack_zero_runs;
use saams_operators::{Plan, Val};

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
}

/// The open window of a device and what it has read in it.
pub struct DeviceWindows {
    device: String,
    /// The open window (start, ms) and its values per update group.
    open: Option<(u64, BTreeMap<u32, Vec<RawValue>>)>,
    /// The sequence number of the next value read.
    next_seq: u64,
    /// The sequence number of the open window's next shipment (several with `--ship-every`).
    ship_seq: u64,
    /// Counters.
    pub counts: DeviceCounts,
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
        }
    }

    /// A device restarted from its state file ([`super::resume`]): `window` open with nothing
    /// read in it yet, its next shipment numbered `seq`, its next tuple `from`.
    pub fn resumed(device: &str, window: u64, seq: u64, from: u64) -> DeviceWindows {
        DeviceWindows {
            open: Some((window, BTreeMap::new())),
            next_seq: from,
            ship_seq: seq,
            ..DeviceWindows::new(device)
        }
    }

    /// How many tuples the device has read (the number of the next one).
    pub fn read_count(&self) -> u64 {
        self.next_seq
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
            Some((open, _)) if window < *open => {
                self.counts.late += 1;
                return Vec::new();
            }
            Some((open, _)) if window > *open => self.close(plan),
            _ => Vec::new(),
        };
        let (_, groups) = self.open.get_or_insert_with(|| (window, BTreeMap::new()));
        let (per_stream, wide) = plan.routes(&t.dataset_key, &t.stream_id);
        for &g in per_stream.iter().chain(wide) {
            if let Some(val) = value_of(plan, g, t) {
                groups.entry(g).or_default().push(RawValue { time, seq, val });
            }
        }
        shipped
    }

    /// Close the open window (the input ended, or a later window began): its shipment (what it
    /// read since the last one), or none when no group took a value.
    pub fn close(&mut self, plan: &Plan) -> Vec<Shipment> {
        let Some((window, groups)) = self.open.take() else { return Vec::new() };
        let mut out = Vec::new();
        self.ship_all(plan, window, groups, &mut out);
        self.ship_seq = 0;
        out
    }

    /// Ship what the open window read so far, and keep it open (`--ship-every`): the next
    /// shipment of the window carries the next sequence number and only what is read after.
    pub fn ship_open(&mut self, plan: &Plan) -> Vec<Shipment> {
        let Some((window, groups)) = self.open.as_mut() else { return Vec::new() };
        let (window, taken) = (*window, std::mem::take(groups));
        let mut out = Vec::new();
        self.ship_all(plan, window, taken, &mut out);
        out
    }

    /// Ship `groups`' values in `window` as one shipment, or, when their raw form is over
    /// [`MAX_RECORD_BYTES`], as the shipments of its two halves (each the smaller of its forms),
    /// with successive sequence numbers.
    fn ship_all(&mut self, plan: &Plan, window: u64, groups: BTreeMap<u32, Vec<RawValue>>, out: &mut Vec<Shipment>) {
        let values: usize = groups.values().map(Vec::len).sum();
        if values > 1 {
            let raw = Body::Data { window, raw_bytes: 0, groups: raw_groups(plan, &groups) };
            let raw = Shipment { device: self.device.clone(), seq: self.ship_seq, body: raw };
            if raw.encode().len() as u64 > MAX_RECORD_BYTES {
                let (first, second) = halves(groups, values / 2);
                self.ship_all(plan, window, first, out);
                self.ship_all(plan, window, second, out);
                return;
            }
        }
        if let Some(ship) = self.ship(plan, window, &groups, self.ship_seq) {
            self.ship_seq += 1;
            out.push(ship);
        }
    }

    /// The smaller of the two forms of `groups`' values in `window`, as shipment `seq`.
    fn ship(&mut self, plan: &Plan, window: u64, groups: &BTreeMap<u32, Vec<RawValue>>, seq: u64) -> Option<Shipment> {
        if groups.is_empty() {
            return None;
        }
        let raw = Shipment {
            device: self.device.clone(),
            seq,
            body: Body::Data { window, raw_bytes: 0, groups: raw_groups(plan, groups) },
        };
        let raw_len = raw.encode().len() as u64;
        let with_partials = partial_groups(plan, groups).map(|groups| Shipment {
            device: self.device.clone(),
            seq,
            body: Body::Data { window, raw_bytes: raw_len, groups },
        });
        let chosen = match with_partials {
            Some(p) if (p.encode().len() as u64) < raw_len => {
                self.counts.partial_windows += 1;
                p
            }
            _ => {
                self.counts.raw_windows += 1;
                let Body::Data { groups, .. } = raw.body else { return None };
                Shipment { body: Body::Data { window, raw_bytes: raw_len, groups }, ..raw }
            }
        };
        self.counts.windows += 1;
        self.counts.raw_bytes += raw_len;
        self.counts.shipped_bytes += chosen.encode().len() as u64;
        Some(chosen)
    }

    /// The end of the window open now, if any.
    pub fn open_end(&self, plan: &Plan) -> Option<u64> {
        self.open.as_ref().map(|(w, _)| w.saturating_add(plan.routing.window_ms as u64))
    }
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
fn synopsis_ids(plan: &Plan, g: u32) -> Vec<SynId> {
    plan.routing.groups[g as usize]
        .synopses
        .iter()
        .map(|&s| &plan.routing.synopses[s as usize])
        .filter(|s| !s.is_deleted())
        .map(|s| SynId {
            dataset: s.dataset.clone(),
            stream: s.stream.clone(),
            field: s.field.clone(),
            synopsis_id: s.synopsis_id,
            params: serde_json::to_string(&s.params).unwrap_or_default(),
        })
        .collect()
}

fn raw_groups(plan: &Plan, groups: &BTreeMap<u32, Vec<RawValue>>) -> Vec<GroupShip> {
    groups
        .iter()
        .map(|(&g, values)| GroupShip { synopses: synopsis_ids(plan, g), data: GroupData::Raw(values.clone()) })
        .filter(|g| !g.synopses.is_empty())
        .collect()
}

/// True when group `g`'s synopses can be shipped as partials (their merge is exact).
fn mergeable(plan: &Plan, g: u32) -> bool {
    let group = &plan.routing.groups[g as usize];
    matches!(group.mode, Mode::Owned | Mode::Exact { .. })
        && !group.ordered
        && group.synopses.iter().all(|&s| plan.routing.synopses[s as usize].kind.merges_exactly())
}

/// The groups with partials where they merge exactly, raw elsewhere; `None` when no group can.
fn partial_groups(plan: &Plan, groups: &BTreeMap<u32, Vec<RawValue>>) -> Option<Vec<GroupShip>> {
    if !groups.keys().any(|&g| mergeable(plan, g)) {
        return None;
    }
    let mut out = Vec::with_capacity(groups.len());
    for (&g, values) in groups {
        let synopses = synopsis_ids(plan, g);
        if synopses.is_empty() {
            continue;
        }
        if !mergeable(plan, g) {
            out.push(GroupShip { synopses, data: GroupData::Raw(values.clone()) });
            continue;
        }
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
        out.push(GroupShip { synopses, data: GroupData::Partials { items: values.len() as u64, parts } });
    }
    Some(out)
}
