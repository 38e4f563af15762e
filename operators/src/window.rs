//! A synopsis' merged state as its window sees it ([`saams::api::window::WindowSpec`]), held by
//! whoever answers the synopsis (its owner in `update`, its home in `fold`).
//!
//! The job's window (`--window`, the *cadence*) is the unit everything closes in: values are
//! fed, partials merged, fences and checkpoints agreed per job window, in time order. A
//! synopsis' window is made of whole job windows (a tumbling size, a sliding slide is a
//! multiple of the cadence: [`saams::api::window::WindowSpec::check_cadence`]), so its state
//! only has to know where its periods begin and end:
//!
//! - **landmark**: one period from the first job window fed on; answered at every job window
//!   close, covering `[first window, close)`.
//! - **tumbling**: the period is the tumbling window; its state starts empty
//!   (a copy of the synopsis' empty state; the first from its initial state, with any LOADed snapshot), is
//!   answered when its last job window closes and is then dropped. A window whose last job
//!   windows had no values is answered when the next value of the synopsis arrives (its
//!   window is then over) or at the end of the input: answers of windows without values are not
//!   written, as in Flink and Kafka Streams.
//! - **sliding**: the period is a pane of `slide`; closed panes are kept until they leave the
//!   window (at most `size / slide` of them, synopses, not tuples), and every window end `E`
//!   that has values in `[E − size, E)` is answered with the merge of its panes, in time order.
//!
//! Only one period is open per synopsis: a job window is fed only after every earlier one was
//! closed, so the state never waits for late values (the reorder buffers and partials in
//! flight do, bounded by the lateness as before).

use std::collections::VecDeque;

use saams::Synopsis;
use saams::api::window::{Span, WindowSpec, WindowType};

/// What a held state needs of its synopsis: its window, and its empty state (each tumbling
/// window and pane starts from a copy). Plain data, so this module sits below the plan.
#[derive(Clone, Copy)]
pub struct Windowing<'a> {
    /// The synopsis' window.
    pub window: WindowSpec,
    /// An empty synopsis with its parameters.
    pub fresh: &'a dyn Synopsis,
    /// Where its tumbling windows and panes are aligned: the window it was constructed at (0
    /// for the request script's; a live construct's fence), so its first window starts there.
    pub origin: u64,
}

impl Windowing<'_> {
    /// The period (tumbling window, pane) holding job window `w`, aligned to the origin.
    fn period_of(&self, w: u64) -> u64 {
        match self.window.period_ms() {
            None => 0,
            Some(p) => w - (w.saturating_sub(self.origin)) % p,
        }
    }

    /// True when `end` ends a period.
    fn ends_period(&self, end: u64) -> bool {
        self.window.period_ms().is_some_and(|p| end.saturating_sub(self.origin).is_multiple_of(p))
    }
}

/// A closed pane of a sliding synopsis.
#[derive(Clone, Debug)]
pub struct Pane {
    /// Its start (ms).
    pub start: u64,
    /// Its synopsis.
    pub state: Box<dyn Synopsis>,
    /// The values it summarizes.
    pub items: u64,
}

/// A synopsis' state at its home: the open period and, for sliding synopses, the closed panes
/// still inside the window.
#[derive(Clone, Debug)]
pub struct Held {
    /// The open period's state (landmark: everything since the first window).
    pub state: Box<dyn Synopsis>,
    /// The values it summarizes.
    pub items: u64,
    /// The open period's start (landmark: the first window fed); `None` before any value of the
    /// period (a tumbling window or pane just answered, a synopsis not fed yet).
    pub since: Option<u64>,
    /// Sliding: closed panes, oldest first.
    pub panes: VecDeque<Pane>,
    /// The end of the newest job window closed (a landmark answer's end).
    pub fed_to: u64,
    /// Tumbling and sliding: the last window answered (its span, state and values), which
    /// the end of the input's ad-hoc queries and SAVEs read.
    pub last: Option<(Span, Box<dyn Synopsis>, u64)>,
}

/// Where an answer goes: its span, the state it is read from, and the values that state
/// summarizes.
pub type Emit<'a> = dyn FnMut(Span, &dyn Synopsis, u64) + 'a;

