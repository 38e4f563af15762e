//! Rescale requests: `{"rescale": {"activeWorkers": N, "binsPerFence": B}}` and the typed
//! [`Request::rescale`], [`Request::rescale_batched`] that `POST /rescale` and an autoscaler
//! submit.

use serde_json::{Map, Value as Json};

use super::{Action, Request, RequestError, err, short};

impl Request {
    /// A rescale request: the job's synopses on its first `active_workers` workers from the
    /// fence on. The typed form of `{"rescale": {"activeWorkers": N}}` (what `POST /rescale`
    /// and an autoscaler submit); it names no synopsis.
    ///
    /// ```
    /// use saams::api::request::{Action, Request, parse_requests};
    /// let typed = Request::rescale(2);
    /// assert_eq!(typed.action, Action::Rescale { active_workers: 2, bins_per_fence: None });
    /// assert_eq!(parse_requests(r#"{"rescale":{"activeWorkers":2}}"#), vec![Ok(typed)]);
    /// // A few bins a window (fluid migration) rather than the job's `--rescale-batch`:
    /// let fluid = parse_requests(r#"{"rescale":{"activeWorkers":4,"binsPerFence":8}}"#);
    /// assert_eq!(fluid, vec![Ok(Request::rescale_batched(4, 8))]);
    /// ```
    pub fn rescale(active_workers: usize) -> Request {
        let (dataset_key, stream_id, unknown_fields) = (String::new(), String::new(), Vec::new());
        let action = Action::Rescale { active_workers, bins_per_fence: None };
        let (request_id, uid, window, synopsis_id, no_of_p) = (None, None, None, 0, 1);
        Request { request_id, uid, dataset_key, stream_id, synopsis_id, no_of_p, action, window, unknown_fields }
    }

    /// [`Request::rescale`] whose owned state moves `bins_per_fence` bins a window from its
    /// fence on (0: all at the fence), whatever the job's `--rescale-batch`.
    pub fn rescale_batched(active_workers: usize, bins_per_fence: u32) -> Request {
        let mut request = Request::rescale(active_workers);
        request.action = Action::Rescale { active_workers, bins_per_fence: Some(bins_per_fence) };
        request
    }
}

/// `{"rescale": {"activeWorkers": N, "binsPerFence": B}, "requestID": …, "uid": …}` (B
/// optional): a rescale request (whether N fits the job is the job's to say, at its fence).
pub(super) fn rescale_from_json(obj: &Map<String, Json>, rescale: &Json) -> Result<Request, RequestError> {
    let Some(body) = rescale.as_object() else {
        return err(format!("`rescale` must be an object like {{\"activeWorkers\": 2}}, got {}", short(rescale)));
    };
    let Some(n) = body.get("activeWorkers") else {
        return err("`rescale` needs `activeWorkers`: how many workers hold the synopses from its fence on");
    };
    let n = super::whole(n, "activeWorkers")?;
    let mut request = match body.get("binsPerFence") {
        None | Some(Json::Null) => Request::rescale(n as usize),
        Some(b) => {
            let b = super::whole(b, "binsPerFence")?;
            let b = u32::try_from(b).map_err(|_| RequestError(format!("`binsPerFence` is at most {}", u32::MAX)))?;
            Request::rescale_batched(n as usize, b)
        }
    };
    (request.request_id, request.uid) = (obj.get("requestID").cloned(), obj.get("uid").cloned());
    let outside = |k: &&String| !["rescale", "requestID", "uid", "activeWorkers", "binsPerFence"].contains(&k.as_str());
    request.unknown_fields = obj.keys().chain(body.keys()).filter(outside).cloned().collect();
    Ok(request)
}
