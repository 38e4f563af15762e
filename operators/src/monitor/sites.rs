//! The sites of the monitored streams: each value goes to its site (arrival sequence mod k),
//! hosted by worker `site mod W`, which runs the protocol or forwards as the watermark passes
//! its values ([`saams_monitoring::live::LiveSite`]) and sends what it has to say to the
//! stream's home.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use saams_monitoring::live::site_of;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator;

use saams::checkpoint::MonitorState;

use super::hosted::{HostedSite, HostedSites, Refusals, copy_hosted, hosted, refusal_reports, restore_hosted};
use super::relay::decode_relayed;
use super::{MONITOR_FENCE_INDEX, MonitorPlan, SiteOut, state};
use crate::Plan;
use crate::ask::{FENCE_GROUP, destination_of, fence_of};
use crate::checkpoint::BoundaryCopies;
use crate::record::{Rec, Val};

/// Runs the sites of every monitored stream.
pub trait MonitorSites<'scope> {
    /// Values of monitored streams (`group` = the index in the plan's [`MonitorPlan`], at a
    /// timestamp no later than their event time) and the monitored path's fence markers
    /// ([`super::monitor_fence_marker`]) in, `(group, message)` for the coordinators out, each
    /// envelope at its send time.
    fn monitor_sites(self, plan: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<(u32, SiteOut)>>;
}

/// Take one incoming batch: the monitored path's fence markers first (the live requests take
/// effect before any value routed with them is looked at: the marker came first on its
/// channel), then each value to its site, made at its first value, its refusals into `refused`;
/// the messages of sites run elsewhere (a device's, [`super::relay`]) go to `relayed` with the
/// time they are taken at.
fn take_batch(
    shared: &RefCell<Plan>,
    batch: &mut Vec<Rec>,
    sites: &mut HostedSites,
    (refused, relayed): (&mut Refusals, &mut Vec<(u64, u32, SiteOut)>),
) {
    if batch.iter().any(|r| r.group == MONITOR_FENCE_INDEX) {
        let mut plan = shared.borrow_mut();
        for r in batch.iter().filter(|r| r.group == MONITOR_FENCE_INDEX) {
            if let Some((epoch, fence)) = fence_of(&Rec { group: FENCE_GROUP, ..r.clone() }) {
                plan.apply_through(epoch, fence);
            }
        }
        batch.retain(|r| r.group != MONITOR_FENCE_INDEX);
    }
    let plan = shared.borrow().monitor.clone();
    for r in batch.drain(..) {
        // A value of a group this worker's plan has not: cannot be (the marker comes first).
        let Some(m) = plan.monitored.get(r.group as usize) else { continue };
        if let Val::Part(bytes) = &r.val {
            // The intake checked it decodes; were it not to, the coordinator counts it refused.
            let (at, out) = decode_relayed(bytes).unwrap_or_else(|_| (r.time, SiteOut::Envelope(Vec::new())));
            relayed.push((at.max(0) as u64, r.group, out));
            continue;
        }
        if let Some(h) = hosted(sites, (r.group, site_of(r.seq, m.spec.sites)), m) {
            h.take((&m.spec, r.group), (r.time, r.seq), &r.val, refused);
        }
    }
}

/// Process every hosted site's events before `to` (`i64::MAX`: the end of the input), its
/// envelopes into `later` at their send times (never before `now`, the held capability's).
fn advance_all(sites: &mut HostedSites, to: i64, now: u64, later: &mut BTreeMap<u64, Vec<(u32, SiteOut)>>) {
    for (&(group, _), h) in sites.iter_mut() {
        for e in h.advance(to) {
            let t = (e.time.max(0) as u64).max(now);
            later.entry(t).or_default().push((group, SiteOut::Envelope(e.encode())));
        }
    }
}

/// The checkpoint copies of the hosted sites at boundary `b`, once every one has processed its
/// events before `b` ([`advance_all`]).
fn copy_all(sites: &HostedSites, plan: &MonitorPlan, b: u64) -> Vec<MonitorState> {
    copy_hosted(sites, plan, b.min(i64::MAX as u64) as i64).expect("advanced to the boundary just before")
}

