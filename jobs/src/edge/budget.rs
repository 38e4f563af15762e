//! The form a resident group ([`super::resident`]) takes at each window's close: its raw values,
//! its whole states or its query views — chosen so that a resident device never ships more than
//! the raw values would cost, up to one window's growth of a state.
//!
//! Why a budget and not a per-window minimum: the cloud can feed raw values only into a real
//! state, and once it holds a view (a *stale* copy) it can take only views, or a whole state
//! that makes its copy current again. So a view is worth shipping only when the bytes saved pay
//! for the whole states the switches back would cost. Per group the device keeps
//! ([`GroupBudget`]) whether the cloud's copy is stale, `saved` — the sum over windows of the
//! raw bytes less the bytes shipped — and `reserve`, the whole state's bytes when it last
//! shipped a view (what its switch back costs; none when current). The savings are pooled over
//! the device's groups: a fast stream's views pay for a slow one's switch back. At a window's
//! close, with `spare` the device's savings less the other groups' reserves ([`choose`]):
//!
//! - the view when `spare + raw − view ≥ whole`, whatever the cloud holds;
//! - else, the cloud's copy current: the smaller of raw and whole (as `--sole-reader` ships);
//! - else (stale): the whole state, which makes it current again.
//!
//! So the savings always cover the reserves after a view, and the device's shipments never
//! exceed its raw values by more than the growth of the states since their last views.
//!
//! A group every synopsis of which starts the window from its constructed state (a tumbling
//! window's new period) is current whatever the cloud held: the cloud's copy was reset too.
//! Every group starts current (the cloud holds the constructed states).
//!
//! ```
//! use saams_jobs::edge::budget::{Form, GroupBudget};
//! let mut b = GroupBudget::default();
//! // Few values: raw is smaller than the whole state, and a view would not pay it back.
//! assert_eq!(b.take(false, 0, (40, 300, 250)), Form::Raw);
//! // Many: the view saves enough to pay for a whole state later, which it reserves.
//! assert_eq!(b.take(false, 0, (9_000, 2_000, 250)), Form::View);
//! assert!(b.stale && b.saved == 8_750 && b.reserve == 2_000);
//! // Few again: views while the savings last, then the whole state.
//! assert_eq!(b.take(false, b.saved, (40, 2_000, 250)), Form::View);
//! assert_eq!(b.saved, 8_540);
//! let mut low = GroupBudget { stale: true, saved: 100, ..b };
//! assert_eq!(low.take(false, low.saved, (40, 2_000, 250)), Form::Whole);
//! assert!(!low.stale && low.saved == 100 + 40 - 2_000 && low.reserve == 0);
//! // Another group's savings pay for a view (its reserve left out of the spare bytes).
//! assert_eq!(GroupBudget::default().take(false, 5_000, (300, 2_000, 250)), Form::View);
//! ```

use serde::{Deserialize, Serialize};

/// What the cloud holds of one resident group, and what shipping it saved against raw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupBudget {
    /// The update group (its index in the device's plan).
    pub group: u32,
    /// The cloud holds query views of it (it cannot feed raw values into them).
    pub stale: bool,
    /// Raw bytes less shipped bytes, summed over the windows shipped.
    pub saved: i64,
    /// The bytes of its whole state when it last shipped a view: what its switch back costs
    /// (0 when the cloud's copy is current).
    #[serde(default)]
    pub reserve: u64,
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

/// The form a group takes, given what the cloud holds (`stale`), the bytes saved so far that
/// no other group's switch back needs (`spare`) and this window's `(raw, whole, view)` costs.
pub fn choose(stale: bool, spare: i64, (raw, whole, view): (u64, u64, u64)) -> Form {
    let [raw, whole, view] = [raw, whole, view].map(|b| i64::try_from(b).unwrap_or(i64::MAX));
    if spare.saturating_add(raw).saturating_sub(view) >= whole {
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
    pub fn take(&mut self, fresh: bool, spare: i64, costs: (u64, u64, u64)) -> Form {
        if fresh {
            (self.stale, self.reserve) = (false, 0);
        }
        let form = choose(self.stale, spare, costs);
        let shipped = match form {
            Form::Raw => costs.0,
            Form::Whole => costs.1,
            Form::View => costs.2,
        };
        self.saved = self.saved.saturating_add(costs.0 as i64 - shipped as i64);
        self.stale = form == Form::View;
        self.reserve = if self.stale { costs.1 } else { 0 };
        form
    }
}
