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
//! - [`http`]: the HTTP interface (`--http`): requests, the live registry, metrics, health.

pub mod fence;
pub mod http;
pub mod hub;
pub mod intake;

use std::time::Duration;

use clap::Args;

/// The control-plane flags of `saams` (flattened into its CLI).
#[derive(Clone, Debug, Args)]
pub struct ControlArgs {
    /// Serve HTTP on HOST:PORT (e.g. 127.0.0.1:9898): POST /requests, GET /synopses, GET /metrics,
    /// GET /health. `--metrics-addr` is the same flag.
    #[arg(long = "http", visible_alias = "metrics-addr", value_name = "ADDR")]
    pub http: Option<String>,
    /// Largest POST /requests body in bytes; larger ones are refused with 413.
    #[arg(long = "http-body-limit", default_value_t = 1 << 20, value_name = "BYTES")]
    pub http_body_limit: usize,
    /// Seconds POST /requests waits for the job's replies before answering 504 with those it has.
    #[arg(long = "http-timeout", default_value_t = 10.0, value_name = "SECONDS")]
    pub http_timeout: f64,
}

impl Default for ControlArgs {
    fn default() -> Self {
        ControlArgs { http: None, http_body_limit: 1 << 20, http_timeout: 10.0 }
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
    /// ```
    ///
    /// # Errors
    /// A zero body limit, or a timeout that is not a positive number of seconds up to a day.
    pub fn limits(&self) -> Result<http::HttpLimits, String> {
        if self.http_body_limit == 0 {
            return Err("--http-body-limit must be at least 1 byte".into());
        }
        let t = self.http_timeout;
        if !(t.is_finite() && t > 0.0 && t <= 86_400.0) {
            return Err(format!("--http-timeout {t}: expected seconds, more than 0 and at most 86400"));
        }
        Ok(http::HttpLimits { body_bytes: self.http_body_limit, reply_timeout: Duration::from_secs_f64(t) })
    }
}
