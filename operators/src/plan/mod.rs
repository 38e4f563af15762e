//! The registry every worker holds: the request script applied in order, compiled into the
//! synopses to maintain, the update groups tuples are routed to, and the queries to answer.
//!
//! Every worker builds its plan from the same broadcast request sequence, so the plans are equal
//! everywhere (a deterministic broadcast registry). Nothing here touches timely or files:
//! snapshot files go through the [`SnapshotStore`] the job passes in.
//!
//! A [`Plan`] is parts that change at different times, plus settings (where SAVE writes, whether
//! synopses are updated at all):
//!
//! - [`Routing`], the compiled routing tables ([`routing`]): read for every tuple, changed only
//!   when requests are applied ([`apply`], one function per action, then [`compile`]), each
//!   change a new [`Routing::version`]. Held behind an [`Rc`], copied on write: a holder of one
//!   version ([`Plan::routing_version`]) keeps it unchanged, at the cost of one pointer;
//! - [`Sequencer`], the live-request sequencer ([`sequencer`]): request epochs staged until
//!   their fence, the ids of requests and asks, and what applying them gave;
//! - [`Checkpointing`], the checkpoint state ([`crate::checkpoint`]): boundaries agreed, copies
//!   taken, states to start from, changed by the operators as their frontiers pass boundaries;
//! - [`LiveRegistry`], which synopses are registered at which window ([`crate::registry`]),
//!   changed as the registry collection's changes arrive.
//!
//! The data these are made of ([`SynSpec`], [`Group`], [`Mode`], the registered queries) is in
//! [`data`].

pub mod apply;
pub mod compile;
pub mod data;
mod pair_ask;
pub mod rescale;
pub mod routing;
pub mod sequencer;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use saams::api::estimation::{Answer, Estimation};
use saams::api::monitor::SLIDING_WINDOW_MONITOR_ID;
use saams::api::registry::LiveSynopsis;
use saams::api::request::{Action, QueryMode, Request, RequestError};
use saams::api::window::WindowSpec;

use crate::ask::{Origin, reply_line};
use crate::checkpoint::Checkpointing;
use crate::device_replies::DeviceReplies;
use crate::introspection::Published;
use crate::monitor::MonitorPlan;
use crate::monitor::live::MonitorApplied;
use crate::registry::{Entry, LiveRegistry};

pub use apply::RequestEffects;
pub use data::{
    Applied, DatasetRoutes, Group, LiveLoad, Mode, PairQueryReg, QueryReg, RescaleApplied, RouteMap, SaveReg,
    SnapshotStore, SynSpec, is_set_valued,
};
pub use routing::{BINS, Routing};
pub use sequencer::Sequencer;

/// A snapshot store with no files, for the unit tests' plans (every call is an error naming the file).
#[cfg(test)]
pub(crate) struct NoFiles;

#[cfg(test)]
impl SnapshotStore for NoFiles {
    fn load(&self, f: &str) -> Result<Vec<u8>, String> {
        Err(f.into())
    }
    fn save(&self, f: &str, _: &[u8]) -> Result<(), String> {
        Err(f.into())
    }
    fn check(&self, f: &str) -> Result<(), String> {
        Err(f.into())
    }
}

/// The compiled registry of one worker: routing tables, request sequencer, checkpoint state.
pub struct Plan {
    /// The compiled routing tables of the current version (shared: [`Plan::routing_version`];
    /// changed through [`Plan::routing_mut`]).
    pub routing: Rc<Routing>,
    /// Live requests in epoch order, and what applying them gave.
    pub sequencer: Sequencer,
    /// Checkpoint boundaries agreed, the copies the operators take there, and the states a
    /// restarted job starts from ([`crate::checkpoint`]).
    pub checkpoints: RefCell<Checkpointing>,
    /// Which synopses are registered at which window, as the registry collection's changes
    /// arrive ([`crate::registry_join`]).
    pub live: LiveRegistry,
    /// Where SAVE writes.
    pub store: Arc<dyn SnapshotStore>,
    /// False for a parse-and-route-only run (`--no-synopses`): values are routed, then dropped.
    pub update: bool,
    /// Where the worker holding a synopsis' merged state publishes its figures at every window
    /// close (shared by the process' workers and its HTTP side, [`crate::introspection`]).
    pub published: Arc<Published>,
    /// The streams of the request script monitored by the sliding-window protocols
    /// ([`crate::monitor`]), maintained on an operator path of their own.
    pub monitor: Rc<MonitorPlan>,
    /// Asks of synopses resident on devices and the devices' answers (shared by the process'
    /// workers in a job merging devices: [`crate::device_replies`]).
    pub device_replies: Arc<DeviceReplies>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("synopses", &self.routing.synopses.len())
            .field("groups", &self.routing.groups.len())
            .finish()
    }
}

