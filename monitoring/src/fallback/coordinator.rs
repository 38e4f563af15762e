//! The root of fallback sites: a protocol [`Root`] for the sites' instances plus the exact
//! window of the forwarded items; answers add the two (module docs of [`crate::fallback`]).

use std::collections::HashMap;

use crate::config::Config;
use crate::error::MonitorError;
use crate::fallback::exact::ExactWindow;
use crate::fallback::wire::{Envelope, SiteMessage};
use crate::fallback::{FallbackPolicy, Mode};
use crate::message::Channel;
use crate::root::{Root, frequent_over, quantile_of};

/// What the root knows of one site.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct SiteView {
    mode: Mode,
    /// While forwarding: when the site switched, if its former instance may still hold items.
    draining_since: Option<i64>,
    next_seq: u64,
    last_time: i64,
    /// A message was missing (a sequence gap): the root can no longer vouch for its answers.
    lost: bool,
}

/// Messages the root refused, by reason (each also returned as an error).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Refused {
    /// From a site id out of range.
    pub unknown_site: u64,
    /// A sequence number already seen (a replay or a duplicate).
    pub replayed: u64,
    /// A sequence number past the next one: messages were lost; answers are refused from then on.
    pub gaps: u64,
    /// Sent earlier than a message of the same site already applied.
    pub reordered: u64,
    /// A forwarded item stamped outside `[send time − τ, send time]`, i.e. older than the
    /// window plus tardiness allows or from the future.
    pub stale_items: u64,
    /// A message the site's mode does not allow (an item while it runs the protocol, a
    /// protocol message with no instance, a switch to the mode it is in).
    pub out_of_mode: u64,
}

impl Refused {
    /// All refused messages.
    pub fn total(&self) -> u64 {
        self.unknown_site + self.replayed + self.gaps + self.reordered + self.stale_items + self.out_of_mode
    }
}

/// The coordinator: feed it every site's envelopes with [`Coordinator::receive`]; it answers
/// at any time from them alone, with the protocol's guarantees (module docs).
///
/// ```
/// use saams_monitoring::fallback::{Coordinator, Envelope, FallbackPolicy, SiteMessage};
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(2, 100, 0, 0.1, Protocol::Seed).unwrap();
/// let mut root = Coordinator::new(cfg, FallbackPolicy::adaptive(&cfg));
/// let item = |seq, time, item| Envelope { site: 0, seq, time, message: SiteMessage::Item { item } };
/// root.receive(&item(0, 5, 7)).unwrap();
/// assert!(root.receive(&item(0, 5, 7)).is_err()); // a replay is refused and counted
/// assert!(root.receive(&Envelope { site: 9, ..item(1, 6, 7) }).is_err());
/// assert_eq!(root.refused().total(), 2);
/// assert_eq!(root.count(6).unwrap(), 1);
/// assert_eq!(root.count(105).unwrap(), 0);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Coordinator {
    cfg: Config,
    root: Root,
    sites: Vec<SiteView>,
    exact: ExactWindow,
    refused: Refused,
    now: i64,
}

impl Coordinator {
    /// A root for `cfg.sites` fallback sites running `policy`.
    pub fn new(cfg: Config, policy: FallbackPolicy) -> Self {
        let view =
            SiteView { mode: policy.first_mode(), draining_since: None, next_seq: 0, last_time: i64::MIN, lost: false };
        Coordinator {
            cfg,
            root: Root::new(cfg),
            sites: vec![view; cfg.sites],
            exact: ExactWindow::new(cfg.window),
            refused: Refused::default(),
            now: i64::MIN,
        }
    }

    /// Apply one envelope.
    ///
    /// # Errors
    /// [`MonitorError::BadInput`] (and a count in [`Coordinator::refused`]) for a site out of
    /// range, a replayed or reordered message, a sequence gap (the message is applied, but
    /// answers are refused from then on), a forwarded item outside the tardiness, or a message
    /// the site's mode does not allow. A refused message changes nothing else.
    pub fn receive(&mut self, e: &Envelope) -> Result<(), MonitorError> {
        let site = e.site as usize;
        let Some(view) = self.sites.get_mut(site) else {
            self.refused.unknown_site += 1;
            return Err(MonitorError::BadInput(format!("message from unknown site {site} of {}", self.cfg.sites)));
        };
        if e.seq < view.next_seq {
            self.refused.replayed += 1;
            return Err(MonitorError::BadInput(format!(
                "site {site}: message {} replayed (next is {})",
                e.seq, view.next_seq
            )));
        }
        if e.time < view.last_time {
            self.refused.reordered += 1;
            return Err(MonitorError::BadInput(format!(
                "site {site}: message sent at {} after one sent at {}",
                e.time, view.last_time
            )));
        }
        let (tau, window) = (self.cfg.tardiness, self.cfg.window);
        let draining = view.draining_since.is_some_and(|since| e.time < since.saturating_add(window));
        let allowed = match (&e.message, view.mode) {
            (SiteMessage::Protocol(_), Mode::Protocol) => true,
            (SiteMessage::Protocol(_), Mode::Forwarding) => draining,
            (SiteMessage::Item { .. }, Mode::Forwarding) => tau == 0,
            (SiteMessage::StampedItem { .. }, Mode::Forwarding) => true,
            (SiteMessage::StartProtocol, Mode::Forwarding) => !draining,
            (SiteMessage::StartForwarding, Mode::Protocol) => true,
            _ => false,
        };
        if !allowed {
            self.refused.out_of_mode += 1;
            return Err(MonitorError::BadInput(format!(
                "site {site}: {:?} not allowed while {:?}{}",
                e.message,
                view.mode,
                if draining { " with a draining instance" } else { "" }
            )));
        }
        if let SiteMessage::StampedItem { stamp, .. } = e.message
            && !(e.time - tau..=e.time).contains(&stamp)
        {
            self.refused.stale_items += 1;
            return Err(MonitorError::BadInput(format!(
                "site {site}: item stamped {stamp} sent at {} breaks the tardiness {tau}",
                e.time
            )));
        }
        let expected = view.next_seq;
        let gap = e.seq > expected;
        view.next_seq = e.seq + 1;
        view.last_time = e.time;
        match &e.message {
            SiteMessage::Protocol(m) => self.root.receive(site, e.time, m)?,
            SiteMessage::Item { item } => self.exact.insert(e.time, *item),
            SiteMessage::StampedItem { stamp, item } => self.exact.insert(*stamp, *item),
            SiteMessage::StartProtocol => {
                self.root.reset_site(site);
                view.mode = Mode::Protocol;
                view.draining_since = None;
            }
            SiteMessage::StartForwarding => {
                view.mode = Mode::Forwarding;
                view.draining_since = Some(e.time);
            }
        }
        if gap {
            view.lost = true;
            self.refused.gaps += 1;
            return Err(MonitorError::BadInput(format!(
                "site {site}: messages {expected}..{} lost; answers are refused from now on",
                e.seq
            )));
        }
        Ok(())
    }

