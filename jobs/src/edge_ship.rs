//! How `saams-edge` ([`crate::edge_device`]) ships: its producer to one partition of the
//! partials topic ([`Shipper`]), and its shipments in batches, each recorded in its state file
//! before it is produced ([`Batches`], `--state`, [`crate::edge::resume`]).
//!
//! Why apart from [`crate::edge`]: the producer is a Kafka client, which the cloud side of
//! `edge` must not use (see [`crate::edge_device`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use saams_operators::Plan;

use crate::edge::device::DeviceWindows;
use crate::edge::resume::{HeldBelow, Resume};
use crate::edge::shipment::{Body, Shipment};
use crate::kafka::{KafkaOptions, TopicSpec, ensure_topics};

/// How long a shipment may take to be acknowledged by the brokers.
const SHIP_TIMEOUT: Duration = Duration::from_secs(30);

/// The shipping side: a producer to one partition of the partials topic.
pub struct Shipper {
    producer: BaseProducer,
    topic: String,
    partition: i32,
    /// The device's id, the key of its records.
    pub device: String,
}

impl Shipper {
    /// A producer to `partition` of `topic` (created with `partitions` if missing; default
    /// partition: a hash of `device`).
    ///
    /// # Errors
    /// The brokers cannot be reached.
    pub fn open(
        opts: &KafkaOptions,
        (topic, partitions, partition): (&str, i32, Option<i32>),
        device: &str,
    ) -> Result<Shipper, String> {
        ensure_topics(opts, &[TopicSpec::new(topic, partitions)]).map_err(|e| e.to_string())?;
        let producer: BaseProducer = opts
            .client_config_with(&[("acks", "all"), ("enable.idempotence", "true")])
            .create()
            .map_err(|e| format!("kafka producer: {e}"))?;
        let partition = match partition {
            Some(p) => p,
            None => {
                let metadata = producer
                    .client()
                    .fetch_metadata(Some(topic), Duration::from_secs(10))
                    .map_err(|e| format!("kafka metadata: {e}"))?;
                let n = metadata.topics().first().map_or(0, |t| t.partitions().len()).max(1);
                (saams::hash::hash_bytes(device.as_bytes(), 0xED6E) % n as u64) as i32
            }
        };
        Ok(Shipper { producer, topic: topic.to_string(), partition, device: device.to_string() })
    }

    /// Produce `ship` and wait until the brokers have it.
    ///
    /// # Errors
    /// The brokers do not take it in time.
    pub fn ship(&self, ship: &Shipment) -> Result<(), String> {
        let bytes = ship.encode();
        let record = BaseRecord::to(&self.topic).partition(self.partition).key(&self.device).payload(&bytes);
        self.producer.send(record).map_err(|(e, _)| format!("kafka send: {e}"))?;
        self.producer.flush(SHIP_TIMEOUT).map_err(|e| format!("kafka flush: {e}"))
    }
}

/// The device's shipments in batches (those one tuple, timer or end of input makes), each
/// recorded in the state file before it is produced (`--state`, [`crate::edge::resume`]).
pub struct Batches {
    file: Option<PathBuf>,
    /// The device's count of tuples read when the last batch was made.
    from: u64,
    /// A restarted device: tuples of its input to skip (shipped before, and, for states kept
    /// whole, of windows before the one it resumes in).
    pub skip: u64,
    /// A restarted device: the count at which it ships its open window as it did before the
    /// kill (its timer waits until then).
    pub replay_open: Option<u64>,
    /// A restarted device that keeps states whole: the count up to which it read its open
    /// window again and shipped it before the kill ([`crate::edge::kept`]).
    forget_at: Option<u64>,
    /// A restarted device has not produced the batch its state file names again yet: its
    /// `--ship-every` timer waits (a shipment of the open window made earlier than before the
    /// kill would number other tuples as the batch's, which the cloud may have merged).
    pub replaying: bool,
    /// The idle fence the device holds below (`--idle-after`), recorded with every batch.
    held: Option<HeldBelow>,
    /// A restarted device: the idle fence it took before the kill, to take again when it has
    /// read as many tuples as it had then ([`Batches::hold_due`]).
    pub hold_again: Option<HeldBelow>,
    /// The last batch recorded, rewritten when the device takes an idle fence.
    last: Option<Resume>,
}

