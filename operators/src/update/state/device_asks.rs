//! Ad-hoc queries and SAVEs of synopses *resident* on an edge device ([`crate::query_view`]):
//! the owner here holds only the synopsis' query view, so it does not answer such an ask; the
//! device does, from its state at the ask's fence, and its answer comes back as an ask record
//! of its own ([`AskWhat::Answered`], numbered as the ask it answers). The home hands it on to
//! whoever waits (tagged with the ask's origin), after writing a SAVE's snapshot with the job's
//! store. Either may come first: the ask waits for its answer, or the answer for its ask.
//!
//! Which asks: those the worker that sends them marked ([`Ask::device_answers`]), made
//! at a fence (the device hears them on the control topic with their fences). Not the view's
//! presence here: a window's views are installed at its close, which an ask may come before.

use std::collections::{BTreeMap, HashMap};

use super::State;
use crate::answer;
use crate::ask::{Ask, AskWhat, DeviceAnswer, reply_line};
use crate::device_part::refuse;
use crate::out::Out;
use crate::plan::Plan;

/// Device answers kept for asks not seen yet: beyond this many, the oldest are dropped (an
/// answer to an ask this job never made, e.g. one it refused, would be kept for ever).
const EARLY_ANSWERS: usize = 1024;

/// Asks waiting for their device's answer, and answers waiting for their ask, by ask id.
#[derive(Default)]
pub(super) struct DeviceAsks {
    waiting: HashMap<u64, Ask>,
    early: BTreeMap<u64, (u32, Box<DeviceAnswer>)>,
}

impl State {
    /// Take `ask` if it is a device's: an answer (handed on once its ask is here) or an ask a
    /// device answers ([`Ask::device_answers`]) of a synopsis this worker owns (kept for its answer).
    /// False for any other ask.
    pub(super) fn device_ask(&mut self, plan: &Plan, me: usize, ask: &Ask, out: &mut Vec<Out>) -> bool {
        if let AskWhat::Answered(answer) = &ask.what {
            if ask.home as usize == me {
                match self.device_asks.waiting.remove(&ask.id) {
                    Some(asked) => out.push(hand_on(plan, &asked, (ask.syn, answer))),
                    None => {
                        let early = &mut self.device_asks.early;
                        early.insert(ask.id, (ask.syn, answer.clone()));
                        while early.len() > EARLY_ANSWERS {
                            early.pop_first();
                        }
                    }
                }
            }
            return true;
        }
        if !ask.device_answers || ask.spread || ask.home as usize != me || matches!(ask.what, AskWhat::Pair(_)) {
            return false;
        }
        match self.device_asks.early.remove(&ask.id) {
            Some((syn, answer)) => out.push(hand_on(plan, ask, (syn, &answer))),
            None => {
                self.device_asks.waiting.insert(ask.id, ask.clone());
            }
        }
        true
    }
}

/// The line that answers `asked` from the device's `answer` (for synopsis `syn`), tagged for
/// whoever waits: the device's line, or an error when it answered another synopsis or its
/// SAVE's snapshot cannot be written here.
fn hand_on(plan: &Plan, asked: &Ask, (syn, answer): (u32, &DeviceAnswer)) -> Out {
    if syn != asked.syn {
        let why = format!("device {} answered synopsis {syn} for an ask of synopsis {}", answer.device, asked.syn);
        refuse(&why);
        return Out::Line(answer::ask_error(asked, &why));
    }
    if let Some((file, bytes)) = &answer.saved
        && let Err(e) = plan.store.save(file, bytes)
    {
        return Out::Line(answer::ask_error(asked, &format!("SAVE {file}: {e}")));
    }
    Out::Line(reply_line(asked.origin, answer.line.clone()))
}