    /// Bring the exact window and the drained instances to `now`.
    fn advance(&mut self, now: i64) -> Result<(), MonitorError> {
        if let Some(view) = self.sites.iter().position(|v| v.lost) {
            return Err(MonitorError::BadInput(format!("site {view} lost messages: no answer can be guaranteed")));
        }
        if now < self.now {
            return Err(MonitorError::BadInput(format!("asked at {now} after answering at {}", self.now)));
        }
        self.now = now;
        self.exact.expire(now);
        for (site, view) in self.sites.iter_mut().enumerate() {
            if view.draining_since.is_some_and(|since| now >= since.saturating_add(self.cfg.window)) {
                view.draining_since = None;
                self.root.reset_site(site);
            }
        }
        Ok(())
    }

    /// Basic counting at `now`: within `ε·c`.
    ///
    /// # Errors
    /// When `now` is earlier than a previous answer's time or a site lost messages.
    pub fn count(&mut self, now: i64) -> Result<u64, MonitorError> {
        self.advance(now)?;
        Ok(self.root.count(now) + self.exact.total())
    }

    /// Every item with a nonzero estimate on `channel` ([`Channel::Items`] or
    /// [`Channel::FrequentItems`]) at `now`.
    ///
    /// # Errors
    /// As [`Coordinator::count`].
    pub fn item_estimates(&mut self, channel: Channel, now: i64) -> Result<HashMap<u64, u64>, MonitorError> {
        self.advance(now)?;
        let mut out = self.root.item_estimates(channel, now);
        for (item, copies) in self.exact.values() {
            *out.entry(item).or_insert(0) += copies;
        }
        Ok(out)
    }

    /// Approximate counting: the estimated window count of `item` at `now`, within `ε·c`.
    ///
    /// # Errors
    /// As [`Coordinator::count`].
    pub fn item_count(&mut self, item: u64, now: i64) -> Result<u64, MonitorError> {
        Ok(self.item_estimates(Channel::Items, now)?.get(&item).copied().unwrap_or(0))
    }

    /// Frequent items at `phi`: every item with `c_j ≥ φc` and none with `c_j < (φ − ε)c`,
    /// ascending (the seed's rule over the protocol's and the exact counts together).
    ///
    /// # Errors
    /// As [`Coordinator::count`], and when `phi` is not in `(ε/2, 1]`.
    pub fn frequent(&mut self, phi: f64, now: i64) -> Result<Vec<u64>, MonitorError> {
        let eps = self.cfg.epsilon;
        if !(phi > eps / 2.0 && phi <= 1.0) {
            return Err(MonitorError::BadParameter(format!("phi must be in (ε/2, 1] = ({}, 1], got {phi}", eps / 2.0)));
        }
        self.advance(now)?;
        let total = self.root.total(Channel::FrequentTotal, now) + self.exact.total();
        Ok(frequent_over(self.item_estimates(Channel::FrequentItems, now)?, total, phi, eps))
    }

    /// Quantiles: an item whose rank is within `(φ ± ε)c` at `now`; `None` when the window is
    /// empty. Forwarded items weigh 2 (the protocol's weights are in half items).
    ///
    /// # Errors
    /// As [`Coordinator::count`], and when `phi` is not in `[0, 1]`.
    pub fn quantile(&mut self, phi: f64, now: i64) -> Result<Option<u64>, MonitorError> {
        if !(0.0..=1.0).contains(&phi) {
            return Err(MonitorError::BadParameter(format!("phi must be in [0, 1], got {phi}")));
        }
        self.advance(now)?;
        let mut all: Vec<(u64, u64)> = self.root.quantile_weights().collect();
        all.extend(self.exact.values().map(|(v, c)| (v, 2 * c)));
        Ok(quantile_of(all, phi))
    }

    /// Messages refused so far, by reason.
    pub fn refused(&self) -> Refused {
        self.refused
    }

    /// Sites forwarding now.
    pub fn forwarding_sites(&self) -> usize {
        self.sites.iter().filter(|v| v.mode == Mode::Forwarding).count()
    }

    /// Forwarded items the root holds (the memory forwarding costs the root).
    pub fn exact_items(&self) -> u64 {
        self.exact.total()
    }
}
