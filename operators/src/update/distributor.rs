//! The exchange pact of `update_synopses`: routed records to their target workers, a run of one
//! update group at a time, markers (asks, fences) each to the worker its copy is addressed to.

use std::cell::RefCell;
use std::rc::Rc;

use timely::communication::Push;
use timely::dataflow::channels::pushers::exchange::Distributor;
use timely::dataflow::channels::{Message, Stamp};

use crate::ask::{destination_of, is_marker};
use crate::plan::{Mode, Plan};
use crate::record::{Rec, RecBatch, pool};

/// Records per container sent to another worker (a few hundred KiB: fewer, larger messages).
const SHIP_RECORDS: usize = 4096;

/// The exchange of routed records to their target workers, a run at a time.
///
/// Readers send a stream's tuples together, so records come in runs of one update group, and
/// every record of an owned group goes to its owner: the target is computed once per run and
/// the run moves into that worker's container in one extend (timely's hash exchange computes a
/// target and pushes per record, ~90 instructions each, which made `-w 2` do ~20 % more work
/// than `-w 1`). Other modes get their target per record, as [`crate::plan::Routing::target`] says.
pub(super) struct RunDistributor {
    pub(super) plan: Rc<RefCell<Plan>>,
    pub(super) me: usize,
    /// Per target worker: records waiting to be sent.
    pub(super) pending: Vec<RecBatch>,
    /// Runs of the container being partitioned: (target, length).
    pub(super) runs: Vec<(usize, usize)>,
}

impl RunDistributor {
    /// The exchange of worker `me`, routing by `plan`.
    pub(super) fn new(plan: Rc<RefCell<Plan>>, me: usize) -> RunDistributor {
        RunDistributor { plan, me, pending: Vec::new(), runs: Vec::new() }
    }

    fn target(plan: &Plan, me: usize, r: &Rec, peers: usize) -> usize {
        // After a rescale a value goes where the map of its window says.
        let window = match plan.routing.groups[r.group as usize].mode {
            Mode::Windowed(_) => plan.window_of(r.time),
            _ if !plan.routing.rescales().is_empty() => plan.window_of(r.time),
            _ => 0,
        };
        plan.routing.target(r.group, r.seq, window, me) as usize % peers
    }

    fn ship<T: Clone, P: Push<Message<T, RecBatch>>>(&mut self, target: usize, stamp: &Stamp<T>, pusher: &mut P) {
        let buffer = &mut self.pending[target];
        Message::push_at(buffer, stamp.clone(), pusher);
        // What the pusher hands back is a recycled container: empty it.
        buffer.0.clear();
    }

    /// Send `batch` on whole to `target`'s `pusher`, after what was waiting for that worker
    /// (order per worker kept).
    fn push_whole<T: Clone, P: Push<Message<T, RecBatch>>>(
        &mut self,
        target: usize,
        batch: &mut RecBatch,
        stamp: &Stamp<T>,
        pusher: &mut P,
    ) {
        if !self.pending[target].0.is_empty() {
            self.ship(target, stamp, pusher);
        }
        Message::push_at(batch, stamp.clone(), pusher);
        batch.0.clear();
    }

    /// The one worker every record of `recs` goes to, if the plan gives each of their groups
    /// one worker ([`crate::plan::Routing::group_target`]: no rescale has moved an owner) and
    /// they agree; `None` otherwise (markers included).
    ///
    /// Why: readers send each worker's groups in a container of their own, so this is nearly
    /// every container, and it costs one lookup per group and one compare per record. Finding
    /// the runs and each run's target as [`Distributor::partition`] does for any container cost
    /// ~13 instructions a tuple at `-w 2` (runs of a few records, each looked up).
    fn single_target(&self, plan: &Plan, recs: &[Rec], peers: usize) -> Option<usize> {
        let routing = &plan.routing;
        let mut group = recs.first()?.group;
        let target = routing.group_target(group, self.me)? % peers;
        for r in recs {
            if r.group != group {
                group = r.group;
                if routing.group_target(group, self.me)? % peers != target {
                    return None;
                }
            }
        }
        Some(target)
    }
}

