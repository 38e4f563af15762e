//! The answers devices owe ([`Devices::give_up_left`], [`Devices::owe_answers`]): every ad-hoc
//! query or SAVE of a synopsis resident on a device gets exactly one answer line, the device's
//! or, when it will not come, an error naming the device.
//!
//! Why: the ask waits in this process' table ([`saams_operators::device_replies`]) for an
//! answer only its device can give (the cloud holds the synopsis' query view, not its state). A
//! device killed for good, or silent past `--device-timeout`, never gives it: the request
//! script's line was missing from the output and an HTTP client got a 504 with nothing after
//! it, where a Kafka Streams or Flink user expects one answer per request. So once the device
//! said goodbye without answering, and at the job's end for whatever still waits (its device
//! `gone`, or live but too late), the ask is answered with an error through the answer's own
//! path (output, the client waiting, the request topic) and counted per device
//! (`saams_device_asks_unanswered`).
//!
//! Why not as soon as the device is `gone`: `gone` only means its windows stop holding the
//! job up (`--device-timeout`); a device quiet for a while, or killed and restarted from its
//! state (`saams-edge --state`), comes back and answers from its state at the fence, which is
//! the answer the client asked for. An error given on the way would have made that answer a
//! replay to drop (a cloud resumed from its checkpoint while a quiet device waited lost its
//! answer so: `jobs/tests/edge_asks_recovery.rs`). A client waiting over HTTP still gets its
//! 504 at `--http-timeout` meanwhile.
//!
//! And the other way round: while a device this process reads is live and owes an answer, the
//! job keeps reading its partition after its input would have ended (`--exit-when-idle`), for at
//! most `--device-timeout` (the worker's loop asks [`Devices::owe_answers`]): a device slow to
//! answer after the rest of the input ended is still heard.

use std::cell::Cell;
use std::time::{Duration, Instant};

use saams_operators::Plan;
use saams_operators::ask::Ask;

use super::Devices;

/// How often the waiting asks are checked against the devices' states while the job runs.
const CHECK_EVERY: Duration = Duration::from_millis(100);