/// The sites a checkpoint restores on this worker (`me` of `peers`): those it hosts.
fn restore(plan: &Plan, me: usize, peers: usize) -> HostedSites {
    let mut checkpoints = plan.checkpoints.borrow_mut();
    let mut sites = HostedSites::new();
    checkpoints.restored_monitors.retain(|copy| {
        let Some(site) = copy.site.filter(|&s| s as usize % peers == me) else { return true };
        // Checked when the checkpoint was read (`MonitorPlan::check_copy`).
        if let Ok(h) = restore_hosted(copy, &plan.monitor) {
            sites.insert((copy.group, site as usize), h);
        }
        false
    });
    sites
}

/// Check a site's checkpoint copy against monitored stream `m`.
pub(super) fn check_copy(copy: &MonitorState, m: &super::Monitored) -> Result<(), String> {
    state::decode::<HostedSite>(copy, m).map(|_| ())
}

impl<'scope> MonitorSites<'scope> for Stream<'scope, u64, Vec<Rec>> {
    fn monitor_sites(self, shared: Rc<RefCell<Plan>>) -> Stream<'scope, u64, Vec<(u32, SiteOut)>> {
        // Read by the exchange as values are sent: the sender routed a value of a group with a
        // plan that has it, and its own plan is this one.
        let sites_of = shared.clone();
        let to_site = Exchange::new(move |r: &Rec| {
            if r.group == MONITOR_FENCE_INDEX {
                return destination_of(r) as u64;
            }
            let plan = sites_of.borrow();
            plan.monitor.monitored.get(r.group as usize).map_or(0, |m| site_of(r.seq, m.spec.sites) as u64)
        });
        let (me, peers) = (self.scope().index(), self.scope().peers().max(1));
        self.unary_frontier::<CapacityContainerBuilder<Vec<(u32, SiteOut)>>, _, _, _>(
            to_site,
            "MonitorSites",
            move |cap, _info| {
                // Held at the watermark: every message still to send is sent at or after it.
                let mut held: Option<Capability<u64>> = Some(cap);
                let mut sites = restore(&shared.borrow(), me, peers);
                let mut copies = BoundaryCopies::default();
                move |(input, frontier), output| {
                    let (mut refused, mut relayed) = (Refusals::new(), Vec::new());
                    input.for_each_stamp(|_stamp, data| {
                        for batch in data {
                            take_batch(&shared, batch, &mut sites, (&mut refused, &mut relayed));
                        }
                    });
                    let Some(cap) = held.as_ref() else { return };
                    let done = frontier.is_empty();
                    let watermark = frontier.frontier().iter().min().copied().unwrap_or(u64::MAX);
                    let mut later: BTreeMap<u64, Vec<(u32, SiteOut)>> = BTreeMap::new();
                    // Refusals and relayed messages at their time (never before the watermark).
                    let stamped = refusal_reports(refused).chain(relayed);
                    for (t, group, out) in stamped {
                        later.entry(t.max(*cap.time())).or_default().push((group, out));
                    }
                    {
                        let plan = shared.borrow();
                        while let Some(b) = copies.due(&plan.checkpoints, watermark, None) {
                            advance_all(&mut sites, b.min(i64::MAX as u64) as i64, *cap.time(), &mut later);
                            let taken = copy_all(&sites, &plan.monitor, b);
                            copies.hand_in_monitors(&plan.checkpoints, b, taken);
                        }
                    }
                    let to = if done { i64::MAX } else { watermark.min(i64::MAX as u64) as i64 };
                    advance_all(&mut sites, to, *cap.time(), &mut later);
                    if done {
                        let stats = sites.iter().map(|(&(group, _), h)| (group, h.final_stats()));
                        output.session(cap).give_iterator(stats);
                    }
                    for (t, messages) in later {
                        output.session(&cap.delayed(&t)).give_iterator(messages.into_iter());
                    }
                    if done {
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
