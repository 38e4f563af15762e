//! Resuming from a checkpoint: the same command with the same `--checkpoints` directory starts
//! from the newest complete checkpoint — any number of workers and processes.
//!
//! Every state is keyed by synopsis (or query), every input position by input, so each worker
//! of the new job takes what its own plan homes on it: the states are rebinned, not copied
//! worker by worker. The request script and the inputs must be those the checkpoint was written
//! with (a clear error otherwise); the live requests applied before it are applied again at
//! their fences, from its request log.

use std::collections::HashMap;

use saams::checkpoint::{LoggedRequest, Manifest, MonitorState, OutputMark, SourcePosition, StateRole, SynopsisState};
use saams_operators::Plan;
use saams_operators::ask::{Ask, AskWhat};
use saams_operators::device_replies::{RepliesCopy, RestoredReplies};
use saams_operators::window::{Held, Pane};

use crate::checkpoint::CheckpointStore;

/// A checkpoint to resume from, as read.
pub struct Resume {
    /// Its id.
    pub id: u64,
    /// Its boundary (event-time ms): values before it are in its states.
    pub boundary_ms: u64,
    manifests: Vec<Manifest>,
    states: Vec<SynopsisState>,
    sets: Vec<(u32, Vec<String>)>,
    monitors: Vec<MonitorState>,
    positions: HashMap<String, SourcePosition>,
    /// The asks waiting for devices' answers, for a job merging devices.
    replies: std::sync::Arc<RestoredReplies>,
    /// Which of the job's input name lists the checkpoint was written with (see
    /// [`Resume::newest`]).
    pub inputs_at: usize,
}

impl Resume {
    /// The newest complete checkpoint in `store`, checked against this job: its window, request
    /// script (where this process has it: the first) and inputs — one of `inputs`, the names of
    /// what the job reads in each way it can cut its files into ranges, its own way first
    /// ([`crate::source::file::RangeLayout`]; [`Resume::inputs_at`] says which one the
    /// checkpoint names). Damaged checkpoints are skipped (each with a line on stderr).
    ///
    /// # Errors
    /// When the directory cannot be read, or the newest complete checkpoint was written by
    /// another job.
    pub fn newest(
        store: &CheckpointStore,
        window_ms: u64,
        script: Option<&str>,
        inputs: &[Vec<String>],
    ) -> Result<Option<Resume>, String> {
        Resume::newest_at_most(store, u64::MAX, window_ms, script, inputs)
    }

    /// As [`Resume::newest`], among the checkpoints of ids up to `at_most`.
    ///
    /// # Errors
    /// As [`Resume::newest`].
    pub fn newest_at_most(
        store: &CheckpointStore,
        at_most: u64,
        window_ms: u64,
        script: Option<&str>,
        inputs: &[Vec<String>],
    ) -> Result<Option<Resume>, String> {
        let (restored, warnings) = store.newest_at_most(at_most)?;
        for w in &warnings {
            eprintln!("saams: {w}");
        }
        let Some(restored) = restored else { return Ok(None) };
        let dir = store.dir().display();
        let first = restored.manifests.first().ok_or_else(|| format!("{dir}: a checkpoint without a manifest"))?;
        if first.window_ms != window_ms {
            return Err(format!(
                "{dir}: checkpoint {} was written with a {} ms window, this job has {window_ms} ms",
                restored.id, first.window_ms
            ));
        }
        if script.is_some_and(|s| s != first.script) {
            return Err(format!(
                "{dir}: checkpoint {} was written for another request script (start with the same --requests, or another --checkpoints directory)",
                restored.id
            ));
        }
        let Some(inputs_at) = inputs.iter().position(|names| *names == first.inputs) else {
            return Err(format!(
                "{dir}: checkpoint {} read other inputs ({}), this job reads {}",
                restored.id,
                first.inputs.join(", "),
                inputs.first().map(|names| names.join(", ")).unwrap_or_default()
            ));
        };
        let mut states = Vec::new();
        let mut sets = Vec::new();
        let mut monitors = Vec::new();
        let mut positions = HashMap::new();
        let mut copies = Vec::new();
        for part in restored.parts {
            if !part.device_replies.is_empty() {
                let copy = RepliesCopy::decode(&part.device_replies)
                    .map_err(|e| format!("{dir}: checkpoint {}, part of worker {}: {e}", restored.id, part.worker))?;
                copies.push((part.process, copy));
            }
            states.extend(part.synopses);
            sets.extend(part.previous_sets);
            monitors.extend(part.monitors);
            for p in part.sources {
                positions.insert(p.source.clone(), p);
            }
        }
        Ok(Some(Resume {
            id: restored.id,
            boundary_ms: first.boundary_ms,
            manifests: restored.manifests,
            states,
            sets,
            monitors,
            positions,
            replies: std::sync::Arc::new(RestoredReplies::new(
                restored.id,
                (!copies.is_empty()).then(|| RepliesCopy::join(copies)),
            )),
            inputs_at,
        }))
    }

