//! `saams-edge --follow`: a device follows the cloud job's control topic
//! ([`crate::edge::control`]) on a thread of its own — the job's request script, its live
//! requests with their fences, and how far its workers have routed — and its loop waits on
//! what the thread heard before it reads each new window.
//!
//! Why apart from [`crate::edge`]: it reads the topic with [`crate::kafka`], which the cloud
//! side of `edge` must not use (see [`crate::edge_device`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::edge::control::{Applied, Control, Snapshots, control_topic};
use crate::kafka::{KafkaBroadcastSource, KafkaOptions, TopicSpec, ensure_topics};

/// How often a device waiting for the cloud job says so.
const WAIT_NOTE: Duration = Duration::from_secs(10);

/// What the follower heard so far.
#[derive(Debug, Default)]
struct Heard {
    /// The first `start` record's script, and the snapshot files its LOADs name.
    script: Option<(String, Snapshots)>,
    /// Live requests by their place in the order applied (several `start` records, of a
    /// resumed job, repeat some: kept once).
    requests: BTreeMap<u64, Applied>,
    /// The newest window a worker said it routed.
    routed: Option<u64>,
    /// The most live requests a `routed` record counted.
    applied: u64,
    /// Records that were not control records.
    unreadable: u64,
    /// The topic could not be read.
    failed: Option<String>,
}

impl Heard {
    /// How many live requests from the first on were heard, without a gap.
    fn contiguous(&self) -> u64 {
        let mut n = 0;
        while self.requests.contains_key(&n) {
            n += 1;
        }
        n
    }

    fn take(&mut self, record: Control) {
        match record {
            Control::Start { script, log, snapshots } => {
                self.script.get_or_insert((script, snapshots));
                for r in log {
                    self.requests.entry(r.at).or_insert(r);
                }
            }
            Control::Request(r) => {
                self.requests.entry(r.at).or_insert(r);
            }
            Control::Routed { window, applied } => {
                self.routed = Some(self.routed.map_or(window, |w| w.max(window)));
                self.applied = self.applied.max(applied);
            }
        }
    }
}

/// A device's follower of the control topic of the partials topic it ships to.
pub struct Follower {
    heard: Arc<(Mutex<Heard>, Condvar)>,
    topic: String,
    /// How long one wait for the cloud job may last (`None`: for ever).
    timeout: Option<Duration>,
}

impl Follower {
    /// Read the control topic of `partials` from its start, on a thread, for as long as the
    /// device runs (the topic is created if the job has not started yet). A wait for the cloud
    /// job that lasts longer than `timeout` fails (`None`: waits for ever).
    ///
    /// # Errors
    /// The brokers cannot be reached or the topic read.
    pub fn start(opts: &KafkaOptions, partials: &str, timeout: Option<Duration>) -> Result<Follower, String> {
        let topic = control_topic(partials);
        ensure_topics(opts, &[TopicSpec::new(&topic, 1)]).map_err(|e| e.to_string())?;
        let mut source = KafkaBroadcastSource::new(opts, &topic, 0).map_err(|e| format!("{topic}: {e}"))?;
        let heard: Arc<(Mutex<Heard>, Condvar)> = Arc::default();
        let shared = heard.clone();
        std::thread::Builder::new()
            .name("saams-edge-control".into())
            .spawn(move || {
                loop {
                    let batch = source.poll_batch(256, Duration::from_millis(100));
                    let (lock, changed) = &*shared;
                    let mut heard = lock.lock().unwrap_or_else(PoisonError::into_inner);
                    match batch {
                        Ok(records) => {
                            for r in records {
                                match Control::parse(&r.payload) {
                                    Ok(record) => heard.take(record),
                                    Err(_) => heard.unreadable += 1,
                                }
                            }
                        }
                        Err(e) => {
                            heard.failed = Some(e.to_string());
                            changed.notify_all();
                            return;
                        }
                    }
                    changed.notify_all();
                }
            })
            .map_err(|e| format!("cannot start the control thread: {e}"))?;
        Ok(Follower { heard, topic, timeout })
    }

