//! The answer lines of the monitoring kind: the shape of every other synopsis' answers
//! ([`saams::api::estimation::EstimationRef`]), with the kind's name, the guarantee the protocol
//! gives and what the sites sent so far.

use saams::api::estimation::{Answer, Estimation, EstimationRef};
use saams::api::monitor::{MonitorQuery, SLIDING_WINDOW_MONITOR_ID, SLIDING_WINDOW_MONITOR_NAME};
use saams::api::request::Request;
use saams::api::window::{Span, WindowType};
use saams::{Estimate, EstimateValue, Value};
use saams_monitoring::Channel;
use saams_monitoring::fallback::Coordinator;
use saams_monitoring::live::Received;
use serde_json::Value as Json;

use super::{MonitorQueryReg, Monitored};

/// An error line for a refused request of the monitoring kind.
pub(super) fn error_line(r: &Request, id: Json, msg: &str) -> String {
    let mut e = Estimation::error(id, r.uid.clone(), r.synopsis_id, msg);
    e.stream_id = r.stream_id.clone();
    e.dataset_key = r.dataset_key.clone();
    e.field = r.field_filter().unwrap_or_default().to_string();
    line_with_kind(e.to_json_line(), None)
}

/// The error line of query `q` of `m`, which a request script deleted before it could be
/// answered (what a deleted synopsis' queries get).
pub(super) fn query_error_line(m: &Monitored, q: MonitorQueryReg, msg: &str) -> String {
    let mut e = Estimation::error(q.request_id, q.uid, SLIDING_WINDOW_MONITOR_ID, msg);
    e.stream_id = m.stream.clone();
    e.dataset_key = m.dataset.clone();
    e.field = m.field.clone();
    e.query = q.args;
    line_with_kind(e.to_json_line(), None)
}

/// Name the kind after `synopsisID` (it is not a [`saams::Kind`]) and append `extra` fields.
fn line_with_kind(line: String, extra: Option<String>) -> String {
    let id = format!("\"synopsisID\":{SLIDING_WINDOW_MONITOR_ID}");
    let mut line = line.replacen(&id, &format!("{id},\"kind\":\"{SLIDING_WINDOW_MONITOR_NAME}\""), 1);
    if let Some(extra) = extra
        && line.ends_with('}')
    {
        line.pop();
        line.push(',');
        line.push_str(&extra);
        line.push('}');
    }
    line
}

/// The answer to `q` at time `t` (the window `(t − W, t]`).
fn answer(m: &Monitored, q: &MonitorQuery, c: &mut Coordinator, t: i64) -> Answer {
    let eps = m.spec.epsilon;
    let result = (|| -> Result<Answer, saams_monitoring::MonitorError> {
        let total = c.count(t)? as f64;
        // |ĉ − c| ≤ εc, so c ≤ ĉ/(1 − ε): the additive bound of item counts in ĉ's terms.
        let item_bound = eps * total / (1.0 - eps);
        Ok(match *q {
            MonitorQuery::Count => {
                Answer::Estimate(Estimate::number(total, total / (1.0 + eps), total / (1.0 - eps), 1.0))
            }
            MonitorQuery::ItemCount(v) => match m.spec.item_of(v) {
                Some(item) => {
                    let x = c.item_count(item, t)? as f64;
                    Answer::Estimate(Estimate::number(x, (x - item_bound).max(0.0), x + item_bound, 1.0))
                }
                None => Answer::Error(format!("{v} is no tracked value (negative or out of range once scaled)")),
            },
            MonitorQuery::Frequent => {
                let estimates = c.item_estimates(Channel::FrequentItems, t)?;
                let mut items: Vec<(Value, f64)> = c
                    .frequent(m.spec.phi, t)?
                    .into_iter()
                    .map(|j| (Value::Num(m.spec.value_of(j)), estimates.get(&j).copied().unwrap_or(0) as f64))
                    .collect();
                items.sort_by(|a, b| b.1.total_cmp(&a.1));
                Answer::Estimate(Estimate {
                    value: EstimateValue::Items(items),
                    lower: item_bound,
                    upper: item_bound,
                    confidence: 1.0,
                })
            }
            MonitorQuery::Quantile(phi) => match c.quantile(phi, t)? {
                Some(j) => {
                    let v = m.spec.value_of(j);
                    Answer::Estimate(Estimate::number(v, v, v, 1.0))
                }
                None => Answer::NotYet("the window is empty".into()),
            },
        })
    })();
    result.unwrap_or_else(|e| Answer::Error(e.to_string()))
}

/// The guarantee of `q`, stated in the answer, and what the sites sent so far.
fn guarantee(m: &Monitored, q: &MonitorQuery, sent: Received, refused: u64) -> String {
    let s = &m.spec;
    let what = match q {
        MonitorQuery::Count => "\"relative\":true".to_string(),
        MonitorQuery::ItemCount(_) => "\"ofCount\":true".to_string(),
        MonitorQuery::Frequent => format!("\"phi\":{}", Json::from(s.phi)),
        MonitorQuery::Quantile(_) => "\"rank\":true".to_string(),
    };
    format!(
        "\"guarantee\":{{\"epsilon\":{},{what},\"windowMs\":{},\"sites\":{}}},\"sent\":{{\"messages\":{},\"words\":{},\"bytes\":{}}},\"refused\":{refused}",
        Json::from(s.epsilon),
        s.window_ms,
        s.sites,
        sent.messages,
        sent.words,
        sent.bytes
    )
}

/// The answer line of query `q` of `m` at time `t`.
pub(super) fn answer_line(
    m: &Monitored,
    q: &MonitorQueryReg,
    c: &mut Coordinator,
    t: i64,
    sent: Received,
    refused: u64,
) -> String {
    let answer = answer(m, &q.query, c, t);
    let line = EstimationRef {
        request_id: &q.request_id,
        uid: q.uid.as_ref(),
        synopsis_id: SLIDING_WINDOW_MONITOR_ID,
        kind: None,
        stream_id: &m.stream,
        dataset_key: &m.dataset,
        field: &m.field,
        query: &q.args,
        window: Some(Span::new(WindowType::Sliding, t + 1 - m.spec.window_ms, t + 1)),
        tuples: None,
        answer: &answer,
    }
    .to_json_line();
    line_with_kind(line, Some(guarantee(m, &q.query, sent, refused)))
}
