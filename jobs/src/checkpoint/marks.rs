//! Where each input stands at a checkpoint boundary.
//!
//! A checkpoint at boundary `b` holds the synopses' state of every value before `b`; values at
//! or after `b` are read again after a restart. An input reads in roughly event-time order
//! (within the lateness), so it keeps, for each boundary not yet written, the position of the
//! first value at or after `b` it routed, and the newest event time before it (its lateness is
//! judged from that). A resumed input reads on from that position and skips the values before
//! `b` it meets there: those were counted (or found late) before the checkpoint.

use saams::checkpoint::SourcePosition;

/// One input's marks.
#[derive(Debug)]
pub struct SourceMarks {
    /// Boundaries (ms) asked for and not reached yet, oldest first.
    wanted: Vec<u64>,
    /// The oldest of them (`i64::MAX`: none): checked for every value routed.
    next: i64,
    /// Positions at boundaries reached, oldest first.
    marks: Vec<(u64, SourcePosition)>,
    /// Values before this event time (ms) were counted before the checkpoint this input
    /// resumed from: skipped.
    pub skip_before: i64,
}

impl Default for SourceMarks {
    fn default() -> Self {
        SourceMarks { wanted: Vec::new(), next: i64::MAX, marks: Vec::new(), skip_before: i64::MIN }
    }
}

impl SourceMarks {
    /// Mark boundary `b` too, when the input first routes a value at or after it.
    pub fn want(&mut self, b: u64) {
        if self.wanted.contains(&b) || self.marks.iter().any(|(m, _)| *m == b) {
            return;
        }
        self.wanted.push(b);
        self.wanted.sort_unstable();
        self.next = self.wanted[0].min(i64::MAX as u64) as i64;
    }

    /// True if routing a value of `time` reaches a boundary (then call [`SourceMarks::mark`]).
    #[inline]
    pub fn reached(&self, time: i64) -> bool {
        time >= self.next
    }

    /// The value about to be routed (event time `time`) is at `position`: every wanted boundary
    /// at or before `time` is marked there.
    ///
    /// ```
    /// use saams::checkpoint::SourcePosition;
    /// use saams_jobs::checkpoint::marks::SourceMarks;
    /// let at = |offset| SourcePosition { source: "unit:0".into(), offset, line: offset, max_time: None, done: false };
    /// let mut m = SourceMarks::default();
    /// m.want(60_000);
    /// m.want(120_000);
    /// assert!(!m.reached(59_999));
    /// assert!(m.reached(60_000));
    /// m.mark(70_000, at(7));
    /// assert!(!m.reached(119_000));
    /// m.mark(130_000, at(9));
    /// assert_eq!(m.take(60_000).map(|p| p.offset), Some(7));
    /// assert_eq!(m.take(120_000).map(|p| p.offset), Some(9));
    /// assert_eq!(m.take(120_000), None);
    /// ```
    pub fn mark(&mut self, time: i64, position: SourcePosition) {
        let n = self.wanted.iter().take_while(|&&b| b as i64 <= time).count();
        for b in self.wanted.drain(..n) {
            self.marks.push((b, position.clone()));
        }
        self.next = self.wanted.first().map_or(i64::MAX, |&b| b.min(i64::MAX as u64) as i64);
    }

    /// The position at boundary `b` (`None`: no value at or after it was routed yet — the
    /// input's current position is the one), forgetting it and every older one.
    pub fn take(&mut self, b: u64) -> Option<SourcePosition> {
        let found = self.marks.iter().find(|(m, _)| *m == b).map(|(_, p)| p.clone());
        self.marks.retain(|(m, _)| *m > b);
        self.wanted.retain(|&w| w > b);
        self.next = self.wanted.first().map_or(i64::MAX, |&w| w.min(i64::MAX as u64) as i64);
        found
    }
}
