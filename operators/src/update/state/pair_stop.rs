//! Pair asks in the update operator ([`crate::pair_ask`]): an owned participant's state is taken
//! by its owner at the ask's point, once every window before it is closed and before the window
//! at it closes; a spread participant's ask goes to its home at once, to wait in the fold.

use super::State;
use crate::ask::Ask;
use crate::out::Out;
use crate::pair_ask::{PairState, components, pair_of, part_for_home};
use crate::plan::Plan;
use crate::record::SynBox;

impl State {
    /// Take pair ask `ask`, whose marker came at `time`: the parts this worker (`me`) answers
    /// for. Spread participants homed here go to `out` now; owned ones owned here wait for
    /// their point ([`State::take_pair_states`]).
    pub(in crate::update) fn ask_pair(&mut self, plan: &Plan, me: usize, ask: Ask, time: i64, out: &mut Vec<Out>) {
        for (component, owned) in components(plan, me, ask, time) {
            if owned {
                let at = pair_of(&component).map_or(0, |p| p.at);
                self.pair_stops.push((at, component));
            } else {
                out.push(Out::Ask(part_for_home(component)));
            }
        }
    }

    /// True while pair asks wait here for their point.
    pub(in crate::update) fn pairs_waiting(&self) -> bool {
        !self.pair_stops.is_empty()
    }

    /// The points of the waiting pair asks the watermark has passed, oldest first.
    pub(super) fn pair_points(&self, watermark: u64) -> Vec<u64> {
        let due = |p: u64| p <= watermark && p < self.pair_hold;
        let mut points: Vec<u64> = self.pair_stops.iter().map(|(p, _)| *p).filter(|&p| due(p)).collect();
        points.sort_unstable();
        points.dedup();
        points
    }

    /// Every window before `point` is closed and none after: the states of the owned
    /// participants of the pair asks waiting for it, as at the last close.
    pub(super) fn take_pair_states(&mut self, plan: &Plan, point: u64) {
        let (due, rest): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.pair_stops).into_iter().partition(|(p, _)| *p <= point);
        self.pair_stops = rest;
        for (_, ask) in due {
            let kept = self.at_close.get(&ask.syn).or_else(|| self.merged.get(&ask.syn));
            let (state, items) = match (kept, plan.routing.synopses.get(ask.syn as usize)) {
                (Some(held), _) => (held.state.clone_box(), held.items),
                (None, Some(spec)) => (spec.initial.clone_box(), 0),
                (None, None) => continue,
            };
            self.pair_out.push(Out::PairState(PairState { ask, items, state: SynBox::new(state) }));
        }
    }
}
