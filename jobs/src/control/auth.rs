//! Who may do what over HTTP: a bearer token (`--http-token FILE` or `SAAMS_HTTP_TOKEN`).
//!
//! | request | without a token configured | with a token | with `--http-token-reads` too |
//! |---|---|---|---|
//! | every method but GET/HEAD (POST /requests: construct, delete, LOAD, SAVE, queries; any endpoint added later) | open | token | token |
//! | GET /synopses, /metrics, any other GET | open | open | token |
//! | GET /health | open | open | open (probes carry no credentials) |
//! | GET / (the page itself: static HTML, no data) | open | open | open: a browser cannot send a bearer header when it opens a page; the page sends the token (typed into it) on every call it makes, and those calls are guarded |
//!
//! Everything that is not a read needs the token, so an endpoint added later is guarded by
//! default. A refused request gets `401` with `WWW-Authenticate: Bearer` and no detail (a wrong
//! token and a missing one look the same), and is counted in `saams_http_refused_total{reason=
//! "unauthorized"}`. A malformed `Authorization` header (another scheme, no token, bytes that are
//! not visible ASCII) is a 401 like any other. The token is compared in constant time
//! ([`same_secret`]).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// The environment variable holding the token itself (when `--http-token FILE` is not given).
pub const TOKEN_ENV: &str = "SAAMS_HTTP_TOKEN";

/// Requests the HTTP edge refused before the job saw them, by `reason` (`unauthorized`, `busy`).
pub type Refusals = Family<Vec<(String, String)>, Counter>;

/// Count one refusal for `reason`.
pub fn count(refused: &Refusals, reason: &str) {
    refused.get_or_create(&vec![("reason".to_string(), reason.to_string())]).inc();
}

/// What a request must show: nothing, or the bearer token (for writes, or for everything but
/// `/health` when `reads`).
#[derive(Clone, Default)]
pub struct Access {
    token: Option<Arc<[u8]>>,
    reads: bool,
}

impl std::fmt::Debug for Access {
    /// Never prints the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access").field("token", &self.token.as_ref().map(|_| "…")).field("reads", &self.reads).finish()
    }
}

impl Access {
    /// Open to all (no token).
    pub fn open() -> Access {
        Access::default()
    }

    /// Writes need `token`; reads too when `reads`.
    ///
    /// # Errors
    /// An empty token, or one with bytes a header cannot carry after `Bearer ` (anything but
    /// visible ASCII).
    pub fn with_token(token: &str, reads: bool) -> Result<Access, String> {
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the HTTP token must be non-empty visible ASCII (no spaces)".into());
        }
        Ok(Access { token: Some(Arc::from(token.as_bytes())), reads })
    }

    /// The token of `--http-token FILE` (its text, surrounding whitespace trimmed), else of
    /// [`TOKEN_ENV`], else none; `reads`: `--http-token-reads`.
    ///
    /// # Errors
    /// An unreadable file, a bad token, or `reads` without a token.
    pub fn from_flags(file: Option<&Path>, env: Option<String>, reads: bool) -> Result<Access, String> {
        let token = match (file, env) {
            (Some(path), _) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("--http-token {}: {e}", path.display()))?
                    .trim()
                    .to_string(),
            ),
            (None, Some(value)) => Some(value.trim().to_string()),
            (None, None) => None,
        };
        match token {
            Some(t) => Access::with_token(&t, reads).map_err(|e| format!("--http-token: {e}")),
            None if reads => Err(format!("--http-token-reads needs a token (--http-token FILE or {TOKEN_ENV})")),
            None => Ok(Access::open()),
        }
    }

    /// Whether a token is required for anything.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// Whether a request with `method` on `path` and this `Authorization` header may go on.
    ///
    /// ```
    /// use axum::http::{HeaderValue, Method};
    /// use saams_jobs::control::auth::Access;
    /// let a = Access::with_token("s3cret", false).unwrap();
    /// let bearer = HeaderValue::from_static("Bearer s3cret");
    /// assert!(a.allows(&Method::POST, "/requests", Some(&bearer)));
    /// assert!(!a.allows(&Method::POST, "/requests", None));
    /// assert!(!a.allows(&Method::POST, "/requests", Some(&HeaderValue::from_static("Bearer s3cre"))));
    /// assert!(!a.allows(&Method::POST, "/requests", Some(&HeaderValue::from_static("Basic s3cret"))));
    /// assert!(a.allows(&Method::GET, "/synopses", None)); // reads open without --http-token-reads
    /// let strict = Access::with_token("s3cret", true).unwrap();
    /// assert!(!strict.allows(&Method::GET, "/synopses", None));
    /// assert!(strict.allows(&Method::GET, "/health", None)); // health checks stay open
    /// assert!(strict.allows(&Method::GET, "/", None)); // the page's HTML carries no data
    /// assert!(!strict.allows(&Method::GET, "/synopses/1/answers", None));
    /// ```
    pub fn allows(&self, method: &Method, path: &str, authorization: Option<&HeaderValue>) -> bool {
        let Some(token) = &self.token else { return true };
        let read = *method == Method::GET || *method == Method::HEAD;
        if read && (!self.reads || path == "/health" || path == "/") {
            return true;
        }
        authorization.and_then(|h| bearer(h.as_bytes())).is_some_and(|shown| same_secret(shown, token))
    }
}

