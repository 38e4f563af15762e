//! Estimations: the answers the engine emits, one JSON object per line.
//!
//! An estimation carries no wall-clock field: the same input gives the same lines whatever the
//! parallelism, so two runs compare with `sort | diff`.

use serde_json::Value as Json;

use crate::api::time::format_timestamp;
use crate::api::window::{Span, WindowType};
use crate::{Estimate, EstimateValue, Kind, SynopsisError, Value};

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
    /// One change of a continuous set-valued answer (correlated or similar stream pairs,
    /// frequent items), changelog style: at the window's close `member` entered (`added`) or
    /// left the set. A member that stays in the set yields no line, so a consumer keeps the
    /// current set by applying the changes in window order, as it would a Kafka Streams or
    /// Flink changelog (`+I` / `-D` rows keyed by the member).
    Change {
        /// True when the member entered the set, false when it left.
        added: bool,
        /// The member as JSON text: `["A","B"]` for a stream pair, the item for frequent items.
        member: String,
        /// For an added member, its value at that window (pair correlation or similarity, item
        /// count); none for a removed one.
        value: Option<f64>,
    },
    /// The synopsis cannot answer yet (too few values: a DFT before its first complete basic
    /// window, an empty quantile sketch), and what it still needs: `"estimate":null` and a
    /// `"reason"`, so a continuous query is never silent and never an error for waiting.
    NotYet(String),
    /// A live request (construct, delete, continuous query, LOAD) was accepted and takes effect
    /// with the window starting at `from_window` (ms): the fence every worker agreed on, so its
    /// answers cover exactly the tuples from that window on.
    Accepted {
        /// What was accepted: `construct`, `delete`, `query` or `load`.
        action: String,
        /// Start (ms) of the first window the request applies to.
        from_window: i64,
    },
    /// The request could not be carried out, and why.
    Error(String),
}

impl Answer {
    /// The answer of an estimate: the estimate, a not-yet answer, or the error.
    ///
    /// ```
    /// use saams::api::estimation::Answer;
    /// use saams::{Kind, SynopsisError};
    /// let waiting = Err(SynopsisError::NotYet { kind: Kind::Dft, reason: "no complete basic window yet".into() });
    /// assert_eq!(Answer::of(waiting), Answer::NotYet("no complete basic window yet".into()));
    /// let bad = Err(SynopsisError::BadQuery { kind: Kind::Kll, reason: "rank of NaN".into() });
    /// assert!(matches!(Answer::of(bad), Answer::Error(_)));
    /// ```
    pub fn of(result: Result<Estimate, SynopsisError>) -> Answer {
        match result {
            Ok(e) => Answer::Estimate(e),
            Err(SynopsisError::NotYet { reason, .. }) => Answer::NotYet(reason),
            Err(e) => Answer::Error(e.to_string()),
        }
    }
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
    /// The span of event time `[start, end)` in ms the answer covers, with the synopsis' window
    /// type: a landmark answer's starts at its synopsis' first window, a tumbling answer's is its
    /// window, a sliding answer's its last `size` ([`crate::api::window`]).
    pub window: Option<Span>,
    /// Items the synopsis has summarized.
    pub tuples: Option<u64>,
    /// The answer.
    pub answer: Answer,
}

// Lines are built as bytes: numbers go through serde_json's own formatter (itoa for integers,
// its shortest round-trip float writer), so the bytes equal what `Display` of a `serde_json`
// number or value gives, without `core::fmt` on the way (formatting was ~10 % of the paper
// workload).

/// Append a number: whole numbers without a fraction, others in the shortest round-trip form,
/// non-finite ones as `null`.
fn push_number(out: &mut Vec<u8>, x: f64) {
    use serde_json::ser::{CompactFormatter, Formatter};
    // Writing into a Vec<u8> cannot fail.
    if !x.is_finite() {
        out.extend_from_slice(b"null");
    } else if x.fract() == 0.0 && x.abs() < 9.0e15 {
        let _ = CompactFormatter.write_i64(out, x as i64);
    } else {
        let _ = CompactFormatter.write_f64(out, x);
    }
}

