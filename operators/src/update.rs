//! `update_synopses`: the operator that routes tuple values to their synopses (the exchange
//! pact carries the target the reading worker computed), buffers each event-time window, and
//! when the frontier passes a window feeds it to the synopses in a canonical order.
//!
//! Owned synopses (one owner) are merged state right here: the owner updates them and answers
//! their continuous queries at every window close, and their ad-hoc queries and SAVEs at the end;
//! the states of synopses in pair queries go on as snapshots.
//! Spread synopses get one partial per window (and bin), built from a fresh synopsis, sent on
//! to the tree merge.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use saams::{Datum, Synopsis};
use timely::communication::Push;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::Stream;
use timely::dataflow::channels::pact::DistributorPact;
use timely::dataflow::channels::pushers::exchange::Distributor;
use timely::dataflow::channels::{Message, Stamp};
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::generic::Operator;

use crate::answer;
use crate::plan::{Mode, Plan};
use crate::record::{Out, Partial, Rec, Snapshot, SynBox};

/// Feed a window's values (already in canonical order where it matters) to one synopsis:
/// order-sensitive kinds item by item with the event time (DFT's parameters are in time units),
/// the others as one batch (kinds speed up batches).
fn feed(syn: &mut dyn Synopsis, recs: &[Rec], batch: &[Datum<'_>]) {
    if syn.kind().is_order_sensitive() {
        for r in recs {
            syn.update_at(r.val.datum(), r.time);
        }
    } else {
        syn.update_batch(batch);
    }
}

type Buffers = HashMap<(u32, u64), Vec<Rec>>;

/// Records per container sent to another worker (a few hundred KiB: fewer, larger messages).
const SHIP_RECORDS: usize = 4096;

/// The exchange of routed records to their target workers, a run at a time.
///
/// Readers send a stream's tuples together, so records come in runs of one update group, and
/// every record of an owned group goes to its owner: the target is computed once per run and
/// the run moves into that worker's container in one extend (timely's hash exchange computes a
/// target and pushes per record, ~90 instructions each, which made `-w 2` do ~20 % more work
/// than `-w 1`). Other modes get their target per record, as [`Plan::target`] says.
struct RunDistributor {
    plan: Rc<Plan>,
    me: usize,
    /// Per target worker: records waiting to be sent.
    pending: Vec<Vec<Rec>>,
    /// Runs of the container being partitioned: (target, length).
    runs: Vec<(usize, usize)>,
}

impl RunDistributor {
    fn target(&self, r: &Rec, peers: usize) -> usize {
        let window = match self.plan.groups[r.group as usize].mode {
            Mode::Windowed(_) => self.plan.window_of(r.time),
            _ => 0,
        };
        self.plan.target(r.group, r.seq, window, self.me) as usize % peers
    }

    fn ship<T: Clone, P: Push<Message<T, Vec<Rec>>>>(&mut self, target: usize, stamp: &Stamp<T>, pusher: &mut P) {
        let buffer = &mut self.pending[target];
        Message::push_at(buffer, stamp.clone(), pusher);
        // What the pusher hands back is a recycled container: empty it.
        buffer.clear();
    }
}

impl Distributor<Vec<Rec>> for RunDistributor {
    fn partition<T: Clone, P: Push<Message<T, Vec<Rec>>>>(
        &mut self,
        container: &mut Vec<Rec>,
        stamp: &Stamp<T>,
        pushers: &mut [P],
    ) {
        let peers = pushers.len();
        if self.pending.len() != peers {
            self.pending.resize_with(peers, Vec::new);
        }
        self.runs.clear();
        let mut i = 0;
        while i < container.len() {
            let first = &container[i];
            let target = self.target(first, peers);
            let len = if self.plan.groups[first.group as usize].mode == Mode::Owned {
                1 + container[i + 1..].iter().take_while(|r| r.group == first.group).count()
            } else {
                1
            };
            match self.runs.last_mut() {
                Some((t, n)) if *t == target => *n += len,
                _ => self.runs.push((target, len)),
            }
            i += len;
        }
        if let [(target, _)] = self.runs[..] {
            // The whole container (typically a batch of one stream's tuples) goes to one worker:
            // send it on as it is, after what was waiting for that worker (order per worker kept).
            if !self.pending[target].is_empty() {
                self.ship(target, stamp, &mut pushers[target]);
            }
            Message::push_at(container, stamp.clone(), &mut pushers[target]);
            container.clear();
            return;
        }
        let runs = std::mem::take(&mut self.runs);
        let mut recs = container.drain(..);
        for &(target, len) in &runs {
            let mut left = len;
            while left > 0 {
                let buffer = &mut self.pending[target];
                if buffer.capacity() < SHIP_RECORDS {
                    buffer.reserve(SHIP_RECORDS - buffer.len());
                }
                let take = left.min(SHIP_RECORDS - buffer.len().min(SHIP_RECORDS));
                buffer.extend(recs.by_ref().take(take));
                left -= take;
                if buffer.len() >= SHIP_RECORDS {
                    self.ship(target, stamp, &mut pushers[target]);
                }
            }
        }
        drop(recs);
        self.runs = runs;
    }

    fn flush<T: Clone, P: Push<Message<T, Vec<Rec>>>>(&mut self, stamp: &Stamp<T>, pushers: &mut [P]) {
        for (target, pusher) in pushers.iter_mut().enumerate() {
            if self.pending.get(target).is_some_and(|b| !b.is_empty()) {
                self.ship(target, stamp, pusher);
            }
        }
    }

    fn relax(&mut self) {
        for buffer in &mut self.pending {
            if buffer.is_empty() {
                *buffer = Vec::new();
            }
        }
    }
}

/// Extension trait: maintain the plan's synopses from a stream of routed values.
pub trait UpdateSynopses<'scope> {
    /// Update every synopsis of `plan` from the values; emits answer lines of owned synopses and
    /// per-window partials of spread ones (timestamps: the window; the end-of-input answers at
    /// `u64::MAX`).
    fn update_synopses(self, plan: Rc<Plan>) -> Stream<'scope, u64, Vec<Out>>;
}