/// Lock a table's mutex (every update leaves it consistent).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Devices {
    /// The device synopsis `syn` is resident on: as this process' readers noted it, else as
    /// another process last reported it.
    pub fn resident_device(&self, plan: &Plan, syn: u32) -> Option<String> {
        let spec = plan.routing.synopses.get(syn as usize)?;
        let key = (spec.dataset.clone(), spec.stream.clone(), spec.synopsis_id);
        if let Some(device) = lock(&self.resident).get(&key) {
            return Some(device.clone());
        }
        let others = lock(&self.others);
        let rows = others.values().flat_map(|(table, _)| table["resident"].as_array().into_iter().flatten());
        rows.filter(|r| r["dataSetKey"] == key.0.as_str() && r["streamID"] == key.1.as_str())
            .find(|r| r["synopsisID"] == key.2)
            .and_then(|r| r["device"].as_str().map(str::to_string))
    }

    /// The state of `device` (`live`, `left` or `gone`) and whether this process reads it:
    /// its row here, else as another process last reported it (`gone` once silent past the
    /// timeout since).
    fn state_of(&self, device: &str) -> Option<(String, bool)> {
        if let Some((_, row)) = self.rows().into_iter().find(|(d, _)| d == device) {
            return Some((row.state.to_string(), true));
        }
        let others = lock(&self.others);
        others.values().find_map(|(table, at)| {
            let row = table["devices"].as_array()?.iter().find(|r| r["device"] == device)?;
            let silent = row["silentMs"].as_u64().unwrap_or(0) + at.elapsed().as_millis() as u64;
            let state = row["state"].as_str().unwrap_or("live");
            let gone = state == "live" && silent > self.timeout.as_millis() as u64;
            Some((if gone { "gone" } else { state }.to_string(), false))
        })
    }

    /// True while a device this process reads (live: it neither said goodbye nor went silent
    /// past the timeout) owes an answer: to an ask waiting in this process, or to the request
    /// script's ad-hoc queries and SAVEs of a synopsis resident on it, which it answers at its
    /// end, before its goodbye.
    pub fn owe_answers(&self, plan: &Plan) -> bool {
        let rows = self.rows();
        let live = |d: &str| rows.iter().any(|(id, r)| id == d && r.state == "live");
        let waiting = self.relay.replies().waiting_synopses();
        if waiting.iter().any(|&s| self.resident_device(plan, s).is_some_and(|d| live(d.as_str()))) {
            return true;
        }
        let resident = lock(&self.resident);
        plan.routing.synopses.iter().filter(|s| !s.adhoc.is_empty() || !s.saves.is_empty()).any(|s| {
            resident.get(&(s.dataset.clone(), s.stream.clone(), s.synopsis_id)).is_some_and(|d| live(d.as_str()))
        })
    }

    /// While the job runs (at most every [`CHECK_EVERY`]; nothing waiting costs one lock):
    /// answer with an error each ask waiting in this process whose device said goodbye here
    /// without answering it (its answer comes before its goodbye, on the same partition); one
    /// whose device is only `gone` waits on (see the module's doc). `plan`: the calling worker's.
    pub fn give_up_left(&self, plan: &Plan) {
        if self.relay.replies().waiting_synopses().is_empty() {
            return;
        }
        {
            let mut checked = lock(&self.checked);
            if checked.is_some_and(|at| at.elapsed() < CHECK_EVERY) {
                return;
            }
            *checked = Some(Instant::now());
        }
        self.give_up(plan, false);
    }

    /// The job ends: answer with an error every ask still waiting in this process.
    pub fn give_up_all(&self, plan: &Plan) {
        self.give_up(plan, true);
    }

    /// Per device, the asks it owed that were answered with an error instead, in this process.
    pub fn unanswered(&self) -> Vec<(String, u64)> {
        lock(&self.unanswered).iter().map(|(d, n)| (d.clone(), *n)).collect()
    }

    /// Give up on the waiting asks whose devices will not answer (`ending`: every one).
    fn give_up(&self, plan: &Plan, ending: bool) {
        let owed = |ask: &Ask| {
            let device = self.resident_device(plan, ask.syn);
            let state = device.as_deref().and_then(|d| self.state_of(d));
            let why = match (device.as_deref(), state) {
                (Some(d), Some((state, _))) if ending && state == "gone" => format!(
                    "device {d} did not answer before it was gone (silent past --device-timeout); the synopsis' state \
                     is resident on it"
                ),
                (Some(d), Some((state, true))) if state == "left" => {
                    format!("device {d} said goodbye without answering; the synopsis' state is resident on it")
                }
                (Some(d), _) if ending => format!("device {d} did not answer before the job ended"),
                (None, _) if ending => {
                    "the device the synopsis is resident on did not answer before the job ended".into()
                }
                _ => return None,
            };
            Some((device.unwrap_or_default(), why))
        };
        let devices = self.relay.give_up(plan, owed);
        let mut unanswered = lock(&self.unanswered);
        for device in devices {
            *unanswered.entry(device).or_default() += 1;
        }
    }
}

impl Devices {
    /// Whether a worker reads its Kafka partitions on: while its input `runs`, and, once only
    /// `--exit-when-idle` ended it (`may_read_on`: `crate::kafka::KafkaInput::may_read_on`),
    /// while a device this process reads owes an answer ([`Devices::owe_answers`]), for at most
    /// the device timeout from then (`since`, the worker's: when its input ended, cleared while
    /// it runs).
    pub fn reads_on(&self, plan: &Plan, (runs, may_read_on): (bool, bool), since: &Cell<Option<Instant>>) -> bool {
        if runs {
            since.set(None);
            return true;
        }
        if !may_read_on {
            return false;
        }
        let from = since.get().unwrap_or_else(Instant::now);
        since.set(Some(from));
        from.elapsed() < self.timeout && self.owe_answers(plan)
    }
}
