//! Requests a cloud job merging devices cannot carry out, refused before they are queued, the
//! same way on every path a request comes in by (`POST /requests` answers the status; stdin
//! and the request topic get an error line): [`refusal`], given the job's device table
//! ([`super::devices::Devices::to_json`]).
//!
//! What reaches a device: a device following the control topic (`saams-edge --follow`, its
//! table row says `follows`) hears every live request at its fence, a LOAD with the snapshot
//! file ([`super::control`]), an ad-hoc query or SAVE of a synopsis resident on it with the
//! fence it answers at. So what is refused is only what cannot reach the device that holds
//! the state:
//!
//! - a LOAD into a synopsis a device keeps whole (`--sole-reader`) or resident (`--resident`)
//!   that does not follow: 409 (its next whole state or view would drop the snapshot);
//! - an ad-hoc query or SAVE of a synopsis resident on a device that does not follow: 409;
//! - any of these while that device has left or is gone (silent for `--device-timeout`): 503.

use saams::api::request::{Action, QueryMode, QuerySpec, Request, query_spec};
use serde_json::Value;

/// A request refused: the HTTP status it is answered with and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceRefusal {
    /// 409 (it cannot reach the device) or 503 (the device is not there now).
    pub status: u16,
    /// Why, naming the device.
    pub message: String,
}

/// The device a synopsis named by `req` is resident on, per `table`'s `resident` list.
pub fn resident_device(table: &Value, req: &Request) -> Option<String> {
    resident_on(table, (&req.dataset_key, &req.stream_id, req.synopsis_id))
}

/// The device the synopsis (dataset, stream, `synopsisID`; 0: any kind) is resident on, per
/// `table`'s `resident` list.
pub fn resident_on(table: &Value, (dataset, stream, synopsis_id): (&str, &str, u64)) -> Option<String> {
    let resident = table.get("resident")?.as_array()?;
    let on = resident.iter().find(|r| {
        r["dataSetKey"] == dataset && r["streamID"] == stream && (synopsis_id == 0 || r["synopsisID"] == synopsis_id)
    })?;
    on["device"].as_str().map(str::to_string)
}

/// True for an ad-hoc query or SAVE of a synopsis resident on a device: it needs a fence (the
/// device answers from its state there), so it is sequenced like a construct. A pair query
/// ([`is_pair_query`]) is sequenced so too, though the cloud answers it from the views: the
/// fence costs one round of agreement and changes nothing in its answer (its point is the
/// window of the ask's input time either way).
pub fn asks_a_device(table: &Value, req: &Request) -> bool {
    matches!(req.action, Action::Query { mode: QueryMode::AdHoc, .. } | Action::Save { .. })
        && resident_device(table, req).is_some()
}

/// True for an ad-hoc *pair* query (DFT correlation, LSH similarity, AMS inner product): the
/// cloud answers it, also for synopses resident on devices, wherever their participants live;
/// no device answers it or takes its fence as its watermark ([`super::asks`]).
///
/// Why it needs no device: a pair ask takes every participant's state at one window boundary
/// `P` (every window before it, nothing after: `saams_operators::pair_ask`), and what a DFT
/// correlation reads of a resident DFT at a window's close is exactly what its device ships as
/// its query view then (its spectrum), which the cloud installs at that close. So the cloud's
/// answer at `P` is the raw run's over the tuples before `P`, whether the participants are
/// resident on one device, on two, or one in the cloud. The views of other kinds hold only their
/// continuous queries' outcomes: an LSH or AMS pair ask of a resident synopsis is answered with
/// an error line naming the device (`saams_operators::query_view`).
pub fn is_pair_query(req: &Request) -> bool {
    let Action::Query { args, mode: QueryMode::AdHoc, .. } = &req.action else { return false };
    let Some(kind) = saams::Kind::from_id(req.synopsis_id) else { return false };
    query_spec(kind, args).is_ok_and(|spec| !matches!(spec, QuerySpec::Single(_)))
}

