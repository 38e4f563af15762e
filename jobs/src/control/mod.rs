//! The control plane: how requests enter the job.
//!
//! A request is parsed once, where it enters (the request file, HTTP, stdin, the request topic),
//! into [`saams::api::request::Request`], and travels typed from then on: HTTP → [`hub`] (vetted
//! there by the [`intake`]) → [`fence`] (timely's exchange to the sequencer and the broadcast) →
//! the plan (`saams_operators::Plan`) → the operators.
//!
//! - [`intake`]: requests vetted against the reference's request class (unknown fields warned
//!   about once and counted, or refused with `--strict-requests`): the request file's by the job,
//!   live ones by the hub.
//! - [`hub`]: the thread-safe hand-off of requests that arrive while the job runs, and of the
//!   replies owed to them; the live registry as the plan lists it.
//! - [`fence`]: how live requests take effect at a window every worker agrees on.
//! - [`request_log`]: with `--checkpoints`, live requests synced to disk before they are
//!   acknowledged, and applied again by a restart that finds them beyond its checkpoint.
//! - [`http`]: the HTTP interface (`--http`): requests, the live registry, metrics, health;
//!   [`auth`] (who may do what: a bearer token) and [`tls`] (HTTPS) guard it.
//! - [`rescale`]: what a process knows about its job's active workers and the rescale under
//!   way, and the reply of `POST /rescale` ([`hub::Hub::submit_rescale`]).
//! - [`autoscale`]: `--autoscale MIN..MAX`, a thread that changes the active workers from
//!   measured load through [`hub::Hub::submit_rescale`] (its [`autoscale::policy`] decides).
//! - [`answers`]: the recent continuous answers of each live synopsis (bounded rings).
//! - [`page`]: the page at `GET /` and `GET /synopses/{id}/answers`.
//! - [`introspection`]: `GET /synopses` rows with the figures the workers publish, `GET /synopses/{id}`.

pub mod answers;
pub mod auth;
pub mod autoscale;
pub mod fence;
pub mod http;
pub mod hub;
pub mod intake;
pub mod introspection;
pub mod page;
pub mod request_log;
pub mod rescale;
pub mod tls;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// The largest `--http-queue`: each body taken may hold a thread while it waits for its replies.
pub const MAX_HTTP_QUEUE: usize = 4096;

/// The control-plane flags of `saams` (flattened into its CLI).
#[derive(Clone, Debug, Args)]
pub struct ControlArgs {
    /// Serve HTTP on HOST:PORT (e.g. 127.0.0.1:9898): POST /requests, GET /synopses, GET /metrics,
    /// GET /health, GET /status, and a page to look at on GET /. `--metrics-addr` is the same flag.
    #[arg(long = "http", visible_alias = "metrics-addr", value_name = "ADDR")]
    pub http: Option<String>,
    /// Largest POST /requests body in bytes; larger ones are refused with 413.
    #[arg(long = "http-body-limit", default_value_t = 1 << 20, value_name = "BYTES")]
    pub http_body_limit: usize,
    /// Seconds POST /requests waits for the job's replies before answering 504 with those it has.
    #[arg(long = "http-timeout", default_value_t = 10.0, value_name = "SECONDS")]
    pub http_timeout: f64,
    /// POST /requests bodies taken at once (vetted or waiting for their replies); one more is
    /// refused with 503 and Retry-After.
    #[arg(long = "http-queue", default_value_t = http::DEFAULT_PENDING, value_name = "N")]
    pub http_queue: usize,
    /// File holding a bearer token: every request but a read (every POST: construct, delete, LOAD,
    /// SAVE, queries) then needs `Authorization: Bearer TOKEN`, or gets 401. Without it the
    /// token is taken from the environment variable SAAMS_HTTP_TOKEN, if set.
    #[arg(long = "http-token", value_name = "FILE")]
    pub http_token: Option<PathBuf>,
    /// Reads (GET /synopses, /metrics, …) need the token too; GET /health stays open.
    #[arg(long = "http-token-reads")]
    pub http_token_reads: bool,
    /// Serve HTTPS with this PEM certificate chain (with --tls-key).
    #[arg(long = "tls-cert", value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long = "tls-key", value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl Default for ControlArgs {
    fn default() -> Self {
        ControlArgs {
            http: None,
            http_body_limit: 1 << 20,
            http_timeout: 10.0,
            http_queue: http::DEFAULT_PENDING,
            http_token: None,
            http_token_reads: false,
            tls_cert: None,
            tls_key: None,
        }
    }
}

impl ControlArgs {
    /// The HTTP limits these flags ask for.
    ///
    /// ```
    /// use saams_jobs::control::ControlArgs;
    /// let limits = ControlArgs::default().limits().unwrap();
    /// assert_eq!(limits, saams_jobs::control::http::HttpLimits::default());
    /// let zero = ControlArgs { http_timeout: 0.0, ..ControlArgs::default() };
    /// assert!(zero.limits().is_err());
    /// let flood = ControlArgs { http_queue: 1_000_000, ..ControlArgs::default() };
    /// assert!(flood.limits().unwrap_err().starts_with("--http-queue"));
    /// ```
    ///
    /// # Errors
    /// A zero body limit, a timeout that is not a positive number of seconds up to a day, or a
    /// queue of 0 or over [`MAX_HTTP_QUEUE`].
    pub fn limits(&self) -> Result<http::HttpLimits, String> {
        if self.http_body_limit == 0 {
            return Err("--http-body-limit must be at least 1 byte".into());
        }
        let t = self.http_timeout;
        if !(t.is_finite() && t > 0.0 && t <= 86_400.0) {
            return Err(format!("--http-timeout {t}: expected seconds, more than 0 and at most 86400"));
        }
        // Each body taken may hold a thread of the server's blocking pool.
        if !(1..=MAX_HTTP_QUEUE).contains(&self.http_queue) {
            return Err(format!("--http-queue {}: expected 1 to {MAX_HTTP_QUEUE}", self.http_queue));
        }
        Ok(http::HttpLimits {
            body_bytes: self.http_body_limit,
            reply_timeout: Duration::from_secs_f64(t),
            pending: self.http_queue,
        })
    }

    /// The server's options these flags (and [`auth::TOKEN_ENV`]) ask for, counting refusals in
    /// `refused`.
    ///
    /// # Errors
    /// Bad limits, an unreadable or bad token, `--http-token-reads` without a token, or a
    /// certificate and key that cannot be used.
    pub fn options(&self, refused: auth::Refusals) -> Result<http::HttpOptions, String> {
        let env = std::env::var(auth::TOKEN_ENV).ok();
        let access = auth::Access::from_flags(self.http_token.as_deref(), env, self.http_token_reads)?;
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(tls::server_config(cert, key)?),
            (None, None) => None,
            _ => return Err("--tls-cert and --tls-key go together".into()),
        };
        Ok(http::HttpOptions { limits: self.limits()?, access, tls, refused })
    }
}