impl Plan {
    /// Apply a request script in order (construct, delete, query, load, save) and compile it
    /// for `peers` workers. Requests that cannot be carried out become error estimations in
    /// [`Plan::script_answers`]; nothing here fails.
    pub fn build(
        requests: &[Result<Request, RequestError>],
        peers: usize,
        window_ms: i64,
        store: Arc<dyn SnapshotStore>,
    ) -> Plan {
        Plan::build_windowed(requests, peers, (window_ms, WindowSpec::Landmark), store)
    }

    /// [`Plan::build`], with the window of the synopses whose construct request names none
    /// (the job's `--window-type`): `(job window ms, default window)`.
    pub fn build_windowed(
        requests: &[Result<Request, RequestError>],
        peers: usize,
        (window_ms, default_window): (i64, WindowSpec),
        store: Arc<dyn SnapshotStore>,
    ) -> Plan {
        let routing = Routing::new(peers, window_ms);
        Plan::build_on(routing, requests, default_window, store)
    }

    /// [`Plan::build_windowed`] with the synopses on the first `active` of the `peers` workers
    /// (`--active-workers`): the script's streams place their groups on those.
    ///
    /// # Errors
    /// When `active` is 0 or more than `peers`.
    pub fn build_active(
        requests: &[Result<Request, RequestError>],
        (peers, active): (usize, usize),
        (window_ms, default_window): (i64, WindowSpec),
        store: Arc<dyn SnapshotStore>,
    ) -> Result<Plan, String> {
        let mut routing = Routing::new(peers, window_ms);
        routing.start_active(active)?;
        Ok(Plan::build_on(routing, requests, default_window, store))
    }

    fn build_on(
        mut routing: Routing,
        requests: &[Result<Request, RequestError>],
        default_window: WindowSpec,
        store: Arc<dyn SnapshotStore>,
    ) -> Plan {
        routing.default_window = default_window;
        let mut plan = Plan {
            routing: Rc::new(routing),
            sequencer: Sequencer::after_script(requests.len()),
            checkpoints: Default::default(),
            live: LiveRegistry::default(),
            store,
            update: true,
            published: Arc::default(),
            monitor: Rc::new(MonitorPlan::from_script(requests)),
            device_replies: Arc::default(),
        };
        for (n, r) in requests.iter().enumerate() {
            let generated = serde_json::json!(format!("req-{}", n + 1));
            let effects = &mut plan.sequencer.effects;
            match r {
                Err(e) => effects.answers.push(Estimation::error(generated, None, 0, e.0.clone())),
                // The monitoring kind's requests are the monitor plan's ([`crate::monitor`]).
                Ok(req) if req.synopsis_id == SLIDING_WINDOW_MONITOR_ID => {}
                Ok(req) => {
                    let id = req.request_id.clone().unwrap_or(generated);
                    if let Err(msg) = Rc::make_mut(&mut plan.routing).apply(req, id.clone(), &*plan.store, effects) {
                        effects.answers.push(request_error(req, id, msg));
                    }
                }
            }
        }
        Rc::make_mut(&mut plan.routing).compile(&mut plan.sequencer.effects.answers);
        plan
    }

    /// The routing tables of the current version, to hold while the plan moves on: live
    /// requests applied later make a new version for the plan and leave this one as it is.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use saams_operators::{Plan, SnapshotStore};
    /// struct NoFiles;
    /// impl SnapshotStore for NoFiles {
    ///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    ///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    ///     fn check(&self, f: &str) -> Result<(), String> { Ok(()) }
    /// }
    /// let mut plan = Plan::build(&[], 2, 60_000, Arc::new(NoFiles));
    /// let before = plan.routing_version();
    /// let live = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}"#);
    /// plan.extend(&live, 120_000, None);
    /// assert_eq!((before.version, before.synopses.len(), before.routes("F", "A").0.len()), (0, 0, 0));
    /// assert_eq!((plan.routing.version, plan.routing.synopses.len(), plan.routes("F", "A").0.len()), (1, 1, 1));
    /// ```
    pub fn routing_version(&self) -> Rc<Routing> {
        Rc::clone(&self.routing)
    }

