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
use crate::ask::{Ask, AskWhat};
use crate::plan::Plan;

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
