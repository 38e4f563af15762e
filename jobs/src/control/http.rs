//! The HTTP interface of a running job (`--http ADDR`, alias `--metrics-addr`), on axum.
//!
//! | endpoint | answer |
//! |---|---|
//! | `POST /requests` | the replies to the body's requests, as JSON lines (`application/x-ndjson`) |
//! | `GET /synopses` | the live registry ([`Hub::synopses`]) as a JSON array, with each synopsis' figures ([`introspection`]) |
//! | `GET /synopses/{id}` | one live synopsis' row (404 for an id no live synopsis has) |
//! | `GET /metrics` | the Prometheus registry (OpenMetrics text) |
//! | `GET /health` | `{"status":"ok", …}` ([`Hub::health`]) |
//! | `GET /status` | [`Hub::status`]: health, and the job's ingest, lag and answer counters |
//! | `GET /` | the page to look at ([`super::page`]) |
//! | `GET /synopses/{id}/answers` | a live synopsis' recent continuous answers ([`super::answers`]) |
//! | `POST /rescale` | `{"activeWorkers": N, "binsPerFence": B}` (B optional): the synopses on the first N workers from a fence on ([`Hub::submit_rescale`]) |
//!
//! A body is parsed once, here, and vetted before anything is queued (then it travels typed:
//! [`Hub::submit`]), so a refused body changes nothing: malformed JSON
//! or a request that is none is 400, a construct the library refuses (unknown kind, bad
//! parameters) is 400, a query, delete or SAVE naming a synopsis that is neither live nor
//! constructed earlier in the same body is 404, a LOAD, ad-hoc query or SAVE that cannot reach
//! the edge device holding the synopsis' state is 409 or 503 ([`crate::edge::refusals`]), a body
//! over the limit is 413, a job that takes no requests (not started yet, or finished) is 503.
//! Errors are `{"error": "…"}`.
//!
//! At most [`HttpLimits::pending`] bodies are taken at once (vetted or waiting for their replies);
//! one more is refused at once with 503 and `Retry-After`, counted in
//! `saams_http_refused_total{reason="busy"}`, so a flood queues nothing unbounded and the job goes
//! on. Who may do what is [`super::auth`]'s (a bearer token); HTTPS is [`super::tls`]'s.
//!
//! The server runs on its own thread with a one-thread tokio runtime, never on a timely worker:
//! the job's side is the [`Hub`], which plain threads use. Waiting for the replies (a blocking
//! [`Ticket::wait`](super::hub::Ticket::wait)) happens on tokio's blocking pool, so one slow body
//! holds up no other connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use saams::api::monitor::{MonitorQuery, MonitorSpec, SLIDING_WINDOW_MONITOR_ID};
use saams::api::registry::LiveSynopsis;
use saams::api::request::{Action, Parsed, Request, parse_requests};
use saams::error::SynopsisError;
use serde_json::{Value, json};

use super::ControlArgs;
use super::auth::{self, Access, Refusals, exposure_warning};
use super::hub::Hub;
use super::introspection;
use super::page;
use super::tls::TlsListener;
use crate::edge::refusals::{asks_a_device, body_refusal, resident_device};
use tokio::sync::Semaphore;

/// What `GET /metrics` serves: called at every scrape.
pub type MetricsText = Arc<dyn Fn() -> String + Send + Sync>;

/// A running server: its bound address, the flag that stops it, and its thread.
pub type Server = (SocketAddr, Arc<AtomicBool>, JoinHandle<()>);

/// The limits of `POST /requests`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest body accepted (bytes); larger ones get 413.
    pub body_bytes: usize,
    /// How long a body waits for the job's replies before the answer is 504.
    pub reply_timeout: Duration,
    /// Bodies taken at once (vetted or waiting for replies); more get 503 with `Retry-After`.
    pub pending: usize,
}

impl Default for HttpLimits {
    /// 1 MiB bodies, 10 s for the replies, 64 bodies at once.
    fn default() -> Self {
        HttpLimits { body_bytes: 1 << 20, reply_timeout: Duration::from_secs(10), pending: DEFAULT_PENDING }
    }
}

