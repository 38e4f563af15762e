//! Estimations: the answers the engine emits, one JSON object per line.
//!
//! An estimation carries no wall-clock field: the same input gives the same lines whatever the
//! parallelism, so two runs compare with `sort | diff`.

use serde_json::{Value as Json, json};

use crate::api::time::format_timestamp;
use crate::{Estimate, EstimateValue, Kind, Value};

/// What the answer is.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// An estimate with its bound.
    Estimate(Estimate),
    /// Stream pairs whose pair answer (correlation, similarity) reached the threshold, with it.
    Pairs(Vec<(String, String, f64)>),
    /// A SAVE request was carried out: the file and its size.
    Saved {
        /// File name inside the snapshot directory.
        file: String,
        /// Bytes written.
        bytes: usize,
    },
    /// A LOAD request was carried out.
    Loaded {
        /// File name inside the snapshot directory.
        file: String,
    },
    /// The request could not be carried out, and why.
    Error(String),
}

/// One answer to one request.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimation {
    /// The request's `requestID` (or the id the engine gave it).
    pub request_id: Json,
    /// The request's `uid`, if it had one.
    pub uid: Option<Json>,
    /// The kind's id.
    pub synopsis_id: u64,
    /// The kind, when the id names one.
    pub kind: Option<Kind>,
    /// The stream (empty for dataset-wide synopses).
    pub stream_id: String,
    /// The dataset.
    pub dataset_key: String,
    /// The field.
    pub field: String,
    /// The query's arguments as the request gave them.
    pub query: Json,
    /// The event-time window `[start, end)` in ms whose close produced the answer (continuous).
    pub window: Option<(i64, i64)>,
    /// Items the synopsis has summarized.
    pub tuples: Option<u64>,
    /// The answer.
    pub answer: Answer,
}

fn number(x: f64) -> Json {
    if x.is_finite() {
        if x.fract() == 0.0 && x.abs() < 9.0e15 { json!(x as i64) } else { json!(x) }
    } else {
        Json::Null
    }
}

fn value(v: &Value) -> Json {
    match v {
        Value::Num(x) => number(*x),
        Value::Str(s) => Json::String(s.clone()),
    }
}

fn estimate_value(v: &EstimateValue) -> Json {
    match v {
        EstimateValue::Number(x) => number(*x),
        EstimateValue::Bool(b) => Json::Bool(*b),
        EstimateValue::Items(items) => Json::Array(items.iter().map(|(v, c)| json!([value(v), number(*c)])).collect()),
        EstimateValue::Vector(xs) => Json::Array(xs.iter().map(|x| number(*x)).collect()),
    }
}

thread_local! {
    /// The last window rendered: answers come in runs of one window.
    static LAST_WINDOW: std::cell::RefCell<((i64, i64), String)> = const { std::cell::RefCell::new(((0, -1), String::new())) };
}

fn window_json(s: i64, e: i64) -> String {
    LAST_WINDOW.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != (s, e) {
            *last = ((s, e), format!(r#"{{"start":"{}","end":"{}"}}"#, format_timestamp(s), format_timestamp(e)));
        }
        last.1.clone()
    })
}

impl Estimation {
    /// An error answer to a request.
    pub fn error(request_id: Json, uid: Option<Json>, synopsis_id: u64, message: impl Into<String>) -> Estimation {
        Estimation {
            request_id,
            uid,
            synopsis_id,
            kind: Kind::from_id(synopsis_id),
            stream_id: String::new(),
            dataset_key: String::new(),
            field: String::new(),
            query: Json::Null,
            window: None,
            tuples: None,
            answer: Answer::Error(message.into()),
        }
    }

    /// The estimation as one line of JSON (no newline). Non-finite numbers are written `null`.
    ///
    /// ```
    /// use saams::api::estimation::{Answer, Estimation};
    /// use saams::{Estimate, Kind};
    /// let e = Estimation {
    ///     request_id: serde_json::json!(7), uid: None, synopsis_id: 1, kind: Some(Kind::CountMin),
    ///     stream_id: "EURTRY".into(), dataset_key: "Forex".into(), field: "price".into(),
    ///     query: serde_json::json!(6.0654), window: Some((0, 60_000)), tuples: Some(5120),
    ///     answer: Answer::Estimate(Estimate::number(37.0, 35.0, 37.0, 0.99)),
    /// };
    /// let line = e.to_json_line();
    /// assert!(line.starts_with(r#"{"requestID":7,"synopsisID":1,"kind":"CountMin","streamID":"EURTRY""#));
    /// assert!(line.contains(r#""window":{"start":"1970-01-01T00:00:00Z","end":"1970-01-01T00:01:00Z"}"#));
    /// assert!(line.contains(r#""estimate":37,"lower":35,"upper":37,"confidence":0.99,"tuples":5120"#));
    /// ```
    pub fn to_json_line(&self) -> String {
        let mut o: Vec<(&str, Json)> = Vec::with_capacity(16);
        let mut window = None;
        o.push(("requestID", self.request_id.clone()));
        if let Some(uid) = &self.uid {
            o.push(("uid", uid.clone()));
        }
        o.push(("synopsisID", json!(self.synopsis_id)));
        if let Some(k) = self.kind {
            o.push(("kind", json!(k.name())));
        }
        o.push(("streamID", json!(self.stream_id)));
        o.push(("dataSetKey", json!(self.dataset_key)));
        o.push(("field", json!(self.field)));
        if !self.query.is_null() {
            o.push(("query", self.query.clone()));
        }
        if let Some((s, e)) = self.window {
            o.push(("window", Json::Null));
            window = Some(window_json(s, e));
        }
        match &self.answer {
            Answer::Estimate(est) => {
                o.push(("estimate", estimate_value(&est.value)));
                o.push(("lower", number(est.lower)));
                o.push(("upper", number(est.upper)));
                o.push(("confidence", number(est.confidence)));
            }
            Answer::Pairs(pairs) => {
                let v: Vec<Json> = pairs.iter().map(|(a, b, x)| json!([a, b, number(*x)])).collect();
                o.push(("estimate", Json::Array(v)));
            }
            Answer::Saved { file, bytes } => {
                o.push(("saved", json!(file)));
                o.push(("bytes", json!(bytes)));
            }
            Answer::Loaded { file } => {
                o.push(("loaded", json!(file)));
            }
            Answer::Error(msg) => {
                o.push(("error", json!(msg)));
            }
        }
        if let Some(n) = self.tuples {
            o.push(("tuples", json!(n)));
        }
        let mut line = String::with_capacity(256);
        line.push('{');
        for (i, (k, v)) in o.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            line.push('"');
            line.push_str(k);
            line.push_str("\":");
            match (*k, &window) {
                ("window", Some(w)) => line.push_str(w),
                _ => line.push_str(&v.to_string()),
            }
        }
        line.push('}');
        line
    }
}
