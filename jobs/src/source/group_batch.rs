//! Records routed in one read round, handed to the dataflow grouped by update group
//! ([`GroupBatch`]).
//!
//! Why: the update operator takes its input in runs of one group (one lookup of the group's
//! buffer or state per run, one batched synopsis update per run). The generator reads one
//! stream at a time, so its records come in long runs; a JSON-lines file or a Kafka topic
//! interleaves its streams tuple by tuple, so with the paper's workload (one group per stream)
//! nearly every run was one record long, and `take_batch` cost four times what it does on the
//! generator's path. Grouping a few thousand records before they are sent gives the file and
//! Kafka paths the generator's runs.
//!
//! Only the order *between* groups changes: within a group the records keep the order they were
//! routed in (a stable counting sort), and nothing the dataflow sees depends on the order of two
//! groups' records in one batch. A batch is at most [`GroupBatch::CAPACITY`] records, and the
//! caller sends it at the end of every read round, before any fence, ask or epoch advance it
//! sends itself.

use saams_operators::{Rec, Val};

/// Staged records and the scratch of the counting sort that groups them.
///
/// ```
/// use saams_jobs::source::group_batch::GroupBatch;
/// use saams_operators::{Rec, Val};
/// let mut batch = GroupBatch::default();
/// for (seq, group) in [2u32, 0, 2, 1, 0, 2].into_iter().enumerate() {
///     let full = batch.push(Rec { group, time: 0, seq: seq as u64, val: Val::Num(seq as f64) });
///     assert!(!full);
/// }
/// let mut sent = Vec::new();
/// batch.send_grouped(|r| sent.push((r.group, r.seq)));
/// // Groups in the order first seen; each group's records in the order routed.
/// assert_eq!(sent, [(2, 0), (2, 2), (2, 5), (0, 1), (0, 4), (1, 3)]);
/// assert!(batch.is_empty());
/// ```
#[derive(Default)]
pub struct GroupBatch {
    staged: Vec<Rec>,
    /// Per group id: the sort it was last counted in (`round`), and its count, then its next slot.
    counted_in: Vec<u32>,
    slot: Vec<u32>,
    /// The distinct groups of the current sort, in the order first seen.
    groups: Vec<u32>,
    /// Indices into `staged` in the order to send.
    order: Vec<u32>,
    /// Containers being filled by [`GroupBatch::send_by_target`]: one per target worker, and
    /// the one of records whose targets differ.
    outs: Vec<Vec<Rec>>,
    /// Scratch of [`GroupBatch::send_by_target`], kept for its allocation: runs of one group in
    /// sending order (container, first index into `order`, length), and records per container.
    runs: Vec<(usize, usize, usize)>,
    sizes: Vec<usize>,
    round: u32,
}

/// Group ids at or above this are sent as they come (plan groups are small dense indices; a
/// larger id would size the scratch arrays by it).
const MAX_SORTED_GROUP: u32 = 1 << 22;

impl GroupBatch {
    /// Records staged before [`GroupBatch::push`] asks for a send: 4096 records of 40 bytes
    /// (160 KB) stay in a core's L2 while they are sorted.
    pub const CAPACITY: usize = 4096;

    /// Stage a record; true when the batch is full and should be sent now.
    #[inline]
    pub fn push(&mut self, r: Rec) -> bool {
        self.staged.push(r);
        self.staged.len() >= Self::CAPACITY
    }

    /// True when nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Hand every staged record to `send`, grouped: groups in the order first seen, each group's
    /// records in the order staged. Records already in runs of distinct groups go as they are.
    pub fn send_grouped(&mut self, mut send: impl FnMut(Rec)) {
        self.order_groups();
        for &i in &self.order {
            send(std::mem::replace(
                &mut self.staged[i as usize],
                Rec { group: 0, time: 0, seq: 0, val: Val::Num(0.0) },
            ));
        }
        self.staged.clear();
    }

