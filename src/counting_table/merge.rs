//! Adding another table's records (a merge of two synopses' tables), sized so the table ends at
//! the capacity adding the records one by one would give it.

use std::collections::HashMap;

use super::order::{BATCH, for_each_batch};
use super::probe::{ProbeEnd, probe_ends};
use super::record::Record;
use super::table::{Table, mix};

impl<R: Record> Table<R> {
    /// Add `record`'s count to its item's, or track it in the empty slot that ends its probe
    /// (one probe either way, and no branch on whether it was found: about half the records of
    /// a merge are new, at random). The caller has made room; returns whether the item was new,
    /// for the caller to record its text.
    #[inline]
    fn add_counted(&mut self, record: R) -> bool {
        let mask = self.mask();
        let mut i = (mix(record.id()) as usize) & mask;
        // On while the slot neither holds the id nor is empty, tested as one compare.
        while (self.slots[i].id() ^ record.id()).min(self.slots[i].count()) != 0 {
            i = (i + 1) & mask;
        }
        self.add_unless_taken(record, i).1
    }

    /// Add `record` at `slot`, where its probe ended before other records were added, unless an
    /// item added since has taken the slot; returns whether it was added, and whether as a new
    /// item. Neither is branched on: whether the slot was taken (rarely), or empty (at random,
    /// about every other record of a merge).
    #[inline]
    fn add_unless_taken(&mut self, record: R, slot: usize) -> (bool, bool) {
        let s = self.slots[slot];
        // Taken: the slot neither holds the id nor is empty (one compare, not two branches).
        let taken = (s.id() ^ record.id()).min(s.count()) != 0;
        let was_empty = s.count() == 0;
        let mut merged = [s, record][usize::from(was_empty)];
        *merged.count_mut() = s.count() + (record.count() & u64::from(!taken).wrapping_neg());
        self.slots[slot] = merged;
        self.len += usize::from(was_empty);
        (!taken, was_empty)
    }

    /// Add a batch of records, doubling the table first whenever a new item would take it past
    /// 3/4 full, as [`Table::insert_new`] does. A batch that fits even if every record is new
    /// goes without that test per record (it costs more than the adding, as it can reallocate
    /// the slots under the loop), and in rounds of two passes: every record's probe first,
    /// reading the slots only ([`probe_ends`]), then the adds, each where its probe ended
    /// unless a new item of the round took that slot first (two in five new items when merging
    /// the 10 M-key halves, whose records come in slot order): those are probed again in the
    /// next round, not followed on slot by slot (a branch that mispredicted on each of them).
    /// Probing and adding record by record, the next record's probe would read slots the add
    /// just wrote, and wait for the store. Calls `new` with each record that was new.
    #[inline]
    fn add_batch(&mut self, batch: &[R], mut new: impl FnMut(&mut Self, &R)) {
        if (self.len + batch.len()) * 4 <= self.slots.len() * 3 {
            let mut ends = [ProbeEnd::default(); BATCH];
            let (mut a, mut b) = ([R::default(); BATCH], [R::default(); BATCH]);
            let (mut deferred, mut next) = (&mut a, &mut b);
            for chunk in batch.chunks(BATCH) {
                // Each round adds the records whose probe's end no new item of the round took
                // first, and defers the others to the next, which probes them again.
                let mut n = self.add_round(chunk, &mut ends, deferred, &mut new);
                while n > 0 {
                    n = self.add_round(&deferred[..n], &mut ends, next, &mut new);
                    std::mem::swap(&mut deferred, &mut next);
                }
            }
            return;
        }
        for e in batch {
            if (self.len + 1) * 4 > self.slots.len() * 3 && self.get(e.id()).is_none() {
                self.rebuild(self.slots.len() * 2);
            }
            if self.add_counted(*e) {
                new(self, e);
            }
        }
    }

    /// One round of [`Table::add_batch`]: probe every record of `round`, then add each whose
    /// probe's end no new item of the round has taken since; the others go to `deferred`
    /// (their number is returned).
    #[inline]
    fn add_round(
        &mut self,
        round: &[R],
        ends: &mut [ProbeEnd; BATCH],
        deferred: &mut [R; BATCH],
        new: &mut impl FnMut(&mut Self, &R),
    ) -> usize {
        probe_ends(&self.slots, round, &mut ends[..round.len()]);
        let mut n = 0;
        for (e, end) in round.iter().zip(ends.iter()) {
            let (added, was_new) = self.add_unless_taken(*e, end.slot);
            deferred[n] = *e;
            n += usize::from(!added);
            if was_new {
                new(self, e);
            }
        }
        n
    }