    /// Give a worker's plan the states it starts from (each operator takes those homed on its
    /// worker). The plan must be the checkpoint's: built from the same script, its live
    /// requests applied ([`Resume::requests`]).
    ///
    /// # Errors
    /// When a state does not decode or does not belong to the synopsis (or monitored stream)
    /// it is stored for.
    pub fn fill(&self, plan: &Plan) -> Result<(), String> {
        let mut checkpoints = plan.checkpoints.borrow_mut();
        checkpoints.restored_boundary = self.boundary_ms;
        for s in &self.states {
            let spec = plan
                .routing
                .synopses
                .get(s.syn as usize)
                .ok_or_else(|| format!("checkpoint {}: synopsis {} is not in the registry", self.id, s.syn))?;
            let state = saams_operators::query_view::decode_state(&s.bytes)
                .map_err(|e| format!("checkpoint {}: the state of synopsis {}: {e}", self.id, s.syn))?;
            if state.kind() != spec.kind {
                return Err(format!(
                    "checkpoint {}: synopsis {} is a {}, the checkpoint holds a {}",
                    self.id,
                    s.syn,
                    spec.kind.name(),
                    state.kind().name()
                ));
            }
            match s.role {
                StateRole::Latest => {
                    checkpoints.restored_latest.insert(s.syn, (state, s.items));
                }
                StateRole::Owned | StateRole::Spread => {
                    let held = checkpoints.restored.entry(s.syn).or_insert_with(|| (Held::new(spec.fresh.as_ref()), 0));
                    let panes = std::mem::take(&mut held.0.panes);
                    held.0 = Held::restored(state, s.items, (s.since, s.until));
                    held.0.panes = panes;
                    held.1 = s.loads_merged as usize;
                }
                StateRole::Pane => {
                    let start = s.since.ok_or_else(|| {
                        format!("checkpoint {}: a pane of synopsis {} without its start", self.id, s.syn)
                    })?;
                    let held = checkpoints.restored.entry(s.syn).or_insert_with(|| (Held::new(spec.fresh.as_ref()), 0));
                    held.0.panes.push_back(Pane { start, state, items: s.items });
                }
            }
        }
        for (held, _) in checkpoints.restored.values_mut() {
            held.panes.make_contiguous().sort_by_key(|pane| pane.start);
        }
        for (q, members) in &self.sets {
            checkpoints.restored_sets.insert(*q, members.clone());
        }
        // The monitoring kind's sites and coordinators, keyed by stream and site: each worker's
        // operators take those this job hosts on it, whatever the checkpoint's shape.
        for copy in &self.monitors {
            plan.monitor.check_copy(copy).map_err(|e| format!("checkpoint {}: {e}", self.id))?;
        }
        checkpoints.restored_monitors = self.monitors.clone();
        checkpoints.restored_replies = Some(self.replies.clone());
        Ok(())
    }