    /// Hand every staged record to `send` in containers, grouped as [`GroupBatch::send_grouped`]
    /// orders them: the records of a group all going to one worker (`target_of` its first
    /// record says which: [`saams_operators::plan::Routing::group_target`]) in that worker's
    /// container, the others in one more. Every container sent is left empty.
    ///
    /// Why: the exchange hands a container that goes to one worker on whole, and splits any
    /// other record by record (with `-w 2`, most records were copied once more there, and
    /// each of the ~200-record containers the input's builder cut was a message of its own).
    ///
    /// ```
    /// use saams_jobs::source::group_batch::GroupBatch;
    /// use saams_operators::{Rec, Val};
    /// let mut batch = GroupBatch::default();
    /// for (seq, group) in [2u32, 0, 2, 1, 0, 3].into_iter().enumerate() {
    ///     batch.push(Rec { group, time: 0, seq: seq as u64, val: Val::Num(seq as f64) });
    /// }
    /// // Groups 0 and 2 go to worker 1, group 1 to worker 0, group 3 value by value.
    /// let target = |r: &Rec| [Some(1), Some(0), Some(1), None][r.group as usize];
    /// let mut sent = Vec::new();
    /// batch.send_by_target(target, |c| sent.push(c.drain(..).map(|r| (r.group, r.seq)).collect::<Vec<_>>()));
    /// assert_eq!(sent, [vec![(1, 3)], vec![(2, 0), (2, 2), (0, 1), (0, 4)], vec![(3, 5)]]);
    /// assert!(batch.is_empty());
    /// ```
    pub fn send_by_target(
        &mut self,
        mut target_of: impl FnMut(&Rec) -> Option<usize>,
        mut send: impl FnMut(&mut Vec<Rec>),
    ) {
        if self.staged.is_empty() {
            return;
        }
        self.order_groups();
        // Container `outs.len() - 1` is the one of per-record targets.
        let GroupBatch { staged, order, outs, runs, sizes, .. } = self;
        runs.clear();
        sizes.clear();
        let mut i = 0;
        while i < order.len() {
            let first = &staged[order[i] as usize];
            let n = 1 + order[i + 1..].iter().take_while(|&&j| staged[j as usize].group == first.group).count();
            let out = target_of(first).unwrap_or(usize::MAX);
            runs.push((out, i, n));
            if out != usize::MAX && out >= sizes.len() {
                sizes.resize(out + 1, 0);
            }
            i += n;
        }
        let mixed = sizes.len();
        sizes.push(0);
        for run in runs.iter_mut() {
            run.0 = run.0.min(mixed);
            sizes[run.0] += run.2;
        }
        outs.resize_with(sizes.len(), Vec::new);
        for (out, &n) in outs.iter_mut().zip(sizes.iter()) {
            out.reserve(n);
        }
        for &(out, start, n) in runs.iter() {
            // One extend per run (a slice's iterator knows its length: no capacity check per record).
            outs[out].extend(order[start..start + n].iter().map(|&j| {
                std::mem::replace(&mut staged[j as usize], Rec { group: 0, time: 0, seq: 0, val: Val::Num(0.0) })
            }));
        }
        self.staged.clear();
        for out in self.outs.iter_mut().filter(|o| !o.is_empty()) {
            send(out);
            // What the receiver leaves behind is not ours to send again.
            out.clear();
        }
    }

    /// The staged records' sending order into `order`: grouped as [`GroupBatch::send_grouped`]
    /// sends them (as staged where they need no reordering or cannot be sorted).
    fn order_groups(&mut self) {
        self.order.clear();
        if !self.count_groups() {
            self.order.extend(0..self.staged.len() as u32);
            return;
        }
        let mut at = 0u32;
        for &g in &self.groups {
            let n = self.slot[g as usize];
            self.slot[g as usize] = at;
            at += n;
        }
        self.order.resize(self.staged.len(), 0);
        for (i, r) in self.staged.iter().enumerate() {
            let s = &mut self.slot[r.group as usize];
            self.order[*s as usize] = i as u32;
            *s += 1;
        }
    }

    /// Count the staged records per group (into `slot`, groups into `groups`); false when they
    /// need no reordering (each group in one run already) or cannot be sorted here.
    fn count_groups(&mut self) -> bool {
        self.groups.clear();
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            // A wrapped round number could match a stale mark: start the marks over.
            self.counted_in.fill(0);
            self.round = 1;
        }
        let mut runs = 0usize;
        let mut previous = u32::MAX;
        for r in &self.staged {
            let g = r.group;
            if g >= MAX_SORTED_GROUP {
                return false;
            }
            if g as usize >= self.counted_in.len() {
                self.counted_in.resize(g as usize + 1, 0);
                self.slot.resize(g as usize + 1, 0);
            }
            if self.counted_in[g as usize] != self.round {
                self.counted_in[g as usize] = self.round;
                self.slot[g as usize] = 0;
                self.groups.push(g);
            }
            self.slot[g as usize] += 1;
            runs += usize::from(g != previous);
            previous = g;
        }
        runs > self.groups.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(group: u32, seq: u64) -> Rec {
        Rec { group, time: seq as i64, seq, val: Val::Str(format!("{group}/{seq}").into()) }
    }

