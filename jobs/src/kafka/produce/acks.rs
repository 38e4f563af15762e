//! Which records of a producer are done ([`Completed`]): the prefix of send sequence numbers whose
//! delivery reports have all come back.
//!
//! Why its own file: the job commits input offsets only after the answers computed from them are
//! acknowledged (at-least-once). Waiting for that with a flush blocked the committing worker, and
//! through the sink's lock every worker writing an answer, for as long as the brokers were away
//! (9.3 s of a 9.5 s outage in the broker-restart test). Asking "is every record sent before mark
//! `m` done?" instead never waits. Delivery reports come in order within a partition but not
//! across partitions, so a count of reports is not enough; this keeps the exact prefix.

use std::collections::BTreeSet;

/// The send sequence numbers (0, 1, 2, … in send order) whose delivery reports came back
/// (delivered or failed), kept as the length of the complete prefix plus the few reported ahead
/// of it.
///
/// ```
/// use saams_jobs::kafka::Completed;
/// let mut c = Completed::default();
/// c.complete(1); // records 0, 1 and 2 were sent; 1's report came first (another partition)
/// assert!(!c.all_before(1));
/// c.complete(0);
/// assert!(c.all_before(2));
/// assert!(!c.all_before(3));
/// c.complete(2);
/// assert!(c.all_before(3));
/// ```
#[derive(Debug, Default, Clone)]
pub struct Completed {
    /// Every sequence number below this is done.
    prefix: u64,
    /// Done, above the prefix (at most the records in flight).
    ahead: BTreeSet<u64>,
}

impl Completed {
    /// The delivery report of record `seq` came back. A number reported twice is ignored.
    pub fn complete(&mut self, seq: u64) {
        if seq < self.prefix {
            return;
        }
        if seq > self.prefix {
            self.ahead.insert(seq);
            return;
        }
        self.prefix += 1;
        while self.ahead.first() == Some(&self.prefix) {
            self.ahead.pop_first();
            self.prefix += 1;
        }
    }

    /// Whether every record numbered below `mark` is done.
    pub fn all_before(&self, mark: u64) -> bool {
        mark <= self.prefix
    }

    /// Reports that came back ahead of a record still in flight.
    pub fn out_of_order(&self) -> usize {
        self.ahead.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_grows_only_over_reported_records_in_any_report_order() {
        // reports of 0..200 in a scrambled order (three partitions, each in order)
        let order: Vec<u64> = (0..200u64).filter(|s| s % 3 == 1).chain((0..200).filter(|s| s % 3 != 1)).collect();
        let mut c = Completed::default();
        let mut done = [false; 200];
        for &s in &order {
            c.complete(s);
            done[s as usize] = true;
            let prefix = done.iter().take_while(|&&d| d).count() as u64;
            assert!(c.all_before(prefix), "after {s}: every record below {prefix} is done");
            assert!(!c.all_before(prefix + 1), "after {s}: record {prefix} is not done");
            assert_eq!(c.out_of_order(), done.iter().filter(|&&d| d).count() - prefix as usize);
        }
        assert!(c.all_before(200) && !c.all_before(201));
        assert_eq!(c.out_of_order(), 0);
        c.complete(5);
        c.complete(250);
        assert!(c.all_before(200) && !c.all_before(201), "a repeated or distant report moves nothing");
        assert!(Completed::default().all_before(0), "nothing sent: nothing to wait for");
    }
}