/// How the server is guarded: its limits, who may do what, TLS, and where refusals are counted.
#[derive(Clone, Debug, Default)]
pub struct HttpOptions {
    /// Body size, reply timeout, bodies at once.
    pub limits: HttpLimits,
    /// The bearer token, if any ([`Access::open`] by default).
    pub access: Access,
    /// HTTPS when set ([`super::tls::server_config`]).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Requests refused at the edge (401, 503 busy), by reason.
    pub refused: Refusals,
}

/// How long a stopped server lets open connections finish before its thread ends anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// [`HttpLimits::pending`] by default. Each body taken holds a thread of the blocking pool for up
/// to its reply timeout, so the pool has as many.
pub const DEFAULT_PENDING: usize = 64;

/// What a client refused as busy is told to wait before it tries again (seconds).
const RETRY_AFTER_SECS: &str = "1";

/// How often the server looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Start the HTTP server if `--http` (or `--metrics-addr`) is given, printing
/// `saams: http on http://ADDR` on stderr. The server stops when the returned flag is set.
///
/// # Errors
/// Bad limits, or an address that cannot be bound.
pub fn start(
    args: &ControlArgs,
    hub: Arc<Hub>,
    metrics_text: MetricsText,
    refused: Refusals,
) -> Result<Option<Server>, String> {
    let Some(addr) = &args.http else { return Ok(None) };
    let options = args.options(refused)?;
    let scheme = if options.tls.is_some() { "https" } else { "http" };
    let access = options.access.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let (bound, handle) = serve_guarded(addr, options, hub, metrics_text, stop.clone())?;
    if let Some(warning) = exposure_warning(bound, &access) {
        eprintln!("{warning}");
    }
    eprintln!("saams: http on {scheme}://{bound}");
    Ok(Some((bound, stop, handle)))
}

/// Serve the HTTP interface on `addr` with the [default limits](HttpLimits::default) until
/// `stop` is set; returns the bound address and the server's thread.
///
/// # Errors
/// When the address cannot be bound or the runtime cannot be built.
pub fn serve(
    addr: &str,
    hub: Arc<Hub>,
    metrics_text: MetricsText,
    stop: Arc<AtomicBool>,
) -> Result<(SocketAddr, JoinHandle<()>), String> {
    serve_with(addr, HttpLimits::default(), hub, metrics_text, stop)
}

/// [`serve`] with explicit limits.
///
/// # Errors
/// As [`serve`].
pub fn serve_with(
    addr: &str,
    limits: HttpLimits,
    hub: Arc<Hub>,
    metrics_text: MetricsText,
    stop: Arc<AtomicBool>,
) -> Result<(SocketAddr, JoinHandle<()>), String> {
    serve_guarded(addr, HttpOptions { limits, ..HttpOptions::default() }, hub, metrics_text, stop)
}

/// [`serve`] with explicit limits, access, TLS and refusal counters.
///
/// # Errors
/// As [`serve`], and a zero [`HttpLimits::pending`].
pub fn serve_guarded(
    addr: &str,
    options: HttpOptions,
    hub: Arc<Hub>,
    metrics_text: MetricsText,
    stop: Arc<AtomicBool>,
) -> Result<(SocketAddr, JoinHandle<()>), String> {
    let limits = options.limits;
    if limits.pending == 0 {
        return Err("--http-queue must be at least 1".into());
    }
    let what = |e: std::io::Error| format!("--http {addr}: {e}");
    let listener = std::net::TcpListener::bind(addr).map_err(what)?;
    let bound = listener.local_addr().map_err(what)?;
    listener.set_nonblocking(true).map_err(what)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .thread_name("saams-http-blocking")
        .max_blocking_threads(limits.pending)
        .build()
        .map_err(|e| format!("--http: tokio runtime: {e}"))?;
    let listener = {
        let _inside = runtime.enter();
        tokio::net::TcpListener::from_std(listener).map_err(what)?
    };
    hub.answers().enable();
    let pending = Arc::new(Semaphore::new(limits.pending));
    let guard = (options.access, options.refused.clone());
    let app = router(Service { hub, metrics_text, limits, pending, refused: options.refused }, guard);
    let tls = options.tls;
    let handle = std::thread::Builder::new()
        .name("saams-http".into())
        .spawn(move || {
            runtime.block_on(async move {
                let task = match tls {
                    None => tokio::spawn(
                        axum::serve(listener, app).with_graceful_shutdown(stopped(stop.clone())).into_future(),
                    ),
                    Some(config) => match TlsListener::new(listener, config) {
                        Ok(tls) => tokio::spawn(
                            axum::serve(tls, app).with_graceful_shutdown(stopped(stop.clone())).into_future(),
                        ),
                        Err(e) => return eprintln!("saams: https: {e}"),
                    },
                };
                stopped(stop).await;
                // In-flight requests may finish (a POST waits at most its reply timeout).
                let _ = tokio::time::timeout(limits.reply_timeout + SHUTDOWN_GRACE, task).await;
            });
            runtime.shutdown_timeout(SHUTDOWN_GRACE);
        })
        .map_err(|e| format!("--http: cannot start its thread: {e}"))?;
    Ok((bound, handle))
}

