//! Requests of the JSON API (see `docs/api.md`): construct, delete, query, save and load, in the
//! reference system's exact form, and the mapping of a query's arguments to a [`Query`].
//!
//! The reference sends a JSON array of request objects per record; a single object works too,
//! and so does a whole file holding one array. [`parse_requests`] accepts all three forms.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::api::window::WindowSpec;
use crate::api::wire_json;
use crate::{Kind, PairQuery, Query, Value};

mod rescale;
use rescale::rescale_from_json;

/// Why a request cannot be carried out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestError(pub String);

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RequestError {}

fn err<T>(msg: impl Into<String>) -> Result<T, RequestError> {
    Err(RequestError(msg.into()))
}

/// When a query is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueryMode {
    /// Registered, answered every time the merged synopsis changes (at each window close).
    Continuous,
    /// Answered once from the latest merged state.
    AdHoc,
}

/// What a request asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Action {
    /// Start maintaining a synopsis (`NotQueryable` or `Construct` status).
    Construct {
        /// `param[0]`, informational (dispatch is on `synopsisID`).
        name: String,
        /// The value field the synopsis summarizes.
        field: String,
        /// The construct parameters, `param[3..]`.
        #[serde(with = "wire_json::many")]
        params: Vec<Json>,
    },
    /// Stop maintaining a synopsis.
    Delete {
        /// The field, when the request names one (else every synopsis of that id on the stream).
        field: Option<String>,
    },
    /// Ask a synopsis a question.
    Query {
        /// The queried field.
        field: String,
        /// The query parameters (everything before the field).
        #[serde(with = "wire_json::many")]
        args: Vec<Json>,
        /// Continuous or ad-hoc.
        mode: QueryMode,
    },
    /// Write the merged synopsis' bytes to a file of the snapshot directory.
    Save {
        /// File name relative to the snapshot directory.
        file: String,
    },
    /// Merge a saved synopsis into the constructed synopsis of the same stream and id.
    Load {
        /// File name relative to the snapshot directory.
        file: String,
    },
    /// Run the job's synopses on its first `active_workers` workers from the fence on (the
    /// request object `{"rescale": {"activeWorkers": N}}`, or `POST /rescale`): a change of
    /// the bin map, agreed and logged like every live request ([`Request::rescale`]).
    Rescale {
        /// Workers holding bins from the fence on (1 up to the job's workers).
        active_workers: usize,
        /// Bins whose owned state moves at each fence (`binsPerFence`): the moving bins go a
        /// batch per window from the fence on (Megaphone's fluid migration); `None`: the job's
        /// `--rescale-batch`; 0: all at the fence.
        #[serde(default)]
        bins_per_fence: Option<u32>,
    },
}

/// One request, with the fields every request carries.
///
/// Parsed once where it enters the job ([`parse_requests`]: HTTP, stdin, the request topic, the
/// request file) and carried as this value from then on: through the control hub, the sequencer
/// and timely's exchange (serde; its free-form JSON values travel as JSON text on a binary wire,
/// see [`crate::api::wire_json`]) and into checkpoints' request logs ([`log_text`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The user's `requestID` (echoed in answers), if given.
    #[serde(with = "wire_json::optional")]
    pub request_id: Option<Json>,
    /// The user's `uid` (echoed in answers), if given.
    #[serde(with = "wire_json::optional")]
    pub uid: Option<Json>,
    /// The dataset (`dataSetKey`).
    pub dataset_key: String,
    /// The stream (`streamID`); empty = every stream of the dataset.
    pub stream_id: String,
    /// The kind's id (`synopsisID`).
    pub synopsis_id: u64,
    /// Upper bound of the synopsis' parallelism (`noOfP`, default 1).
    pub no_of_p: u32,
    /// What is asked.
    pub action: Action,
    /// A construct's `window` (which tuples the synopsis summarizes); `None`: the job's
    /// default (`--window-type`). Read on constructs only.
    #[serde(default)]
    pub window: Option<WindowSpec>,
    /// Fields of the request object outside the reference's request class, in the order given.
    /// They are ignored (as Kafka Streams' and Flink's JSON readers ignore unknown fields); the
    /// job counts them and names each once, and `--strict-requests` turns them into errors.
    pub unknown_fields: Vec<String>,
}