impl Held {
    /// The state a synopsis starts with: its `initial` state (fresh, or with the script's
    /// LOADs), nothing fed.
    pub fn new(initial: &dyn Synopsis) -> Held {
        Held { state: initial.clone_box(), items: 0, since: None, panes: VecDeque::new(), fed_to: 0, last: None }
    }

    /// A held state restored from a checkpoint: its open period's start and the end of the
    /// newest window it closed (panes are added after).
    pub fn restored(state: Box<dyn Synopsis>, items: u64, (since, fed_to): (Option<u64>, u64)) -> Held {
        Held { state, items, since, panes: VecDeque::new(), fed_to, last: None }
    }

    /// Start a new period from the synopsis' empty state; the period just answered (`span`)
    /// is kept as the last one.
    fn reset(&mut self, spec: Windowing<'_>, span: Span) {
        let state = std::mem::replace(&mut self.state, spec.fresh.clone_box());
        self.last = Some((span, state, self.items));
        self.items = 0;
        self.since = None;
    }

    /// Job window `w` is about to be fed: open its period, answering first what the periods
    /// before it still owe (a tumbling window, sliding windows, that ended without a value in
    /// their last job window).
    pub fn enter(&mut self, spec: Windowing<'_>, w: u64, emit: &mut Emit<'_>) {
        match spec.window {
            WindowSpec::Landmark => {
                self.since.get_or_insert(w);
            }
            WindowSpec::Tumbling { size } => {
                let p = spec.period_of(w);
                if let Some(q) = self.since.filter(|&q| q != p) {
                    let answered = span(WindowType::Tumbling, q, q + size as u64);
                    emit(answered, self.state.as_ref(), self.items);
                    self.reset(spec, answered);
                }
                self.since = Some(p);
            }
            WindowSpec::Sliding { size, slide } => {
                let p = spec.period_of(w);
                if self.since == Some(p) {
                    return;
                }
                let answered = match self.since {
                    Some(q) => {
                        self.close_pane(spec, q);
                        Some(q)
                    }
                    None => self.panes.back().map(|pane| pane.start + slide as u64),
                };
                if let Some(from) = answered {
                    self.answer_ends(from, p, (size as u64, slide as u64), emit);
                }
                self.prune(p, size as u64);
                self.since = Some(p);
            }
        }
    }

    /// Job window `w` (of `cadence` ms), fed, closes: the answers due at its end.
    pub fn close(&mut self, spec: Windowing<'_>, w: u64, cadence: u64, emit: &mut Emit<'_>) {
        let end = w + cadence;
        self.fed_to = self.fed_to.max(end);
        match spec.window {
            WindowSpec::Landmark => {
                emit(span(WindowType::Landmark, self.since.unwrap_or(w), end), self.state.as_ref(), self.items)
            }
            WindowSpec::Tumbling { size } => {
                if spec.ends_period(end) {
                    let answered = span(WindowType::Tumbling, self.since.unwrap_or(end - size as u64), end);
                    emit(answered, self.state.as_ref(), self.items);
                    self.reset(spec, answered);
                }
            }
            WindowSpec::Sliding { size, slide } => {
                if spec.ends_period(end) {
                    let p = self.since.unwrap_or(end - slide as u64);
                    self.close_pane(spec, p);
                    self.answer_ends(end - slide as u64, end, (size as u64, slide as u64), emit);
                    self.prune(end, size as u64);
                }
            }
        }
    }

    /// The end of the input: answer the open tumbling window, and every sliding window that
    /// still has values.
    pub fn finish(&mut self, spec: Windowing<'_>, emit: &mut Emit<'_>) {
        match spec.window {
            WindowSpec::Landmark => {}
            WindowSpec::Tumbling { size } => {
                if let Some(p) = self.since {
                    let answered = span(WindowType::Tumbling, p, p + size as u64);
                    emit(answered, self.state.as_ref(), self.items);
                    self.reset(spec, answered);
                }
            }
            WindowSpec::Sliding { size, slide } => {
                let from = match self.since {
                    Some(q) => {
                        self.close_pane(spec, q);
                        q
                    }
                    None => match self.panes.back() {
                        Some(pane) => pane.start + slide as u64,
                        None => return,
                    },
                };
                let last = self.panes.back().map_or(from, |pane| pane.start + size as u64);
                self.answer_ends(from, last, (size as u64, slide as u64), emit);
                self.panes.clear();
            }
        }
    }

