//! Checkpoints, the operators' side: at an agreed window boundary every stateful operator
//! takes a copy of the state that summarizes the values *before* the boundary, and a restarted
//! job starts its operators from such copies.
//!
//! The frontier is the barrier. The job agrees on a boundary `b` (a window start, in event-time
//! ms) the way it agrees on fences for live requests ([`Plan::apply_through`]): after the
//! boundary is in every worker's plan, no value at or after `b` has been routed anywhere. Each
//! operator then takes its copy in the activation in which its input frontier first passes
//! `b`, after closing every window before `b` and before feeding any value at or after it:
//!
//! - `update_synopses`: the merged state of the owned synopses it owns;
//! - `fold_partials`: the merged state of the spread synopses homed here;
//! - `answer_pairs`: the latest states of the synopses in pair queries, and the last answered
//!   set of each continuous set-valued query.
//!
//! Nothing of a window at or after `b` is copied: partials, reorder buffers and values in
//! flight are rebuilt by re-reading the inputs from the positions where each first read a value
//! at or after `b` (the job's readers keep those positions). So a checkpoint's size is the
//! synopses' size, whatever the rate or the window.
//!
//! Every state is keyed by synopsis (or query) id, never by worker: a job with another number
//! of workers or processes finds each state's new home from its own plan.

use std::collections::{BTreeMap, HashMap};

use saams::Synopsis;

use crate::Plan;

/// The operators that take a copy at every boundary (the job waits for all of them).
pub const STATEFUL_OPERATORS: u32 = 3;

/// An operator's way through the boundaries: which it has copied its state at.
#[derive(Default)]
pub(crate) struct BoundaryCopies {
    /// Boundaries at or before this one are copied.
    copied_through: u64,
}

impl BoundaryCopies {
    /// The boundary to copy at now: one the operator's frontier (`watermark`) has passed and
    /// that is not after `next`, the oldest window the operator has still to process (every
    /// window before the boundary is processed then).
    pub(crate) fn due(&self, plan: &Plan, watermark: u64, next: Option<u64>) -> Option<u64> {
        let b = plan.checkpoints.borrow().next_due(self.copied_through, watermark)?;
        next.is_none_or(|w| w >= b).then_some(b)
    }

    /// Hand in the copies taken at `b`.
    pub(crate) fn hand_in(&mut self, plan: &Plan, b: u64, states: Vec<HeldState>, sets: Vec<(u32, Vec<String>)>) {
        plan.checkpoints.borrow_mut().hand_in(b, states, sets);
        self.copied_through = b;
    }
}

/// Copies of the merged states of `merged` homed on worker `me`, by synopsis (with the LOADs
/// merged into each, from `loaded`).
pub(crate) fn copy_homed<'a>(
    plan: &Plan,
    me: usize,
    merged: impl Iterator<Item = (&'a u32, &'a (Box<dyn Synopsis>, u64))>,
    loaded: &HashMap<u32, usize>,
) -> Vec<HeldState> {
    let mut copies: Vec<HeldState> = merged
        .filter(|(s, _)| plan.synopses.get(**s as usize).is_some_and(|spec| spec.home == me))
        .map(|(&syn, (state, items))| HeldState {
            syn,
            latest: false,
            state: state.clone(),
            items: *items,
            loads_merged: loaded.get(&syn).copied().unwrap_or(0),
        })
        .collect();
    copies.sort_unstable_by_key(|h| h.syn);
    copies
}

/// A synopsis' cumulative state as an operator holds it.
pub struct HeldState {
    /// The synopsis (index in [`crate::Plan::synopses`]).
    pub syn: u32,
    /// True for the state a pair query reads (`answer_pairs`), false for the merged state at
    /// the synopsis' home.
    pub latest: bool,
    /// The state.
    pub state: Box<dyn Synopsis>,
    /// The values it summarizes.
    pub items: u64,
    /// Live LOADs merged into it so far.
    pub loads_merged: usize,
}