impl Distributor<RecBatch> for RunDistributor {
    fn partition<T: Clone, P: Push<Message<T, RecBatch>>>(
        &mut self,
        batch: &mut RecBatch,
        stamp: &Stamp<T>,
        pushers: &mut [P],
    ) {
        let peers = pushers.len();
        if self.pending.len() != peers {
            self.pending.resize_with(peers, RecBatch::default);
        }
        let one = self.single_target(&self.plan.borrow(), &batch.0, peers);
        if let Some(target) = one {
            self.push_whole(target, batch, stamp, &mut pushers[target]);
            return;
        }
        let container = &mut batch.0;
        if container.iter().any(is_marker) {
            // Asks and fence markers reach every worker (each answers for what it holds; each
            // applies the requests): the reader sent a copy per worker, each goes to its own
            // (copying here would consume more records than were produced: `to_every_worker`),
            // ahead of the container's values.
            let mut rest = Vec::with_capacity(container.len());
            for r in container.drain(..) {
                if is_marker(&r) {
                    self.pending[destination_of(&r) % peers].0.push(r);
                } else {
                    rest.push(r);
                }
            }
            *container = rest;
        }
        let plan = self.plan.clone();
        let plan = plan.borrow();
        self.runs.clear();
        let mut i = 0;
        while i < container.len() {
            let first = &container[i];
            let target = RunDistributor::target(&plan, self.me, first, peers);
            let len = if plan.routing.groups[first.group as usize].mode == Mode::Owned {
                // A run of one window, once rescales have moved owners between windows.
                let window = (!plan.routing.rescales().is_empty()).then(|| plan.window_of(first.time));
                let same = |r: &&Rec| r.group == first.group && window.is_none_or(|w| plan.window_of(r.time) == w);
                1 + container[i + 1..].iter().take_while(same).count()
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
            self.push_whole(target, batch, stamp, &mut pushers[target]);
            return;
        }
        let runs = std::mem::take(&mut self.runs);
        let mut recs = container.drain(..);
        for &(target, len) in &runs {
            let mut left = len;
            while left > 0 {
                let buffer = &mut self.pending[target].0;
                if buffer.capacity() == 0 {
                    // Shipped (timely took the vector): one the thread kept.
                    *buffer = pool::take(SHIP_RECORDS);
                } else if buffer.capacity() < SHIP_RECORDS {
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

    fn flush<T: Clone, P: Push<Message<T, RecBatch>>>(&mut self, stamp: &Stamp<T>, pushers: &mut [P]) {
        for (target, pusher) in pushers.iter_mut().enumerate() {
            if self.pending.get(target).is_some_and(|b| !b.0.is_empty()) {
                self.ship(target, stamp, pusher);
            }
        }
    }

    fn relax(&mut self) {
        for buffer in &mut self.pending {
            if buffer.0.is_empty() {
                *buffer = RecBatch::default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ask::{fence_marker, fence_of, to_every_worker};
    use crate::record::Val;

    /// A pusher that keeps what reaches it, and counts the messages.
    #[derive(Default)]
    struct Kept(Vec<Rec>, usize);

    impl Push<Message<u64, RecBatch>> for Kept {
        fn push(&mut self, message: &mut Option<Message<u64, RecBatch>>) {
            if let Some(m) = message {
                self.0.append(&mut m.data.0);
                self.1 += 1;
            }
        }
    }

    /// A container whose groups all go to one worker reaches it whole, as one message; any other
    /// puts each record where [`crate::plan::Routing::target`] says, in the order it came.
    #[test]
    fn a_container_of_one_workers_groups_goes_whole_and_any_other_record_by_record() {
        let text: Vec<String> = (0..6)
            .map(|i| format!(r#"{{"streamID":"S{i}","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1],"noOfP":1}}"#))
            .collect();
        let requests = saams::api::request::parse_requests(&format!("[{}]", text.join(",")));
        let peers = 3;
        let plan =
            Rc::new(RefCell::new(Plan::build(&requests, peers, 60_000, std::sync::Arc::new(crate::plan::NoFiles))));
        let groups: Vec<u32> = (0..6).map(|i| plan.borrow().routes("F", &format!("S{i}")).0[0]).collect();
        let target = |g: u32| plan.borrow().routing.target(g, 0, 0, 1) as usize % peers;
        let mut distributor = RunDistributor::new(plan.clone(), 1);
        let stamp = Stamp::from_elem(1_000u64);
        let rec = |g: u32, seq: u64| Rec { group: g, time: 1_000, seq, val: Val::Num(seq as f64) };
        // Groups of one worker, several runs of each.
        let one: Vec<u32> = groups.iter().copied().filter(|&g| target(g) == target(groups[0])).collect();
        assert!(one.len() > 1, "the test needs two groups of one owner: {groups:?}");
        let mut pushers: Vec<Kept> = (0..peers).map(|_| Kept::default()).collect();
        let mut batch = RecBatch((0..40).map(|seq| rec(one[seq as usize % one.len()], seq)).collect());
        distributor.partition(&mut batch, &stamp, &mut pushers);
        distributor.flush(&stamp, &mut pushers);
        let whole = target(groups[0]);
        assert_eq!((pushers[whole].0.len(), pushers[whole].1), (40, 1), "one message of every record");
        assert!(pushers[whole].0.iter().enumerate().all(|(i, r)| r.seq == i as u64), "in order");
        // Every group, interleaved: each record at its target, in order.
        let mut pushers: Vec<Kept> = (0..peers).map(|_| Kept::default()).collect();
        let mut batch = RecBatch((0..60).map(|seq| rec(groups[seq as usize * 7 % 6], seq)).collect());
        distributor.partition(&mut batch, &stamp, &mut pushers);
        distributor.flush(&stamp, &mut pushers);
        assert_eq!(pushers.iter().map(|p| p.0.len()).sum::<usize>(), 60);
        for (w, kept) in pushers.iter().enumerate() {
            assert!(kept.0.iter().all(|r| target(r.group) == w), "worker {w} got another's record");
            assert!(kept.0.windows(2).all(|p| p[0].seq < p[1].seq), "worker {w}: out of order");
        }
    }

    /// Timely accounts records where they are produced and where they are consumed: the
    /// exchange must hand on exactly the records it was given (a marker copied to every worker
    /// here made the frontier pass values still in flight). Each worker gets its own copy of a
    /// marker, ahead of the values that came after it.
    #[test]
    fn the_exchange_hands_on_every_record_once_and_each_worker_its_marker_copy() {
        let requests = saams::api::request::parse_requests(
            r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1],"noOfP":3}"#,
        );
        let peers = 3;
        let plan =
            Rc::new(RefCell::new(Plan::build(&requests, peers, 60_000, std::sync::Arc::new(crate::plan::NoFiles))));
        let group = plan.borrow().routes("F", "A").0[0];
        let mut distributor = RunDistributor { plan, me: 0, pending: Vec::new(), runs: Vec::new() };
        let mut pushers: Vec<Kept> = (0..peers).map(|_| Kept::default()).collect();
        let stamp = Stamp::from_elem(1_000u64);
        let value = |seq: u64| Rec { group, time: 1_000, seq, val: Val::Num(seq as f64) };
        let mut container = RecBatch((0..10).map(value).collect());
        container.0.extend(to_every_worker(fence_marker(2, 60_000, 1_000), peers));
        container.0.extend((10..20).map(value));
        let given = container.0.len();
        distributor.partition(&mut container, &stamp, &mut pushers);
        distributor.flush(&stamp, &mut pushers);
        assert_eq!(pushers.iter().map(|p| p.0.len()).sum::<usize>(), given, "records in = records out");
        for (w, kept) in pushers.iter().enumerate() {
            let markers: Vec<&Rec> = kept.0.iter().filter(|r| fence_of(r).is_some()).collect();
            assert_eq!(markers.len(), 1, "worker {w} gets one copy");
            assert_eq!((destination_of(markers[0]), fence_of(markers[0])), (w, Some((2, 60_000))));
            assert!(fence_of(&kept.0[0]).is_some(), "worker {w}: the marker comes first");
        }
    }
}