    /// Of the asks a live request fenced after the boundary made when applied again, those to
    /// send again: all but those sent before the boundary, whose answer lines are before the
    /// cut ([`RestoredReplies::sent_before`]). Each is marked answered by its device when the
    /// synopsis' restored state is a device's query view (it is resident there): the job has
    /// not heard from its devices yet.
    pub fn asks_again(&self, asks: Vec<Ask>) -> Vec<Ask> {
        let resident = |syn: u32| {
            self.states.iter().filter(|s| s.syn == syn && s.role != StateRole::Latest).any(|s| {
                saams_operators::query_view::decode_state(&s.bytes)
                    .is_ok_and(|state| state.as_any().is::<saams_operators::query_view::QueryView>())
            })
        };
        let mut again: Vec<Ask> = asks.into_iter().filter(|ask| !self.replies.sent_before(ask.id)).collect();
        for ask in &mut again {
            ask.device_answers |= matches!(ask.what, AskWhat::Query(_) | AskWhat::Save(_)) && resident(ask.syn);
        }
        again
    }

    /// The live requests applied before the checkpoint, with their fences, in order.
    pub fn requests(&self) -> &[LoggedRequest] {
        self.manifests.first().map_or(&[], |m| &m.requests)
    }

    /// Where input `key` reads on (`None`: it had not been read; it starts over, skipping values
    /// before the boundary like the others).
    pub fn position(&self, key: &str) -> Option<&SourcePosition> {
        self.positions.get(key)
    }

    /// The output length process `process` recorded (`None`: it wrote to no file, or the
    /// checkpoint had fewer processes).
    pub fn output_bytes(&self, process: usize, path: &str) -> Option<u64> {
        self.file_mark(process, path, |m| m.output.as_ref())
    }

    /// The length process `process`'s dead-letter file `path` had at the checkpoint (`None`: it
    /// kept no dead-letter file then, another one, or the checkpoint had fewer processes).
    pub fn dead_letter_bytes(&self, process: usize, path: &str) -> Option<u64> {
        self.file_mark(process, path, |m| m.dead_letters.as_ref())
    }

    /// The length a file of process `process` (the one `which` names in its manifest) had at
    /// the checkpoint, if that file is `path`.
    fn file_mark(&self, process: usize, path: &str, which: impl Fn(&Manifest) -> Option<&OutputMark>) -> Option<u64> {
        self.manifests
            .iter()
            .find(|m| m.process as usize == process)
            .and_then(which)
            .filter(|o| o.path == path)
            .map(|o| o.bytes)
    }

    /// The answer topic and, per partition, the smallest end offset any process recorded (`None`:
    /// the job wrote its answers to no topic). Every answer a process produced after the
    /// checkpoint lies past its own offsets, so past these.
    pub fn output_offsets(&self) -> Option<(String, Vec<(i32, i64)>)> {
        output_offsets(&self.manifests)
    }

    /// Output files of processes the checkpoint had and this job has not (a job resumed with
    /// fewer processes cuts them back too, where they are on this host), with their lengths.
    pub fn outputs_beyond(&self, processes: usize) -> Vec<(String, u64)> {
        self.manifests
            .iter()
            .filter(|m| m.process as usize >= processes)
            .filter_map(|m| m.output.as_ref().map(|o| (o.path.clone(), o.bytes)))
            .collect()
    }
}

/// The answer topic the processes of one checkpoint (their `manifests`) recorded and, per
/// partition, the smallest end offset any of them recorded (`None`: no topic).
pub fn output_offsets(manifests: &[Manifest]) -> Option<(String, Vec<(i32, i64)>)> {
    let mut topic = None;
    let mut from: std::collections::BTreeMap<i32, i64> = std::collections::BTreeMap::new();
    for o in manifests.iter().filter_map(|m| m.output_offsets.as_ref()) {
        topic.get_or_insert_with(|| o.topic.clone());
        for p in &o.offsets {
            from.entry(p.partition).and_modify(|v| *v = (*v).min(p.offset)).or_insert(p.offset);
        }
    }
    topic.map(|t| (t, from.into_iter().collect()))
}