    /// Add every item of `other` (counts summed); the table ends at the capacity adding the
    /// items one by one would give it, and grows at most once on the way.
    ///
    /// When the union can fit in the table as it is (surely, or by the share of new items among
    /// the first sixteenth of the other side's slots), the other side's records are added in
    /// place, doubling the table if they turn out not to fit after all: sizing for both sides
    /// at once and shrinking back when they overlapped cost two rebuilds of a megabyte-sized
    /// table on a typical merge. When it must grow, it is rebuilt once, for both sides, before
    /// adding (adding into a table filling up to 3/4 means probing through ever longer runs),
    /// starting from the larger side when that is the other one.
    pub fn absorb(&mut self, other: &Table<R>) {
        let start_capacity = self.slots.len();
        let most = self.len.saturating_add(other.len);
        let likely_fits = most * 4 <= start_capacity * 3 || {
            let (mut sampled, mut shared) = (0usize, 0usize);
            for_each_batch(&other.slots[..other.slots.len() / 16], |batch| {
                sampled += batch.len();
                for e in batch {
                    shared += usize::from(self.get(e.id()).is_some());
                }
            });
            let new_share = if sampled == 0 { 1.0 } else { (sampled - shared) as f64 / sampled as f64 };
            (self.len as f64 + other.len as f64 * new_share) * 4.0 <= start_capacity as f64 * 3.0
        };
        if likely_fits {
            self.add_all(other);
        } else {
            let fit = (most.saturating_mul(4) / 3 + 1).next_power_of_two().max(start_capacity);
            if other.len > self.len && other.texts.is_empty() {
                // Our texts stay in `self.texts`; the other side has none to bring.
                let mine = if other.slots.len() == fit {
                    std::mem::replace(&mut self.slots, other.slots.clone())
                } else {
                    let mine = std::mem::replace(&mut self.slots, vec![R::default(); fit]);
                    for_each_batch(&other.slots, |batch| batch.iter().for_each(|e| self.place(*e)));
                    mine
                };
                let len = std::mem::replace(&mut self.len, other.len);
                self.add_all(&Table { slots: mine, len, texts: HashMap::new() });
            } else {
                self.rebuild(fit);
                self.add_all(other);
            }
        }
        self.settle_capacity(start_capacity);
    }

    /// [`Table::absorb`] for records that are not in a table (distinct ids, any order; `text`
    /// gives a string item's text, and `with_texts` says whether it gives any: without, new
    /// items are added with no branch on whether they were new): Sticky Sampling's side thinned
    /// before a merge, which would otherwise be placed into a table of its own only to be read
    /// back out of it. Ends at the same items, counts and capacity as `absorb` of that table.
    pub fn absorb_records<'a>(&mut self, records: &[R], text: impl Fn(u64) -> Option<&'a str>, with_texts: bool) {
        let start_capacity = self.slots.len();
        let most = self.len.saturating_add(records.len());
        // Every sixteenth record (records in id order are not a sample of the items: numbers'
        // ids follow their values) estimates the share of new items, as in `absorb`.
        let likely_fits = most * 4 <= start_capacity * 3 || {
            let sampled = records.len().div_ceil(16);
            let shared = records.iter().step_by(16).filter(|e| self.get(e.id()).is_some()).count();
            let new_share = if sampled == 0 { 1.0 } else { (sampled - shared) as f64 / sampled as f64 };
            (self.len as f64 + records.len() as f64 * new_share) * 4.0 <= start_capacity as f64 * 3.0
        };
        if !likely_fits {
            self.rebuild((most.saturating_mul(4) / 3 + 1).next_power_of_two().max(start_capacity));
        }
        for batch in records.chunks(BATCH) {
            if with_texts {
                self.add_batch(batch, |table, e| {
                    if let Some(t) = text(e.id()) {
                        table.texts.insert(e.id(), t.into());
                    }
                });
            } else {
                self.add_batch(batch, |_, _| ());
            }
        }
        self.settle_capacity(start_capacity);
    }

    /// Rebuild at the capacity adding one by one from `start_capacity` ends at: doubled until
    /// the items fit at 3/4 load.
    fn settle_capacity(&mut self, start_capacity: usize) {
        let mut capacity = start_capacity;
        while self.len * 4 > capacity * 3 {
            capacity *= 2;
        }
        if capacity != self.slots.len() {
            self.rebuild(capacity);
        }
    }

    /// Add every record of `other`, growing as needed.
    fn add_all(&mut self, other: &Table<R>) {
        if other.texts.is_empty() {
            // Numbers only: nothing depends on whether a record was new, so nothing branches
            // on it (it is, at random, about every other record).
            for_each_batch(&other.slots, |batch| self.add_batch(batch, |_, _| ()));
        } else {
            for_each_batch(&other.slots, |batch| {
                self.add_batch(batch, |table, e| {
                    if let Some(t) = other.text(e.id()) {
                        table.texts.insert(e.id(), t.into());
                    }
                })
            });
        }
    }
}