impl Batches {
    /// The state file's batch, if any, and the windows to resume with; `keeps_whole`: the
    /// device keeps groups whole or resident, or runs monitoring sites (or may, following the
    /// job), whose states the file records too.
    ///
    /// # Errors
    /// A damaged state file.
    pub fn open(state: Option<&Path>, device: &str, keeps_whole: bool) -> Result<(Batches, DeviceWindows), String> {
        let resume = match state {
            Some(file) => Resume::read(file)?,
            None => None,
        };
        if let Some(r) = &resume
            && keeps_whole != r.window_from.is_some()
        {
            let file = state.map(Path::display);
            return Err(format!(
                "{}: the state file of a device {} kept states (--sole-reader, --resident, --follow, monitored \
                 streams); this one {}",
                file.expect("a file"),
                if r.window_from.is_some() { "that" } else { "that never" },
                if keeps_whole { "does" } else { "does not" }
            ));
        }
        let windows = match &resume {
            Some(r) => {
                let from = r.window_from.unwrap_or(r.from);
                DeviceWindows::resumed(device, r.window, r.seq, from).with_restored(&r.kept)?.with_budgets(&r.budgets)
            }
            None => DeviceWindows::new(device),
        };
        let windows = if keeps_whole && state.is_some() { windows.keeping_states() } else { windows };
        let batches = Batches {
            file: state.map(Path::to_path_buf),
            from: resume.as_ref().map_or(0, |r| r.from),
            skip: resume.as_ref().map_or(0, |r| r.window_from.unwrap_or(r.from)),
            replay_open: resume.as_ref().filter(|r| r.open).map(|r| r.upto),
            forget_at: resume.as_ref().and_then(|r| r.window_from.filter(|&w| w < r.from).map(|_| r.from)),
            replaying: resume.is_some(),
            held: resume.as_ref().and_then(|r| r.hold_below),
            hold_again: resume.as_ref().and_then(|r| r.hold_below),
            last: resume.clone(),
        };
        Ok((batches, windows))
    }

    /// Record then produce `ships`, made of the tuples read since the last batch up to `upto`
    /// (`open`: by shipping the open window so far), with the states `windows` keeps when the
    /// batch's window opened.
    ///
    /// # Errors
    /// The state file cannot be written, the brokers do not take a shipment.
    pub fn send(
        &mut self,
        (shipper, windows): (&Shipper, &DeviceWindows),
        ships: Vec<Shipment>,
        (upto, open): (u64, bool),
    ) -> Result<(), String> {
        let Some(Body::Data { window, .. }) = ships.first().map(|s| &s.body) else { return Ok(()) };
        if let Some(file) = &self.file {
            let (mut window, mut seq, mut window_from, mut kept) = (*window, ships[0].seq, None, Vec::new());
            let mut budgets = Vec::new();
            if let Some(point) = windows.resume_point(window, open) {
                (window, seq) = (point.window, point.seq.unwrap_or(seq));
                (window_from, kept, budgets) = (Some(point.from), point.bytes, point.budgets);
            }
            let (from, held) = (self.from, self.held);
            let resume = Resume { window, seq, from, upto, open, window_from, hold_below: held, budgets, kept };
            resume.write(file)?;
            self.last = Some(resume);
        }
        for ship in &ships {
            shipper.ship(ship)?;
        }
        self.from = upto;
        self.replaying = false;
        Ok(())
    }

    /// The device took the idle fence `window` as its watermark, having read `at` tuples:
    /// recorded now, in the last batch's record (and every later one). A device that recorded
    /// no batch yet records nothing: restarted, it reads its whole input again, and takes the
    /// fence again when its input goes quiet with the ask still waiting.
    ///
    /// # Errors
    /// The state file cannot be written.
    pub fn hold_below(&mut self, window: u64, at: u64) -> Result<(), String> {
        let held = HeldBelow { window: self.held.map_or(window, |h| h.window.max(window)), at };
        self.held = Some(held);
        match (&self.file, self.last.as_mut()) {
            (Some(file), Some(last)) => {
                last.hold_below = Some(held);
                last.write(file)
            }
            _ => Ok(()),
        }
    }

    /// A restarted device that took an idle fence before the kill has read `read` tuples: the
    /// fence, when it is due again (taken once).
    pub fn hold_due(&mut self, read: u64) -> Option<u64> {
        let due = self.hold_again.filter(|h| read >= h.at)?;
        self.hold_again = None;
        Some(due.window)
    }

    /// Before the device reads its next tuple: a restarted device leaves the part of its open
    /// window it shipped before the kill, and ships its open window where it did before.
    ///
    /// # Errors
    /// As [`Batches::send`].
    pub fn before_tuple(
        &mut self,
        shipper: &Shipper,
        (plan, windows): (&Plan, &mut DeviceWindows),
    ) -> Result<(), String> {
        if self.forget_at == Some(windows.read_count()) {
            self.forget_at = None;
            windows.forget_shipped(plan);
        }
        if self.replay_open == Some(windows.read_count()) {
            self.replay_open = None;
            let upto = windows.read_count();
            let ships = windows.ship_open(plan);
            self.send((shipper, windows), ships, (upto, true))?;
        }
        Ok(())
    }
}