async fn stopped(stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(STOP_POLL).await;
    }
}

/// What every handler shares.
#[derive(Clone)]
struct Service {
    hub: Arc<Hub>,
    metrics_text: MetricsText,
    limits: HttpLimits,
    /// One permit per body taken ([`HttpLimits::pending`]).
    pending: Arc<Semaphore>,
    refused: Refusals,
}

fn router(service: Service, guard: (Access, Refusals)) -> Router {
    let body_bytes = service.limits.body_bytes;
    Router::new()
        .route("/requests", post(post_requests))
        .route("/synopses", get(get_synopses))
        .route("/synopses/{id}", get(get_synopsis))
        .route("/metrics", get(get_metrics))
        .route("/health", get(get_health))
        .route("/", get(page::get_page))
        .route("/status", get(get_status))
        .route("/synopses/{id}/answers", get(get_answers))
        .route("/rescale", post(post_rescale))
        .route("/devices", get(get_devices))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body_bytes))
        .layer(axum::middleware::from_fn_with_state(guard, auth::guard))
        .with_state(service)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body.to_string()).into_response()
}

fn error_response(status: StatusCode, message: &str) -> Response {
    json_response(status, &json!({ "error": message }))
}

async fn not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "not found: the endpoints are POST /requests, POST /rescale, GET /synopses, GET /synopses/{id}/answers, GET /metrics, GET /health, GET /status and GET /",
    )
}

async fn method_not_allowed() -> Response {
    error_response(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed: POST /requests, /rescale; GET /synopses, /synopses/{id}/answers, /metrics, /health, /status, /",
    )
}

async fn get_synopses(State(s): State<Service>) -> Response {
    json_response(StatusCode::OK, &introspection::rows(&s.hub.synopses(), &s.hub.published()))
}

async fn get_devices(State(s): State<Service>) -> Response {
    match s.hub.devices() {
        Some(devices) => json_response(StatusCode::OK, &devices),
        None => error_response(StatusCode::NOT_FOUND, "this job merges no devices (saams --partials-topic)"),
    }
}

async fn get_synopsis(State(s): State<Service>, Path(id): Path<String>) -> Response {
    match introspection::row(&s.hub.synopses(), &s.hub.published(), &id) {
        Some(row) => json_response(StatusCode::OK, &row),
        None => error_response(
            StatusCode::NOT_FOUND,
            &format!("no live synopsis with id {id:?} (GET /synopses lists them)"),
        ),
    }
}

async fn get_answers(State(s): State<Service>, Path(id): Path<String>) -> Response {
    page::answers_response(&s.hub, &id)
}

async fn get_status(State(s): State<Service>) -> Response {
    json_response(StatusCode::OK, &s.hub.status())
}

async fn get_health(State(s): State<Service>) -> Response {
    json_response(StatusCode::OK, &s.hub.health())
}

async fn get_metrics(State(s): State<Service>) -> Response {
    // prometheus-client writes OpenMetrics text (`_total` samples, `# EOF`): say so, so that a
    // scraper parses it as what it is.
    let text = (s.metrics_text)();
    let kind = HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8");
    (StatusCode::OK, [(header::CONTENT_TYPE, kind)], text).into_response()
}