impl Request {
    /// The field a request narrows its synopsis down to, if any: the field a construct builds
    /// on or a query asks, a delete's field when it names one; SAVE and LOAD name none.
    pub fn field_filter(&self) -> Option<&str> {
        match &self.action {
            Action::Construct { field, .. } | Action::Query { field, .. } => Some(field),
            Action::Delete { field } => field.as_deref(),
            Action::Save { .. } | Action::Load { .. } | Action::Rescale { .. } => None,
        }
    }

    /// Whether this request names the synopsis of kind `synopsis_id` on `field` of `stream` in
    /// `dataset`: the same dataset and stream, the same kind unless the request's `synopsisID`
    /// is 0, and the same field when the request narrows to one ([`Request::field_filter`]).
    /// The one rule the plan finds a request's synopses by, and the HTTP interface checks a
    /// request against the live registry by.
    ///
    /// ```
    /// use saams::api::request::Request;
    /// let query = Request::from_json(&serde_json::json!({"streamID":"A","synopsisID":1,"dataSetKey":"F",
    ///     "param":[2.5,"price","Queryable","Ad-hoc"]})).unwrap();
    /// assert!(query.names_synopsis("F", "A", 1, "price"));
    /// assert!(!query.names_synopsis("F", "A", 1, "volume"));
    /// let save = Request::from_json(&serde_json::json!({"streamID":"A","synopsisID":1,"dataSetKey":"F",
    ///     "param":["SAVE_REQUEST","a.bin"]})).unwrap();
    /// assert!(save.names_synopsis("F", "A", 1, "volume"), "SAVE names no field");
    /// ```
    pub fn names_synopsis(&self, dataset: &str, stream: &str, synopsis_id: u64, field: &str) -> bool {
        self.dataset_key == dataset
            && self.stream_id == stream
            && (self.synopsis_id == 0 || self.synopsis_id == synopsis_id)
            && self.field_filter().is_none_or(|f| f == field)
    }
}

/// The fields of the reference system's request class, and saams' `window` (a construct's
/// window, [`WindowSpec`]). `partition` is the reference's Kafka partition of the request (its
/// router overwrites it): accepted and ignored.
pub const KNOWN_FIELDS: [&str; 9] =
    ["streamID", "synopsisID", "requestID", "dataSetKey", "param", "partition", "noOfP", "uid", "window"];

impl Request {
    /// Read one request object.
    ///
    /// ```
    /// use saams::api::request::{Action, Request};
    /// let r = Request::from_json(&serde_json::json!({"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex",
    ///     "param":["CountMin","price","NotQueryable",0.002,0.99,12345],"noOfP":4})).unwrap();
    /// assert_eq!(r.no_of_p, 4);
    /// assert!(matches!(r.action, Action::Construct { ref field, .. } if field == "price"));
    /// // The reference's `partition` is accepted; a field outside its request class is reported,
    /// // not fatal.
    /// let r = Request::from_json(&serde_json::json!({"synopsisID":2,"param":["HLL","price","NotQueryable",0.02],
    ///     "partition":0,"bogus":1})).unwrap();
    /// assert_eq!(r.unknown_fields, vec!["bogus".to_string()]);
    /// assert!(Request::from_json(&serde_json::json!({"synopsisID":1,"param":[]})).is_err());
    /// // A construct may say which tuples its synopsis summarizes.
    /// let r = Request::from_json(&serde_json::json!({"synopsisID":2,"param":["HLL","price","NotQueryable",0.02],
    ///     "window":{"type":"tumbling","size":"60s"}})).unwrap();
    /// assert_eq!(r.window, Some(saams::api::window::WindowSpec::Tumbling { size: 60_000 }));
    /// ```
    ///
    /// # Errors
    /// For a non-object, a missing or non-numeric `synopsisID`, a missing `param` array, or a
    /// `param` array that fits no request form.
    pub fn from_json(json: &Json) -> Result<Request, RequestError> {
        let obj = match json.as_object() {
            Some(o) => o,
            None => return err(format!("a request must be a JSON object, got {}", short(json))),
        };
        if let Some(rescale) = obj.get("rescale") {
            return rescale_from_json(obj, rescale);
        }
        let unknown_fields: Vec<String> = obj.keys().filter(|k| !KNOWN_FIELDS.contains(&k.as_str())).cloned().collect();
        let request_id = obj.get("requestID").cloned();
        let uid = obj.get("uid").cloned();
        let stream_id = text(obj, "streamID")?.unwrap_or_default();
        let dataset_key = text(obj, "dataSetKey")?.unwrap_or_default();
        let param = match obj.get("param") {
            Some(Json::Array(p)) => p.as_slice(),
            Some(other) => return err(format!("`param` must be an array, got {}", short(other))),
            None => return err("missing `param`"),
        };
        let action = parse_action(param)?;
        let synopsis_id = match (obj.get("synopsisID"), &action) {
            (Some(v), _) => whole(v, "synopsisID")?,
            (None, Action::Load { .. } | Action::Save { .. }) => 0,
            (None, _) => return err("missing `synopsisID`"),
        };
        let no_of_p = match obj.get("noOfP") {
            None | Some(Json::Null) => 1,
            Some(v) => {
                let n = whole(v, "noOfP")?;
                if n == 0 || n > 4096 {
                    return err(format!("noOfP must be between 1 and 4096, got {n}"));
                }
                n as u32
            }
        };
        let window = match (obj.get("window"), &action) {
            (None | Some(Json::Null), _) => None,
            (Some(w), Action::Construct { .. }) => Some(WindowSpec::from_json(w).map_err(RequestError)?),
            (Some(_), _) => {
                return err("`window` belongs to a construct request: it says which tuples the synopsis summarizes");
            }
        };
        Ok(Request { request_id, uid, dataset_key, stream_id, synopsis_id, no_of_p, action, window, unknown_fields })
    }
}