    /// Wait until `ready` holds of what was heard, saying every so often what it waits for;
    /// an error once the wait has lasted the timeout (the cloud job is down, or does not read
    /// this device's partition): a device that waited for ever would hold its input unread and
    /// say nothing but a note every [`WAIT_NOTE`].
    fn wait<T>(&self, what: &str, mut ready: impl FnMut(&Heard) -> Option<T>) -> Result<T, String> {
        let (lock, changed) = &*self.heard;
        let mut heard = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let started = Instant::now();
        loop {
            if let Some(t) = ready(&heard) {
                return Ok(t);
            }
            if let Some(e) = &heard.failed {
                return Err(format!("{}: {e}", self.topic));
            }
            let left = self.timeout.map(|t| t.saturating_sub(started.elapsed()));
            if left.is_some_and(|l| l.is_zero()) {
                return Err(format!(
                    "the cloud job did not answer on {} within --cloud-timeout {:?}: it is not running, or does not \
                     read this device's partials (waiting {what})",
                    self.topic,
                    self.timeout.unwrap_or_default()
                ));
            }
            let nap = left.map_or(WAIT_NOTE, |l| l.min(WAIT_NOTE));
            let (next, timeout) = changed.wait_timeout(heard, nap).unwrap_or_else(PoisonError::into_inner);
            heard = next;
            if timeout.timed_out() && ready(&heard).is_none() && nap == WAIT_NOTE {
                eprintln!("saams-edge: waiting for the cloud job on {}: {what}", self.topic);
            }
        }
    }

    /// The cloud job's request script and the snapshot files its LOADs name (waits for its
    /// start record).
    ///
    /// # Errors
    /// The topic cannot be read.
    pub fn script(&self) -> Result<(String, Snapshots), String> {
        self.wait("its start", |h| h.script.clone())
    }

    /// Wait until a worker of the cloud job has routed `window` (this device's position, or a
    /// later window) and every live request it had applied then was heard: from then on no
    /// request this device has not heard can take effect at `window` or before. Returns the
    /// live requests from the `from`-th on whose fences are at or before `window`, in order.
    ///
    /// # Errors
    /// The topic cannot be read.
    pub fn reached(&self, window: u64, from: u64) -> Result<Vec<Applied>, String> {
        let what = format!("to route window {window} ms");
        self.wait(&what, |h| {
            let heard_all = h.contiguous();
            (h.routed.is_some_and(|w| w >= window) && heard_all >= h.applied).then(|| {
                h.requests.range(from..heard_all).map(|(_, r)| r).take_while(|r| r.fence <= window).cloned().collect()
            })
        })
    }

    /// The live requests heard so far from the `from`-th on, without a gap, whatever their
    /// fences: what a device whose input is idle or ended looks at for asks waiting for it.
    pub fn heard(&self, from: u64) -> Vec<Applied> {
        let heard = self.heard.0.lock().unwrap_or_else(PoisonError::into_inner);
        let upto = heard.contiguous();
        heard.requests.range(from..upto.max(from)).map(|(_, r)| r.clone()).collect()
    }

    /// Records of the topic that were not control records.
    pub fn unreadable(&self) -> u64 {
        self.heard.0.lock().unwrap_or_else(PoisonError::into_inner).unreadable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(at: u64, fence: u64) -> Applied {
        Applied { at, fence, text: format!("r{at}"), snapshots: Snapshots::new() }
    }

    /// Requests heard out of order count from the first without a gap; a resumed job's start
    /// repeats requests without doubling them; `routed` keeps the newest window and the most
    /// requests counted.
    #[test]
    fn heard_requests_count_without_gaps_and_once() {
        let mut h = Heard::default();
        h.take(Control::Start { script: "s".into(), log: vec![applied(0, 60)], snapshots: Snapshots::new() });
        h.take(Control::Request(applied(2, 180)));
        assert_eq!(h.contiguous(), 1);
        h.take(Control::Request(applied(1, 120)));
        let log = vec![applied(0, 60), applied(1, 120)];
        h.take(Control::Start { script: "other".into(), log, snapshots: Snapshots::new() });
        assert_eq!((h.contiguous(), h.requests.len(), h.script.as_ref().map(|s| s.0.as_str())), (3, 3, Some("s")));
        h.take(Control::Routed { window: 120, applied: 2 });
        h.take(Control::Routed { window: 60, applied: 1 });
        assert_eq!((h.routed, h.applied), (Some(120), 2));
    }
}