    /// Close the open pane (start `p`) of a sliding synopsis: kept while it is in the window.
    fn close_pane(&mut self, spec: Windowing<'_>, p: u64) {
        let state = std::mem::replace(&mut self.state, spec.fresh.clone_box());
        self.panes.push_back(Pane { start: p, state, items: self.items });
        self.items = 0;
        self.since = None;
    }

    /// Drop the panes no window ending after `now` holds.
    fn prune(&mut self, now: u64, size: u64) {
        while self.panes.front().is_some_and(|pane| pane.start + size <= now) {
            self.panes.pop_front();
        }
    }

    /// Answer every sliding window ending in `(after, until]` (every `slide`) that holds a
    /// closed pane.
    fn answer_ends(&mut self, after: u64, until: u64, (size, slide): (u64, u64), emit: &mut Emit<'_>) {
        let Some(newest) = self.panes.back().map(|pane| pane.start) else { return };
        let mut end = after + slide;
        while end <= until && end <= newest + size {
            let start = end.saturating_sub(size);
            let mut inside = self.panes.iter().filter(|pane| pane.start >= start && pane.start < end);
            if let Some(first) = inside.next() {
                let mut merged = first.state.clone();
                let mut items = first.items;
                for pane in inside {
                    // Panes of one synopsis share its parameters: their merge cannot fail.
                    let _ = merged.merge(pane.state.as_ref());
                    items += pane.items;
                }
                let answered = span(WindowType::Sliding, start, end);
                emit(answered, merged.as_ref(), items);
                self.last = Some((answered, merged, items));
            }
            end += slide;
        }
    }

    /// What an ad-hoc query or SAVE reads now: the open window so far (a tumbling synopsis'
    /// open window, a sliding synopsis' last `size` up to the open pane, a landmark synopsis'
    /// state), with `open` — job windows not closed yet, as (window, items, partial) — merged
    /// in where they belong to it. `None` when a merge fails (with why).
    pub fn view(
        &self,
        spec: Windowing<'_>,
        cadence: u64,
        open: Vec<(u64, u64, Box<dyn Synopsis>)>,
    ) -> Result<(Box<dyn Synopsis>, u64, Span), String> {
        let newest = open.iter().map(|(w, ..)| spec.period_of(*w)).max();
        let period = match (self.since, newest) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let landmark_end = open.iter().map(|(w, ..)| w + cadence).max();
        let (mut state, mut items, span) = match spec.window {
            WindowSpec::Landmark => {
                let start = self.since.or(open.iter().map(|(w, ..)| *w).min()).unwrap_or(0);
                let end = landmark_end.unwrap_or(self.fed_to).max(self.fed_to).max(start + cadence);
                (self.state.clone(), self.items, span(WindowType::Landmark, start, end))
            }
            WindowSpec::Tumbling { size } => {
                let p = period.unwrap_or(0);
                let (state, items) =
                    if self.since == Some(p) { (self.state.clone(), self.items) } else { (spec.fresh.clone_box(), 0) };
                (state, items, span(WindowType::Tumbling, p, p + size as u64))
            }
            WindowSpec::Sliding { size, .. } => {
                let end = period.map_or(0, |p| p + spec.window.period_ms().unwrap_or(1));
                let start = end.saturating_sub(size as u64);
                let mut state = spec.fresh.clone_box();
                let mut items = 0;
                for pane in self.panes.iter().filter(|pane| pane.start >= start) {
                    state.merge(pane.state.as_ref()).map_err(|e| e.to_string())?;
                    items += pane.items;
                }
                if self.since.is_some_and(|s| s >= start) {
                    state.merge(self.state.as_ref()).map_err(|e| e.to_string())?;
                    items += self.items;
                }
                (state, items, span(WindowType::Sliding, start, end))
            }
        };
        let first = span.start.max(0) as u64;
        for (w, n, part) in open {
            if spec.window == WindowSpec::Landmark || (w >= first && (w as i64) < span.end) {
                state.merge(part.as_ref()).map_err(|e| e.to_string())?;
                items += n;
            }
        }
        Ok((state, items, span))
    }
}

/// A span of `kind` from `start` to `end` (ms).
fn span(kind: WindowType, start: u64, end: u64) -> Span {
    Span::new(kind, start.min(i64::MAX as u64) as i64, end.min(i64::MAX as u64) as i64)
}
