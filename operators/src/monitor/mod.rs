//! The sliding-window monitoring kind (`synopsisID` 14) on an operator path of its own: the
//! job's workers are its sites, a coordinator on its home worker answers (design:
//! `docs/design.md`, "Sliding-window monitoring in the service").
//!
//! - [`sites::MonitorSites::monitor_sites`]: the values of a monitored stream go to their site
//!   (arrival sequence mod k, hosted by worker `site mod W`), which runs the protocol or forwards
//!   as the watermark passes them and sends its messages, encoded once in the monitoring
//!   crate's wire format ([`saams_monitoring::fallback::Envelope`]), through a timely exchange to
//!   the home;
//! - [`coordinator::MonitorCoordinator::monitor_coordinator`]: the home applies them in time
//!   order and answers the continuous queries at every job window close and the ad-hoc ones at
//!   the end of the input;
//! - `state`: both copy their state at every checkpoint boundary, keyed by stream and site,
//!   and a resumed job (with any number of workers) restores them where its plan hosts them.
//!
//! It is not a [`saams::Synopsis`]: k sites and a coordinator exchanging messages are no single
//! state that updates and merges in a tree, so the update, merge and fold operators do not fit.

use saams::api::monitor::{MonitorQuery, MonitorSpec, SLIDING_WINDOW_MONITOR_ID};
use saams::api::request::{Action, QueryMode, Request, RequestError};
use saams_monitoring::fallback::FallbackPolicy;
use saams_monitoring::{Config, Protocol};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::record::Rec;

pub mod coordinator;
pub mod hosted;
mod lines;
pub mod live;
pub mod relay;
pub mod sites;
mod state;

pub use coordinator::MonitorCoordinator;
pub use sites::MonitorSites;

/// A registered query of a monitored stream.
#[derive(Clone, Debug)]
pub struct MonitorQueryReg {
    /// The query request's id.
    pub request_id: Json,
    /// Its `uid`.
    pub uid: Option<Json>,
    /// The arguments as given (echoed in answers).
    pub args: Json,
    /// What is asked.
    pub query: MonitorQuery,
    /// The first time (ms, a window start) it is answered at: its fence, 0 in a request script.
    pub from: u64,
    /// Who waits for the answer of a live ad-hoc query (answered once, at the close of its
    /// fence's window, [`crate::ask::reply_line`]).
    pub origin: Option<crate::ask::Origin>,
}

/// One monitored stream and field.
#[derive(Clone, Debug)]
pub struct Monitored {
    /// The construct request's id.
    pub request_id: Json,
    /// Dataset.
    pub dataset: String,
    /// Stream ("" = the whole dataset).
    pub stream: String,
    /// Field.
    pub field: String,
    /// The construct parameters.
    pub spec: MonitorSpec,
    /// Answered at every job window close.
    pub continuous: Vec<MonitorQueryReg>,
    /// Answered once, at the end of the input.
    pub adhoc: Vec<MonitorQueryReg>,
    /// Live ad-hoc queries, in fence order: each answered once, at the close of the window
    /// starting at its fence.
    pub asks: Vec<MonitorQueryReg>,
    /// The first time (ms, a window start) whose values it monitors: its fence, 0 in a
    /// request script.
    pub from: u64,
    /// The fence of the live delete that ended it: values from it on are not monitored, and
    /// no answer is given at or after it.
    pub until: Option<u64>,
}

impl Monitored {
    /// The protocol's configuration: forward/backward (the cheaper of the two measured), k
    /// sites, tardiness 0 (sites are fed in event-time order).
    pub fn config(&self) -> Config {
        let s = &self.spec;
        Config::new(s.sites, s.window_ms, 0, s.epsilon, Protocol::ForwardBackward)
            .expect("MonitorSpec::from_params checked every range Config::new checks")
    }

    /// Sites forward when that is cheaper (the monitoring crate's default policy).
    pub fn policy(&self) -> FallbackPolicy {
        FallbackPolicy::adaptive(&self.config())
    }
}

/// What a site sends its coordinator: an encoded envelope (the protocol's traffic, counted in
/// words and bytes), or the job's own bookkeeping about the site (not protocol traffic).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SiteOut {
    /// One [`saams_monitoring::fallback::Envelope`], encoded.
    Envelope(Vec<u8>),
    /// Items the site refused since its last report (not numbers, negative, or later than the
    /// watermark allowed) and the newest event time it took (sent at the end of the input:
    /// ad-hoc queries are answered at the window holding the newest item).
    Stats {
        /// Refused items since the last report.
        refused: u64,
        /// The newest event time taken so far.
        newest: i64,
    },
}

