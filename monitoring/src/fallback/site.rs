//! The fallback site: forwards its items or runs a protocol instance, whichever its last full
//! period measured as cheaper by the policy's margin (module docs of [`crate::fallback`]).

use crate::config::Config;
use crate::error::MonitorError;
use crate::fallback::wire::{Envelope, SiteMessage};
use crate::fallback::{FallbackPolicy, Mode};
use crate::site::{Site, SiteMemory};

/// How often a site switched and how its items went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SiteSwitches {
    /// Switches from forwarding to the protocol.
    pub to_protocol: u64,
    /// Switches from the protocol to forwarding.
    pub to_forwarding: u64,
    /// Items that arrived while the site forwarded.
    pub forwarded_items: u64,
    /// Items that arrived while the site ran the protocol.
    pub protocol_items: u64,
}

/// What the shadow instance cost over its life, against forwarding over the same time.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct ShadowLife {
    words: u64,
    ramp: u64,
    forwarded: u64,
}

/// One remote site with the forwarding fallback: feed it arrivals with [`FallbackSite::insert`]
/// and call [`FallbackSite::advance`] after arrivals and at every time it asks for
/// ([`FallbackSite::next_due`]); it returns the enveloped messages for the root.
///
/// ```
/// use saams_monitoring::fallback::{Coordinator, FallbackPolicy, FallbackSite};
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(1, 100, 0, 0.1, Protocol::Seed).unwrap();
/// let policy = FallbackPolicy::adaptive(&cfg);
/// let mut site = FallbackSite::new(cfg, policy, 0).unwrap();
/// let mut root = Coordinator::new(cfg, policy);
/// for t in 0..50 {
///     site.insert(t, t, (t % 3) as u64).unwrap();
///     for e in site.advance(t).unwrap() {
///         root.receive(&e).unwrap();
///     }
/// }
/// assert_eq!(root.count(49).unwrap(), 50); // forwarded: exact
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FallbackSite {
    cfg: Config,
    policy: FallbackPolicy,
    id: u32,
    seq: u64,
    now: i64,
    mode: Mode,
    /// The instance the root follows while the site runs the protocol.
    running: Option<Site>,
    /// After a switch to forwarding: the former instance (no new items) and the switch time;
    /// it keeps reporting until its window is empty, `W` later.
    draining: Option<(Site, i64)>,
    /// While forwarding: a protocol instance over the items forwarded since the switch, whose
    /// messages are counted and dropped (what the protocol would cost).
    shadow: Option<Site>,
    /// When the shadow started: it is judged only on periods starting a full window later, once
    /// its items expire too (a young instance sees arrivals only and looks cheap).
    shadow_since: i64,
    /// The shadow's words since it started, those of its first `W` (its ramp, which a fresh
    /// instance pays again, and about what a drain costs at the end), and the forwarding words
    /// over the same time.
    shadow_life: ShadowLife,
    period: Option<i64>,
    /// The current period has run in the current mode from its start.
    full: bool,
    protocol_words: u64,
    forward_words: u64,
    switches: SiteSwitches,
    outbox: Vec<Envelope>,
}

impl FallbackSite {
    /// Site `id` of `cfg.sites`, starting in the policy's first mode.
    ///
    /// # Errors
    /// When the configuration or the policy is invalid, or `id` is out of range.
    pub fn new(cfg: Config, policy: FallbackPolicy, id: usize) -> Result<Self, MonitorError> {
        cfg.validate()?;
        policy.validate(&cfg)?;
        if id >= cfg.sites {
            return Err(MonitorError::BadParameter(format!("site {id} out of range 0..{}", cfg.sites)));
        }
        let mode = policy.first_mode();
        let (running, shadow) = match mode {
            Mode::Protocol => (Some(Site::new(cfg)?), None),
            Mode::Forwarding => (None, Some(Site::new(cfg)?)),
        };
        Ok(FallbackSite {
            cfg,
            policy,
            id: id as u32,
            seq: 0,
            now: i64::MIN,
            mode,
            running,
            draining: None,
            shadow,
            shadow_since: i64::MIN,
            shadow_life: ShadowLife::default(),
            period: None,
            full: false,
            protocol_words: 0,
            forward_words: 0,
            switches: SiteSwitches::default(),
            outbox: Vec::new(),
        })
    }

    fn send(&mut self, message: SiteMessage) {
        self.outbox.push(Envelope { site: self.id, seq: self.seq, time: self.now, message });
        self.seq += 1;
    }

    /// The words forwarding one item costs: the item, and its stamp when items may be late.
    fn item_words(&self) -> u64 {
        if self.cfg.tardiness > 0 { 2 } else { 1 }
    }

    fn check_time(&self, now: i64) -> Result<(), MonitorError> {
        if now < self.now {
            return Err(MonitorError::BadInput(format!("time ran backwards: {now} after {}", self.now)));
        }
        Ok(())
    }