async fn post_requests(State(s): State<Service>, body: Result<Bytes, BytesRejection>) -> Response {
    // Taken before the body is vetted, held until its replies are in (or given up on).
    let Ok(permit) = s.pending.clone().try_acquire_owned() else {
        auth::count(&s.refused, "busy");
        let message = format!("busy: {} bodies are being answered; try again later", s.limits.pending);
        let mut response = error_response(StatusCode::SERVICE_UNAVAILABLE, &message);
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        return response;
    };
    let body = match body {
        Ok(b) => b,
        Err(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            let msg = format!("request body over the limit of {} bytes", s.limits.body_bytes);
            return error_response(StatusCode::PAYLOAD_TOO_LARGE, &msg);
        }
        Err(r) => return error_response(r.status(), &r.body_text()),
    };
    // Vetting constructs synopses and waiting blocks: both on the blocking pool.
    let answer = move || {
        let response = answer_requests(&s, &body);
        drop(permit);
        response
    };
    match tokio::task::spawn_blocking(answer).await {
        Ok(response) => response,
        Err(e) => error_response(StatusCode::INTERNAL_SERVER_ERROR, &format!("the request handler failed: {e}")),
    }
}

/// `POST /rescale` with `{"activeWorkers": N}` (and `"binsPerFence": B`, optional): the
/// acknowledgement once the new bin map is applied at its fence, 400 for a count the job cannot
/// have or a bad `binsPerFence`, 409 while another rescale moves.
async fn post_rescale(State(s): State<Service>, body: Result<Bytes, BytesRejection>) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(r) => return error_response(r.status(), &r.body_text()),
    };
    let (n, bins_per_fence) = match rescale_body(&body) {
        Ok(parsed) => parsed,
        Err(message) => return error_response(StatusCode::BAD_REQUEST, &message),
    };
    let timeout = s.limits.reply_timeout;
    let submit = move || s.hub.submit_rescale_within((n, bins_per_fence), timeout);
    match tokio::task::spawn_blocking(submit).await {
        Ok(Ok(ack)) => json_response(StatusCode::OK, &ack.to_json()),
        Ok(Err(e)) => {
            let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            error_response(status, e.message())
        }
        Err(e) => error_response(StatusCode::INTERNAL_SERVER_ERROR, &format!("the rescale handler failed: {e}")),
    }
}

/// A `POST /rescale` body's active workers and `binsPerFence`, read as the same fields of a
/// `{"rescale": …}` request are (one set of rules and messages for both ways in).
///
/// # Errors
/// Malformed JSON, a body that is no object, or a field that is no whole number (the reason).
fn rescale_body(body: &[u8]) -> Result<(usize, Option<u32>), String> {
    let value = serde_json::from_slice::<Value>(body).map_err(|e| format!("malformed JSON: {e}"))?;
    if !value.is_object() {
        return Err("the body must be {\"activeWorkers\": N} (and \"binsPerFence\": B, optional)".into());
    }
    match saams::api::request::requests_from_value(&json!({ "rescale": value })).pop() {
        Some(Ok(Request { action: Action::Rescale { active_workers, bins_per_fence }, unknown_fields, .. })) => {
            match unknown_fields.first() {
                Some(field) => Err(format!("unknown field `{field}`: the body takes activeWorkers and binsPerFence")),
                None => Ok((active_workers, bins_per_fence)),
            }
        }
        Some(Err(e)) => Err(e.to_string()),
        _ => Err("the body must be {\"activeWorkers\": N}".into()),
    }
}

