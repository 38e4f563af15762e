//! A worker's side of checkpoints: its inputs mark where they reach each agreed boundary, and
//! it writes its part once its operators and its probe have passed the boundary.

use std::cell::RefCell;

use saams::checkpoint::SourcePosition;
use saams_operators::Plan;

use crate::checkpoint::writer::CheckpointJob;
use crate::control::fence::Fences;
use crate::kafka::KafkaInput;

use super::reading::{Left, Reading};

/// Checkpoint boundaries agreed since the last call: every reader (and Kafka partition) marks
/// where it reaches them.
pub(super) fn want_boundaries(
    plan: &Plan,
    (readers, mut kafka): (&mut [Reading], Option<&mut KafkaInput>),
    known: &mut u64,
) {
    let checkpoints = plan.checkpoints.borrow();
    // Called on every turn of the reading loop: nothing to allocate when nothing is new.
    if checkpoints.boundaries.keys().next_back().is_none_or(|&b| b <= *known) {
        return;
    }
    let new: Vec<u64> = checkpoints.boundaries.keys().copied().filter(|&b| b > *known).collect();
    for b in new {
        for r in readers.iter_mut() {
            r.marks.want(b);
        }
        if let Some(k) = kafka.as_deref_mut() {
            k.want(b);
        }
        *known = b;
    }
}

/// Where a worker's inputs stand: its readers, those that ended (with their marks), its Kafka
/// partitions, and the tuples it has routed.
type Positions<'a> = (&'a mut [Reading], &'a mut Vec<Left>, Option<&'a mut KafkaInput>, u64);

/// Write this worker's part of every checkpoint its operators have copied their state for and
/// its probe has passed (every answer before the boundary is in the process' sink).
pub(super) fn write_checkpoints(
    plan: &RefCell<Plan>,
    probe: &timely::dataflow::ProbeHandle<u64>,
    (readers, ended, mut kafka, tuples): Positions<'_>,
    fences: &mut Fences,
    (job, me): (&CheckpointJob, usize),
) {
    loop {
        let ready = {
            let plan = plan.borrow();
            let checkpoints = plan.checkpoints.borrow();
            checkpoints.taken.first_key_value().is_some_and(|(&b, taken)| {
                taken.operators >= saams_operators::checkpoint::STATEFUL_OPERATORS && !probe.less_than(&b)
            })
        };
        if !ready {
            return;
        }
        let plan = plan.borrow();
        let Some((b, id, taken)) = plan.checkpoints.borrow_mut().take_complete() else { return };
        job.begin(b);
        // A unit that changed worker is reported by the one that read it at `b` (`Left`).
        let sources: Vec<SourcePosition> = readers
            .iter_mut()
            .filter(|r| r.after < b)
            .map(|r| r.marks.take(b).unwrap_or_else(|| r.position_now()))
            .chain(ended.iter_mut().filter(|l| l.reports(b)).map(|l| l.marks.take(b).unwrap_or_else(|| l.at.clone())))
            .chain(kafka.as_deref_mut().map(|k| k.positions(b)).unwrap_or_default())
            .collect();
        // Units that went to another worker are reported there from their last boundary on.
        ended.retain(|l| l.upto > b);
        let mut part = job.part(&plan, (id, b, me), taken, sources);
        part.tuples = tuples;
        if let Err(e) = job.write(&part, fences.request_log()) {
            eprintln!("saams: checkpoint {id}: {e} (a restart resumes from the one before)");
        }
        if me == 0 {
            fences.checkpoint_written();
        }
    }
}
