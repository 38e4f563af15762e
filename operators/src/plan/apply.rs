//! Applying one request to the routing tables: construct, delete, query, save or load, each its
//! own function. A request applied while the job runs (at a fence) changes what the tables hold
//! from the fence on; what it gives besides the tables (asks, answers, registry changes) goes to
//! [`RequestEffects`].

use saams::api::estimation::{Answer, Estimation};
use saams::api::request::{Action, QueryMode, QuerySpec, Request, query_spec};
use saams::api::window::{WindowSpec, WindowType};
use saams::registry;
use serde_json::Value as Json;

use super::data::{LiveLoad, Mode, QueryReg, SaveReg, SnapshotStore, SynSpec};
use super::routing::{Routing, spread_hash};
use crate::ask::{AskWhat, PairAsk};
use crate::record::SynBox;

/// What applying requests gives besides the tables' changes, and the fence it happens at.
#[derive(Debug, Default)]
pub struct RequestEffects {
    /// The fence live requests are being applied at (`None` while the script is applied).
    pub(crate) fence: Option<u64>,
    /// Ad-hoc queries and SAVEs of the live requests being applied: (synopsis, request id, uid,
    /// what), made asks once the new synopses are compiled.
    pub(crate) asked: Vec<(u32, Json, Option<Json>, AskWhat)>,
    /// Answers produced while applying (errors, LOAD acknowledgements); those of the script are
    /// written once, by worker 0.
    pub answers: Vec<Estimation>,
    /// Registry changes in request order: a construct registers its synopsis (+1), a delete
    /// unregisters it (−1).
    pub registry: Vec<(u32, isize)>,
}

/// How a synopsis of `kind` with `noOfP` = `p` is parallelized on `peers` workers, per stream
/// (`dataset_wide` false) or for its whole dataset.
fn mode_of(kind: saams::Kind, p: u32, peers: usize, dataset_wide: bool) -> Mode {
    if kind.is_order_sensitive() {
        if p > 1 { Mode::Windowed(p) } else { Mode::Owned }
    } else if kind.merges_exactly() {
        let spread = p.min(peers as u32);
        if dataset_wide && peers > 1 {
            Mode::Exact { spread: 0 }
        } else if spread > 1 {
            Mode::Exact { spread }
        } else {
            Mode::Owned
        }
    } else if p > 1 {
        Mode::Binned(p)
    } else {
        Mode::Owned
    }
}

/// Whether a synopsis of `kind` can have `window` in a job whose window is `cadence_ms`: a
/// tumbling size and a sliding slide are whole job windows; a sliding window merges panes, so
/// its kind must merge without losing its bound in any order (Count-Min, HyperLogLog, Bloom,
/// AMS, KLL, CPC), and kinds whose state is itself a sliding window over the last tuples
/// (DFT, LSH, window quantiles) are tumbling or landmark.
fn check_window(kind: saams::Kind, window: WindowSpec, cadence_ms: i64) -> Result<(), String> {
    window.check_cadence(cadence_ms)?;
    if window.kind() == WindowType::Sliding {
        if kind.is_order_sensitive() {
            return Err(format!(
                "{kind} cannot have a sliding window {window}: its state is already a sliding window over its \
                 last tuples (its own parameter); use a tumbling or landmark window"
            ));
        }
        if !kind.merges_exactly() && !kind.reduces_at_every_merge_stage() {
            return Err(format!(
                "{kind} cannot have a sliding window {window}: a sliding answer merges panes, and {kind}'s merge \
                 depends on its order; sliding windows take Count-Min, HyperLogLog, Bloom filter, AMS, KLL and \
                 CPC; use a tumbling or landmark window"
            ));
        }
    }
    Ok(())
}

fn describe(req: &Request) -> String {
    format!("synopsisID {} on stream {:?} of dataset {:?}", req.synopsis_id, req.stream_id, req.dataset_key)
}

