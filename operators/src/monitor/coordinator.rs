//! The coordinators of the monitored streams, each on its stream's home worker (`group mod W`):
//! the sites' envelopes are applied in time order ([`LiveCoordinator`]), and the continuous
//! queries answered at every job window close from the first message until the window `W`
//! after the last one is empty; the script's ad-hoc queries at the end of the input, from the
//! newest job window close whose window still held items; a live ad-hoc query at the close of
//! its fence's window, for whoever waits for it.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use saams_monitoring::fallback::Envelope;
use saams_monitoring::live::LiveCoordinator;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator;

use saams::checkpoint::MonitorState;
use serde::{Deserialize, Serialize};

use super::lines::answer_line;
use super::{MonitorPlan, Monitored, SiteOut, state};
use crate::Plan;
use crate::ask::reply_line;
use crate::checkpoint::BoundaryCopies;

/// One monitored stream's coordinator and what waits for the watermark. A checkpoint's copy
/// ([`super::state`]) is taken once every message and refusal before its boundary is applied
/// and every answer before it given: what still waits then is at or after the boundary, sent
/// again after a restart, so it is left out.
#[derive(Serialize, Deserialize)]
pub(super) struct Home {
    live: LiveCoordinator,
    /// Envelopes by (send time, site, sequence number): applied once the watermark passed them.
    #[serde(skip)]
    pending: BTreeMap<(i64, u32, u64), Vec<u8>>,
    /// Items the sites refused, by the time their count was sent: counted once the watermark
    /// passed it, before any answer at or after it.
    #[serde(skip)]
    refused_at: BTreeMap<u64, u64>,
    /// Items the sites refused, counted so far.
    refused: u64,
    /// The send time of the newest message applied.
    last: Option<i64>,
    /// The next job window end to answer at (its last millisecond is the answer's time).
    next_end: Option<i64>,
    /// The ad-hoc answers at the newest window close with items in the window.
    adhoc: Vec<String>,
    /// The live ad-hoc queries ([`Monitored::asks`]) answered so far.
    asked: usize,
}

/// Answers the monitored streams' queries.
pub trait MonitorCoordinator<'scope> {
    /// Site messages in (from [`super::MonitorSites::monitor_sites`]), answer lines out: the
    /// continuous ones at their window's last millisecond, the script's ad-hoc ones at the end
    /// of the input (`u64::MAX`). `window_ms` is the job's window; the monitored streams are
    /// the plan's, read as live requests change them.
    fn monitor_coordinator(self, plan: Rc<RefCell<Plan>>, window_ms: i64) -> Stream<'scope, u64, Vec<String>>;
}

impl Home {
    fn new(m: &Monitored) -> Home {
        Home {
            live: LiveCoordinator::new(m.config(), m.policy()),
            pending: BTreeMap::new(),
            refused_at: BTreeMap::new(),
            refused: 0,
            last: None,
            next_end: None,
            adhoc: Vec::new(),
            asked: 0,
        }
    }

    /// Take one message of a site, sent at `stamp`: its refusals and an envelope once the
    /// watermark passed their time (an undecodable envelope or a duplicate: refused and counted
    /// now).
    fn take(&mut self, stamp: u64, out: SiteOut) {
        match out {
            SiteOut::Stats { refused, .. } => {
                if refused > 0 {
                    *self.refused_at.entry(stamp).or_insert(0) += refused;
                }
            }
            SiteOut::Envelope(bytes) => match Envelope::decode(&bytes) {
                Ok(e) if !self.pending.contains_key(&(e.time, e.site, e.seq)) => {
                    self.pending.insert((e.time, e.site, e.seq), bytes);
                }
                _ => {
                    let _ = self.live.receive(&bytes);
                }
            },
        }
    }

