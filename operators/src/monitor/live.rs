//! Requests of the monitoring kind taken while the job runs (HTTP, standard input, the request
//! topic): applied at their fence like every other live request ([`crate::Plan::extend`]), so
//! a monitored stream constructed live counts exactly the values from its fence's window on,
//! and a live ad-hoc query is answered at the close of its fence's window.
//!
//! Groups only grow: a monitored stream's index (the group its values travel with) never
//! changes, and a deleted one keeps its place with the fence it ended at.

use saams::api::monitor::{MonitorSpec, SLIDING_WINDOW_MONITOR_ID};
use saams::api::registry::LiveSynopsis;
use saams::api::request::{Action, QueryMode, Request};
use serde_json::Value as Json;

use super::{MONITOR_GROUP, MonitorPlan, no_snapshot};
use crate::ask::Origin;

/// What a live request of the monitoring kind did once applied at its fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MonitorApplied {
    /// Acknowledged now with `"accepted"`: a construct, a delete or a continuous query.
    Accepted(&'static str),
    /// A live ad-hoc query: its answer (tagged for its origin) is the reply.
    Asked,
}

impl MonitorPlan {
    /// Apply one live request of the monitoring kind at `fence` (a window start, ms); `origin`
    /// is who waits for the replies.
    ///
    /// ```
    /// use saams::api::request::parse_requests;
    /// use saams_operators::monitor::MonitorPlan;
    /// use saams_operators::monitor::live::MonitorApplied;
    /// let mut plan = MonitorPlan::default();
    /// let live = parse_requests(
    ///     r#"{"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["SlidingWindowMonitor","price","NotQueryable","20s",0.1,0.2,4]}
    ///        {"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["count","price","Queryable","Ad-hoc"]}
    ///        {"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["DELETE_REQUEST","price"]}
    ///        {"streamID":"A","synopsisID":14,"dataSetKey":"D","param":["SlidingWindowMonitor","price","NotQueryable","20s",0.1,0.01,4]}"#);
    /// let req = |i: usize| live[i].as_ref().unwrap();
    /// assert_eq!(plan.apply_live(req(0), "c".into(), 60_000, None), Ok(MonitorApplied::Accepted("construct")));
    /// assert_eq!(plan.routes("D", "A", 59_999).count(), 0);
    /// assert_eq!(plan.routes("D", "A", 60_000).count(), 1);
    /// assert_eq!(plan.apply_live(req(1), "q".into(), 60_000, Some((0, 7))), Ok(MonitorApplied::Asked));
    /// assert_eq!(plan.monitored[0].asks[0].origin, Some((0, 7)));
    /// assert_eq!(plan.apply_live(req(2), "d".into(), 120_000, None), Ok(MonitorApplied::Accepted("delete")));
    /// assert_eq!((plan.routes("D", "A", 119_999).count(), plan.routes("D", "A", 120_000).count()), (1, 0));
    /// assert!(plan.live_rows().is_empty());
    /// assert!(plan.apply_live(req(3), "e".into(), 120_000, None).unwrap_err().contains("phi"));
    /// ```
    ///
    /// # Errors
    /// Why the request cannot be carried out (bad parameters, nothing of the kind to query or
    /// delete, a stream monitored already, an action the kind has not).
    pub fn apply_live(
        &mut self,
        r: &Request,
        id: Json,
        fence: u64,
        origin: Option<Origin>,
    ) -> Result<MonitorApplied, String> {
        match &r.action {
            Action::Construct { field, params, .. } => {
                self.construct(r, id, (field, params), fence)?;
                Ok(MonitorApplied::Accepted("construct"))
            }
            Action::Delete { .. } => {
                let named = self.named(r);
                if named.is_empty() {
                    return Err(format!("nothing to delete: no monitored {}/{}", r.dataset_key, r.stream_id));
                }
                for i in named {
                    self.monitored[i].until = Some(fence);
                }
                Ok(MonitorApplied::Accepted("delete"))
            }
            Action::Query { field, args, mode } => {
                let (i, reg) = self.query_reg(r, id, (field, args), (fence, origin))?;
                let m = &mut self.monitored[i];
                match mode {
                    QueryMode::Continuous => {
                        m.continuous.push(reg);
                        Ok(MonitorApplied::Accepted("query"))
                    }
                    QueryMode::AdHoc => {
                        m.asks.push(reg);
                        Ok(MonitorApplied::Asked)
                    }
                }
            }
            Action::Rescale { .. } => Err("a rescale names no synopsis of the monitoring kind".to_string()),
            Action::Save { .. } | Action::Load { .. } => Err(no_snapshot()),
        }
    }

    /// The live monitored streams as `GET /synopses` lists them: ids [`MONITOR_GROUP`] + their
    /// index (apart from the synopses' own), `mode` `"Monitor"`, `home` the coordinator's
    /// worker of `peers`.
    pub fn live_rows_on(&self, peers: usize) -> Vec<LiveSynopsis> {
        self.monitored
            .iter()
            .enumerate()
            .filter(|(_, m)| m.until.is_none())
            .map(|(i, m)| LiveSynopsis {
                id: MONITOR_GROUP | i as u32,
                request_id: m.request_id.clone(),
                synopsis_id: SLIDING_WINDOW_MONITOR_ID,
                kind: None,
                stream_id: m.stream.clone(),
                dataset_key: m.dataset.clone(),
                field: m.field.clone(),
                params: monitor_params(&m.spec),
                mode: format!("Monitor({} sites)", m.spec.sites),
                home: i % peers.max(1),
                empty_bytes: 0,
                effective_from_ms: m.from.min(i64::MAX as u64) as i64,
            })
            .collect()
    }

    /// [`MonitorPlan::live_rows_on`] for one worker.
    pub fn live_rows(&self) -> Vec<LiveSynopsis> {
        self.live_rows_on(1)
    }
}

/// The construct parameters of a monitored stream, as a construct gives them.
pub(crate) fn monitor_params(spec: &MonitorSpec) -> Vec<Json> {
    vec![
        Json::from(format!("{}ms", spec.window_ms)),
        Json::from(spec.epsilon),
        Json::from(spec.phi),
        Json::from(spec.sites),
        Json::from(spec.scale),
    ]
}