impl Routing {
    /// Apply one request with id `id`: `Err` says why it could not be.
    pub(crate) fn apply(
        &mut self,
        req: &Request,
        id: Json,
        store: &dyn SnapshotStore,
        effects: &mut RequestEffects,
    ) -> Result<(), String> {
        match &req.action {
            Action::Construct { field, params, .. } => self.construct(req, id, field, params, effects),
            Action::Delete { .. } => self.delete(req, &id, effects),
            Action::Query { field, args, mode } => self.query(req, id, field, args, *mode, effects),
            Action::Save { file } => self.save(req, id, file, store, effects),
            Action::Load { file } => self.load(req, id, file, store, effects),
            // In a request script: the workers holding bins from the start (a live rescale is
            // applied by the plan, which replies to it).
            Action::Rescale { active_workers, bins_per_fence } => {
                let per_fence = bins_per_fence.unwrap_or(self.rescale_batch);
                self.rescale(*active_workers, effects.fence.unwrap_or(0), per_fence).map(|_| ()).map_err(|r| r.message)
            }
        }
    }

    /// The live synopses a request names (on `field`, if given).
    /// The live synopses `req` names ([`Request::names_synopsis`], the rule the HTTP interface
    /// checks requests by too).
    fn find(&self, req: &Request) -> Vec<usize> {
        (0..self.synopses.len())
            .filter(|&i| {
                let s = &self.synopses[i];
                !s.deleted && req.names_synopsis(&s.dataset, &s.stream, s.synopsis_id, &s.field)
            })
            .collect()
    }

    fn construct(
        &mut self,
        req: &Request,
        id: Json,
        field: &str,
        params: &[Json],
        effects: &mut RequestEffects,
    ) -> Result<(), String> {
        if !self.find(req).is_empty() {
            return Ok(()); // duplicate constructs do not duplicate a synopsis
        }
        let fresh = registry::construct(req.synopsis_id, params).map_err(|e| e.to_string())?;
        let kind = fresh.kind();
        let window = req.window.unwrap_or(self.default_window);
        check_window(kind, window, self.window_ms)?;
        let mode = mode_of(kind, req.no_of_p.max(1), self.peers, req.stream_id.is_empty());
        let root = spread_hash(&[&req.dataset_key, &req.stream_id, field, &req.synopsis_id.to_string()]);
        self.synopses.push(SynSpec {
            request_id: id,
            kind,
            synopsis_id: req.synopsis_id,
            dataset: req.dataset_key.clone(),
            stream: req.stream_id.clone(),
            field: field.to_string(),
            params: params.to_vec(),
            initial: fresh.clone(),
            fresh,
            mode,
            window,
            window_origin: effects.fence.unwrap_or(0),
            group: u32::MAX,
            home: self.worker_of(root),
            moved: Vec::new(),
            continuous: Vec::new(),
            adhoc: Vec::new(),
            saves: Vec::new(),
            snapshot_to: Vec::new(),
            loads: Vec::new(),
            deleted: false,
        });
        effects.registry.push((self.synopses.len() as u32 - 1, 1));
        Ok(())
    }

    fn delete(&mut self, req: &Request, id: &Json, effects: &mut RequestEffects) -> Result<(), String> {
        let found = self.find(req);
        if found.is_empty() {
            return Err(format!("nothing to delete: no {}", describe(req)));
        }
        for i in found {
            effects.registry.push((i as u32, -1));
            let s = &mut self.synopses[i];
            s.deleted = true;
            if effects.fence.is_some() {
                // While running: its windows before the fence still close and answer.
                continue;
            }
            let why = format!("synopsis deleted by request {id} before the query could be answered");
            for q in s.continuous.drain(..).chain(s.adhoc.drain(..)) {
                let mut e = Estimation::error(q.request_id, q.uid, s.synopsis_id, why.clone());
                e.stream_id = s.stream.clone();
                e.dataset_key = s.dataset.clone();
                e.field = s.field.clone();
                e.query = q.args;
                effects.answers.push(e);
            }
            s.saves.clear();
        }
        Ok(())
    }