/// The token of an `Authorization: Bearer TOKEN` header (the scheme in any case, then spaces);
/// `None` for anything else.
fn bearer(header: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = header.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || rest.first() != Some(&b' ') {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Whether `shown` equals `secret`, in time that depends on their lengths only, never on where
/// they differ: an attacker timing refusals learns nothing about the token's bytes. (A plain `==`
/// returns at the first differing byte, so its time reveals how long a guessed prefix is right.)
/// Written out rather than taken from a crate: it is these few lines.
///
/// ```
/// use saams_jobs::control::auth::same_secret;
/// assert!(same_secret(b"abc", b"abc"));
/// assert!(!same_secret(b"abd", b"abc"));
/// assert!(!same_secret(b"ab", b"abc"));
/// assert!(!same_secret(b"", b"abc"));
/// ```
pub fn same_secret(shown: &[u8], secret: &[u8]) -> bool {
    let mut diff = u8::from(shown.len() != secret.len());
    for (i, &s) in secret.iter().enumerate() {
        diff |= s ^ shown.get(i).copied().unwrap_or(!s);
    }
    std::hint::black_box(diff) == 0
}

/// The middleware: a request [`Access::allows`] goes on, any other gets an empty 401 and is
/// counted.
pub(super) async fn guard(
    State((access, refused)): State<(Access, Refusals)>,
    request: Request,
    next: Next,
) -> Response {
    let authorization = request.headers().get(header::AUTHORIZATION);
    if access.allows(request.method(), request.uri().path(), authorization) {
        return next.run(request).await;
    }
    count(&refused, "unauthorized");
    let headers = [
        (header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")),
        (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
    ];
    (StatusCode::UNAUTHORIZED, headers, r#"{"error":"unauthorized"}"#).into_response()
}

/// The warning printed when the server listens beyond this host with no token: anyone who can
/// reach the port can construct, delete, LOAD and SAVE.
///
/// ```
/// use saams_jobs::control::auth::{Access, exposure_warning};
/// let open = Access::open();
/// assert!(exposure_warning("127.0.0.1:9898".parse().unwrap(), &open).is_none());
/// assert!(exposure_warning("[::1]:9898".parse().unwrap(), &open).is_none());
/// assert!(exposure_warning("0.0.0.0:9898".parse().unwrap(), &open).unwrap().contains("warning"));
/// let guarded = Access::with_token("t", false).unwrap();
/// assert!(exposure_warning("0.0.0.0:9898".parse().unwrap(), &guarded).is_none());
/// ```
pub fn exposure_warning(bound: SocketAddr, access: &Access) -> Option<String> {
    (!bound.ip().is_loopback() && !access.has_token()).then(|| {
        format!(
            "saams: warning: HTTP on {bound} is reachable beyond this host and takes requests from anyone: \
             give a token (--http-token FILE or {TOKEN_ENV}) or bind to 127.0.0.1"
        )
    })
}
