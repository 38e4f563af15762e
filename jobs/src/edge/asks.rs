//! Ad-hoc queries and SAVEs of synopses resident on a device (`saams-edge --resident --follow`),
//! answered by the device: the cloud holds only their query views, the device their states.
//!
//! The cloud sequences such a request like a construct (it needs a fence: [`super::refusals`]),
//! and every worker makes its ask at the fence, numbered in the order every worker applies
//! live requests; the synopsis' owner keeps it waiting instead of answering from the view. The
//! device hears the request on the control topic with its fence and applies it there, as it
//! applies every live request ([`crate::edge_device`]): its plan makes the same ask, with the
//! same number. It answers once it has closed every window before the fence and before it
//! reads a value of the fence's window — from its state as the cloud's owner would have held
//! it there, with the owner's code ([`answer::ask_line`]): the same line, `asOf` the fence — and
//! ships the answer ([`Body::Answer`]) on its partition of the partials topic. The cloud's
//! worker reading it hands it on at once ([`super::relay`]): it writes a SAVE's snapshot and the
//! line to the output and to whoever waits, without waiting for the cloud's own progress.
//!
//! So the answer covers exactly the values before the fence: the answer of one job reading the
//! same tuples up to the fence. A device whose input ends answers the asks it has heard then,
//! from its state at its end (nothing of the fence's window can come any more). One whose input
//! is quiet answers at its next window, or, with `saams-edge --idle-after D`, once its input has
//! been quiet for D: it then takes the fence as its watermark, as if it had read a tuple of the
//! fence's window (it ships its open window and its position there), so a tuple older than the
//! fence that comes later is late on the device ([`DeviceWindows::hold_below`]) — the answer
//! never misses a value the device takes. Meanwhile an HTTP client waits up to its reply
//! timeout (504, naming the device). A device that never answers (gone, or the job ends first)
//! has each ask it owes answered with an error line naming it ([`super::devices::owed`]).
//!
//! The request script's ad-hoc queries and SAVEs (`--requests`, which a following device reads
//! at the start of the control topic) are answered at the end of the input, by the cloud from
//! the synopsis' state: for a resident synopsis, the device answers them
//! ([`DeviceWindows::end_answers`]) from its final state, after its last window and the live
//! asks it heard, before its goodbye, with the cloud owner's code ([`answer::end_answers`]),
//! numbered as the cloud's home numbers them ([`answer::end_asks`]: both plans come from the same
//! script). The cloud's home makes those asks at its end instead of answering from the view,
//! and hands the device's lines on in place of its own: one raw run's lines, byte for byte.

use saams::api::estimation::with_as_of;
use saams::api::request::{Action, QueryMode, read_log};
use saams_operators::Plan;
use saams_operators::answer;
use saams_operators::ask::{Ask, AskWhat};

use super::device::{DeviceWindows, syn_id};
use super::refusals::is_pair_query;
use super::shipment::{Answered, Body};
use super::snapshots::ShippedSnapshots;

impl DeviceWindows {
    /// True when the live request `text` (the control topic's typed requests) holds an ad-hoc
    /// query or a SAVE of a synopsis resident here: this device answers it at its fence. Not a
    /// pair query: the cloud answers it from the views ([`is_pair_query`]).
    pub fn answers_text(&self, plan: &Plan, text: &str) -> bool {
        read_log(text).into_iter().flatten().any(|req| {
            matches!(req.action, Action::Query { mode: QueryMode::AdHoc, .. } | Action::Save { .. })
                && !is_pair_query(&req)
                && plan.routing.synopses.iter().any(|spec| {
                    spec.group != u32::MAX
                        && !spec.is_deleted()
                        && self.is_resident(plan, spec.group)
                        && req.names_synopsis(&spec.dataset, &spec.stream, spec.synopsis_id, &spec.field)
                })
        })
    }

    /// This device's answer to `ask`, made at `fence` (every window before it closed here,
    /// nothing of it read): `None` unless the synopsis is resident here and this device read
    /// its stream. A SAVE's state is taken from `store`, where the plan saved it.
    pub fn answer(&self, plan: &Plan, ask: &Ask, fence: u64, store: &ShippedSnapshots) -> Option<Body> {
        let spec = plan.routing.synopses.get(ask.syn as usize)?;
        if matches!(ask.what, AskWhat::Pair(_)) || spec.group == u32::MAX || !self.is_resident(plan, spec.group) {
            return None;
        }
        let held = self.held.get(&ask.syn)?;
        let cadence = plan.routing.window_ms as u64;
        let line = match held.view(spec.windowing(), cadence, Vec::new()) {
            Ok((state, items, span)) => answer::ask_line(plan, ask, state.as_ref(), items, Some(span)),
            Err(e) => answer::ask_error(ask, &format!("the device's state: {e}")),
        };
        let saved = match &ask.what {
            AskWhat::Save(file) => store.take_saved(file).map(|bytes| (file.clone(), bytes)),
            _ => None,
        };
        let line = with_as_of(line, i64::try_from(fence).unwrap_or(i64::MAX));
        Some(Body::Answer(Answered { ask: ask.id, synopsis: syn_id(spec), line, saved }))
    }
}

impl DeviceWindows {
    /// The input ended (its last window closed, the live asks heard answered): this device's
    /// answers to the request script's ad-hoc queries and SAVEs of the synopses resident here
    /// ([`answer::end_asks`]), from their final states as the cloud's owner answers them at the end of
    /// its input ([`answer::at_end`]: the open windows finished first). None for a synopsis
    /// this device never fed: the cloud holds no view of it and answers those itself.
    pub fn end_answers(&mut self, plan: &Plan, store: &ShippedSnapshots) -> Vec<Body> {
        let mut out = Vec::new();
        for (s, spec) in plan.routing.synopses.iter().enumerate() {
            let s = s as u32;
            if spec.group == u32::MAX || !self.is_resident(plan, spec.group) {
                continue;
            }
            let asks = answer::end_asks(plan, s);
            let Some(held) = self.held.get_mut(&s).filter(|_| !asks.is_empty()) else { continue };
            if !spec.is_deleted() {
                held.finish(spec.windowing(), &mut |_, _, _| {});
            }
            for (ask, line) in asks.iter().zip(answer::end_answers(plan, s, held)) {
                let saved = match &ask.what {
                    AskWhat::Save(file) => store.take_saved(file).map(|bytes| (file.clone(), bytes)),
                    _ => None,
                };
                out.push(Body::Answer(Answered { ask: ask.id, synopsis: syn_id(spec), line, saved }));
            }
        }
        out
    }
}