    fn query(
        &mut self,
        req: &Request,
        id: Json,
        field: &str,
        args: &[Json],
        mode: QueryMode,
        effects: &mut RequestEffects,
    ) -> Result<(), String> {
        let found = self.find(req);
        let Some(&i) = found.first() else {
            return Err(format!("unknown synopsis: no {} on field {field:?}", describe(req)));
        };
        let spec = query_spec(self.synopses[i].kind, args).map_err(|e| e.0)?;
        let from = effects.fence.unwrap_or(0);
        let args = Json::Array(args.to_vec());
        if effects.fence.is_some() && mode == QueryMode::AdHoc {
            let what = match spec {
                QuerySpec::Single(_) => AskWhat::Query(args),
                // Answered now too, from every participant's state at one point of event time.
                _ => {
                    let participants = self.pair_participants(i, &spec)?;
                    AskWhat::Pair(PairAsk { args, participants, answer_home: 0, at: 0 })
                }
            };
            effects.asked.push((i as u32, id, req.uid.clone(), what));
            return Ok(());
        }
        let reg = QueryReg { request_id: id, uid: req.uid.clone(), args, spec, from };
        let s = &mut self.synopses[i];
        match mode {
            QueryMode::Continuous => s.continuous.push(reg),
            QueryMode::AdHoc => s.adhoc.push(reg),
        }
        Ok(())
    }

    fn save(
        &mut self,
        req: &Request,
        id: Json,
        file: &str,
        store: &dyn SnapshotStore,
        effects: &mut RequestEffects,
    ) -> Result<(), String> {
        store.check(file)?;
        let found = self.find(req);
        let Some(&i) = found.first() else {
            return Err(format!("SAVE: no {}", describe(req)));
        };
        if effects.fence.is_some() {
            effects.asked.push((i as u32, id, req.uid.clone(), AskWhat::Save(file.to_string())));
            return Ok(());
        }
        self.synopses[i].saves.push(SaveReg { request_id: id, uid: req.uid.clone(), file: file.to_string() });
        Ok(())
    }

    fn load(
        &mut self,
        req: &Request,
        id: Json,
        file: &str,
        store: &dyn SnapshotStore,
        effects: &mut RequestEffects,
    ) -> Result<(), String> {
        let bytes = store.load(file)?;
        let loaded = registry::decode(&bytes).map_err(|e| format!("LOAD {file}: {e}"))?;
        let found: Vec<usize> =
            self.find(req).into_iter().filter(|&i| self.synopses[i].kind == loaded.kind()).collect();
        let Some(&i) = found.first() else {
            return Err(format!(
                "LOAD {file}: construct a {} on stream {:?} of dataset {:?} first (the snapshot is merged into it)",
                loaded.kind(),
                req.stream_id,
                req.dataset_key
            ));
        };
        let s = &mut self.synopses[i];
        if let Some(from) = effects.fence {
            // Checked now, merged by whoever holds the state when the fence's window closes.
            s.fresh.clone().merge(loaded.as_ref()).map_err(|e| format!("LOAD {file}: {e}"))?;
            s.loads.push(LiveLoad { from, request_id: id.clone(), file: file.to_string(), state: SynBox::new(loaded) });
            return Ok(());
        }
        s.initial.merge(loaded.as_ref()).map_err(|e| format!("LOAD {file}: {e}"))?;
        effects.answers.push(Estimation {
            request_id: id,
            uid: req.uid.clone(),
            synopsis_id: s.synopsis_id,
            kind: Some(s.kind),
            stream_id: s.stream.clone(),
            dataset_key: s.dataset.clone(),
            field: s.field.clone(),
            query: Json::Null,
            window: None,
            tuples: None,
            answer: Answer::Loaded { file: file.to_string() },
        });
        Ok(())
    }
}
