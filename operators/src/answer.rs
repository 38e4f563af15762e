//! Answering registered queries from a merged synopsis (shared by the operators that hold
//! merged state: the owner in `update`, the home worker in `fold`).

use saams::Synopsis;
use saams::api::estimation::{Answer, Estimation, EstimationRef};
use saams::api::request::QuerySpec;

use crate::plan::{Plan, QueryReg, SynSpec};

/// The answer of query `q` on `state`.
fn answer(s: &SynSpec, q: &QueryReg, state: &dyn Synopsis) -> Answer {
    match &q.spec {
        QuerySpec::Single(query) => Answer::of(state.estimate(query)),
        _ => Answer::Error(format!("{} pair queries are not answered by this engine yet", s.kind)),
    }
}

/// The answer line of query `q` on `state`.
fn line(s: &SynSpec, q: &QueryReg, state: &dyn Synopsis, items: u64, window: Option<(i64, i64)>) -> String {
    query_line(s, q, window, Some(items), &answer(s, q, state))
}

/// One answer line to query `q` of synopsis `s`, its fields borrowed from the plan (answers are
/// written for every continuous query at every window close, so nothing is cloned into an
/// `Estimation`). Shared by every operator that answers queries.
pub fn query_line(
    s: &SynSpec,
    q: &QueryReg,
    window: Option<(i64, i64)>,
    tuples: Option<u64>,
    answer: &Answer,
) -> String {
    EstimationRef {
        request_id: &q.request_id,
        uid: q.uid.as_ref(),
        synopsis_id: s.synopsis_id,
        kind: Some(s.kind),
        stream_id: &s.stream,
        dataset_key: &s.dataset,
        field: &s.field,
        query: &q.args,
        window,
        tuples,
        answer,
    }
    .to_json_line()
}

/// The continuous queries' answers for synopsis `syn` after window `window` (start, ms) closed.
pub fn continuous(plan: &Plan, syn: u32, state: &dyn Synopsis, items: u64, window: u64, out: &mut Vec<String>) {
    let s = &plan.synopses[syn as usize];
    let w = Some((window as i64, window as i64 + plan.window_ms));
    for q in &s.continuous {
        out.push(line(s, q, state, items, w));
    }
}

/// The ad-hoc answers and SAVEs of synopsis `syn` at the end of the input.
pub fn at_end(plan: &Plan, syn: u32, state: &dyn Synopsis, items: u64, out: &mut Vec<String>) {
    let s = &plan.synopses[syn as usize];
    for q in &s.adhoc {
        out.push(line(s, q, state, items, None));
    }
    for save in &s.saves {
        let bytes = state.encode();
        let answer = match plan.store.save(&save.file, &bytes) {
            Ok(()) => Answer::Saved { file: save.file.clone(), bytes: bytes.len() },
            Err(e) => Answer::Error(format!("SAVE {}: {e}", save.file)),
        };
        let e = Estimation {
            request_id: save.request_id.clone(),
            uid: save.uid.clone(),
            synopsis_id: s.synopsis_id,
            kind: Some(s.kind),
            stream_id: s.stream.clone(),
            dataset_key: s.dataset.clone(),
            field: s.field.clone(),
            query: serde_json::Value::Null,
            window: None,
            tuples: Some(items),
            answer,
        };
        out.push(e.to_json_line());
    }
}
