//! One site of a live run: items buffered until the watermark passes them, then fed to a
//! [`FallbackSite`] at the times the simulator would feed and advance it (module docs of
//! [`crate::live`]).

use std::collections::BTreeMap;

use crate::config::Config;
use crate::error::MonitorError;
use crate::fallback::{Envelope, FallbackPolicy, FallbackSite};

/// A live site: [`LiveSite::push`] its items in any order, [`LiveSite::advance_to`] the
/// watermark, and send the envelopes it returns to the coordinator.
///
/// ```
/// use saams_monitoring::fallback::FallbackPolicy;
/// use saams_monitoring::live::LiveSite;
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(1, 100, 0, 0.1, Protocol::Seed).unwrap();
/// let mut site = LiveSite::new(cfg, FallbackPolicy::adaptive(&cfg), 0).unwrap();
/// site.push(5, 1, 7).unwrap();
/// site.push(3, 0, 7).unwrap();
/// assert!(site.advance_to(3).unwrap().is_empty()); // nothing before 3
/// assert_eq!(site.advance_to(6).unwrap().len(), 2); // forwarded at 3, then at 5
/// assert!(site.push(4, 2, 7).is_err()); // older than what was processed: refused
/// assert_eq!(site.refused_late(), 1);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LiveSite {
    site: FallbackSite,
    /// Items the watermark has not passed: (event time, arrival sequence) → item.
    pending: BTreeMap<(i64, u64), u64>,
    /// Every event before this time has been processed.
    processed_to: i64,
    refused_late: u64,
}

impl LiveSite {
    /// Site `id` of `cfg.sites`, with `policy`.
    ///
    /// # Errors
    /// As [`FallbackSite::new`]; and when the configuration has a tardiness (a live site is
    /// fed in event-time order).
    pub fn new(cfg: Config, policy: FallbackPolicy, id: usize) -> Result<LiveSite, MonitorError> {
        if cfg.tardiness != 0 {
            return Err(MonitorError::BadParameter(format!(
                "a live site is fed in event-time order: tardiness must be 0, got {}",
                cfg.tardiness
            )));
        }
        Ok(LiveSite {
            site: FallbackSite::new(cfg, policy, id)?,
            pending: BTreeMap::new(),
            processed_to: i64::MIN,
            refused_late: 0,
        })
    }

    /// An item stamped `time`, with arrival sequence `seq` (the order among items of one time).
    ///
    /// # Errors
    /// [`MonitorError::BadInput`] (and a count in [`LiveSite::refused_late`]) for an item stamped
    /// before a time already processed, or a sequence number already pending.
    pub fn push(&mut self, time: i64, seq: u64, item: u64) -> Result<(), MonitorError> {
        if time < self.processed_to {
            self.refused_late += 1;
            return Err(MonitorError::BadInput(format!(
                "item stamped {time} arrived after the site processed up to {}: older than the window and tardiness allow",
                self.processed_to
            )));
        }
        if self.pending.insert((time, seq), item).is_some() {
            self.refused_late += 1;
            return Err(MonitorError::BadInput(format!("item {seq} at {time} pushed twice")));
        }
        Ok(())
    }

    /// Process every arrival and every due time before `watermark`, in time order: at each
    /// time, insert its items (in sequence order), then advance. Returns the envelopes to send.
    ///
    /// # Errors
    /// When the site refuses an item (it cannot: [`LiveSite::push`] checked it).
    pub fn advance_to(&mut self, watermark: i64) -> Result<Vec<Envelope>, MonitorError> {
        let mut out = Vec::new();
        loop {
            let arrival = self.pending.first_key_value().map(|(&(t, _), _)| t);
            let t = match (arrival, self.site.next_due()) {
                (Some(a), Some(d)) => a.min(d),
                (Some(a), None) => a,
                (None, Some(d)) => d,
                (None, None) => break,
            };
            if t >= watermark {
                break;
            }
            while let Some(entry) = self.pending.first_entry().filter(|e| e.key().0 == t) {
                let item = entry.remove();
                self.site.insert(t, t, item)?;
            }
            out.extend(self.site.advance(t)?);
        }
        self.processed_to = self.processed_to.max(watermark);
        Ok(out)
    }

    /// The end of the input: process everything left, and every time the site asks for until
    /// its windows are empty.
    ///
    /// # Errors
    /// As [`LiveSite::advance_to`].
    pub fn finish(&mut self) -> Result<Vec<Envelope>, MonitorError> {
        self.advance_to(i64::MAX)
    }

    /// The site as it stands once [`LiveSite::advance_to`] `b`, without the items pushed at or
    /// after `b`: a checkpoint's copy at boundary `b` (the items from `b` on are read again
    /// after a restart, and pushed again).
    ///
    /// ```
    /// use saams_monitoring::fallback::FallbackPolicy;
    /// use saams_monitoring::live::LiveSite;
    /// use saams_monitoring::{Config, Protocol};
    /// let cfg = Config::new(1, 100, 0, 0.1, Protocol::Seed).unwrap();
    /// let mut site = LiveSite::new(cfg, FallbackPolicy::adaptive(&cfg), 0).unwrap();
    /// site.push(5, 0, 7).unwrap();
    /// site.push(12, 1, 7).unwrap();
    /// assert!(site.copy_at(10).is_err()); // not advanced to 10 yet
    /// site.advance_to(10).unwrap();
    /// let mut copy = site.copy_at(10).unwrap();
    /// assert_eq!(copy.next_event(), site.site().next_due()); // the item at 12 is not in it
    /// copy.push(12, 1, 7).unwrap();
    /// assert_eq!(copy.advance_to(20).unwrap(), site.advance_to(20).unwrap());
    /// ```
    ///
    /// # Errors
    /// When the site has not processed every event before `b`, or has processed events at or
    /// after it.
    pub fn copy_at(&self, b: i64) -> Result<LiveSite, MonitorError> {
        if self.processed_to != b || self.pending.keys().next().is_some_and(|&(t, _)| t < b) {
            return Err(MonitorError::BadInput(format!(
                "a site's copy at {b} needs it processed up to {b} exactly (it is at {})",
                self.processed_to
            )));
        }
        Ok(LiveSite { pending: BTreeMap::new(), ..self.clone() })
    }

    /// The earliest time this site has something to do at: a pending item or a due time.
    pub fn next_event(&self) -> Option<i64> {
        let arrival = self.pending.first_key_value().map(|(&(t, _), _)| t);
        [arrival, self.site.next_due()].into_iter().flatten().min()
    }

    /// Items refused as late (or pushed twice).
    pub fn refused_late(&self) -> u64 {
        self.refused_late
    }

    /// The fallback site it drives.
    pub fn site(&self) -> &FallbackSite {
        &self.site
    }
}