/// What one worker's operators copied at one boundary.
#[derive(Default)]
pub struct Taken {
    /// Operators that have passed the boundary (each adds its copies, possibly none).
    pub operators: u32,
    /// Synopsis states.
    pub states: Vec<HeldState>,
    /// Per continuous set-valued query: the members of its last answered set.
    pub sets: Vec<(u32, Vec<String>)>,
}

/// One worker's checkpoint bookkeeping, shared by its operators through the plan.
#[derive(Default)]
pub struct Checkpointing {
    /// Agreed boundaries (ms) not yet handed to the job, with their checkpoint ids.
    pub boundaries: BTreeMap<u64, u64>,
    /// Copies taken, by boundary.
    pub taken: BTreeMap<u64, Taken>,
    /// States to start from (a restarted job), by synopsis: the merged state at its home.
    pub restored: HashMap<u32, (Box<dyn Synopsis>, u64, usize)>,
    /// States to start from for pair queries, by synopsis.
    pub restored_latest: HashMap<u32, (Box<dyn Synopsis>, u64)>,
    /// Last answered sets to start from, by continuous set-valued query.
    pub restored_sets: HashMap<u32, Vec<String>>,
}

impl Checkpointing {
    /// The boundaries an operator that has taken copies through `done` (exclusive: boundaries
    /// at or before it are done) must take now that its frontier is at `watermark`: every
    /// agreed boundary in `(done, watermark]`, oldest first.
    ///
    /// ```
    /// use saams_operators::checkpoint::Checkpointing;
    /// let mut c = Checkpointing::default();
    /// c.boundaries.insert(60_000, 1);
    /// c.boundaries.insert(120_000, 2);
    /// assert_eq!(c.due(0, 59_999), Vec::<u64>::new());
    /// assert_eq!(c.due(0, 60_000), vec![60_000]);
    /// assert_eq!(c.due(60_000, u64::MAX), vec![120_000]);
    /// ```
    pub fn due(&self, done: u64, watermark: u64) -> Vec<u64> {
        self.boundaries.range(done.saturating_add(1)..).map(|(&b, _)| b).take_while(|&b| b <= watermark).collect()
    }

    /// The oldest boundary in `(done, watermark]`, if any ([`Checkpointing::due`]'s first).
    pub fn next_due(&self, done: u64, watermark: u64) -> Option<u64> {
        self.boundaries.range(done.saturating_add(1)..).map(|(&b, _)| b).next().filter(|&b| b <= watermark)
    }

    /// An operator hands in its copies for boundary `b` (possibly none).
    pub fn hand_in(&mut self, b: u64, states: Vec<HeldState>, sets: Vec<(u32, Vec<String>)>) {
        let taken = self.taken.entry(b).or_default();
        taken.operators += 1;
        taken.states.extend(states);
        taken.sets.extend(sets);
    }