    /// The routing tables to change (a job's settings at start-up): copied first if some holder
    /// keeps the current version ([`Plan::routing_version`]).
    pub fn routing_mut(&mut self) -> &mut Routing {
        Rc::make_mut(&mut self.routing)
    }

    /// Answers produced while applying the script (errors, LOAD acknowledgements): written once,
    /// by worker 0.
    pub fn script_answers(&self) -> &[Estimation] {
        &self.sequencer.effects.answers
    }

    /// Apply requests that arrived while the job runs, all taking effect with the window starting
    /// at `fence` (ms): the boundary every worker agreed on, before which no worker routed a value
    /// with the plan as it was. Every worker applies the same requests in the same order, so the
    /// plans stay equal everywhere; the worker that took the requests writes [`Applied::lines`] and
    /// sends [`Applied::asks`], worker 0 feeds [`Applied::registry`] to the registry collection.
    /// `origin` is who waits for the replies (tagged into the lines, carried by the asks).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use saams_operators::{Plan, SnapshotStore};
    /// struct NoFiles;
    /// impl SnapshotStore for NoFiles {
    ///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    ///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    ///     fn check(&self, f: &str) -> Result<(), String> { Ok(()) }
    /// }
    /// let mut plan = Plan::build(&[], 2, 60_000, Arc::new(NoFiles));
    /// let live = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1],"requestID":1}
    ///        {"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[2.5,"price","Queryable","AdHoc"],"requestID":2}"#,
    /// );
    /// let applied = plan.extend(&live, 120_000, None);
    /// assert!(applied.lines[0].contains(r#""accepted":"construct","effectiveFrom":"1970-01-01T00:02:00Z""#));
    /// assert_eq!((applied.asks.len(), applied.asks[0].syn), (1, 0));
    /// assert_eq!(applied.registry, vec![((("F".to_string(), "A".to_string()), 0), 120_000, 1)]);
    /// assert_eq!(plan.routes("F", "A").0.len(), 1);
    /// ```
    pub fn extend(
        &mut self,
        requests: &[Result<Request, RequestError>],
        fence: u64,
        origin: Option<Origin>,
    ) -> Applied {
        self.sequencer.effects.fence = Some(fence);
        let effects = &self.sequencer.effects;
        let (registry_from, answers_from) = (effects.registry.len(), effects.answers.len());
        let monitors_before = self.monitor.live_rows().len() + self.monitor.monitored.len();
        let mut lines: Vec<String> = requests.iter().filter_map(|r| self.apply_live(r, fence, origin)).collect();
        let monitors_changed = monitors_before != self.monitor.live_rows().len() + self.monitor.monitored.len();
        Rc::make_mut(&mut self.routing).compile(&mut self.sequencer.effects.answers);
        lines.extend(self.sequencer.effects.answers.drain(answers_from..).map(|e| e.to_json_line()));
        let asks = self.sequencer.take_fence_asks(&self.routing, origin);
        let registry: Vec<(Entry, u64, isize)> = self
            .sequencer
            .effects
            .registry
            .drain(registry_from..)
            .map(|(syn, diff)| (self.routing.entry(syn), fence, diff))
            .collect();
        for &((_, syn), at, diff) in &registry {
            self.live.apply(syn, at, diff);
        }
        Rc::make_mut(&mut self.routing).version += 1;
        self.sequencer.effects.fence = None;
        let lines = lines.into_iter().map(|l| reply_line(origin, l)).collect();
        Applied { origin, fence, lines, asks, registry, monitors_changed }
    }