/// Append an unsigned integer.
fn push_u64(out: &mut Vec<u8>, n: u64) {
    use serde_json::ser::{CompactFormatter, Formatter};
    let _ = CompactFormatter.write_u64(out, n);
}

/// Append a JSON value in compact form (serde_json's `Display`).
fn push_json(out: &mut Vec<u8>, v: &Json) {
    match v {
        Json::Number(n) => {
            if let Some(u) = n.as_u64() {
                push_u64(out, u);
            } else {
                let _ = serde_json::to_writer(&mut *out, n);
            }
        }
        Json::String(s) => push_str_lit(out, s),
        Json::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_json(out, item);
            }
            out.push(b']');
        }
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// Append a JSON string literal (serde_json's escaping).
#[inline]
fn push_str_lit(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

fn push_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Num(x) => push_number(out, *x),
        Value::Str(s) => push_str_lit(out, s),
    }
}

fn push_estimate_value(out: &mut Vec<u8>, v: &EstimateValue) {
    match v {
        EstimateValue::Number(x) => push_number(out, *x),
        EstimateValue::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        EstimateValue::Items(items) => {
            out.push(b'[');
            for (i, (v, c)) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.push(b'[');
                push_value(out, v);
                out.push(b',');
                push_number(out, *c);
                out.push(b']');
            }
            out.push(b']');
        }
        EstimateValue::Vector(xs) => {
            out.push(b'[');
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_number(out, *x);
            }
            out.push(b']');
        }
    }
}

/// Append a key with its separator, e.g. `,"streamID":` (one constant-length copy).
#[inline(always)]
fn key(out: &mut Vec<u8>, k: &'static [u8]) {
    out.extend_from_slice(k);
}

thread_local! {
    /// The last window rendered: answers come in runs of one window.
    static LAST_WINDOW: std::cell::RefCell<(Span, String)> =
        const { std::cell::RefCell::new((Span { kind: WindowType::Landmark, start: 0, end: -1 }, String::new())) };
}

fn window_json(span: Span, out: &mut Vec<u8>) {
    LAST_WINDOW.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != span {
            let (ty, s, e) = (span.kind.name(), format_timestamp(span.start), format_timestamp(span.end));
            *last = (span, format!(r#"{{"type":"{ty}","start":"{s}","end":"{e}"}}"#));
        }
        out.extend_from_slice(last.1.as_bytes());
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
    /// use saams::api::window::{Span, WindowType};
    /// use saams::{Estimate, Kind};
    /// let e = Estimation {
    ///     request_id: serde_json::json!(7), uid: None, synopsis_id: 1, kind: Some(Kind::CountMin),
    ///     stream_id: "EURTRY".into(), dataset_key: "Forex".into(), field: "price".into(),
    ///     query: serde_json::json!(6.0654), window: Some(Span::new(WindowType::Tumbling, 0, 60_000)), tuples: Some(5120),
    ///     answer: Answer::Estimate(Estimate::number(37.0, 35.0, 37.0, 0.99)),
    /// };
    /// let line = e.to_json_line();
    /// assert!(line.starts_with(r#"{"requestID":7,"synopsisID":1,"kind":"CountMin","streamID":"EURTRY""#));
    /// assert!(line.contains(r#""window":{"type":"tumbling","start":"1970-01-01T00:00:00Z","end":"1970-01-01T00:01:00Z"}"#));
    /// assert!(line.contains(r#""estimate":37,"lower":35,"upper":37,"confidence":0.99,"tuples":5120"#));
    /// ```
    pub fn to_json_line(&self) -> String {
        self.borrowed().to_json_line()
    }

    /// The fields borrowed, e.g. to write the line with [`EstimationRef::to_json_line`].
    ///
    /// ```
    /// use saams::api::estimation::Estimation;
    /// let e = Estimation::error(serde_json::json!(3), None, 1, "no such synopsis");
    /// assert_eq!(e.borrowed().to_json_line(), e.to_json_line());
    /// ```
    pub fn borrowed(&self) -> EstimationRef<'_> {
        EstimationRef {
            request_id: &self.request_id,
            uid: self.uid.as_ref(),
            synopsis_id: self.synopsis_id,
            kind: self.kind,
            stream_id: &self.stream_id,
            dataset_key: &self.dataset_key,
            field: &self.field,
            query: &self.query,
            window: self.window,
            tuples: self.tuples,
            answer: &self.answer,
        }
    }
}

/// An [`Estimation`] with borrowed fields: writing a line from the registered query and the
/// synopsis' description needs no owned copy of them (continuous queries answer once per window
/// and synopsis, and copying the names, ids and query arguments cost as much as ~40 % of
/// writing the line).
#[derive(Clone, Copy, Debug)]
pub struct EstimationRef<'a> {
    /// The request's `requestID` (or the id the engine gave it).
    pub request_id: &'a Json,
    /// The request's `uid`, if it had one.
    pub uid: Option<&'a Json>,
    /// The kind's id.
    pub synopsis_id: u64,
    /// The kind, when the id names one.
    pub kind: Option<Kind>,
    /// The stream (empty for dataset-wide synopses).
    pub stream_id: &'a str,
    /// The dataset.
    pub dataset_key: &'a str,
    /// The field.
    pub field: &'a str,
    /// The query's arguments as the request gave them.
    pub query: &'a Json,
    /// The span of event time `[start, end)` in ms the answer covers, with the synopsis' window
    /// type: a landmark answer's starts at its synopsis' first window, a tumbling answer's is its
    /// window, a sliding answer's its last `size` ([`crate::api::window`]).
    pub window: Option<Span>,
    /// Items the synopsis has summarized.
    pub tuples: Option<u64>,
    /// The answer.
    pub answer: &'a Answer,
}

