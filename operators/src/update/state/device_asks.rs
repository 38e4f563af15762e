//! Ad-hoc queries and SAVEs of synopses *resident* on an edge device ([`crate::query_view`]):
//! the owner here holds only the synopsis' query view, so it does not answer such an ask; the
//! device does, from its state at the ask's fence, and its answer comes back to the process'
//! table of devices' replies ([`crate::device_replies`]), where the worker reading the device
//! hands it on at once when the ask waits there. It comes here as an ask record of its own
//! ([`AskWhat::Answered`], numbered as the ask it answers) only when that worker cannot hand
//! it on: the home, or whoever waits, is in another process. Either may come first: the ask
//! waits for its answer, or the answer for its ask; whichever comes second hands it on.
//!
//! Which asks: those the worker that sends them marked ([`Ask::device_answers`]), made
//! at a fence (the device hears them on the control topic with their fences). Not the view's
//! presence here: a window's views are installed at its close, which an ask may come before.

use super::State;
use crate::answer::hand_on;
use crate::ask::{Ask, AskWhat};
use crate::device_part::refuse;
use crate::device_replies::Came;
use crate::out::Out;
use crate::plan::Plan;

impl State {
    /// Take `ask` if it is a device's: an answer (handed on once its ask is here) or an ask a
    /// device answers ([`Ask::device_answers`]) of a synopsis this worker owns (kept for its answer).
    /// False for any other ask.
    pub(super) fn device_ask(&mut self, plan: &Plan, me: usize, ask: &Ask, out: &mut Vec<Out>) -> bool {
        if let AskWhat::Answered(answer) = &ask.what {
            if ask.home as usize == me {
                match plan.device_replies.answer_came(ask.id, ask.syn, (**answer).clone()) {
                    Came::Ask(both) => out.push(Out::Line(hand_on(plan, &both.0, (ask.syn, &both.1)))),
                    Came::Kept => {}
                    Came::Replayed => {
                        refuse(&format!("device {} answered ask {} again: dropped", answer.device, ask.id))
                    }
                }
            }
            return true;
        }
        if !ask.device_answers || ask.spread || ask.home as usize != me || matches!(ask.what, AskWhat::Pair(_)) {
            return false;
        }
        if let Some((syn, answer)) = plan.device_replies.ask_made(ask) {
            out.push(Out::Line(hand_on(plan, ask, (syn, &answer))));
        }
        true
    }
}