    /// Apply one live request at `fence`: its acknowledgement or error (a JSON line), or `None`
    /// for an ad-hoc query or SAVE applied (its ask answers it).
    fn apply_live(&mut self, r: &Result<Request, RequestError>, fence: u64, origin: Option<Origin>) -> Option<String> {
        let generated = self.sequencer.next_generated_id();
        let req = match r {
            Err(e) => return Some(Estimation::error(generated, None, 0, e.0.clone()).to_json_line()),
            Ok(req) => req,
        };
        let id = req.request_id.clone().unwrap_or(generated);
        if req.synopsis_id == SLIDING_WINDOW_MONITOR_ID {
            return self.apply_monitor(req, id, fence, origin);
        }
        if let Action::Rescale { active_workers, bins_per_fence } = req.action {
            let routing = Rc::make_mut(&mut self.routing);
            let per_fence = bins_per_fence.unwrap_or(routing.rescale_batch);
            let result = routing.rescale(active_workers, fence, per_fence);
            return Some(rescale::reply(req, id, result));
        }
        self.apply_tables(req, id, fence).map(|e| e.to_json_line())
    }

    /// Apply one live request other than a rescale to the routing tables at `fence`.
    fn apply_tables(&mut self, req: &Request, id: serde_json::Value, fence: u64) -> Option<Estimation> {
        match Rc::make_mut(&mut self.routing).apply(req, id.clone(), &*self.store, &mut self.sequencer.effects) {
            Err(msg) => Some(request_error(req, id, msg)),
            Ok(()) => {
                let (action, field) = match &req.action {
                    Action::Construct { field, .. } => ("construct", field.clone()),
                    Action::Delete { field } => ("delete", field.clone().unwrap_or_default()),
                    Action::Query { field, mode: QueryMode::Continuous, .. } => ("query", field.clone()),
                    Action::Load { .. } => ("load", String::new()),
                    // Answered by their ask; a rescale by its own reply.
                    Action::Query { .. } | Action::Save { .. } | Action::Rescale { .. } => return None,
                };
                let mut e = request_error(req, id, String::new());
                e.field = field;
                e.answer = Answer::Accepted { action: action.into(), from_window: fence as i64 };
                Some(e)
            }
        }
    }

    /// Apply one live request of the monitoring kind at `fence` ([`MonitorPlan::apply_live`]):
    /// its acknowledgement or error, or `None` for an ad-hoc query (its answer replies).
    fn apply_monitor(
        &mut self,
        req: &Request,
        id: serde_json::Value,
        fence: u64,
        origin: Option<Origin>,
    ) -> Option<String> {
        match Rc::make_mut(&mut self.monitor).apply_live(req, id.clone(), fence, origin) {
            Err(msg) => Some(monitor_line(request_error(req, id, msg))),
            Ok(MonitorApplied::Asked) => None,
            Ok(MonitorApplied::Accepted(action)) => {
                let mut e = request_error(req, id, String::new());
                e.field = req.field_filter().unwrap_or_default().to_string();
                e.answer = Answer::Accepted { action: action.into(), from_window: fence as i64 };
                Some(monitor_line(e))
            }
        }
    }

    /// True for requests that only read state (ad-hoc queries and SAVEs): they need no fence
    /// and are answered at once ([`Plan::ask_now`]). Ad-hoc queries of the monitoring kind
    /// are not: their coordinator answers them at the close of their fence's window.
    ///
    /// ```
    /// use saams_operators::Plan;
    /// let adhoc = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[2.5,"price","Queryable","AdHoc"]}"#);
    /// let construct = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}"#);
    /// assert!(Plan::reads_only(&adhoc) && !Plan::reads_only(&construct));
    /// ```
    pub fn reads_only(requests: &[Result<Request, RequestError>]) -> bool {
        !requests.is_empty()
            && requests.iter().all(|r| {
                matches!(
                    r,
                    Ok(Request { action: Action::Query { mode: QueryMode::AdHoc, .. } | Action::Save { .. }, synopsis_id, .. })
                        if *synopsis_id != SLIDING_WINDOW_MONITOR_ID
                )
            })
    }

    /// Ad-hoc queries and SAVEs ([`Plan::reads_only`]) taken by worker `origin.0`, answered now:
    /// only that worker applies them (they change nothing), so their asks are numbered apart
    /// from those every worker makes at fences.
    pub fn ask_now(&mut self, requests: &[Result<Request, RequestError>], origin: Origin) -> Applied {
        self.sequencer.effects.fence = Some(0);
        let mut lines = Vec::new();
        for r in requests {
            let Ok(req) = r else { continue };
            let id = req.request_id.clone().unwrap_or_else(|| self.sequencer.next_ask_now_id());
            if let Err(msg) =
                Rc::make_mut(&mut self.routing).apply(req, id.clone(), &*self.store, &mut self.sequencer.effects)
            {
                lines.push(reply_line(Some(origin), request_error(req, id, msg).to_json_line()));
            }
        }
        self.sequencer.effects.fence = None;
        let asks = self.sequencer.take_asks_now(&self.routing, origin);
        Applied { origin: Some(origin), fence: 0, lines, asks, registry: Vec::new(), monitors_changed: false }
    }

