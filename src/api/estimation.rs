//! Estimations: the answers the engine emits, one JSON object per line.
//!
//! An estimation carries no wall-clock field: the same input gives the same lines whatever the
//! parallelism, so two runs compare with `sort | diff`.

use serde_json::Value as Json;

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

/// Append a number: whole numbers without a fraction, others in the shortest round-trip form,
/// non-finite ones as `null`.
fn push_number(out: &mut String, x: f64) {
    use std::fmt::Write;
    if !x.is_finite() {
        out.push_str("null");
    } else if x.fract() == 0.0 && x.abs() < 9.0e15 {
        let _ = write!(out, "{}", x as i64);
    } else if let Some(n) = serde_json::Number::from_f64(x) {
        // serde_json prints floats with ryu (shortest round-trip form).
        let _ = write!(out, "{n}");
    }
}

/// Append a JSON string literal (serde_json's escaping).
fn push_str_lit(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&Json::String(s.to_string()).to_string());
    }
}

fn push_value(out: &mut String, v: &Value) {
    match v {
        Value::Num(x) => push_number(out, *x),
        Value::Str(s) => push_str_lit(out, s),
    }
}

fn push_estimate_value(out: &mut String, v: &EstimateValue) {
    match v {
        EstimateValue::Number(x) => push_number(out, *x),
        EstimateValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        EstimateValue::Items(items) => {
            out.push('[');
            for (i, (v, c)) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('[');
                push_value(out, v);
                out.push(',');
                push_number(out, *c);
                out.push(']');
            }
            out.push(']');
        }
        EstimateValue::Vector(xs) => {
            out.push('[');
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_number(out, *x);
            }
            out.push(']');
        }
    }
}

/// Append `,"key":` (or `{"key":` for the first key).
fn key(out: &mut String, k: &str) {
    out.push(if out.is_empty() { '{' } else { ',' });
    out.push('"');
    out.push_str(k);
    out.push_str("\":");
}

thread_local! {
    /// The last window rendered: answers come in runs of one window.
    static LAST_WINDOW: std::cell::RefCell<((i64, i64), String)> = const { std::cell::RefCell::new(((0, -1), String::new())) };
}

fn window_json(s: i64, e: i64, out: &mut String) {
    LAST_WINDOW.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != (s, e) {
            *last = ((s, e), format!(r#"{{"start":"{}","end":"{}"}}"#, format_timestamp(s), format_timestamp(e)));
        }
        out.push_str(&last.1);
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
        let mut o = String::with_capacity(320);
        key(&mut o, "requestID");
        o.push_str(&self.request_id.to_string());
        if let Some(uid) = &self.uid {
            key(&mut o, "uid");
            o.push_str(&uid.to_string());
        }
        key(&mut o, "synopsisID");
        o.push_str(&self.synopsis_id.to_string());
        if let Some(k) = self.kind {
            key(&mut o, "kind");
            push_str_lit(&mut o, k.name());
        }
        key(&mut o, "streamID");
        push_str_lit(&mut o, &self.stream_id);
        key(&mut o, "dataSetKey");
        push_str_lit(&mut o, &self.dataset_key);
        key(&mut o, "field");
        push_str_lit(&mut o, &self.field);
        if !self.query.is_null() {
            key(&mut o, "query");
            o.push_str(&self.query.to_string());
        }
        if let Some((s, e)) = self.window {
            key(&mut o, "window");
            window_json(s, e, &mut o);
        }
        match &self.answer {
            Answer::Estimate(est) => {
                key(&mut o, "estimate");
                push_estimate_value(&mut o, &est.value);
                key(&mut o, "lower");
                push_number(&mut o, est.lower);
                key(&mut o, "upper");
                push_number(&mut o, est.upper);
                key(&mut o, "confidence");
                push_number(&mut o, est.confidence);
            }
            Answer::Pairs(pairs) => {
                key(&mut o, "estimate");
                o.push('[');
                for (i, (a, b, x)) in pairs.iter().enumerate() {
                    if i > 0 {
                        o.push(',');
                    }
                    o.push('[');
                    push_str_lit(&mut o, a);
                    o.push(',');
                    push_str_lit(&mut o, b);
                    o.push(',');
                    push_number(&mut o, *x);
                    o.push(']');
                }
                o.push(']');
            }
            Answer::Saved { file, bytes } => {
                key(&mut o, "saved");
                push_str_lit(&mut o, file);
                key(&mut o, "bytes");
                o.push_str(&bytes.to_string());
            }
            Answer::Loaded { file } => {
                key(&mut o, "loaded");
                push_str_lit(&mut o, file);
            }
            Answer::Change { added, member, value } => {
                key(&mut o, "change");
                o.push_str(if *added { "\"+\"" } else { "\"-\"" });
                key(&mut o, "member");
                o.push_str(member);
                if let Some(x) = value {
                    key(&mut o, "estimate");
                    push_number(&mut o, *x);
                }
            }
            Answer::Error(msg) => {
                key(&mut o, "error");
                push_str_lit(&mut o, msg);
            }
        }
        if let Some(n) = self.tuples {
            key(&mut o, "tuples");
            o.push_str(&n.to_string());
        }
        o.push('}');
        o
    }
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
            window: Some((1_000, 61_000)),
            tuples: Some(3),
            answer,
        };
        serde_json::from_str(&e.to_json_line()).expect("valid JSON")
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
        let v = line(Answer::Estimate(Estimate::number(1e-7, 1.25e300, -3.0, 0.99)));
        assert_eq!(v["estimate"].as_f64(), Some(1e-7));
        // serde_json's default parser may be one ulp off for huge exponents: compare relatively.
        let lower = v["lower"].as_f64().expect("lower is a number");
        assert!((lower - 1.25e300).abs() / 1.25e300 < 1e-15, "{lower}");
        assert_eq!(v["upper"], -3);
        let v = line(Answer::Pairs(vec![("A".into(), "B".into(), 0.75)]));
        assert_eq!(v["estimate"], serde_json::json!([["A", "B", 0.75]]));
        assert_eq!(line(Answer::Error("bad \"x\"".into()))["error"], "bad \"x\"");
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