    /// Apply every message and answer every window end (and live ad-hoc query) before
    /// `watermark`, in time order; answers at `t` see the messages sent by `t` and none later.
    fn run(&mut self, m: &Monitored, jw: i64, watermark: u64, mut emit: impl FnMut(i64, String)) {
        loop {
            let message = self.pending.first_key_value().map(|(k, _)| k.0).filter(|&t| (t as u64) < watermark);
            // A live ad-hoc query is answered at the last millisecond of its fence's window.
            let ask = m.asks.get(self.asked).map(|q| q.from as i64 + jw - 1).filter(|&a| (a as u64) < watermark);
            let answer = self.next_end.map(|e| e - 1).filter(|&a| (a as u64) < watermark);
            let first_answer = match (answer, ask) {
                (Some(a), Some(q)) => Some(a.min(q)),
                (a, q) => a.or(q),
            };
            // A refusal counts before anything at or after its time: a message (which may start
            // the answers) or an answer.
            while let Some(e) = self.refused_at.first_entry().filter(|e| {
                *e.key() < watermark && [message, first_answer].iter().flatten().all(|&t| *e.key() <= t.max(0) as u64)
            }) {
                self.refused += e.remove();
            }
            match (message, first_answer) {
                (Some(t), a) if a.is_none_or(|a| t <= a) => {
                    let (_, bytes) = self.pending.pop_first().expect("a pending message");
                    if self.live.receive(&bytes).is_ok() {
                        self.last = Some(self.last.map_or(t, |l| l.max(t)));
                        self.next_end.get_or_insert((t.div_euclid(jw) + 1) * jw);
                    }
                }
                (_, Some(a)) => {
                    while m.asks.get(self.asked).is_some_and(|q| q.from as i64 + jw - 1 == a) {
                        self.answer_ask(m, a, &mut emit);
                    }
                    if answer == Some(a) {
                        self.answer(m, a, &mut emit);
                        let last = self.last.unwrap_or(a);
                        self.next_end = (a < last + m.spec.window_ms).then_some(a + 1 + jw);
                    }
                }
                _ => break,
            }
        }
    }

    /// Answer the next live ad-hoc query at `a`, for whoever waits for it.
    fn answer_ask(&mut self, m: &Monitored, a: i64, emit: &mut impl FnMut(i64, String)) {
        let q = &m.asks[self.asked];
        self.asked += 1;
        let sent = self.live.received();
        let line = answer_line(m, q, self.live.coordinator(), a, sent, self.refused);
        emit(a, reply_line(q.origin, line));
    }

    fn answer(&mut self, m: &Monitored, a: i64, emit: &mut impl FnMut(i64, String)) {
        if m.until.is_some_and(|u| a as u64 >= u) {
            // Deleted: the windows before its delete's fence only.
            return;
        }
        let (sent, refused) = (self.live.received(), self.refused);
        for q in m.continuous.iter().filter(|q| q.from as i64 <= a) {
            emit(a, answer_line(m, q, self.live.coordinator(), a, sent, refused));
        }
        if !m.adhoc.is_empty() && self.live.coordinator().count(a).is_ok_and(|c| c > 0) {
            self.adhoc = m.adhoc.iter().map(|q| answer_line(m, q, self.live.coordinator(), a, sent, refused)).collect();
        }
    }
}

/// Messages of streams this worker's plan does not know yet, with their times.
type Early = Vec<(u64, u32, SiteOut)>;

/// Hand the arrived messages to their homes (made at a stream's first message); those of a
/// stream constructed live that came before this worker applied its construct (another
/// worker's site sent them) wait in `early`. Homes of this worker (`me` of `peers`) with live
/// ad-hoc queries are made too, messages or not.
fn take_arrivals(
    plan: &MonitorPlan,
    arrived: Early,
    homes: &mut HashMap<u32, Home>,
    early: &mut Early,
    (me, peers): (usize, usize),
) {
    for (stamp, group, out) in arrived {
        let Some(m) = plan.monitored.get(group as usize) else {
            early.push((stamp, group, out));
            continue;
        };
        homes.entry(group).or_insert_with(|| Home::new(m)).take(stamp, out);
    }
    for (i, m) in plan.monitored.iter().enumerate().filter(|(i, _)| i % peers == me) {
        if !m.asks.is_empty() {
            homes.entry(i as u32).or_insert_with(|| Home::new(m));
        }
    }
}

/// Run every home to `watermark` ([`Home::run`]), in stream order.
fn run_all(
    plan: &MonitorPlan,
    homes: &mut HashMap<u32, Home>,
    jw: i64,
    watermark: u64,
    emit: &mut impl FnMut(i64, String),
) {
    let mut groups: Vec<u32> = homes.keys().copied().collect();
    groups.sort_unstable();
    for group in groups {
        let home = homes.get_mut(&group).expect("a known group");
        home.run(&plan.monitored[group as usize], jw, watermark, &mut *emit);
    }
}