    /// The records sent are the records staged, each group's in staged order, each group in one run.
    #[test]
    fn every_record_is_sent_once_grouped_and_in_order_within_its_group() {
        let mut batch = GroupBatch::default();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..50u64 {
            let mut staged = Vec::new();
            let n = 1 + (round * 97) % 700;
            for seq in 0..n {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Few groups in some rounds, many in others, one huge id in one.
                let group =
                    if round == 7 && seq == 3 { MAX_SORTED_GROUP + 5 } else { (state % (1 + round * 3)) as u32 };
                staged.push(rec(group, seq));
                assert!(!batch.push(rec(group, seq)));
            }
            let mut sent = Vec::new();
            batch.send_grouped(|r| sent.push(r));
            assert!(batch.is_empty());
            let mut by_seq = sent.clone();
            by_seq.sort_by_key(|r| r.seq);
            assert_eq!(by_seq, staged, "round {round}: not the staged records");
            if round == 7 {
                assert_eq!(sent, staged, "an id beyond the sortable range: sent as staged");
                continue;
            }
            let mut seen = std::collections::HashSet::new();
            for (i, r) in sent.iter().enumerate() {
                if i == 0 || sent[i - 1].group != r.group {
                    assert!(seen.insert(r.group), "round {round}: group {} in two runs", r.group);
                } else {
                    assert!(sent[i - 1].seq < r.seq, "round {round}: group {} out of order", r.group);
                }
            }
        }
    }

    /// Sent by target: every record once, each group's records in one container and in staged
    /// order, a container of a worker holding only groups that go to it.
    #[test]
    fn every_record_is_sent_once_in_its_targets_container() {
        let mut batch = GroupBatch::default();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        // Groups divisible by 5 go value by value; the others to worker group % 3.
        let target = |r: &Rec| (!r.group.is_multiple_of(5)).then_some(r.group as usize % 3);
        for round in 0..40u64 {
            let mut staged = Vec::new();
            for seq in 0..1 + (round * 131) % 900 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let group = (state % (1 + round * 2)) as u32;
                staged.push(rec(group, seq));
                batch.push(rec(group, seq));
            }
            let mut containers: Vec<Vec<Rec>> = Vec::new();
            batch.send_by_target(target, |c| containers.push(std::mem::take(c)));
            assert!(batch.is_empty());
            let mut sent: Vec<Rec> = containers.iter().flatten().cloned().collect();
            sent.sort_by_key(|r| r.seq);
            assert_eq!(sent, staged, "round {round}: not the staged records");
            let mut container_of = std::collections::HashMap::new();
            for (i, c) in containers.iter().enumerate() {
                assert!(!c.is_empty(), "round {round}: an empty container was sent");
                let targets: std::collections::HashSet<_> = c.iter().map(target).collect();
                assert_eq!(targets.len(), 1, "round {round}: container {i} mixes targets");
                for w in c.windows(2).filter(|w| w[0].group == w[1].group) {
                    assert!(w[0].seq < w[1].seq, "round {round}: group {} out of order", w[0].group);
                }
                for r in c {
                    assert_eq!(*container_of.entry(r.group).or_insert(i), i, "round {round}: group {} split", r.group);
                }
            }
        }
    }

    #[test]
    fn a_full_batch_asks_to_be_sent() {
        let mut batch = GroupBatch::default();
        let full: Vec<bool> = (0..GroupBatch::CAPACITY as u64).map(|i| batch.push(rec((i % 3) as u32, i))).collect();
        assert_eq!(full.iter().filter(|&&f| f).count(), 1);
        assert!(full[GroupBatch::CAPACITY - 1]);
        let mut groups = Vec::new();
        batch.send_grouped(|r| groups.push(r.group));
        let runs = 1 + groups.windows(2).filter(|w| w[0] != w[1]).count();
        assert_eq!((groups.len(), runs), (GroupBatch::CAPACITY, 3));
    }
}