fn short(v: &Json) -> String {
    let s = v.to_string();
    if s.len() > 60 { format!("{}…", &s[..s.char_indices().nth(60).map(|(i, _)| i).unwrap_or(s.len())]) } else { s }
}

fn text(obj: &Map<String, Json>, key: &str) -> Result<Option<String>, RequestError> {
    match obj.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(Json::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => err(format!("`{key}` must be a string, got {}", short(other))),
    }
}

fn whole(v: &Json, name: &str) -> Result<u64, RequestError> {
    let x = match v {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match x {
        Some(x) if x >= 0.0 && x.fract() == 0.0 && x < 9.0e15 => Ok(x as u64),
        _ => err(format!("`{name}` must be a whole number, got {}", short(v))),
    }
}

fn keyword(v: &Json) -> Option<String> {
    v.as_str().map(|s| s.trim().to_ascii_lowercase())
}

fn field_at(param: &[Json], i: usize) -> Result<String, RequestError> {
    match param.get(i) {
        Some(Json::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(other) => err(format!("param[{i}] (the field) must be a non-empty string, got {}", short(other))),
        None => err(format!("param[{i}] (the field) is missing")),
    }
}

fn parse_action(param: &[Json]) -> Result<Action, RequestError> {
    let first = param.first().and_then(keyword);
    match first.as_deref() {
        Some("load_request") => return Ok(Action::Load { file: field_at(param, 1)? }),
        Some("save_request") => return Ok(Action::Save { file: field_at(param, 1)? }),
        Some("delete_request") => {
            return Ok(Action::Delete { field: param.get(1).and_then(|v| v.as_str()).map(str::to_string) });
        }
        _ => {}
    }
    if let Some(status) = param.get(2).and_then(keyword) {
        match status.as_str() {
            "notqueryable" | "construct" => {
                let name = param[0].as_str().map(str::to_string).unwrap_or_else(|| param[0].to_string());
                return Ok(Action::Construct { name, field: field_at(param, 1)?, params: param[3..].to_vec() });
            }
            "delete" => return Ok(Action::Delete { field: Some(field_at(param, 1)?) }),
            _ => {}
        }
    }
    let Some(q) = param.iter().skip(1).position(|v| keyword(v).as_deref() == Some("queryable")).map(|p| p + 1) else {
        return err(format!(
            "param {} is no request: expected a status (NotQueryable, Construct, Queryable, Delete) or \
             LOAD_REQUEST/SAVE_REQUEST/DELETE_REQUEST",
            short(&Json::Array(param.to_vec()))
        ));
    };
    let field = field_at(param, q - 1)?;
    let mode = match param.get(q + 1).and_then(keyword).as_deref() {
        Some("continues" | "continuous") => QueryMode::Continuous,
        Some("ad-hoc" | "adhoc" | "ad_hoc") => QueryMode::AdHoc,
        _ => return err("a query needs its type after `Queryable`: `Continuous` (or `Continues`) or `Ad-hoc`"),
    };
    Ok(Action::Query { field, args: query_args(&param[..q - 1]), mode })
}

/// The query arguments before the field, in the flat form (`[3, "countEstimation", field, …]`)
/// or the reference's nested form for kinds 5–7 (`[[3, "CountEstimation"], field, …]`): a lone
/// array is its elements.
fn query_args(before_field: &[Json]) -> Vec<Json> {
    match before_field {
        [Json::Array(nested)] => nested.clone(),
        flat => flat.to_vec(),
    }
}

/// Read a requests text: a JSON array of requests, one request object per line, or one array
/// per line (the reference's form). Each entry is a request or the reason it is none.
///
/// ```
/// let text = r#"[{"streamID":"A","synopsisID":2,"dataSetKey":"F","param":["HLL","price","NotQueryable",0.02]}]
/// {"streamID":"A","synopsisID":2,"dataSetKey":"F","param":["x","price","Queryable","Ad-hoc"]}
/// {not json"#;
/// let rs = saams::api::request::parse_requests(text);
/// assert_eq!(rs.len(), 3);
/// assert!(rs[0].is_ok() && rs[1].is_ok() && rs[2].is_err());
/// ```
pub fn parse_requests(text: &str) -> Vec<Result<Request, RequestError>> {
    let mut per_line = Vec::new();
    let mut line_failed = false;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<Json>(line) {
            Ok(v) => per_line.push(Ok(v)),
            Err(e) => {
                line_failed = true;
                per_line.push(Err(RequestError(format!("request line {}: malformed JSON: {e}", n + 1))));
            }
        }
    }
    let values = if line_failed {
        // A pretty-printed file holds values spread over lines: read it as one stream of values.
        let whole: Result<Vec<Json>, _> = serde_json::Deserializer::from_str(text).into_iter::<Json>().collect();
        match whole {
            Ok(vs) => vs.into_iter().map(Ok).collect(),
            Err(_) => per_line,
        }
    } else {
        per_line
    };
    let mut out = Vec::new();
    for v in values {
        match v {
            Ok(v) => out.extend(requests_from_value(&v)),
            Err(e) => out.push(Err(e)),
        }
    }
    out
}

/// The requests of one JSON value already read (a record of the request topic, a value on
/// stdin): an array of request objects or one object.
///
/// ```
/// let v = serde_json::json!([{"synopsisID":2,"param":["HLL","price","NotQueryable",0.02]}, 3]);
/// let rs = saams::api::request::requests_from_value(&v);
/// assert!(rs[0].is_ok() && rs[1].is_err());
/// ```
pub fn requests_from_value(value: &Json) -> Parsed {
    match value {
        Json::Array(items) => items.iter().map(Request::from_json).collect(),
        v => vec![Request::from_json(v)],
    }
}

/// Requests as read: each a request or the reason it is none. The form requests travel in once
/// read ([`parse_requests`]).
pub type Parsed = Vec<Result<Request, RequestError>>;

/// Requests as a checkpoint's request log keeps them: their typed form as JSON, so a resumed
/// job applies exactly the requests (and the refusals) the running one applied, without the
/// text they came in.
///
/// ```
/// use saams::api::request::{log_text, parse_requests, read_log};
/// let requests = parse_requests(r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","requestID":{"n":[1,2.5]},
///     "param":["CountMin","price","NotQueryable",0.01,0.99,7]}
///     {not json"#);
/// assert_eq!(read_log(&log_text(&requests)), requests);
/// // A log written by an older build held the requests' text as given: still read.
/// let old = r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable"]}"#;
/// assert_eq!(read_log(old), parse_requests(old));
/// ```
pub fn log_text(requests: &[Result<Request, RequestError>]) -> String {
    serde_json::to_string(requests).expect("requests serialize to JSON")
}

/// The requests of a request log entry written by [`log_text`] (or, by an older build, the
/// requests' text as given).
pub fn read_log(text: &str) -> Parsed {
    match serde_json::from_str::<Parsed>(text) {
        Ok(requests) => requests,
        Err(_) => parse_requests(text),
    }
}

/// What a query request asks of the synopses.
#[derive(Clone, Debug, PartialEq)]
pub enum QuerySpec {
    /// A question for the one synopsis.
    Single(Query),
    /// Pairs of this dataset's synopses (same kind and parameters) whose pair answer is at
    /// least `threshold`: correlated streams (DFT), similar streams (LSH).
    PairsAbove {
        /// The pair question.
        query: PairQuery,
        /// The least answer reported.
        threshold: f64,
    },
    /// A question about this synopsis and the same synopsis of another stream (AMS inner product).
    PairWith {
        /// The pair question.
        query: PairQuery,
        /// The other stream's id.
        other_stream: String,
    },
}

/// A query argument as a field value: numbers and numeric strings are numbers (tuples carry
/// prices as numbers whatever form the query uses), other strings are strings.
///
/// ```
/// use saams::{api::request::arg_value, Value};
/// assert_eq!(arg_value(&serde_json::json!("6.0654")), Some(Value::Num(6.0654)));
/// assert_eq!(arg_value(&serde_json::json!("IBM")), Some(Value::Str("IBM".into())));
/// assert_eq!(arg_value(&serde_json::json!(null)), None);
/// ```
pub fn arg_value(v: &Json) -> Option<Value> {
    match v {
        Json::Number(n) => n.as_f64().map(Value::Num),
        Json::String(s) => match s.trim().parse::<f64>() {
            Ok(x) if x.is_finite() => Some(Value::Num(x)),
            _ => Some(Value::Str(s.clone())),
        },
        Json::Bool(b) => Some(Value::Str(b.to_string())),
        _ => None,
    }
}

fn arg_number(v: Option<&Json>, what: &str) -> Result<f64, RequestError> {
    match v.and_then(arg_value) {
        Some(Value::Num(x)) => Ok(x),
        _ => err(format!("{what} must be a number, got {}", v.map(short).unwrap_or_else(|| "nothing".into()))),
    }
}

fn arg_item(v: Option<&Json>) -> Result<Value, RequestError> {
    v.and_then(arg_value).ok_or_else(|| RequestError("the query needs a value to look up as param[0]".into()))
}

/// Map a query's arguments (`param[..field]`) to what is asked of a `kind` (the table of
/// `docs/api.md`; keywords are matched case-insensitively).
///
/// ```
/// use saams::api::request::{query_spec, QuerySpec};
/// use saams::{Kind, Query, Value};
/// let args = [serde_json::json!(6.0654)];
/// assert_eq!(query_spec(Kind::CountMin, &args).unwrap(), QuerySpec::Single(Query::Count(Value::Num(6.0654))));
/// let lossy = [serde_json::json!(0.01), serde_json::json!("frequentItems")];
/// assert_eq!(query_spec(Kind::LossyCounting, &lossy).unwrap(),
///            QuerySpec::Single(Query::FrequentItems { support: 0.01 }));
/// assert!(query_spec(Kind::GkQuantiles, &[serde_json::json!("median")]).is_err());
/// ```
///
/// # Errors
/// For a missing value, a non-numeric number argument, or an unknown keyword.
pub fn query_spec(kind: Kind, args: &[Json]) -> Result<QuerySpec, RequestError> {
    let kw = args.get(1).and_then(keyword);
    let single = |q| Ok(QuerySpec::Single(q));
    match kind {
        Kind::CountMin => single(Query::Count(arg_item(args.first())?)),
        Kind::HyperLogLog | Kind::Cpc => single(Query::Distinct),
        Kind::BloomFilter => single(Query::Contains(arg_item(args.first())?)),
        Kind::Dft | Kind::Lsh => {
            let pair = if kind == Kind::Dft { PairQuery::Correlation } else { PairQuery::Similarity };
            let wants_pairs = matches!(
                kw.as_deref(),
                Some("correlation" | "correlated" | "similarity" | "similar" | "pairs" | "threshold")
            );
            match args.first().and_then(arg_value) {
                Some(Value::Num(t)) if wants_pairs || (t > 0.0 && t <= 1.0) => {
                    if !(-1.0..=1.0).contains(&t) {
                        return err(format!("a pair threshold must be in [-1, 1], got {t}"));
                    }
                    Ok(QuerySpec::PairsAbove { query: pair, threshold: t })
                }
                _ if wants_pairs => err("a pair query needs a numeric threshold as param[0]"),
                _ => single(Query::Vector),
            }
        }
        Kind::LossyCounting | Kind::StickySampling | Kind::FrequentItems | Kind::Ams => match kw.as_deref() {
            None | Some("countestimation" | "count") => single(Query::Count(arg_item(args.first())?)),
            Some("frequentitems") if kind != Kind::Ams => {
                single(Query::FrequentItems { support: arg_number(args.first(), "the support")? })
            }
            Some("isfrequent") if kind == Kind::StickySampling => single(Query::IsFrequent(arg_item(args.first())?)),
            Some("l2norm" | "f2") if kind == Kind::Ams => single(Query::F2),
            Some("innerproduct" | "inner_product" | "join") if kind == Kind::Ams => match args.first() {
                Some(Json::String(s)) if !s.is_empty() => {
                    Ok(QuerySpec::PairWith { query: PairQuery::InnerProduct, other_stream: s.clone() })
                }
                _ => err("an inner-product query needs the other stream's id as param[0]"),
            },
            Some(other) => err(format!("{kind} has no query `{other}`")),
        },
        Kind::GkQuantiles | Kind::WindowSketchQuantiles | Kind::Kll => {
            let q = arg_number(args.first(), "the quantile")?;
            if !(0.0..=1.0).contains(&q) {
                return err(format!("the quantile must be in [0, 1], got {q}"));
            }
            single(Query::Quantile(q))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(v: Json) -> Result<Request, RequestError> {
        Request::from_json(&v)
    }

    #[test]
    fn reference_forms() {
        let q = req(json!({"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex",
            "param":["6","volume","Queryable","Continues"],"noOfP":4}))
        .unwrap();
        assert_eq!(
            q.action,
            Action::Query { field: "volume".into(), args: vec![json!("6")], mode: QueryMode::Continuous }
        );
        let lossy = req(json!({"streamID":"A","synopsisID":5,"dataSetKey":"F",
            "param":[3,"countEstimation","price","Queryable","Ad-hoc"]}))
        .unwrap();
        assert_eq!(
            lossy.action,
            Action::Query {
                field: "price".into(),
                args: vec![json!(3), json!("countEstimation")],
                mode: QueryMode::AdHoc
            }
        );
        let load =
            req(json!({"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["LOAD_REQUEST","cm.bin"]})).unwrap();
        assert_eq!(load.action, Action::Load { file: "cm.bin".into() });
        let del =
            req(json!({"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","Delete"]})).unwrap();
        assert_eq!(del.action, Action::Delete { field: Some("price".into()) });
        let del2 =
            req(json!({"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["DELETE_REQUEST","price"]})).unwrap();
        assert_eq!(del2.action, Action::Delete { field: Some("price".into()) });
    }

    /// The reference's own example lines (docs/api.md), verbatim: `partition` accepted, query
    /// argument and keyword nested at `param[0]` for kinds 5–7, keywords in any case.
    #[test]
    fn reference_example_lines_verbatim() {
        let lines = [
            (
                r#"{"streamID":"EURTRY","synopsisID":5,"dataSetKey":"Forex","param":[[0.69196,"CountEstimation"],"price","Queryable","Continues"],"partition":0,"noOfP":4}"#,
                Kind::LossyCounting,
                QuerySpec::Single(Query::Count(Value::Num(0.69196))),
            ),
            (
                r#"{"streamID":"EURTRY","synopsisID":5,"dataSetKey":"Forex","param":[[0.001,"FrequentItems"],"price","Queryable","Continues"],"partition":0,"noOfP":4}"#,
                Kind::LossyCounting,
                QuerySpec::Single(Query::FrequentItems { support: 0.001 }),
            ),
            (
                r#"{"streamID":"EURTRY","synopsisID":6,"dataSetKey":"Forex","param":[[100,"isFrequent"],"price","Queryable","Continues"],"partition":0,"noOfP":4}"#,
                Kind::StickySampling,
                QuerySpec::Single(Query::IsFrequent(Value::Num(100.0))),
            ),
            (
                r#"{"streamID":"EURTRY","synopsisID":7,"dataSetKey":"Forex","param":[[0,"L2norm"],"price","Queryable","Continues"],"partition":0,"noOfP":4}"#,
                Kind::Ams,
                QuerySpec::Single(Query::F2),
            ),
            (
                r#"{"streamID":"EURTRY","synopsisID":7,"dataSetKey":"Forex","param":[["GBPUSD","innerProduct"],"price","Queryable","Ad-hoc"],"partition":0}"#,
                Kind::Ams,
                QuerySpec::PairWith { query: PairQuery::InnerProduct, other_stream: "GBPUSD".into() },
            ),
            (
                r#"{"streamID":"EURTRY","synopsisID":6,"dataSetKey":"Forex","param":[[7,"frequentitems"],"price","Queryable","Ad-hoc"]}"#,
                Kind::StickySampling,
                QuerySpec::Single(Query::FrequentItems { support: 7.0 }),
            ),
        ];
        for (line, kind, spec) in lines {
            let r = req(serde_json::from_str(line).unwrap()).unwrap();
            assert!(r.unknown_fields.is_empty(), "{line}");
            let Action::Query { field, args, .. } = &r.action else { panic!("{line}: not a query") };
            assert_eq!(field, "price");
            assert_eq!(query_spec(kind, args).unwrap(), spec, "{line}");
        }
        let construct = req(json!({"streamID":"EURTRY","synopsisID":9,"dataSetKey":"Forex",
            "param":["LSHsynopsis","price","NotQueryable",100,500,20],"partition":0,"noOfP":4,
            "requestID":3,"uid":"u-1"}))
        .unwrap();
        assert!(matches!(construct.action, Action::Construct { ref params, .. } if params.len() == 3));
        let extra =
            req(json!({"synopsisID":1,"param":["CountMin","price","NotQueryable"],"tenant":"x","ts":1})).unwrap();
        assert_eq!(extra.unknown_fields, vec!["tenant".to_string(), "ts".to_string()]);
    }

    #[test]
    fn bad_requests_say_why() {
        assert!(
            req(json!({"synopsisID":1,"param":["CountMin","price","Sometimes"]})).unwrap_err().0.contains("status")
        );
        assert!(req(json!({"synopsisID":"x","param":["a","b","Construct"]})).unwrap_err().0.contains("synopsisID"));
        assert!(req(json!({"synopsisID":1,"param":["a","b","Queryable"]})).unwrap_err().0.contains("Ad-hoc"));
        assert!(req(json!({"synopsisID":1,"param":["a","b","Construct"],"noOfP":0})).unwrap_err().0.contains("noOfP"));
        assert!(req(json!([1])).is_err());
    }

    #[test]
    fn whole_file_array_and_pretty_printing() {
        let text = "[\n {\"streamID\":\"A\",\"synopsisID\":2,\"dataSetKey\":\"F\",\n  \"param\":[\"HLL\",\"price\",\"NotQueryable\",0.02]}\n]\n";
        let rs = parse_requests(text);
        assert_eq!(rs.len(), 1);
        assert!(rs[0].is_ok());
    }

    #[test]
    fn query_mapping() {
        assert_eq!(
            query_spec(Kind::StickySampling, &[json!(5), json!("isFrequent")]).unwrap(),
            QuerySpec::Single(Query::IsFrequent(Value::Num(5.0)))
        );
        assert_eq!(query_spec(Kind::Ams, &[json!(0), json!("L2norm")]).unwrap(), QuerySpec::Single(Query::F2));
        assert_eq!(
            query_spec(Kind::Dft, &[json!(0.9)]).unwrap(),
            QuerySpec::PairsAbove { query: PairQuery::Correlation, threshold: 0.9 }
        );
        assert_eq!(query_spec(Kind::Dft, &[json!("coefficients")]).unwrap(), QuerySpec::Single(Query::Vector));
        assert_eq!(
            query_spec(Kind::Ams, &[json!("IBM"), json!("innerProduct")]).unwrap(),
            QuerySpec::PairWith { query: PairQuery::InnerProduct, other_stream: "IBM".into() }
        );
        assert!(query_spec(Kind::Kll, &[json!(1.5)]).is_err());
        assert!(query_spec(Kind::LossyCounting, &[json!(1), json!("median")]).is_err());
    }
}