/// The checkpoint copies of the homes, run to the boundary ([`run_all`]).
fn copy_all(plan: &MonitorPlan, homes: &HashMap<u32, Home>) -> Vec<MonitorState> {
    homes.iter().map(|(&group, home)| state::encode(group, None, &plan.monitored[group as usize], home)).collect()
}

/// The coordinators a checkpoint restores on this worker (`me` of `peers`): those homed here.
fn restore(plan: &Plan, me: usize, peers: usize) -> HashMap<u32, Home> {
    let mut checkpoints = plan.checkpoints.borrow_mut();
    let mut homes = HashMap::new();
    checkpoints.restored_monitors.retain(|copy| {
        if copy.site.is_some() || copy.group as usize % peers != me {
            return true;
        }
        // Checked when the checkpoint was read (`MonitorPlan::check_copy`).
        if let Ok(home) = plan.monitor.stream_of(copy).and_then(|m| state::decode::<Home>(copy, m)) {
            homes.insert(copy.group, home);
        }
        false
    });
    homes
}

/// Check a coordinator's checkpoint copy against monitored stream `m`.
pub(super) fn check_copy(copy: &MonitorState, m: &Monitored) -> Result<(), String> {
    state::decode::<Home>(copy, m).map(|_| ())
}

impl<'scope> MonitorCoordinator<'scope> for Stream<'scope, u64, Vec<(u32, SiteOut)>> {
    fn monitor_coordinator(self, shared: Rc<RefCell<Plan>>, window_ms: i64) -> Stream<'scope, u64, Vec<String>> {
        let jw = window_ms.max(1);
        let (me, peers) = (self.scope().index(), self.scope().peers().max(1));
        let to_home = Exchange::new(|(group, _): &(u32, SiteOut)| u64::from(*group));
        self.unary_frontier::<CapacityContainerBuilder<Vec<String>>, _, _, _>(
            to_home,
            "MonitorCoordinator",
            move |cap, _info| {
                let mut held: Option<Capability<u64>> = Some(cap);
                let mut homes = restore(&shared.borrow(), me, peers);
                let mut early: Early = Vec::new();
                let mut copies = BoundaryCopies::default();
                move |(input, frontier), output| {
                    let plan = shared.borrow().monitor.clone();
                    let mut arrived = std::mem::take(&mut early);
                    input.for_each_stamp(|stamp, data| {
                        let t = stamp.least().copied().unwrap_or(0);
                        for batch in data {
                            arrived.extend(batch.drain(..).map(|(group, out)| (t, group, out)));
                        }
                    });
                    take_arrivals(&plan, arrived, &mut homes, &mut early, (me, peers));
                    let Some(cap) = held.as_ref() else { return };
                    let watermark = frontier.frontier().iter().min().copied().unwrap_or(u64::MAX);
                    let mut lines: BTreeMap<u64, Vec<String>> = BTreeMap::new();
                    let mut emit =
                        |t: i64, line| lines.entry((t.max(0) as u64).max(*cap.time())).or_default().push(line);
                    {
                        let shared = shared.borrow();
                        while let Some(b) = copies.due(&shared.checkpoints, watermark, None) {
                            run_all(&plan, &mut homes, jw, b, &mut emit);
                            copies.hand_in_monitors(&shared.checkpoints, b, copy_all(&plan, &homes));
                        }
                    }
                    run_all(&plan, &mut homes, jw, watermark, &mut emit);
                    if frontier.is_empty() {
                        let mut groups: Vec<u32> = homes.keys().copied().collect();
                        groups.sort_unstable();
                        for group in groups {
                            let adhoc = homes.get_mut(&group).map(|h| std::mem::take(&mut h.adhoc)).unwrap_or_default();
                            lines.entry(u64::MAX).or_default().extend(adhoc);
                        }
                    }
                    for (t, batch) in lines {
                        output.session(&cap.delayed(&t)).give_iterator(batch.into_iter());
                    }
                    if frontier.is_empty() {
                        held = None;
                    } else if let Some(cap) = held.as_mut()
                        && watermark > *cap.time()
                    {
                        cap.downgrade(&watermark);
                    }
                }
            },
        )
    }
}