impl<'scope> UpdateSynopses<'scope> for Stream<'scope, u64, Vec<Rec>> {
    fn update_synopses(self, plan: Rc<Plan>) -> Stream<'scope, u64, Vec<Out>> {
        let me = self.scope().index();
        let route = plan.clone();
        // Runs on the reading worker: partition-based values stay where they were read.
        let pact = DistributorPact(move |_peers: usize| RunDistributor {
            plan: route,
            me,
            pending: Vec::new(),
            runs: Vec::new(),
        });
        self.unary_frontier::<CapacityContainerBuilder<Vec<Out>>, _, _, _>(
            pact,
            "UpdateSynopses",
            move |mut cap, _info| {
                cap.downgrade(&u64::MAX);
                let mut end_cap = Some(cap);
                let mut windows: BTreeMap<u64, (Capability<u64>, Buffers)> = BTreeMap::new();
                let mut merged: HashMap<u32, (Box<dyn Synopsis>, u64)> = HashMap::new();
                // Emptied buffers of closed windows, reused (with their capacity) by new ones: a
                // buffer grown from empty for every window and group was ~3 % of the job.
                let mut spare: Vec<Vec<Rec>> = Vec::new();
                // Runs of one incoming batch: (window, group, bin, length).
                let mut runs: Vec<(u64, u32, u64, usize)> = Vec::new();
                move |(input, frontier), output| {
                    input.for_each_stamp(|stamp, data| {
                        if !plan.update {
                            data.for_each(|batch| batch.clear());
                            return;
                        }
                        for batch in data {
                            // Records arrive in runs of one stream and window: find the runs on
                            // the slice, then move each into its buffer in one go (one lookup per run).
                            runs.clear();
                            let mut i = 0;
                            while i < batch.len() {
                                let rec = &batch[i];
                                let (w, g, bin) = (plan.window_of(rec.time), rec.group, plan.bin(rec.group, rec.seq));
                                let (start, end) = (w as i64, w as i64 + plan.window_ms);
                                let binned = matches!(plan.groups[g as usize].mode, Mode::Binned(_));
                                let more = batch[i + 1..]
                                    .iter()
                                    .take_while(|r| {
                                        r.group == g
                                            && r.time < end
                                            && r.time >= start
                                            && (!binned || plan.bin(g, r.seq) == bin)
                                    })
                                    .count();
                                runs.push((w, g, bin, more + 1));
                                i += more + 1;
                            }
                            let mut recs = batch.drain(..);
                            for &(w, g, bin, len) in &runs {
                                let (_, buffers) =
                                    windows.entry(w).or_insert_with(|| (stamp.delayed(&w, 0), HashMap::new()));
                                let buffer = buffers.entry((g, bin)).or_insert_with(|| spare.pop().unwrap_or_default());
                                buffer.extend(recs.by_ref().take(len));
                            }
                        }
                    });
                    while let Some((&w, _)) = windows.first_key_value() {
                        if frontier.less_equal(&w) {
                            break;
                        }
                        let Some((_, (cap, buffers))) = windows.pop_first() else { break };
                        let mut lines = Vec::new();
                        let mut partials = Vec::new();
                        let mut snapshots = Vec::new();
                        let mut buffers: Vec<_> = buffers.into_iter().collect();
                        buffers.sort_unstable_by_key(|(k, _)| *k);
                        for ((g, bin), mut recs) in buffers {
                            let group = &plan.groups[g as usize];
                            // (time, seq) is unique per record; runs usually arrive in order already.
                            if group.ordered && !recs.is_sorted_by_key(|r| (r.time, r.seq)) {
                                recs.sort_unstable_by_key(|r| (r.time, r.seq));
                            }
                            let n = recs.len() as u64;
                            let batch: Vec<Datum<'_>> = recs.iter().map(|r| r.val.datum()).collect();
                            for &s in &group.synopses {
                                if !plan.live.is_live(s, w) {
                                    continue;
                                }
                                let spec = &plan.synopses[s as usize];
                                if group.mode == Mode::Owned {
                                    let (state, items) = merged.entry(s).or_insert_with(|| (spec.initial.clone(), 0));
                                    feed(state.as_mut(), &recs, &batch);
                                    *items += n;
                                    answer::continuous(&plan, s, state.as_ref(), *items, w, &mut lines);
                                    for &dest in &spec.snapshot_to {
                                        snapshots.push(Snapshot {
                                            syn: s,
                                            window: w,
                                            items: *items,
                                            dest: dest as u32,
                                            state: SynBox(state.clone()),
                                        });
                                    }
                                } else {
                                    let mut part = spec.fresh.clone();
                                    feed(part.as_mut(), &recs, &batch);
                                    partials.push(Partial {
                                        syn: s,
                                        window: w,
                                        items: n,
                                        parts: vec![(bin, SynBox(part))],
                                    });
                                }
                            }
                            drop(batch);
                            recs.clear();
                            spare.push(recs);
                        }
                        let mut session = output.session(&cap);
                        session.give_iterator(lines.into_iter().map(Out::Line));
                        session.give_iterator(partials.into_iter().map(Out::Partial));
                        session.give_iterator(snapshots.into_iter().map(Out::Snapshot));
                    }
                    if frontier.is_empty()
                        && let Some(cap) = end_cap.take()
                    {
                        let mut lines = Vec::new();
                        for (s, spec) in plan.synopses.iter().enumerate() {
                            let s = s as u32;
                            if spec.home != me || spec.mode != Mode::Owned || spec.group == u32::MAX {
                                continue;
                            }
                            match merged.get(&s) {
                                Some((state, items)) => answer::at_end(&plan, s, state.as_ref(), *items, &mut lines),
                                None => answer::at_end(&plan, s, spec.initial.as_ref(), 0, &mut lines),
                            }
                        }
                        output.session(&cap).give_iterator(lines.into_iter().map(Out::Line));
                    }
                }
            },
        )
    }
}
