//! The shipments of a window's resident groups ([`super::resident`]) at its close: each group in
//! the form its byte budget chooses ([`super::budget`]) — its query views, its raw values or its
//! whole states — packed into records of at most [`GROUPS_PER_SHIPMENT`] groups that stay under
//! [`MAX_RECORD_BYTES`].

use std::collections::BTreeMap;

use saams_operators::Plan;

use super::budget::{Form, GroupBudget};
use super::device::{DeviceWindows, MAX_RECORD_BYTES, Wholes, raw_groups, synopsis_ids};
use super::shipment::{Body, GroupData, GroupShip, RawValue, Shipment};

/// Groups per shipment at most (a view takes a few hundred bytes).
const GROUPS_PER_SHIPMENT: usize = 1000;

impl DeviceWindows {
    /// The shipments of the resident groups at `window`'s close (none without values), each
    /// group in the form its budget chooses ([`GroupBudget::take`]); `wholes`: their states and
    /// views as fed.
    pub(super) fn ship_resident(
        &mut self,
        plan: &Plan,
        window: u64,
        groups: &BTreeMap<u32, Vec<RawValue>>,
        wholes: &Wholes,
    ) -> Vec<Shipment> {
        if groups.is_empty() {
            return Vec::new();
        }
        let raw = Shipment {
            device: self.device_id().to_string(),
            seq: 0,
            body: Body::Data { window, raw_bytes: 0, groups: raw_groups(plan, groups), through: None },
        };
        let raw_len = raw.encode().len() as u64;
        let (mut chosen, mut summarized) = (Vec::with_capacity(groups.len()), false);
        // The device's savings and the switches back they must cover, kept as groups choose.
        let mut saved: i64 = self.budgets.values().map(|b| b.saved).sum();
        let mut reserved: i64 = self.budgets.values().map(|b| b.reserve as i64).sum();
        for (&g, values) in groups {
            let Some(kept) = wholes.get(&g) else { continue };
            let Some(views) = &kept.views else { continue };
            let synopses = synopsis_ids(plan, g);
            let (items, period_items) = (kept.items, kept.period_items);
            let raw = GroupShip { synopses: synopses.clone(), data: GroupData::Raw(values.clone()) };
            let states = kept.states.clone();
            let whole =
                GroupShip { synopses: synopses.clone(), data: GroupData::Whole { items, period_items, states } };
            let views = views.clone();
            let view = GroupShip { synopses, data: GroupData::View { items, period_items, views } };
            let costs = (raw.encoded_len(window), whole.encoded_len(window), view.encoded_len(window));
            let costs = (costs.0 as u64, costs.1 as u64, costs.2 as u64);
            let budget = self.budgets.entry(g).or_insert(GroupBudget { group: g, ..GroupBudget::default() });
            let (was_saved, was_reserved) = (budget.saved, budget.reserve as i64);
            let spare = saved - (reserved - was_reserved);
            let form = budget.take(kept.fresh, spare, costs);
            saved += budget.saved - was_saved;
            reserved += budget.reserve as i64 - was_reserved;
            summarized |= form != Form::Raw;
            chosen.push(match form {
                Form::Raw => {
                    self.counts.resident_raw_groups += 1;
                    raw
                }
                Form::Whole => {
                    self.counts.whole_groups += 1;
                    whole
                }
                Form::View => {
                    self.counts.view_groups += 1;
                    view
                }
            });
        }
        let device = self.device_id().to_string();
        let out = resident_shipments(&device, &mut self.ship_seq, window, chosen, raw_len);
        self.counts.windows += out.len() as u64;
        if summarized {
            self.counts.partial_windows += out.len() as u64;
        } else {
            self.counts.raw_windows += out.len() as u64;
        }
        self.counts.raw_bytes += raw_len;
        self.counts.shipped_bytes += out.iter().map(|s| s.encode().len() as u64).sum::<u64>();
        out
    }

    /// The resident groups' budgets, in group order (what the state file records).
    pub fn budgets(&self) -> Vec<GroupBudget> {
        self.budgets.values().copied().collect()
    }
}

/// The shipments of resident `groups` in `window` from `device` (each in the form its budget
/// chose, [`super::budget`]), numbered from `*seq` on, each stating its share of `raw_bytes`,
/// what the same values cost raw. A shipment holds at most [`GROUPS_PER_SHIPMENT`] groups and
/// stays under [`MAX_RECORD_BYTES`] unless one group alone is over it.
pub fn resident_shipments(
    device: &str,
    seq: &mut u64,
    window: u64,
    groups: Vec<GroupShip>,
    raw_bytes: u64,
) -> Vec<Shipment> {
    let mut chunks: Vec<Vec<GroupShip>> = Vec::new();
    let mut bytes = 0u64;
    for g in groups {
        let len = g.encoded_len(window) as u64;
        match chunks.last_mut() {
            Some(chunk) if chunk.len() < GROUPS_PER_SHIPMENT && bytes + len <= MAX_RECORD_BYTES => {
                bytes += len;
                chunk.push(g);
            }
            _ => {
                bytes = len;
                chunks.push(vec![g]);
            }
        }
    }
    let n = chunks.len() as u64;
    let mut out = Vec::with_capacity(chunks.len());
    for (i, chunk) in chunks.into_iter().enumerate() {
        // The raw cost split over the chunks, the last taking the remainder.
        let share = if i as u64 + 1 == n { raw_bytes - raw_bytes / n * (n - 1) } else { raw_bytes / n };
        out.push(Shipment {
            device: device.to_string(),
            seq: *seq,
            body: Body::Data { window, raw_bytes: share, groups: chunk, through: None },
        });
        *seq += 1;
    }
    out
}