/// Vet a body, queue it, and wait for its replies (blocking).
fn answer_requests(s: &Service, body: &[u8]) -> Response {
    let Ok(text) = std::str::from_utf8(body) else {
        return error_response(StatusCode::BAD_REQUEST, "the request body is not UTF-8");
    };
    let requests = parse_requests(text);
    let expected = match vet(&requests, &s.hub.synopses()) {
        Ok(n) => n,
        Err(Refusal { status, message }) => return error_response(status, &message),
    };
    let devices = s.hub.devices();
    if let Some(refused) = devices.as_ref().and_then(|table| body_refusal(table, &requests)) {
        let status = StatusCode::from_u16(refused.status).unwrap_or(StatusCode::CONFLICT);
        return error_response(status, &refused.message);
    }
    // Ad-hoc queries and SAVEs a device answers: named in a 504's reason.
    let asked: Vec<String> = devices
        .as_ref()
        .map(|table| {
            requests
                .iter()
                .flatten()
                .filter(|r| asks_a_device(table, r))
                .filter_map(|r| resident_device(table, r))
                .collect()
        })
        .unwrap_or_default();
    if !s.hub.is_open() {
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "this process takes no requests now (its job has not started taking them, or has finished)",
        );
    }
    let ticket = s.hub.submit(requests, expected);
    let replies = ticket.wait(s.limits.reply_timeout);
    let mut out = String::new();
    for line in &replies.lines {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let status = if replies.complete {
        StatusCode::OK
    } else {
        s.hub.cancel(ticket.id);
        let got = replies.lines.len();
        let (status, why) = if replies.abandoned {
            (StatusCode::SERVICE_UNAVAILABLE, "the job stopped before answering".to_string())
        } else {
            let waiting = match asked.is_empty() {
                true => String::new(),
                false => format!(
                    " (device {} answers for a synopsis resident on it, at the request's fence: it has not reached it, \
                     or did not answer)",
                    asked.join(", ")
                ),
            };
            (StatusCode::GATEWAY_TIMEOUT, format!("no reply within {:?}{waiting}", s.limits.reply_timeout))
        };
        out.push_str(&json!({ "error": format!("{why}: {got} of {expected} replies") }).to_string());
        out.push('\n');
        status
    };
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/x-ndjson"))], out).into_response()
}

/// Why a body is refused.
#[derive(Debug, PartialEq, Eq)]
struct Refusal {
    status: StatusCode,
    message: String,
}

fn refuse(status: StatusCode, message: String) -> Refusal {
    Refusal { status, message }
}

/// Check a body of requests against the live registry `rows` before it is queued; the number of
/// requests (= replies owed) when it may go.
fn vet(parsed: &Parsed, rows: &[LiveSynopsis]) -> Result<usize, Refusal> {
    if parsed.is_empty() {
        return Err(refuse(StatusCode::BAD_REQUEST, "the body holds no request".into()));
    }
    let malformed: Vec<String> = parsed
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().err().map(|e| format!("request {}: {e}", i + 1)))
        .collect();
    if !malformed.is_empty() {
        return Err(refuse(StatusCode::BAD_REQUEST, malformed.join("; ")));
    }
    let requests: Vec<&Request> = parsed.iter().filter_map(|r| r.as_ref().ok()).collect();
    for (i, req) in requests.iter().enumerate() {
        let n = i + 1;
        if let Err(message) = vet_monitor(req) {
            return Err(refuse(StatusCode::BAD_REQUEST, format!("request {n}: {message}")));
        }
        match &req.action {
            Action::Construct { .. } if req.synopsis_id == SLIDING_WINDOW_MONITOR_ID => continue,
            Action::Construct { params, .. } => {
                if let Err(e) = saams::registry::construct(req.synopsis_id, params) {
                    let message = match e {
                        SynopsisError::UnknownKind(_) => format!("request {n}: unknown synopsis kind: {e}"),
                        _ => format!("request {n}: {e}"),
                    };
                    return Err(refuse(StatusCode::BAD_REQUEST, message));
                }
                continue;
            }
            Action::Load { .. } | Action::Rescale { .. } => continue,
            Action::Query { .. } | Action::Delete { .. } | Action::Save { .. } => {}
        }
        let live = rows.iter().any(|row| row.is_named_by(req));
        let earlier = requests[..i].iter().any(|c| constructs(c, req));
        if !live && !earlier {
            let on_field = req.field_filter().map(|f| format!(" on field {f:?}")).unwrap_or_default();
            let message = format!(
                "request {n}: unknown synopsis: no synopsisID {} on stream {:?} of dataset {:?}{on_field}",
                req.synopsis_id, req.stream_id, req.dataset_key
            );
            return Err(refuse(StatusCode::NOT_FOUND, message));
        }
    }
    Ok(requests.len())
}

