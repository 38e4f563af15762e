//! Where each partition of a worker's share of the data topic stands at checkpoint boundaries
//! ([`PartitionPositions`]).
//!
//! Why its own file: pure bookkeeping over offsets and event times, tested here without a broker;
//! the input ([`super::KafkaInput`]) feeds it every record it handles.

use saams::checkpoint::SourcePosition;

use crate::checkpoint::marks::SourceMarks;

/// Per partition: its [`SourceMarks`] (the offset of the first record at or after each wanted
/// boundary that was routed, with the newest event time before it), the next offset to read and
/// the newest event time routed so far.
///
/// A checkpoint at boundary `b` names, for every partition, where a restart reads on: its mark
/// for `b`, or (no record at or after `b` routed yet) its next offset. Partitions are sources
/// `kafka:<topic>:<partition>`, so a restart with another number of workers finds each
/// partition's position whichever worker reads it.
///
/// ```
/// use saams_jobs::kafka::PartitionPositions;
/// let mut p = PartitionPositions::new("ticks", &[0, 2], &[100, 7]);
/// p.want(60_000);
/// p.record(0, 100, 0, Some(59_000));
/// p.record(0, 101, 0, None); // a dead letter: read, not routed
/// p.record(0, 102, 0, Some(61_000)); // the first at or after the boundary
/// p.record(0, 103, 0, Some(62_000));
/// let at = p.positions(60_000);
/// assert_eq!(at[0].source, "kafka:ticks:0");
/// assert_eq!((at[0].offset, at[0].max_time), (102, Some(59_000)));
/// assert_eq!((at[1].source.as_str(), at[1].offset, at[1].max_time), ("kafka:ticks:2", 7, None));
/// ```
#[derive(Debug)]
pub struct PartitionPositions {
    topic: String,
    /// The partitions, sorted.
    partitions: Vec<i32>,
    marks: Vec<SourceMarks>,
    next: Vec<i64>,
    /// Newest event time routed (`i64::MIN`: none).
    newest: Vec<i64>,
    /// The slot of the last record's partition (records come in runs of one partition).
    last: usize,
}

impl PartitionPositions {
    /// `partitions` (sorted) of `topic`, each starting at the offset `starts` gives it.
    pub fn new(topic: &str, partitions: &[i32], starts: &[i64]) -> Self {
        PartitionPositions {
            topic: topic.to_string(),
            partitions: partitions.to_vec(),
            marks: partitions.iter().map(|_| SourceMarks::default()).collect(),
            next: partitions.iter().enumerate().map(|(i, _)| starts.get(i).copied().unwrap_or(0)).collect(),
            newest: vec![i64::MIN; partitions.len()],
            last: 0,
        }
    }

    /// A resumed partition: the newest event time read before its checkpointed position.
    pub fn start_from(&mut self, partition: i32, newest: i64) {
        if let Some(i) = self.slot(partition) {
            self.newest[i] = newest;
        }
    }

    fn slot(&mut self, partition: i32) -> Option<usize> {
        if self.partitions.get(self.last) == Some(&partition) {
            return Some(self.last);
        }
        let i = self.partitions.binary_search(&partition).ok()?;
        self.last = i;
        Some(i)
    }

    /// Mark boundary `b` on every partition.
    pub fn want(&mut self, b: u64) {
        for m in &mut self.marks {
            m.want(b);
        }
    }

    /// Line `line` of the record at `offset` of `partition` (0 for a record of one tuple) was
    /// handled: routed at event time `routed`, or not (`None`: a dead letter, a late or blank
    /// line). The next position to read is the next record: a record's lines are handled
    /// together, between two checkpoint boundaries' positions.
    #[inline]
    pub fn record(&mut self, partition: i32, offset: i64, line: u64, routed: Option<i64>) {
        let Some(i) = self.slot(partition) else { return };
        self.next[i] = self.next[i].max(offset + 1);
        let Some(time) = routed else { return };
        if self.marks[i].reached(time) {
            let at = self.position(i, offset, line);
            self.marks[i].mark(time, at);
        }
        self.newest[i] = self.newest[i].max(time);
    }

    fn position(&self, i: usize, offset: i64, line: u64) -> SourcePosition {
        SourcePosition {
            source: format!("kafka:{}:{}", self.topic, self.partitions[i]),
            offset: offset.max(0) as u64,
            line,
            max_time: (self.newest[i] != i64::MIN).then_some(self.newest[i]),
            done: false,
        }
    }

    /// Every partition's position at boundary `b` (its mark, else its next offset), forgetting
    /// the marks at and before `b`.
    pub fn positions(&mut self, b: u64) -> Vec<SourcePosition> {
        (0..self.partitions.len())
            .map(|i| match self.marks[i].take(b) {
                Some(at) => at,
                None => self.position(i, self.next[i], 0),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_follow_each_partition_and_unknown_partitions_are_ignored() {
        let mut p = PartitionPositions::new("t", &[1, 3], &[0, 50]);
        p.start_from(3, 9_000);
        p.want(10_000);
        p.want(20_000);
        p.record(3, 50, 0, Some(9_500));
        p.record(1, 0, 0, Some(10_000)); // at the boundary: marked
        p.record(3, 51, 0, Some(25_000)); // past both boundaries: marks both
        p.record(7, 0, 0, Some(30_000)); // not this worker's
        let at = p.positions(10_000);
        assert_eq!((at[0].offset, at[0].max_time), (0, None));
        assert_eq!((at[1].offset, at[1].max_time), (51, Some(9_500)));
        p.record(1, 1, 0, Some(12_000));
        let at = p.positions(20_000);
        assert_eq!((at[0].offset, at[0].max_time), (2, Some(12_000)), "no mark: the next offset");
        assert_eq!((at[1].offset, at[1].max_time), (51, Some(9_500)));
        // a boundary already passed when wanted is marked at the next routed record
        p.want(15_000);
        p.record(1, 2, 0, Some(16_000));
        assert_eq!(p.positions(15_000)[0].offset, 2);
        // inside a batched record: the mark names the line
        p.want(30_000);
        p.record(1, 5, 0, Some(29_000));
        p.record(1, 5, 1, Some(31_000));
        p.record(1, 5, 2, Some(32_000));
        let at = p.positions(30_000);
        assert_eq!((at[0].offset, at[0].line, at[0].max_time), (5, 1, Some(29_000)));
        assert_eq!(p.positions(40_000)[0].line, 0, "no mark: the next record, from its first line");
    }
}
