//! The exchange pact of `update_synopses`: routed records to their target workers, a run of one
//! update group at a time, markers (asks, fences) each to the worker its copy is addressed to.

use std::cell::RefCell;
use std::rc::Rc;

use timely::communication::Push;
use timely::dataflow::channels::pushers::exchange::Distributor;
use timely::dataflow::channels::{Message, Stamp};

use crate::ask::{destination_of, is_marker};
use crate::plan::{Mode, Plan};
use crate::record::Rec;

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
    pub(super) pending: Vec<Vec<Rec>>,
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
        if container.iter().any(is_marker) {
            // Asks and fence markers reach every worker (each answers for what it holds; each
            // applies the requests): the reader sent a copy per worker, each goes to its own
            // (copying here would consume more records than were produced: `to_every_worker`),
            // ahead of the container's values.
            let mut rest = Vec::with_capacity(container.len());
            for r in container.drain(..) {
                if is_marker(&r) {
                    self.pending[destination_of(&r) % peers].push(r);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ask::{fence_marker, fence_of, to_every_worker};
    use crate::record::Val;

    /// A pusher that keeps what reaches it.
    #[derive(Default)]
    struct Kept(Vec<Rec>);

    impl Push<Message<u64, Vec<Rec>>> for Kept {
        fn push(&mut self, message: &mut Option<Message<u64, Vec<Rec>>>) {
            if let Some(m) = message {
                self.0.append(&mut m.data);
            }
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
        let mut container: Vec<Rec> = (0..10).map(value).collect();
        container.extend(to_every_worker(fence_marker(2, 60_000, 1_000), peers));
        container.extend((10..20).map(value));
        let given = container.len();
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
