//! The coordinator of a live run: the fallback [`Coordinator`] fed encoded envelopes, counting
//! what it received and what it refused.

use crate::config::Config;
use crate::error::MonitorError;
use crate::fallback::{Coordinator, Envelope, FallbackPolicy};

/// What the coordinator received: messages, their words and bytes (as the simulator counts
/// them: [`crate::fallback::SiteMessage::words`] and the payload's encoded length), and the
/// envelopes' bytes on the wire (payload plus site, sequence number and time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Received {
    /// Messages applied.
    pub messages: u64,
    /// Their words.
    pub words: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// The envelopes' bytes, transport included.
    pub wire_bytes: u64,
    /// Bytes that did not decode to an envelope.
    pub undecodable: u64,
}

/// A live coordinator: [`LiveCoordinator::receive`] every envelope in the order the sites sent
/// them (per site), then ask.
///
/// ```
/// use saams_monitoring::fallback::{Envelope, FallbackPolicy, SiteMessage};
/// use saams_monitoring::live::LiveCoordinator;
/// use saams_monitoring::{Config, Protocol};
/// let cfg = Config::new(2, 100, 0, 0.1, Protocol::Seed).unwrap();
/// let mut c = LiveCoordinator::new(cfg, FallbackPolicy::adaptive(&cfg));
/// let e = Envelope { site: 1, seq: 0, time: 5, message: SiteMessage::Item { item: 9 } };
/// c.receive(&e.encode()).unwrap();
/// assert!(c.receive(&e.encode()).is_err()); // a replay
/// assert!(c.receive(&[0xff]).is_err()); // no envelope
/// assert_eq!(c.received().words, 1);
/// assert_eq!(c.refused(), 2);
/// assert_eq!(c.coordinator().count(10).unwrap(), 1);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LiveCoordinator {
    coordinator: Coordinator,
    received: Received,
}

impl LiveCoordinator {
    /// A coordinator for `cfg.sites` sites running `policy`.
    pub fn new(cfg: Config, policy: FallbackPolicy) -> LiveCoordinator {
        LiveCoordinator { coordinator: Coordinator::new(cfg, policy), received: Received::default() }
    }

    /// Apply one encoded envelope ([`Envelope::encode`]).
    ///
    /// # Errors
    /// [`MonitorError::Codec`] for bytes that are no envelope; otherwise as
    /// [`Coordinator::receive`]. Either way the message is counted as refused and changes no
    /// answer (a sequence gap excepted: then every later answer is refused).
    pub fn receive(&mut self, bytes: &[u8]) -> Result<(), MonitorError> {
        let envelope = Envelope::decode(bytes).inspect_err(|_| self.received.undecodable += 1)?;
        self.coordinator.receive(&envelope)?;
        let r = &mut self.received;
        r.messages += 1;
        r.words += envelope.message.words();
        r.bytes += envelope.message.encode().len() as u64;
        r.wire_bytes += bytes.len() as u64;
        Ok(())
    }

    /// The fallback coordinator, which answers the queries.
    pub fn coordinator(&mut self) -> &mut Coordinator {
        &mut self.coordinator
    }

    /// What was received and applied.
    pub fn received(&self) -> Received {
        self.received
    }

    /// Messages refused: undecodable bytes and every envelope the coordinator refused.
    pub fn refused(&self) -> u64 {
        self.received.undecodable + self.coordinator.refused().total()
    }
}