/// A request of the monitoring kind (`synopsisID` 14, no synopsis of the library): its
/// construct parameters or query arguments, checked as the plan will.
fn vet_monitor(req: &Request) -> Result<(), String> {
    if req.synopsis_id != SLIDING_WINDOW_MONITOR_ID {
        return Ok(());
    }
    match &req.action {
        Action::Construct { params, .. } => MonitorSpec::from_params(params).map(|_| ()),
        Action::Query { args, .. } => MonitorQuery::parse(args).map(|_| ()),
        _ => Ok(()),
    }
}

/// Whether `earlier` constructs a synopsis `req` names.
fn constructs(earlier: &Request, req: &Request) -> bool {
    let Action::Construct { field: built, .. } = &earlier.action else { return false };
    req.names_synopsis(&earlier.dataset_key, &earlier.stream_id, earlier.synopsis_id, built)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CM: &str =
        r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.9,7]}"#;
    const QUERY: &str =
        r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["A","price","Queryable","Ad-hoc"]}"#;

    /// The live registry of a plan that constructed `CM`.
    fn live_cm() -> Vec<LiveSynopsis> {
        let store = std::sync::Arc::new(crate::sink::file::SnapshotDir::new(None));
        saams_operators::Plan::build(&parse_requests(CM), 1, 60_000, store).live_synopses()
    }

    fn vet(text: &str, rows: &[LiveSynopsis]) -> Result<usize, Refusal> {
        super::vet(&parse_requests(text), rows)
    }

    #[test]
    fn a_body_counts_its_requests_in_every_form() {
        assert_eq!(vet(CM, &[]), Ok(1));
        assert_eq!(vet(&format!("[{CM},{QUERY}]"), &[]), Ok(2));
        assert_eq!(vet(&format!("{CM}\n{QUERY}\n"), &[]), Ok(2));
        assert_eq!(vet(QUERY, &live_cm()), Ok(1));
    }

    #[test]
    fn malformed_and_empty_bodies_are_400() {
        let r = vet(&format!("[{CM}, {{not json"), &[]).unwrap_err();
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert!(r.message.contains("malformed JSON"), "{}", r.message);
        let r = vet(&format!("[{CM}, {{\"synopsisID\":1}}]"), &[]).unwrap_err();
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert!(r.message.contains("request 2: missing `param`"), "{}", r.message);
        assert_eq!(vet("  \n", &[]).unwrap_err().status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn constructs_the_library_refuses_are_400_with_its_message() {
        let unknown = r#"{"streamID":"A","synopsisID":99,"dataSetKey":"F","param":["X","price","NotQueryable"]}"#;
        let r = vet(unknown, &[]).unwrap_err();
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert_eq!(r.message, "request 1: unknown synopsis kind: unknown synopsisID 99");
        let bad =
            r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",7,0.9,7]}"#;
        let r = vet(bad, &[]).unwrap_err();
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert!(r.message.starts_with("request 1: bad parameter for CountMin"), "{}", r.message);
    }

    #[test]
    fn naming_a_synopsis_neither_live_nor_constructed_before_is_404() {
        let r = vet(QUERY, &[]).unwrap_err();
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert!(r.message.contains("unknown synopsis"), "{}", r.message);
        // Constructed later in the body does not count; another field does not match.
        assert_eq!(vet(&format!("[{QUERY},{CM}]"), &[]).unwrap_err().status, StatusCode::NOT_FOUND);
        let volume = QUERY.replace("\"price\"", "\"volume\"");
        assert_eq!(vet(&volume, &live_cm()).unwrap_err().status, StatusCode::NOT_FOUND);
        let other_stream = QUERY.replace("\"A\",\"synopsisID\"", "\"B\",\"synopsisID\"");
        assert_eq!(vet(&other_stream, &live_cm()).unwrap_err().status, StatusCode::NOT_FOUND);
        // Delete (without field) and SAVE match on stream, dataset and kind.
        let delete = r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["DELETE_REQUEST"]}"#;
        assert_eq!(vet(delete, &live_cm()), Ok(1));
        assert_eq!(vet(delete, &[]).unwrap_err().status, StatusCode::NOT_FOUND);
        let save = r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["SAVE_REQUEST","cm.bin"]}"#;
        assert_eq!(vet(save, &live_cm()), Ok(1));
        assert_eq!(vet(&save.replace("\"F\"", "\"G\""), &live_cm()).unwrap_err().status, StatusCode::NOT_FOUND);
    }
}