impl EstimationRef<'_> {
    /// The estimation as one line of JSON (no newline). Non-finite numbers are written `null`.
    ///
    /// ```
    /// use saams::api::estimation::{Answer, Estimation};
    /// use saams::api::window::{Span, WindowType};
    /// use saams::{Estimate, Kind};
    /// let e = Estimation {
    ///     request_id: serde_json::json!(7), uid: None, synopsis_id: 1, kind: Some(Kind::CountMin),
    ///     stream_id: "EURTRY".into(), dataset_key: "Forex".into(), field: "price".into(),
    ///     query: serde_json::json!(6.0654), window: Some(Span::new(WindowType::Tumbling, 0, 60_000)), tuples: Some(5120),
    ///     answer: Answer::Estimate(Estimate::number(37.0, 35.0, 37.0, 0.99)),
    /// };
    /// let line = e.borrowed().to_json_line();
    /// assert!(line.starts_with(r#"{"requestID":7,"synopsisID":1,"kind":"CountMin","streamID":"EURTRY""#));
    /// assert!(line.contains(r#""window":{"type":"tumbling","start":"1970-01-01T00:00:00Z","end":"1970-01-01T00:01:00Z"}"#));
    /// assert!(line.contains(r#""estimate":37,"lower":35,"upper":37,"confidence":0.99,"tuples":5120"#));
    /// ```
    pub fn to_json_line(&self) -> String {
        let numbers = match self.answer {
            Answer::Estimate(Estimate { value: EstimateValue::Vector(xs), .. }) => xs.len(),
            Answer::Estimate(Estimate { value: EstimateValue::Items(xs), .. }) => 2 * xs.len(),
            Answer::Pairs(pairs) => pairs.len() + 1,
            _ => 0,
        };
        let mut o = Vec::with_capacity(320 + 24 * numbers);
        key(&mut o, b"{\"requestID\":");
        push_json(&mut o, self.request_id);
        if let Some(uid) = self.uid {
            key(&mut o, b",\"uid\":");
            push_json(&mut o, uid);
        }
        key(&mut o, b",\"synopsisID\":");
        push_u64(&mut o, self.synopsis_id);
        if let Some(k) = self.kind {
            key(&mut o, b",\"kind\":");
            push_str_lit(&mut o, k.name());
        }
        key(&mut o, b",\"streamID\":");
        push_str_lit(&mut o, self.stream_id);
        key(&mut o, b",\"dataSetKey\":");
        push_str_lit(&mut o, self.dataset_key);
        key(&mut o, b",\"field\":");
        push_str_lit(&mut o, self.field);
        if !self.query.is_null() {
            key(&mut o, b",\"query\":");
            push_json(&mut o, self.query);
        }
        if let Some(span) = self.window {
            key(&mut o, b",\"window\":");
            window_json(span, &mut o);
        }
        match self.answer {
            Answer::Estimate(est) => {
                key(&mut o, b",\"estimate\":");
                push_estimate_value(&mut o, &est.value);
                key(&mut o, b",\"lower\":");
                push_number(&mut o, est.lower);
                key(&mut o, b",\"upper\":");
                push_number(&mut o, est.upper);
                key(&mut o, b",\"confidence\":");
                push_number(&mut o, est.confidence);
            }
            Answer::Pairs(pairs) => {
                key(&mut o, b",\"estimate\":");
                o.push(b'[');
                for (i, (a, b, x)) in pairs.iter().enumerate() {
                    if i > 0 {
                        o.push(b',');
                    }
                    o.push(b'[');
                    push_str_lit(&mut o, a);
                    o.push(b',');
                    push_str_lit(&mut o, b);
                    o.push(b',');
                    push_number(&mut o, *x);
                    o.push(b']');
                }
                o.push(b']');
            }
            Answer::Saved { file, bytes } => {
                key(&mut o, b",\"saved\":");
                push_str_lit(&mut o, file);
                key(&mut o, b",\"bytes\":");
                push_u64(&mut o, *bytes as u64);
            }
            Answer::Loaded { file } => {
                key(&mut o, b",\"loaded\":");
                push_str_lit(&mut o, file);
            }
            Answer::Change { added, member, value } => {
                key(&mut o, if *added { b",\"change\":\"+\"" } else { b",\"change\":\"-\"" });
                key(&mut o, b",\"member\":");
                o.extend_from_slice(member.as_bytes());
                if let Some(x) = value {
                    key(&mut o, b",\"estimate\":");
                    push_number(&mut o, *x);
                }
            }
            Answer::NotYet(reason) => {
                key(&mut o, b",\"estimate\":null,\"reason\":");
                push_str_lit(&mut o, reason);
            }
            Answer::Accepted { action, from_window } => {
                key(&mut o, b",\"accepted\":");
                push_str_lit(&mut o, action);
                key(&mut o, b",\"effectiveFrom\":");
                push_str_lit(&mut o, &format_timestamp(*from_window));
            }
            Answer::Error(msg) => {
                key(&mut o, b",\"error\":");
                push_str_lit(&mut o, msg);
            }
        }
        if let Some(n) = self.tuples {
            key(&mut o, b",\"tuples\":");
            push_u64(&mut o, n);
        }
        o.push(b'}');
        // Only whole UTF-8 strings and ASCII were appended.
        String::from_utf8(o).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// Add what an ad-hoc answer covers to its line: `"asOf"`, the watermark (event time, ms)
/// up to which every window was complete when the answer was taken (later tuples it includes are
/// the open windows' partials). `tuples` already says how many values it summarizes.
///
/// ```
/// use saams::api::estimation::{Estimation, with_as_of};
/// let line = Estimation::error(serde_json::json!(1), None, 1, "x").to_json_line();
/// let line = with_as_of(line, 60_000);
/// assert!(line.ends_with(r#","asOf":"1970-01-01T00:01:00Z"}"#));
/// assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
/// ```
pub fn with_as_of(mut line: String, as_of_ms: i64) -> String {
    if line.ends_with('}') {
        line.pop();
        line.push_str(",\"asOf\":\"");
        line.push_str(&format_timestamp(as_of_ms));
        line.push_str("\"}");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Estimate, EstimateValue, Value};

    fn line(answer: Answer) -> serde_json::Value {
        let e = Estimation {
            request_id: Json::String("r\"1".into()),
            uid: Some(Json::from(7)),
            synopsis_id: 5,
            kind: Kind::from_id(5),
            stream_id: "A\\B".into(),
            dataset_key: "F\n".into(),
            field: "price".into(),
            query: serde_json::json!([0.01, "frequentItems"]),
            window: Some(Span::new(WindowType::Sliding, 1_000, 61_000)),
            tuples: Some(3),
            answer,
        };
        serde_json::from_str(&e.to_json_line()).expect("valid JSON")
    }

    #[test]
    fn json_values_and_numbers_are_written_as_serde_json_displays_them() {
        let values = [
            serde_json::json!(null),
            serde_json::json!(7),
            serde_json::json!(-7),
            serde_json::json!(u64::MAX),
            serde_json::json!(i64::MIN),
            serde_json::json!(3.2478),
            serde_json::json!(-1.5e-300),
            serde_json::json!(1e21),
            serde_json::json!("a\"b\\c\n\u{1}é"),
            serde_json::json!([0.01, "frequentItems", [1, [2.5, null]], true, false]),
            serde_json::json!({"b": 1, "a": [0.1, "x"]}),
        ];
        for v in &values {
            let mut out = Vec::new();
            push_json(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
        let mut rng = crate::hash::SplitMix64::new(9);
        let specials = [0.0, -0.0, 1.0, -3.0, 9.0e15, 9.0e15 + 2.0, 0.1, 1e-7, 1.25e300, f64::MIN_POSITIVE, 5e-324];
        let random = (0..20_000).map(|_| f64::from_bits(rng.next_u64())).filter(|x| x.is_finite());
        for x in specials.into_iter().chain(random) {
            let mut out = Vec::new();
            push_number(&mut out, x);
            let expected = if x.fract() == 0.0 && x.abs() < 9.0e15 {
                (x as i64).to_string()
            } else {
                serde_json::Number::from_f64(x).unwrap().to_string()
            };
            assert_eq!(String::from_utf8(out).unwrap(), expected, "{x:e}");
        }
        let mut out = Vec::new();
        push_number(&mut out, f64::NAN);
        push_number(&mut out, f64::NEG_INFINITY);
        assert_eq!(out, b"nullnull");
    }

    #[test]
    fn lines_are_valid_json_and_round_trip_their_values() {
        let items = EstimateValue::Items(vec![(Value::Str("x\"y".into()), 2.0), (Value::Num(0.5), 1.0)]);
        let v = line(Answer::Estimate(Estimate { value: items, lower: 0.0, upper: f64::INFINITY, confidence: 1.0 }));
        assert_eq!(v["requestID"], "r\"1");
        assert_eq!(v["streamID"], "A\\B");
        assert_eq!(v["dataSetKey"], "F\n");
        assert_eq!(v["estimate"], serde_json::json!([["x\"y", 2], [0.5, 1]]));
        assert_eq!(v["upper"], Json::Null);
        assert_eq!(v["window"]["end"], "1970-01-01T00:01:01Z");
        assert_eq!(v["window"]["type"], "sliding");
        let v = line(Answer::Estimate(Estimate::number(1e-7, 1.25e300, -3.0, 0.99)));
        assert_eq!(v["estimate"].as_f64(), Some(1e-7));
        // serde_json's default parser may be one ulp off for huge exponents: compare relatively.
        let lower = v["lower"].as_f64().expect("lower is a number");
        assert!((lower - 1.25e300).abs() / 1.25e300 < 1e-15, "{lower}");
        assert_eq!(v["upper"], -3);
        let v = line(Answer::Pairs(vec![("A".into(), "B".into(), 0.75)]));
        assert_eq!(v["estimate"], serde_json::json!([["A", "B", 0.75]]));
        assert_eq!(line(Answer::Error("bad \"x\"".into()))["error"], "bad \"x\"");
        let waiting = line(Answer::NotYet("no complete basic window yet".into()));
        assert!(waiting["estimate"].is_null() && waiting.get("error").is_none());
        assert_eq!(waiting["reason"], "no complete basic window yet");
        let v = line(Answer::Change { added: true, member: r#"["A","B"]"#.into(), value: Some(0.5) });
        assert_eq!(
            (v["change"].clone(), v["member"].clone(), v["estimate"].clone()),
            ("+".into(), serde_json::json!(["A", "B"]), 0.5.into())
        );
        let v = line(Answer::Change { added: false, member: "7".into(), value: None });
        assert_eq!((v["change"].clone(), v["member"].clone(), v.get("estimate")), ("-".into(), 7.into(), None));
        assert_eq!(line(Answer::Saved { file: "f".into(), bytes: 9 })["bytes"], 9);
    }
}