    /// Keep the requests of request epoch `epoch` (taken by `origin`) until their fence is agreed.
    pub fn receive(&mut self, epoch: u64, origin: Option<Origin>, requests: Vec<Result<Request, RequestError>>) {
        self.sequencer.receive(epoch, origin, requests);
    }

    /// Request epoch `epoch` asks for checkpoint `id` at its fence: a boundary every stateful
    /// operator copies its state at ([`crate::checkpoint`]).
    pub fn receive_checkpoint(&mut self, epoch: u64, id: u64) {
        self.sequencer.receive_checkpoint(epoch, id);
    }

    /// Request epochs before this one are applied.
    pub fn applied_before(&self) -> u64 {
        self.sequencer.applied_before()
    }

    /// Apply, in epoch order, every received request epoch up to `epoch`, the last one at `fence`
    /// (earlier ones at the fence agreed for them, or `fence`). Applying an epoch twice does
    /// nothing: the job applies as soon as the fence is agreed, and the update operator on
    /// a fence marker ([`crate::ask`]), whichever comes first.
    pub fn apply_through(&mut self, epoch: u64, fence: u64) {
        if !self.sequencer.agree(epoch, fence) {
            return;
        }
        while let Some((at, staged)) = self.sequencer.next_through(epoch, fence) {
            if let Some(id) = staged.checkpoint {
                // Two checkpoints agreed at one boundary are one.
                self.checkpoints.get_mut().boundaries.entry(at).or_insert(id);
            }
            for (origin, requests) in staged.bodies {
                let applied = self.extend(&requests, at, origin);
                self.sequencer.push_applied(applied);
            }
        }
    }

    /// A job merging devices: this worker (`me`) shares its process' table of devices' replies
    /// (`replies`), which every checkpoint part from now on copies; a resumed job's process
    /// starts it from its checkpoint's (the first worker to attach it installs it), with the
    /// asks and answers of the synopses this process homes.
    ///
    /// # Errors
    /// When the checkpoint resumed from kept no table ([`crate::device_replies::RestoredReplies::install`]).
    pub fn attach_device_replies(&mut self, replies: Arc<DeviceReplies>, me: usize) -> Result<(), String> {
        self.device_replies = replies;
        let checkpoints = self.checkpoints.get_mut();
        checkpoints.replies_attached = true;
        let Some(restored) = checkpoints.restored_replies.take() else { return Ok(()) };
        let per_process = self.routing.workers_per_process.max(1);
        let synopses = &self.routing.synopses;
        let homed_here =
            |syn: u32| synopses.get(syn as usize).is_some_and(|s| s.home / per_process == me / per_process);
        restored.install(&self.device_replies, homed_here)
    }

    /// Queue what [`Plan::ask_now`] gave with what fences gave, for the job to write and send.
    pub fn push_applied(&mut self, applied: Applied) {
        self.sequencer.push_applied(applied);
    }

    /// What applying live requests gave since the last call.
    pub fn take_applied(&mut self) -> Vec<Applied> {
        self.sequencer.take_applied()
    }

    /// The registry changes of the request script, as updates of the registry collection
    /// ([`crate::registry::Entry`]): all at time 0, the script taking effect before the first
    /// window; a synopsis constructed and deleted in the script adds up to nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use saams_operators::{Plan, SnapshotStore};
    /// struct NoFiles;
    /// impl SnapshotStore for NoFiles {
    ///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    ///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    ///     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
    /// }
    /// let script = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":2,"dataSetKey":"F","param":["HLL","price","NotQueryable",0.05]}
    ///        {"streamID":"A","synopsisID":2,"dataSetKey":"F","param":["DELETE_REQUEST","price"]}"#,
    /// );
    /// let plan = Plan::build(&script, 2, 60_000, Arc::new(NoFiles));
    /// let key = ("F".to_string(), "A".to_string());
    /// assert_eq!(plan.registry_updates(), vec![((key.clone(), 0), 0, 1), ((key, 0), 0, -1)]);
    /// ```
    pub fn registry_updates(&self) -> Vec<(Entry, u64, isize)> {
        self.sequencer.effects.registry.iter().map(|&(syn, diff)| (self.routing.entry(syn), 0, diff)).collect()
    }

