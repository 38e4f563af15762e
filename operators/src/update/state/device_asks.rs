//! Ad-hoc queries and SAVEs of synopses *resident* on an edge device ([`crate::query_view`]):
//! the owner here holds only the synopsis' query view, so it does not answer such an ask; the
//! device does, from its state at the ask's fence, and its answer comes to the table of
//! devices' replies of this worker's process ([`crate::device_replies`]): read there, or sent
//! from the process that read it. Either may come first: the ask waits for its answer, or the
//! answer for its ask; whichever comes second hands it on (the answer's side at once; the home
//! leaves it ready for the relay: [`crate::device_replies::DeviceReplies::take_ready`]).
//!
//! Which asks: those the worker that sends them marked ([`Ask::device_answers`]), made
//! at a fence (the device hears them on the control topic with their fences). Not the view's
//! presence here: a window's views are installed at its close, which an ask may come before.

use super::State;
use crate::answer;
use crate::ask::{Ask, AskWhat};
use crate::plan::Plan;
use crate::query_view::QueryView;
use crate::window::Held;

impl State {
    /// Take `ask` (made at input time `time`) if a device answers it ([`Ask::device_answers`])
    /// and it is of a synopsis this worker owns: it waits for its answer, or is ready with the
    /// answer that came first, for the process' relay to hand on. False for any other ask.
    pub(super) fn device_ask(&mut self, plan: &Plan, me: usize, ask: &Ask, time: i64) -> bool {
        if !ask.device_answers || ask.spread || ask.home as usize != me || matches!(ask.what, AskWhat::Pair(_)) {
            return false;
        }
        plan.device_replies.ask_made(ask, u64::try_from(time).unwrap_or(0));
        true
    }
}

/// The end of the input for synopsis `syn` homed here ([`answer::at_end`]), unless it is
/// resident on a device (`held` holds the query view the device shipped): then the continuous
/// answers its open windows still owe, and, instead of answering the script's ad-hoc queries
/// and SAVEs from the view (which cannot answer most of them, nor be saved), their asks
/// ([`answer::end_asks`]) wait for the device's answers, which it makes from its state at its end,
/// before its goodbye (`saams-edge`'s end): handed on as they come, at the end of the input's
/// time, as one raw run's lines.
pub(super) fn at_end(plan: &Plan, syn: u32, held: &mut Held, lines: &mut Vec<String>) {
    if !held.state.as_any().is::<QueryView>() {
        return answer::at_end(plan, syn, held, lines);
    }
    let s = &plan.routing.synopses[syn as usize];
    if !s.is_deleted() {
        held.finish(s.windowing(), &mut |span, state, items| answer::continuous(plan, syn, state, items, span, lines));
    }
    for ask in answer::end_asks(plan, syn) {
        plan.device_replies.ask_made(&ask, u64::MAX);
    }
}
