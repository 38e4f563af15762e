//! The live registry as the API shows it (`GET /synopses`) and as requests name its synopses.
//!
//! The engine's plan makes these rows from its own synopses; the HTTP interface answers
//! `GET /synopses` with them and refuses (404) a request that names none of them, by
//! [`Request::names_synopsis`], the same rule the plan applies.

use serde_json::{Value as Json, json};

use crate::Kind;
use crate::api::request::Request;
use crate::api::time::format_timestamp;

/// One live synopsis.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveSynopsis {
    /// Its index in the plan.
    pub id: u32,
    /// The construct request's id (given or generated).
    pub request_id: Json,
    /// The API's id of the kind.
    pub synopsis_id: u64,
    /// The kind; `None` for the sliding-window monitoring kind (`synopsisID` 14,
    /// [`crate::api::monitor`]), which is no [`Kind`] of synopsis.
    pub kind: Option<Kind>,
    /// Stream ("" = every stream of the dataset).
    pub stream_id: String,
    /// Dataset.
    pub dataset_key: String,
    /// The field it summarizes.
    pub field: String,
    /// The construct parameters as given (`param[3..]`).
    pub params: Vec<Json>,
    /// How it is parallelized, as the plan names it.
    pub mode: String,
    /// The worker holding its merged state.
    pub home: usize,
    /// Bytes of an empty synopsis with these parameters.
    pub empty_bytes: usize,
    /// The first window (start, ms) it counts.
    pub effective_from_ms: i64,
}

impl LiveSynopsis {
    /// The row as `GET /synopses` lists it.
    ///
    /// ```
    /// use saams::api::registry::LiveSynopsis;
    /// let row = LiveSynopsis {
    ///     id: 0, request_id: serde_json::json!(7), synopsis_id: 1, kind: Some(saams::Kind::CountMin),
    ///     stream_id: "A".into(), dataset_key: "F".into(), field: "price".into(),
    ///     params: vec![serde_json::json!(0.01)], mode: "Owned".into(), home: 0, empty_bytes: 64,
    ///     effective_from_ms: 60_000,
    /// };
    /// let json = row.to_json();
    /// assert_eq!(json["kind"], "CountMin");
    /// assert_eq!(json["effectiveFrom"], "1970-01-01T00:01:00Z");
    /// ```
    pub fn to_json(&self) -> Json {
        json!({
            "id": self.id,
            "requestID": self.request_id,
            "synopsisID": self.synopsis_id,
            "kind": self.kind.map_or(crate::api::monitor::SLIDING_WINDOW_MONITOR_NAME, |k| k.name()),
            "streamID": self.stream_id,
            "dataSetKey": self.dataset_key,
            "field": self.field,
            "params": self.params,
            "mode": self.mode,
            "home": self.home,
            "emptyBytes": self.empty_bytes,
            "effectiveFrom": format_timestamp(self.effective_from_ms),
        })
    }

    /// Whether `req` names this synopsis ([`Request::names_synopsis`]).
    pub fn is_named_by(&self, req: &Request) -> bool {
        req.names_synopsis(&self.dataset_key, &self.stream_id, self.synopsis_id, &self.field)
    }
}