    /// The live registry, as `GET /synopses` lists it and the HTTP interface checks requests
    /// against it: every synopsis constructed and not deleted, from the window it counts from.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use saams_operators::{Plan, SnapshotStore};
    /// struct NoFiles;
    /// impl SnapshotStore for NoFiles {
    ///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
    ///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
    ///     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
    /// }
    /// let script = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}
    ///        {"streamID":"B","synopsisID":2,"dataSetKey":"F","param":["HLL","price","NotQueryable",0.05]}
    ///        {"streamID":"B","synopsisID":2,"dataSetKey":"F","param":["DELETE_REQUEST","price"]}"#,
    /// );
    /// let plan = Plan::build(&script, 2, 60_000, Arc::new(NoFiles));
    /// let live = plan.live_synopses();
    /// assert_eq!(live.len(), 1);
    /// assert_eq!((live[0].kind, live[0].stream_id.as_str(), live[0].field.as_str()), (Some(saams::Kind::CountMin), "A", "price"));
    /// let query = saams::api::request::parse_requests(
    ///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[2.5,"price","Queryable","Ad-hoc"]}"#);
    /// assert!(live[0].is_named_by(query[0].as_ref().unwrap()));
    /// ```
    pub fn live_synopses(&self) -> Vec<LiveSynopsis> {
        let synopses = self.routing.synopses.iter().enumerate();
        synopses
            .filter(|(_, s)| !s.is_deleted() && s.group != u32::MAX)
            .map(|(i, s)| LiveSynopsis {
                id: i as u32,
                request_id: s.request_id.clone(),
                synopsis_id: s.synopsis_id,
                kind: Some(s.kind),
                stream_id: s.stream.clone(),
                dataset_key: s.dataset.clone(),
                field: s.field.clone(),
                params: s.params.clone(),
                mode: format!("{:?}", s.mode),
                home: s.home,
                empty_bytes: s.fresh.size_bytes(),
                effective_from_ms: self.live.registered_from(i as u32).unwrap_or(0),
            })
            .chain(self.monitor.live_rows_on(self.routing.peers))
            .collect()
    }

    /// The groups a tuple of `stream` in `dataset` feeds ([`Routing::routes`]).
    #[inline]
    pub fn routes(&self, dataset: &str, stream: &str) -> (&[u32], &[u32]) {
        self.routing.routes(dataset, stream)
    }

    /// The event-time window (its start, ms) of a time ([`Routing::window_of`]).
    #[inline]
    pub fn window_of(&self, time_ms: i64) -> u64 {
        self.routing.window_of(time_ms)
    }

    /// The window of a time and every time in it ([`Routing::window_span`]).
    #[inline]
    pub fn window_span(&self, time_ms: i64) -> (u64, std::ops::Range<i64>) {
        self.routing.window_span(time_ms)
    }

    /// The timestamp a window's output travels at ([`Routing::close_time`]).
    #[inline]
    pub fn close_time(&self, window: u64) -> u64 {
        self.routing.close_time(window)
    }

    /// Stages of the tree merge ([`Routing::merge_stages`]).
    pub fn merge_stages(&self) -> u32 {
        self.routing.merge_stages()
    }
}

/// An acknowledgement or error line of the monitoring kind, naming the kind (it is no
/// [`saams::Kind`], so the estimation's own `kind` is empty).
fn monitor_line(e: Estimation) -> String {
    let id = format!("\"synopsisID\":{SLIDING_WINDOW_MONITOR_ID}");
    let named = format!("{id},\"kind\":\"{}\"", saams::api::monitor::SLIDING_WINDOW_MONITOR_NAME);
    e.to_json_line().replacen(&id, &named, 1)
}

/// The error answer to a request, with the stream and dataset it named.
fn request_error(req: &Request, id: serde_json::Value, msg: String) -> Estimation {
    let mut e = Estimation::error(id, req.uid.clone(), req.synopsis_id, msg);
    e.stream_id = req.stream_id.clone();
    e.dataset_key = req.dataset_key.clone();
    e
}