/// Every monitored stream of a request script, in construct order; index `i` is the group
/// number its values travel with ([`crate::Rec::group`], tagged with [`MONITOR_GROUP`] on the
/// way in) and its home is worker `i mod W`.
#[derive(Clone, Debug, Default)]
pub struct MonitorPlan {
    /// The monitored streams.
    pub monitored: Vec<Monitored>,
    /// One error line per request of the kind that could not be carried out.
    pub errors: Vec<String>,
}

/// The bit that marks a routed value as one of a monitored stream (the rest of
/// [`crate::Rec::group`] is its index in the [`MonitorPlan`]): the job sends them on the same
/// input as the synopses' values, and the dataflow splits them off before the registry join.
pub const MONITOR_GROUP: u32 = 1 << 31;

/// The index in the [`MonitorPlan`] of a routed value's group, if it is one of a monitored
/// stream: tagged with [`MONITOR_GROUP`] and below the fence and ask markers
/// ([`crate::ask::FENCE_GROUP`], which every worker's operators must see).
///
/// ```
/// use saams_operators::ask::{ASK_GROUP, FENCE_GROUP};
/// use saams_operators::monitor::{MONITOR_GROUP, monitored_index};
/// assert_eq!(monitored_index(MONITOR_GROUP | 3), Some(3));
/// assert_eq!(monitored_index(3), None);
/// assert_eq!(monitored_index(ASK_GROUP), None);
/// assert_eq!(monitored_index(FENCE_GROUP), None);
/// ```
pub fn monitored_index(group: u32) -> Option<u32> {
    (MONITOR_GROUP..crate::ask::FENCE_GROUP).contains(&group).then_some(group - MONITOR_GROUP)
}

/// The index ([`monitored_index`]) of the monitored-stream copies of fence markers: the last
/// below the fence markers, never a monitored stream's.
pub const MONITOR_FENCE_INDEX: u32 = crate::ask::FENCE_GROUP - 1 - MONITOR_GROUP;

/// The copy of a fence marker ([`crate::ask::fence_marker`]) for the monitored streams' path:
/// every worker still reading sends one to every worker beside the fence marker itself, so the
/// sites apply the live requests before they see a value routed with them (values of a
/// stream monitored from the fence on), and before their frontier passes the fence.
///
/// ```
/// use saams_operators::ask::{fence_marker, to_every_worker};
/// use saams_operators::monitor::{MONITOR_FENCE_INDEX, monitor_fence_marker, monitored_index};
/// let m = monitor_fence_marker(fence_marker(4, 120_000, 61_000));
/// assert_eq!(monitored_index(m.group), Some(MONITOR_FENCE_INDEX));
/// let as_fence = saams_operators::Rec { group: saams_operators::ask::FENCE_GROUP, ..m };
/// assert_eq!(saams_operators::ask::fence_of(&as_fence), Some((4, 120_000)));
/// ```
pub fn monitor_fence_marker(fence_marker: Rec) -> Rec {
    Rec { group: MONITOR_GROUP | MONITOR_FENCE_INDEX, ..fence_marker }
}

/// Why a SAVE or LOAD of the monitoring kind is refused.
fn no_snapshot() -> String {
    format!(
        "the monitoring kind ({SLIDING_WINDOW_MONITOR_ID}) has no snapshot to save or load (its sites' and \
         coordinator's state is in the job's checkpoints)"
    )
}

impl MonitorPlan {
    /// The requests of the monitoring kind (`synopsisID` 14) of a request script: constructs,
    /// queries and deletes; every other request of the kind (and any that cannot be carried out)
    /// becomes an error line. A request without a `requestID` gets the id [`crate::Plan`] would
    /// give it (`req-` and its position in the script).
    pub fn from_script(requests: &[Result<Request, RequestError>]) -> MonitorPlan {
        let mut plan = MonitorPlan::default();
        for (n, r) in requests.iter().enumerate() {
            let Ok(r) = r else { continue };
            if r.synopsis_id != SLIDING_WINDOW_MONITOR_ID {
                continue;
            }
            let id = r.request_id.clone().unwrap_or_else(|| Json::from(format!("req-{}", n + 1)));
            if let Err(e) = plan.apply(r, id.clone()) {
                plan.errors.push(lines::error_line(r, id, &e));
            }
        }
        plan
    }

    fn apply(&mut self, r: &Request, id: Json) -> Result<(), String> {
        match &r.action {
            Action::Construct { field, params, .. } => self.construct(r, id, (field, params), 0),
            Action::Query { field, args, mode } => {
                let (i, reg) = self.query_reg(r, id, (field, args), (0, None))?;
                let m = &mut self.monitored[i];
                match mode {
                    QueryMode::Continuous => m.continuous.push(reg),
                    QueryMode::AdHoc => m.adhoc.push(reg),
                }
                Ok(())
            }
            Action::Delete { .. } => self.delete_in_script(r, &id),
            Action::Rescale { .. } => Err("a rescale names no synopsis of the monitoring kind".to_string()),
            Action::Save { .. } | Action::Load { .. } => Err(no_snapshot()),
        }
    }