    /// An item stamped `stamp` arrives at `now`.
    ///
    /// # Errors
    /// When time runs backwards or the stamp breaks the tardiness.
    pub fn insert(&mut self, now: i64, stamp: i64, item: u64) -> Result<(), MonitorError> {
        self.check_time(now)?;
        if stamp > now || stamp < now - self.cfg.tardiness {
            return Err(MonitorError::BadInput(format!(
                "item stamped {stamp} arriving at {now} breaks the tardiness {}",
                self.cfg.tardiness
            )));
        }
        self.roll(now)?;
        self.now = now;
        self.forward_words += self.item_words();
        self.shadow_life.forwarded += self.item_words();
        match self.mode {
            Mode::Protocol => {
                self.switches.protocol_items += 1;
                self.running.as_mut().expect("a running instance in protocol mode").insert(now, stamp, item)?;
            }
            Mode::Forwarding => {
                self.switches.forwarded_items += 1;
                let message = if self.cfg.tardiness > 0 {
                    SiteMessage::StampedItem { stamp, item }
                } else {
                    SiteMessage::Item { item }
                };
                self.send(message);
                if let Some(shadow) = &mut self.shadow {
                    shadow.insert(now, stamp, item)?;
                }
            }
        }
        Ok(())
    }

    /// Process everything up to `now` and return the messages to send, in order.
    ///
    /// # Errors
    /// When time runs backwards.
    pub fn advance(&mut self, now: i64) -> Result<Vec<Envelope>, MonitorError> {
        self.check_time(now)?;
        self.roll(now)?;
        self.now = now;
        self.drop_drained(now);
        let mut sent = Vec::new();
        if let Some((instance, _)) = &mut self.draining {
            sent.extend(instance.advance(now)?);
        }
        if let Some(instance) = &mut self.running {
            let messages = instance.advance(now)?;
            self.protocol_words += messages.iter().map(|m| m.words()).sum::<u64>();
            sent.extend(messages);
        }
        if let Some(shadow) = &mut self.shadow {
            let words = shadow.advance(now)?.iter().map(|m| m.words()).sum::<u64>();
            self.protocol_words += words;
            self.shadow_life.words += words;
            if now < self.shadow_since.saturating_add(self.cfg.window) {
                self.shadow_life.ramp += words;
            }
        }
        for m in sent {
            self.send(SiteMessage::Protocol(m));
        }
        Ok(std::mem::take(&mut self.outbox))
    }

    /// The drained instance's items have all expired `W` after the switch: drop it (the root
    /// drops its part at the same time).
    fn drop_drained(&mut self, now: i64) {
        if self.draining.as_ref().is_some_and(|&(_, since)| now >= since.saturating_add(self.cfg.window)) {
            self.draining = None;
        }
    }

    /// Close every period that ended before `now`, deciding on the last full one.
    fn roll(&mut self, now: i64) -> Result<(), MonitorError> {
        let p = now.div_euclid(self.policy.period);
        let Some(current) = self.period else {
            self.period = Some(p);
            self.shadow_since = now;
            self.shadow_life = ShadowLife::default();
            return Ok(());
        };
        if p <= current {
            return Ok(());
        }
        let (measured, forwarded, full) = (self.protocol_words, self.forward_words, self.full);
        self.period = Some(p);
        self.protocol_words = 0;
        self.forward_words = 0;
        self.full = true;
        self.now = now;
        if !(self.policy.adaptive && full) {
            return Ok(());
        }
        let margin = 1.0 + self.policy.margin;
        match self.mode {
            Mode::Forwarding => {
                self.drop_drained(now);
                let judged_start = current.saturating_mul(self.policy.period);
                let steady = judged_start >= self.shadow_since.saturating_add(self.cfg.window);
                let life = &self.shadow_life;
                let pays_off = ((life.words + life.ramp) as f64) * margin < life.forwarded as f64;
                if steady && pays_off && self.draining.is_none() && (measured as f64) * margin < forwarded as f64 {
                    self.send(SiteMessage::StartProtocol);
                    self.running = Some(Site::new(self.cfg)?);
                    self.shadow = None;
                    self.mode = Mode::Protocol;
                    self.full = false;
                    self.switches.to_protocol += 1;
                }
            }
            Mode::Protocol => {
                if measured as f64 > forwarded as f64 * (1.0 + self.policy.margin_off) {
                    self.send(SiteMessage::StartForwarding);
                    let instance = self.running.take().expect("a running instance in protocol mode");
                    self.draining = Some((instance, now));
                    self.shadow = Some(Site::new(self.cfg)?);
                    self.shadow_since = now;
                    self.shadow_life = ShadowLife::default();
                    self.mode = Mode::Forwarding;
                    self.full = false;
                    self.switches.to_forwarding += 1;
                }
            }
        }
        Ok(())
    }

    /// The next time the site must be advanced even without arrivals.
    pub fn next_due(&self) -> Option<i64> {
        let drain = self.draining.as_ref().and_then(|(s, _)| s.next_due());
        let running = self.running.as_ref().and_then(Site::next_due);
        let shadow = self.shadow.as_ref().and_then(Site::next_due);
        [drain, running, shadow].into_iter().flatten().min()
    }

    /// Forwarding or running the protocol.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Switches and items by mode so far.
    pub fn switches(&self) -> SiteSwitches {
        self.switches
    }

    /// Memory in words by part, over every instance the site holds (running, draining, shadow).
    pub fn memory(&self) -> SiteMemory {
        let mut m = SiteMemory::default();
        for s in
            [self.running.as_ref(), self.draining.as_ref().map(|(s, _)| s), self.shadow.as_ref()].into_iter().flatten()
        {
            m = m.plus(s.memory());
        }
        m
    }
}
