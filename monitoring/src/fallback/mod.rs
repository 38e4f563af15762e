//! Never more words than forwarding the items: each site either forwards its items to the root
//! or runs the protocol, whichever its last period measured as cheaper.
//!
//! # The rule (per site, decided by the site alone)
//! Time is cut into periods of length `P` ([`FallbackPolicy::period`], default `W`: forward/backward sends its backward part once per phase of `W − τ`, so a shorter period could miss it). In each
//! period the site counts `F` = the words forwarding its arrivals costs (what the naive
//! baseline charges: 1 word an item, 2 with tardiness) and `A` = the words of its protocol
//! instance: the running instance's messages while it runs the protocol, or a *shadow*
//! instance's (fed the same items since the last switch, its messages counted and dropped)
//! while it forwards. At the first event of a new period, if the period before ran entirely in
//! the current mode (hysteresis: a switch is never judged on a partial period):
//! * forwarding → protocol when `A·(1 + m_on) < F`, the instance it left (if any) has drained,
//!   the shadow has run a full window before the period (a young instance sees no expiries and
//!   looks cheap), and over the shadow's whole life its words plus those of its first `W` once
//!   more, times `1 + m_on`, are below the forwarding words of that time: a fresh instance pays
//!   a ramp like the shadow's first `W` and, when left, a drain of about the same, and the
//!   shadow's life spans the stream's daily cycles of filling and emptying windows;
//! * protocol → forwarding when `A > F·(1 + m_off)`;
//!
//! with margins `m_on` ([`FallbackPolicy::margin`], default 2) and `m_off` ([`FallbackPolicy::margin_off`], default 0.25). A switch costs 1 word
//! ([`SiteMessage::StartProtocol`], [`SiteMessage::StartForwarding`]), and the words a fresh
//! instance spends catching up and a former instance spends draining are counted like any other
//! protocol message. A site starts by forwarding (an empty window costs nothing to forward).
//! The decision is per site because sites differ in rate, and needs no message from the root.
//!
//! # Why the guarantee holds across switches
//! Split each site's items by *arrival time* into epochs between its switches. A protocol epoch
//! is run by its own instance, which only ever sees that epoch's items; a forwarding epoch's
//! items are all at the root, exactly, with their stamps. So at any time the window is the
//! disjoint union of (a) the exactly held forwarded items of the last `W` ([`ExactWindow`]) and
//! (b) at most one instance per site: the running one, or the one it left while it drains.
//! An instance left at time `T` holds items that arrived by `T`, so stamped `≤ T`; they have
//! all expired at `T + W`, when both the site and the root drop it (the root resets its part,
//! `Root::reset_site`), and only after that may the site start a fresh one — hence one slot per
//! site at the root and no epoch tag on the wire.
//!
//! Every guarantee of the protocol is proved per site with an error relative to that site's own
//! window count (crate docs, *Error budget*), and nothing in a site's thresholds depends on
//! `k`; an instance is a site whose stream is its epoch's items. Treat each instance as a
//! virtual site and each forwarded item as a virtual site with zero error:
//! * counts: `|ĉ − c| ≤ Σ_inst ε·c_inst ≤ ε·c`;
//! * item counts: `|ĉ_j − c_j| ≤ Σ_inst ε·c_inst ≤ ε·c`;
//! * frequent items: the count half's error is at most `ε_c·c` and the item half's `ε_a·c`
//!   (sums over instances), which is all the seed's proof of both directions uses
//!   ([`crate::Config::frequent_count_epsilon`]);
//! * quantiles: each forwarded copy weighs 2 half items at its own value, so its
//!   `a_σ = b_σ = 0` (crate docs, *Quantiles*): the per-site terms only get smaller.
//!
//! A switch therefore never costs accuracy; it costs words (the switch, a drain, a ramp) and,
//! while a site forwards, the root's memory: [`ExactWindow`] holds every forwarded item of the
//! last `W`, up to the forwarding sites' rate × `W` — the price of forwarding, where the
//! protocol would hold `O((1/ε)·log n)` words per site. The site keeps up to two instances
//! (draining and shadow), at most twice a protocol site's memory.
//!
//! # Bad input at the root
//! [`Coordinator::receive`] refuses, counts ([`Refused`]) and reports: a site id out of range,
//! a replayed sequence number, a message sent earlier than one already applied, a forwarded item
//! stamped outside `[send time − τ, send time]`, a message the site's mode does not allow. A
//! sequence gap means lost messages: the root then refuses to answer rather than answer wrong.
//!
//! # Cost, not a bound
//! The rule compares measured words, so a period whose arrivals are few but whose expiries
//! are many can cost more than forwarding before the site switches; the bound on the whole run
//! is measured (`monitor-sim`, `scripts/monitor-table.sh`), not proved.

mod coordinator;
mod exact;
mod site;
mod wire;

pub use coordinator::{Coordinator, Refused};
pub use exact::ExactWindow;
pub use site::{FallbackSite, SiteSwitches};
pub use wire::{Envelope, SiteMessage};

use crate::config::Config;
use crate::error::MonitorError;

/// What a site does with its items now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Mode {
    /// Every item goes to the root.
    Forwarding,
    /// The protocol's instance reports.
    Protocol,
}

/// When sites switch (module docs).
///
/// ```
/// use saams_monitoring::fallback::FallbackPolicy;
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(4, 1000, 0, 0.1, Protocol::Seed).unwrap();
/// let p = FallbackPolicy::adaptive(&cfg);
/// assert_eq!(p.period, 1000);
/// assert!(FallbackPolicy { period: 0, ..p }.validate(&cfg).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FallbackPolicy {
    /// Switch per site when measured cheaper; `false`: run the protocol only, never forward.
    pub adaptive: bool,
    /// The period `P` over which the two costs are compared.
    pub period: i64,
    /// The margin `m_on`: the protocol must have cost less than forwarding by the factor
    /// `1 + m_on` for a site to start it.
    pub margin: f64,
    /// The margin `m_off`: the protocol must have cost more than forwarding by the factor
    /// `1 + m_off` for a site to leave it.
    pub margin_off: f64,
}

impl FallbackPolicy {
    /// Switch per site, periods of `W`, margins 2 (to start the protocol) and 0.25 (to leave it).
    pub fn adaptive(cfg: &Config) -> Self {
        FallbackPolicy { adaptive: true, period: cfg.window.max(1), margin: 2.0, margin_off: 0.25 }
    }

    /// The protocol only (the sites never forward): the seed's protocol as it was.
    pub fn protocol_only(cfg: &Config) -> Self {
        FallbackPolicy { adaptive: false, ..FallbackPolicy::adaptive(cfg) }
    }

    /// Check the ranges.
    ///
    /// # Errors
    /// When the period is not positive or the margin is negative or not finite.
    pub fn validate(&self, _cfg: &Config) -> Result<(), MonitorError> {
        if self.period <= 0 {
            return Err(MonitorError::BadParameter(format!("fallback period must be positive, got {}", self.period)));
        }
        for m in [self.margin, self.margin_off] {
            if !(m >= 0.0 && m.is_finite()) {
                return Err(MonitorError::BadParameter(format!("fallback margins must be ≥ 0, got {m}")));
            }
        }
        Ok(())
    }

    /// The mode every site starts in: forwarding when adaptive.
    pub fn first_mode(&self) -> Mode {
        if self.adaptive { Mode::Forwarding } else { Mode::Protocol }
    }
}