    /// A request script's delete, at its place in the script as a synopsis' is: the monitored
    /// streams it names monitor nothing (the script takes effect before the first value), the
    /// queries registered on them before it are answered with an error, and requests after it
    /// find them no more (a construct after it starts a new one).
    fn delete_in_script(&mut self, r: &Request, id: &Json) -> Result<(), String> {
        let named = self.named(r);
        if named.is_empty() {
            return Err(format!("nothing to delete: no monitored {}/{}", r.dataset_key, r.stream_id));
        }
        let why = format!("synopsis deleted by request {id} before the query could be answered");
        for i in named {
            let m = &mut self.monitored[i];
            m.until = Some(0);
            let queries: Vec<MonitorQueryReg> = m.continuous.drain(..).chain(m.adhoc.drain(..)).collect();
            let m = &self.monitored[i];
            self.errors.extend(queries.into_iter().map(|q| lines::query_error_line(m, q, &why)));
        }
        Ok(())
    }

    /// The monitored streams (not deleted) a delete names.
    fn named(&self, r: &Request) -> Vec<usize> {
        (0..self.monitored.len())
            .filter(|&i| {
                let m = &self.monitored[i];
                m.until.is_none() && r.names_synopsis(&m.dataset, &m.stream, SLIDING_WINDOW_MONITOR_ID, &m.field)
            })
            .collect()
    }

    /// Start monitoring the stream `r` names on `field` from window `from` (a script's
    /// construct: 0; a live one: its fence).
    fn construct(&mut self, r: &Request, id: Json, (field, params): (&str, &[Json]), from: u64) -> Result<(), String> {
        let spec = MonitorSpec::from_params(params)?;
        if self.find(r, field).is_some() {
            return Err(format!("{}/{} {field} is monitored already", r.dataset_key, r.stream_id));
        }
        self.monitored.push(Monitored {
            request_id: id,
            dataset: r.dataset_key.clone(),
            stream: r.stream_id.clone(),
            field: field.to_string(),
            spec,
            continuous: Vec::new(),
            adhoc: Vec::new(),
            asks: Vec::new(),
            from,
            until: None,
        });
        Ok(())
    }

    /// Query `r`'s registration on the monitored stream it names (its index), answered from
    /// window `from` to `origin` (a script's: 0 and nobody waiting).
    fn query_reg(
        &self,
        r: &Request,
        id: Json,
        (field, args): (&str, &[Json]),
        (from, origin): (u64, Option<crate::ask::Origin>),
    ) -> Result<(usize, MonitorQueryReg), String> {
        let query = MonitorQuery::parse(args)?;
        let i = self.find(r, field).ok_or_else(|| format!("no monitored {}/{} {field}", r.dataset_key, r.stream_id))?;
        let reg = MonitorQueryReg {
            request_id: id,
            uid: r.uid.clone(),
            args: Json::Array(args.to_vec()),
            query,
            from,
            origin,
        };
        Ok((i, reg))
    }

    /// The monitored stream (not deleted) `r` names on `field`.
    fn find(&self, r: &Request, field: &str) -> Option<usize> {
        self.monitored.iter().position(|m| {
            m.until.is_none()
                && r.names_synopsis(&m.dataset, &m.stream, SLIDING_WINDOW_MONITOR_ID, &m.field)
                && m.field == field
        })
    }

    /// Check a checkpoint's copy of a site or coordinator against this plan (a resumed job's,
    /// its live requests applied), before the job starts: the copy's stream must be the one
    /// this plan has at its index, with the same configuration, and decode.
    ///
    /// # Errors
    /// Why the copy cannot be restored, naming the monitored stream.
    pub fn check_copy(&self, copy: &saams::checkpoint::MonitorState) -> Result<(), String> {
        let m = self.stream_of(copy)?;
        match copy.site {
            Some(_) => sites::check_copy(copy, m),
            None => coordinator::check_copy(copy, m),
        }
    }

    /// The monitored streams a tuple of `dataset`/`stream` at event time `time` (ms) feeds:
    /// `(group, field)`; a stream constructed live counts from its fence on, one deleted live
    /// up to its delete's fence.
    pub fn routes<'a>(
        &'a self,
        dataset: &'a str,
        stream: &'a str,
        time: i64,
    ) -> impl Iterator<Item = (u32, &'a str)> + 'a {
        let time = time.max(0) as u64;
        self.monitored
            .iter()
            .enumerate()
            .filter(move |(_, m)| m.dataset == dataset && (m.stream.is_empty() || m.stream == stream))
            .filter(move |(_, m)| m.from <= time && m.until.is_none_or(|u| time < u))
            .map(|(i, m)| (i as u32, m.field.as_str()))
    }
}
