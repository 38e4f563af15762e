//! The form a resident group ([`super::resident`]) takes at each window's close: its raw values,
//! its whole states or its query views — chosen so that a resident device never ships more than
//! the raw values would cost, up to one window's growth of a state.
//!
//! Why a budget and not a per-window minimum: the cloud can feed raw values only into a real
//! state, and once it holds a view (a *stale* copy) it can take only views, or a whole state
//! that makes its copy current again. So a view is worth shipping only when the bytes it saves,
//! with those saved before, pay for the whole state a later switch back costs. Per group the
//! device keeps ([`GroupBudget`]) whether the cloud's copy is stale and `saved`, the sum over
//! windows of the raw bytes less the bytes shipped; at a window's close ([`choose`]):
//!
//! - the view when `saved + raw − view ≥ whole`, whatever the cloud holds;
//! - else, the cloud's copy current: the smaller of raw and whole (as `--sole-reader` ships);
//! - else (stale): the whole state, which makes it current again.
//!
//! A group every synopsis of which starts the window from its constructed state (a tumbling
//! window's new period) is current whatever the cloud held: the cloud's copy was reset too.
//! Every group starts current (the cloud holds the constructed states).
//!
//! ```
//! use saams_jobs::edge::budget::{Form, GroupBudget};
//! let mut b = GroupBudget::default();
//! // Few values: raw is smaller than the whole state, and a view would not pay it back.
//! assert_eq!(b.take(false, (40, 300, 250)), Form::Raw);
//! // Many: the view saves enough to pay for a whole state later.
//! assert_eq!(b.take(false, (9_000, 2_000, 250)), Form::View);
//! assert!(b.stale && b.saved == 8_750);
//! // Few again: views while the savings last, then the whole state.
//! assert_eq!(b.take(false, (40, 2_000, 250)), Form::View);
//! assert_eq!(b.saved, 8_540);
//! let mut low = GroupBudget { stale: true, saved: 100, ..b };
//! assert_eq!(low.take(false, (40, 2_000, 250)), Form::Whole);
//! assert!(!low.stale && low.saved == 100 + 40 - 2_000);
//! ```

use std::collections::BTreeMap;

use saams_operators::Plan;
use serde::{Deserialize, Serialize};

use super::device::{DeviceWindows, Wholes, raw_groups, synopsis_ids};
use super::resident::resident_shipments;
use super::shipment::{Body, GroupData, GroupShip, RawValue, Shipment};

/// What the cloud holds of one resident group, and what shipping it saved against raw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupBudget {
    /// The update group (its index in the device's plan).
    pub group: u32,
    /// The cloud holds query views of it (it cannot feed raw values into them).
    pub stale: bool,
    /// Raw bytes less shipped bytes, summed over the windows shipped.
    pub saved: i64,
}

/// What a resident group ships in one window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Its raw values (the cloud feeds them to its state).
    Raw,
    /// Its whole states (the cloud installs them).
    Whole,
    /// Its query views (the cloud holds them in place of the states).
    View,
}

/// The form a group takes, given what the cloud holds (`stale`), the bytes saved so far and
/// this window's `(raw, whole, view)` costs.
pub fn choose(stale: bool, saved: i64, (raw, whole, view): (u64, u64, u64)) -> Form {
    let [raw, whole, view] = [raw, whole, view].map(|b| i64::try_from(b).unwrap_or(i64::MAX));
    if saved.saturating_add(raw).saturating_sub(view) >= whole {
        Form::View
    } else if !stale && raw <= whole {
        Form::Raw
    } else {
        Form::Whole
    }
}

impl GroupBudget {
    /// Choose this window's form ([`choose`]; `fresh`: the cloud's copy starts the window from
    /// its constructed states) and count it.
    pub fn take(&mut self, fresh: bool, costs: (u64, u64, u64)) -> Form {
        if fresh {
            self.stale = false;
        }
        let form = choose(self.stale, self.saved, costs);
        let shipped = match form {
            Form::Raw => costs.0,
            Form::Whole => costs.1,
            Form::View => costs.2,
        };
        self.saved = self.saved.saturating_add(costs.0 as i64 - shipped as i64);
        self.stale = form == Form::View;
        form
    }
}

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
            body: Body::Data { window, raw_bytes: 0, groups: raw_groups(plan, groups) },
        };
        let raw_len = raw.encode().len() as u64;
        let (mut chosen, mut summarized) = (Vec::with_capacity(groups.len()), false);
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
            let form = budget.take(kept.fresh, costs);
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