/// Whether `device` follows the control topic, and whether it is live, per `table`'s rows
/// (a device heard by several processes: any of them).
fn device_state(table: &Value, device: &str) -> (bool, bool) {
    let rows = table["devices"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mine = || rows.iter().filter(|r| r["device"] == device);
    (mine().any(|r| r["follows"] == true), mine().any(|r| r["state"] == "live"))
}

/// Why `req` must be refused given the job's device table `table`; `None` when it may go.
///
/// ```
/// use saams::api::request::parse_requests;
/// use saams_jobs::edge::devices::Devices;
/// use saams_jobs::edge::refusals::refusal;
/// let d = Devices::new(std::time::Duration::from_secs(5));
/// d.touch("pi-1", |r| {
///     r.whole.insert(("Forex".into(), "EURTRY".into(), "price".into()));
/// });
/// let load = r#"{"dataSetKey":"Forex","streamID":"EURTRY","synopsisID":1,"param":["LOAD_REQUEST","cm.bin"],"requestID":9}"#;
/// let parsed = |t: &str| parse_requests(t).remove(0).unwrap();
/// let refused = refusal(&d.to_json(), &parsed(load)).unwrap();
/// assert!(refused.status == 409 && refused.message.contains("pi-1"), "{refused:?}");
/// assert_eq!(refusal(&d.to_json(), &parsed(&load.replace("EURTRY", "XAUUSD"))), None);
/// d.touch("pi-1", |r| r.follows = true);
/// assert_eq!(refusal(&d.to_json(), &parsed(load)), None, "a following device is sent the snapshot");
/// d.touch("pi-1", |r| r.state = "left");
/// assert_eq!(refusal(&d.to_json(), &parsed(load)).unwrap().status, 503);
/// ```
pub fn refusal(table: &Value, req: &Request) -> Option<DeviceRefusal> {
    let what = match &req.action {
        Action::Load { .. } => "a LOAD",
        Action::Query { mode: QueryMode::AdHoc, .. } => "an ad-hoc query",
        Action::Save { .. } => "a SAVE",
        _ => return None,
    };
    let named = format!(
        "{what} of synopsisID {} on stream {:?} of dataset {:?}",
        req.synopsis_id, req.stream_id, req.dataset_key
    );
    let (device, holds) = match resident_device(table, req) {
        Some(device) => {
            let holds =
                format!("the synopsis is resident on device {device} (saams-edge --resident), which holds its state,");
            (device, holds)
        }
        None if what == "a LOAD" => {
            let device = whole_keeper(table, req)?;
            (device.clone(), format!("device {device} keeps the synopsis whole (saams-edge --sole-reader)"))
        }
        None => return None,
    };
    let (follows, live) = device_state(table, &device);
    if !follows {
        let message = format!(
            "{named}: {holds} but the device does not follow the control topic (saams-edge --follow), so the \
             request cannot reach it; restart it with --follow"
        );
        return Some(DeviceRefusal { status: 409, message });
    }
    if !live {
        let message = format!(
            "{named}: {holds} and device {device} has left or is gone (silent for longer than --device-timeout); \
             try again when it is back"
        );
        return Some(DeviceRefusal { status: 503, message });
    }
    None
}

/// The device keeping the synopsis `req` names whole, per the rows' `wholeGroups`.
fn whole_keeper(table: &Value, req: &Request) -> Option<String> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    table["devices"].as_array()?.iter().find_map(|row| {
        let groups = row["wholeGroups"].as_array()?;
        let kept = groups.iter().any(|g| {
            req.names_synopsis(&text(&g["dataset"]), &text(&g["stream"]), req.synopsis_id, &text(&g["field"]))
        });
        kept.then(|| text(&row["device"]))
    })
}

/// The refusal of the first request of a body `parsed` that must be refused ([`refusal`]),
/// its message naming the request (`request N: …`), counted ([`refused_bodies`]).
pub fn body_refusal(table: &Value, parsed: &saams::api::request::Parsed) -> Option<DeviceRefusal> {
    let refused = parsed.iter().enumerate().find_map(|(i, r)| {
        let refused = refusal(table, r.as_ref().ok()?)?;
        Some(DeviceRefusal { message: format!("request {}: {}", i + 1, refused.message), ..refused })
    })?;
    REFUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Some(refused)
}

/// Bodies refused by [`body_refusal`] in this process, on every path.
static REFUSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Bodies of requests refused because they cannot reach a device, since the process started
/// (`GET /devices`' `refusedRequests`).
pub fn refused_bodies() -> u64 {
    REFUSED.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use saams::api::request::parse_requests;
    use serde_json::json;

    use super::*;

    fn table(follows: bool, state: &str) -> Value {
        json!({
            "devices": [{ "device": "pi-3", "follows": follows, "state": state, "wholeGroups": [] }],
            "resident": [{ "dataSetKey": "F", "streamID": "A", "synopsisID": 1, "device": "pi-3" }],
        })
    }

    const QUERY: &str =
        r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[1.5,"price","Queryable","Ad-hoc"]}"#;

    /// An ad-hoc query, SAVE or LOAD of a resident synopsis goes to a following, live device;
    /// 409 when the device does not follow, 503 when it left; other requests and other streams
    /// are not the device's.
    #[test]
    fn requests_of_a_resident_synopsis_are_refused_only_when_they_cannot_reach_its_device() {
        let parsed = |t: &str| parse_requests(t);
        let save = r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["SAVE_REQUEST","x.bin"]}"#;
        for text in [QUERY, save] {
            assert_eq!(body_refusal(&table(true, "live"), &parsed(text)), None, "{text}");
            let refused = body_refusal(&table(false, "live"), &parsed(text)).unwrap();
            assert_eq!(refused.status, 409);
            assert!(refused.message.starts_with("request 1: ") && refused.message.contains("resident on device pi-3"));
            assert_eq!(body_refusal(&table(true, "left"), &parsed(text)).unwrap().status, 503);
            assert!(asks_a_device(&table(true, "live"), &parsed(text)[0].clone().unwrap()));
        }
        let continuous = QUERY.replace("Ad-hoc", "Continues");
        assert_eq!(body_refusal(&table(false, "gone"), &parsed(&continuous)), None);
        assert!(!asks_a_device(&table(true, "live"), &parsed(&continuous)[0].clone().unwrap()));
        let other = QUERY.replace("\"A\"", "\"B\"");
        assert_eq!(body_refusal(&table(false, "gone"), &parsed(&other)), None);
        // A pair query of a resident DFT: answered by the cloud from the views (still sequenced).
        let pair = r#"{"streamID":"A","synopsisID":4,"dataSetKey":"F","param":[0.5,"correlation","price","Queryable","Ad-hoc"]}"#;
        let dft =
            |t: Value| serde_json::from_str(&t.to_string().replace("\"synopsisID\":1", "\"synopsisID\":4")).unwrap();
        assert!(is_pair_query(&parsed(pair)[0].clone().unwrap()));
        let coefficients = pair.replace("0.5,\"correlation\"", "\"coefficients\"");
        assert!(!is_pair_query(&parsed(&coefficients)[0].clone().unwrap()));
        assert!(asks_a_device(&dft(table(true, "live")), &parsed(&coefficients)[0].clone().unwrap()));
    }
}