    /// The oldest boundary every stateful operator has handed in, with its id and copies.
    pub fn take_complete(&mut self) -> Option<(u64, u64, Taken)> {
        let (&b, taken) = self.taken.first_key_value()?;
        if taken.operators < STATEFUL_OPERATORS {
            return None;
        }
        let taken = self.taken.remove(&b)?;
        let id = self.boundaries.remove(&b).unwrap_or(0);
        Some((b, id, taken))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::sync::Arc;

    use timely::dataflow::operators::{Input, Inspect, Probe};

    use crate::plan::NoFiles;
    use crate::{FoldPartials, Plan, Rec, UpdateSynopses, Val};

    /// An owned Count-Min (one stream) and a spread HyperLogLog (the whole dataset) on two
    /// workers' worth of plan, one worker running.
    const REQUESTS: &str = r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}
        {"streamID":"","synopsisID":2,"dataSetKey":"F","param":["HyperLogLog","price","NotQueryable",0.05]}
        {"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[1.0,"price","Queryable","Continues"],"requestID":9}"#;

    /// A copy taken: synopsis, items, state bytes.
    type Copied = (u32, u64, Vec<u8>);

    /// Feed values `0..n` (value i at second i) with a checkpoint at `boundary` (and start from
    /// `restored`, if given, skipping values before its boundary); returns the copies taken (by
    /// synopsis: items, state bytes) and the answer lines.
    fn run(n: u64, boundary: u64, restored: Option<Vec<(u32, Vec<u8>, u64)>>) -> (Vec<Copied>, Vec<String>) {
        timely::execute_directly(move |worker| {
            let requests = saams::api::request::parse_requests(REQUESTS);
            let plan = Plan::build(&requests, 1, 60_000, Arc::new(NoFiles));
            plan.checkpoints.borrow_mut().boundaries.insert(boundary, 7);
            let skip_before = restored.as_ref().map_or(0, |_| boundary);
            if let Some(states) = restored {
                for (syn, bytes, items) in states {
                    let state = saams::registry::decode(&bytes).expect("decode");
                    plan.checkpoints.borrow_mut().restored.insert(syn, (state, items, 0));
                }
            }
            let plan = Rc::new(RefCell::new(plan));
            let out = Rc::new(RefCell::new(Vec::new()));
            let sink = out.clone();
            let (mut input, probe) = worker.dataflow::<u64, _, _>(|scope| {
                let (input, stream) = scope.new_input::<Vec<Rec>>();
                let (probe, _) = stream
                    .update_synopses(plan.clone())
                    .fold_partials(plan.clone())
                    .inspect(move |o: &crate::Out| {
                        if let crate::Out::Line(l) = o {
                            sink.borrow_mut().push(l.clone())
                        }
                    })
                    .probe();
                (input, probe)
            });
            let (per_stream, wide) = {
                let p = plan.borrow();
                let r = p.routes("F", "A");
                (r.0.to_vec(), r.1.to_vec())
            };
            for i in 0..n {
                let time = 1_000 * i as i64;
                if (time as u64) < skip_before {
                    continue;
                }
                for &g in per_stream.iter().chain(&wide) {
                    input.send(Rec { group: g, time, seq: i, val: Val::Num((i % 17) as f64) });
                }
                input.advance_to(time as u64);
                worker.step();
            }
            drop(input);
            while !probe.done() {
                worker.step();
            }
            // The pairs operator is not in this dataflow: hand in for it.
            plan.borrow().checkpoints.borrow_mut().hand_in(boundary, Vec::new(), Vec::new());
            let taken = plan.borrow().checkpoints.borrow_mut().take_complete();
            let copies = match taken {
                Some((b, id, taken)) => {
                    assert_eq!((b, id), (boundary, 7));
                    let mut v: Vec<_> = taken.states.iter().map(|h| (h.syn, h.items, h.state.encode())).collect();
                    v.sort_by_key(|c| c.0);
                    v
                }
                None => Vec::new(),
            };
            let lines = out.borrow().clone();
            (copies, lines)
        })
    }

    #[test]
    fn copies_at_a_boundary_hold_exactly_the_values_before_it_and_resume_to_the_same_answers() {
        // 600 values, one a second: ten one-minute windows; the checkpoint at minute 4.
        let boundary = 240_000;
        let (copies, lines) = run(600, boundary, None);
        assert_eq!(copies.len(), 2, "the Count-Min (owned) and the HyperLogLog (spread)");
        for (syn, items, _) in &copies {
            assert_eq!(*items, 240, "synopsis {syn}: the values of the first four windows");
        }
        // Started from the copies, fed only the values from the boundary on: the answers of the
        // windows from the boundary on are exactly those of the uninterrupted run.
        let restored = copies.into_iter().map(|(syn, items, bytes)| (syn, bytes, items)).collect();
        let (_, mut resumed) = run(600, boundary, Some(restored));
        let minute = |l: &String| l.split(r#""start":"1970-01-01T00:"#).nth(1).and_then(|r| r[..2].parse::<u32>().ok());
        let mut later: Vec<String> = lines.iter().filter(|l| minute(l).is_some_and(|m| m >= 4)).cloned().collect();
        assert_eq!(later.len(), 6, "windows 4..10 of the Count-Min's continuous query: {lines:?}");
        later.sort();
        resumed.sort();
        assert_eq!(resumed, later);
        assert!(resumed.iter().any(|l| l.contains(r#""tuples":600"#)), "the counts go on from the checkpoint's");
    }
}
