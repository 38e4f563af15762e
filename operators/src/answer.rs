//! Answering registered queries from a merged synopsis (shared by the operators that hold
//! merged state: the owner in `update`, the home worker in `fold`).

use saams::Synopsis;
use saams::api::estimation::{Answer, Estimation, EstimationRef};
use saams::api::request::QuerySpec;

use saams::api::request::query_spec;
use serde_json::Value as Json;

use crate::ask::{Ask, AskWhat, DeviceAnswer, reply_line};
use crate::plan::{Plan, QueryReg, SynSpec};
use crate::window::Held;
use saams::api::window::{Span, WindowSpec, WindowType};

/// The answer of query `q` on `state`.
fn answer(s: &SynSpec, q: &QueryReg, state: &dyn Synopsis) -> Answer {
    match &q.spec {
        QuerySpec::Single(query) => Answer::of(state.estimate(query)),
        _ => Answer::Error(format!("{} pair queries are not answered by this engine yet", s.kind)),
    }
}

/// The answer line of query `q` on `state`.
fn line(s: &SynSpec, q: &QueryReg, state: &dyn Synopsis, items: u64, window: Option<Span>) -> String {
    query_line(s, q, window, Some(items), &answer(s, q, state))
}

/// One answer line to query `q` of synopsis `s`, its fields borrowed from the plan (answers are
/// written for every continuous query at every window close, so nothing is cloned into an
/// `Estimation`). Shared by every operator that answers queries.
pub fn query_line(s: &SynSpec, q: &QueryReg, window: Option<Span>, tuples: Option<u64>, answer: &Answer) -> String {
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

/// The continuous queries' answers for synopsis `syn` covering `span` (a landmark synopsis
/// after each job window, a tumbling or sliding window once it ended): those of the queries
/// registered by its end (a query registered at a fence answers the windows that end after it).
pub fn continuous(plan: &Plan, syn: u32, state: &dyn Synopsis, items: u64, span: Span, out: &mut Vec<String>) {
    let s = &plan.routing.synopses[syn as usize];
    for q in s.continuous.iter().filter(|q| (q.from as i64) < span.end) {
        out.push(line(s, q, state, items, Some(span)));
    }
}

/// Merge into `state` the snapshots LOADed while the job ran that take effect by window `window`
/// (`done` of them already are); a failed merge is an error line for the LOAD. A query view
/// (a synopsis resident on an edge device) takes none: the device merged them into its state,
/// and its views have them.
pub fn merge_loads(
    plan: &Plan,
    syn: u32,
    window: u64,
    state: &mut dyn Synopsis,
    done: &mut usize,
    out: &mut Vec<String>,
) {
    let s = &plan.routing.synopses[syn as usize];
    let view = state.as_any().is::<crate::query_view::QueryView>();
    while let Some(load) = s.loads.get(*done).filter(|l| l.from <= window) {
        *done += 1;
        if view {
            continue;
        }
        if let Err(e) = state.merge(load.state.get()) {
            let mut est =
                Estimation::error(load.request_id.clone(), None, s.synopsis_id, format!("LOAD {}: {e}", load.file));
            est.stream_id = s.stream.clone();
            est.dataset_key = s.dataset.clone();
            est.field = s.field.clone();
            out.push(est.to_json_line());
        }
    }
}

/// The answer line of an ask (an ad-hoc query or SAVE answered now) from `state`, which
/// summarizes `items` values of `span`; tagged for whoever waits for it.
pub fn ask_line(plan: &Plan, ask: &Ask, state: &dyn Synopsis, items: u64, span: Option<Span>) -> String {
    let Some(s) = plan.routing.synopses.get(ask.syn as usize) else {
        return ask_error(ask, "the synopsis is not known here yet");
    };
    let (query, answer) = match &ask.what {
        AskWhat::Query(args) => {
            let answer = match query_spec(s.kind, args.as_array().map(Vec::as_slice).unwrap_or(&[])) {
                Ok(spec) => answer(
                    s,
                    &QueryReg { request_id: ask.request_id.clone(), uid: None, args: args.clone(), spec, from: 0 },
                    state,
                ),
                Err(e) => Answer::Error(e.0),
            };
            (args.clone(), answer)
        }
        AskWhat::Save(file) => (Json::Null, save(plan, file, state)),
        // Answered from every participant's state at the pair's home ([`crate::pair_ask`]).
        AskWhat::Pair(pair) => (pair.args.clone(), Answer::Error("a pair query is answered at the pair's home".into())),
    };
    let e = Estimation {
        request_id: ask.request_id.clone(),
        uid: ask.uid.clone(),
        synopsis_id: s.synopsis_id,
        kind: Some(s.kind),
        stream_id: s.stream.clone(),
        dataset_key: s.dataset.clone(),
        field: s.field.clone(),
        query,
        window: span,
        tuples: Some(items),
        answer,
    };
    reply_line(ask.origin, e.to_json_line())
}

/// An error answer to an ask, tagged for whoever waits for it.
pub fn ask_error(ask: &Ask, msg: &str) -> String {
    reply_line(ask.origin, Estimation::error(ask.request_id.clone(), ask.uid.clone(), 0, msg).to_json_line())
}

/// Write `state` to snapshot `file`: what the SAVE answers.
fn save(plan: &Plan, file: &str, state: &dyn Synopsis) -> Answer {
    if let Some(view) = state.as_any().downcast_ref::<crate::query_view::QueryView>() {
        return Answer::Error(format!(
            "SAVE {file}: the synopsis is resident on device {} (saams-edge --resident): its state is there",
            view.device()
        ));
    }
    let bytes = state.encode();
    match plan.store.save(file, &bytes) {
        Ok(()) => Answer::Saved { file: file.to_string(), bytes: bytes.len() },
        Err(e) => Answer::Error(format!("SAVE {file}: {e}")),
    }
}

/// The end of the input for synopsis `syn`: the continuous answers its open windows still owe
/// ([`Held::finish`], unless it was deleted), then its ad-hoc answers and SAVEs, from what a
/// landmark synopsis summarizes, or a tumbling or sliding synopsis' last window answered.
pub fn at_end(plan: &Plan, syn: u32, held: &mut Held, out: &mut Vec<String>) {
    let s = &plan.routing.synopses[syn as usize];
    if !s.is_deleted() {
        held.finish(s.windowing(), &mut |span, state, items| continuous(plan, syn, state, items, span, out));
    }
    out.extend(end_answers(plan, syn, held));
}

/// The end of the input's ad-hoc answers and SAVEs of synopsis `syn` from `held` (its windows
/// finished: [`Held::finish`]), one line each, the ad-hoc queries first, in the script's order
/// (what [`end_asks`] numbers): from what a landmark synopsis
/// summarizes, or a tumbling or sliding synopsis' last window answered. A SAVE writes its
/// snapshot with the plan's store.
pub fn end_answers(plan: &Plan, syn: u32, held: &Held) -> Vec<String> {
    let s = &plan.routing.synopses[syn as usize];
    let mut out = Vec::with_capacity(s.adhoc.len() + s.saves.len());
    let empty;
    let (state, items, span) = match (s.window, &held.last) {
        (WindowSpec::Landmark, _) => {
            let span = held.since.map(|t| Span::new(WindowType::Landmark, t as i64, held.fed_to.max(t) as i64));
            (held.state.as_ref(), held.items, span)
        }
        (_, Some((span, state, items))) => (state.as_ref(), *items, Some(*span)),
        (_, None) => {
            empty = s.fresh.clone();
            (empty.as_ref(), 0, None)
        }
    };
    for q in &s.adhoc {
        out.push(line(s, q, state, items, span));
    }
    for save in &s.saves {
        let answer = self::save(plan, &save.file, state);
        let e = Estimation {
            request_id: save.request_id.clone(),
            uid: save.uid.clone(),
            synopsis_id: s.synopsis_id,
            kind: Some(s.kind),
            stream_id: s.stream.clone(),
            dataset_key: s.dataset.clone(),
            field: s.field.clone(),
            query: serde_json::Value::Null,
            window: span,
            tuples: Some(items),
            answer,
        };
        out.push(e.to_json_line());
    }
    out
}

/// The line that answers `asked` from the device's `answer` (for synopsis `syn`), tagged for
/// whoever waits ([`reply_line`]): the device's line, or an error when it answered another
/// synopsis or its SAVE's snapshot cannot be written here (written with the job's store first).
pub fn hand_on(plan: &Plan, asked: &Ask, (syn, answer): (u32, &DeviceAnswer)) -> String {
    if syn != asked.syn {
        let why = format!("device {} answered synopsis {syn} for an ask of synopsis {}", answer.device, asked.syn);
        crate::device_part::refuse(&why);
        // Tagged once: `ask_error` tags its line for whoever waits.
        return ask_error(asked, &why);
    }
    if let Some((file, bytes)) = &answer.saved
        && let Err(e) = plan.store.save(file, bytes)
    {
        return ask_error(asked, &format!("SAVE {file}: {e}"));
    }
    reply_line(asked.origin, answer.line.clone())
}

/// The first id of the asks of the request script's ad-hoc queries and SAVEs ([`end_asks`]):
/// apart from those made at fences (counted from 1) and those answered now (bit 63 set).
const SCRIPT_ASKS: u64 = 1 << 62;

/// The asks of the request script's ad-hoc queries and SAVEs of synopsis `syn`, answered at the
/// end of the input, in the order [`end_answers`] answers them (ad-hoc queries
/// first, then SAVEs, each in the script's order). Their ids are the synopsis' index and the
/// place in that order, so the cloud's home and the device the synopsis is resident on, whose
/// plans are built from the same script, number them alike without a word between them. The
/// cloud's home makes them instead of answering from the query view it holds; the device
/// answers them from its state before its goodbye.
///
/// ```
/// use std::sync::Arc;
/// use saams_operators::{Plan, SnapshotStore};
/// use saams_operators::ask::AskWhat;
/// use saams_operators::answer::end_asks;
/// struct NoFiles;
/// impl SnapshotStore for NoFiles {
///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
///     fn check(&self, f: &str) -> Result<(), String> { Ok(()) }
/// }
/// let script = saams::api::request::parse_requests(
///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1],"requestID":1}
///        {"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["SAVE_REQUEST","cm.bin"],"requestID":2}
///        {"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[2.5,"price","Queryable","AdHoc"],"requestID":3}"#,
/// );
/// let plan = Plan::build(&script, 2, 60_000, Arc::new(NoFiles));
/// let asks = end_asks(&plan, 0);
/// assert_eq!(asks.len(), 2);
/// assert_eq!((asks[0].request_id.clone(), asks[1].request_id.clone()), (serde_json::json!(3), serde_json::json!(2)));
/// assert!(matches!(&asks[1].what, AskWhat::Save(f) if f == "cm.bin"));
/// assert!(asks.iter().all(|a| a.device_answers && a.origin.is_none()) && asks[0].id != asks[1].id);
/// ```
pub fn end_asks(plan: &Plan, syn: u32) -> Vec<Ask> {
    let Some(s) = plan.routing.synopses.get(syn as usize) else { return Vec::new() };
    let queries = s.adhoc.iter().map(|q| (q.request_id.clone(), q.uid.clone(), AskWhat::Query(q.args.clone())));
    let saves = s.saves.iter().map(|v| (v.request_id.clone(), v.uid.clone(), AskWhat::Save(v.file.clone())));
    queries
        .chain(saves)
        .enumerate()
        .map(|(k, (request_id, uid, what))| Ask {
            id: SCRIPT_ASKS | (u64::from(syn) << 24) | k as u64,
            syn,
            home: s.home as u32,
            spread: false,
            request_id,
            uid,
            what,
            origin: None,
            device_answers: true,
        })
        .collect()
}
