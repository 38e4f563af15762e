//! The sliding-window monitoring kind of the API (`synopsisID` 14): its construct parameters and
//! its queries, validated where a request enters.
//!
//! It is not a [`crate::Synopsis`]: its state is k sites and a coordinator exchanging messages
//! (the `saams-monitoring` crate), not one value that updates and merges, so it is not in
//! [`crate::Kind::ALL`] and the engine maintains it on an operator path of its own. This file
//! only declares what a request may say, so that every crate reads it the same way.

use serde_json::Value as Json;

use crate::api::window::parse_duration_ms;

/// The `synopsisID` of the sliding-window monitoring kind (the next free id after the 13
/// synopsis kinds).
pub const SLIDING_WINDOW_MONITOR_ID: u64 = 14;

/// The kind's name in answers.
pub const SLIDING_WINDOW_MONITOR_NAME: &str = "SlidingWindowMonitor";

/// The construct parameters of a monitored stream: `[window, epsilon, phi, sites]` and an
/// optional `scale` (`param[3..]`).
///
/// ```
/// use saams::api::monitor::MonitorSpec;
/// use serde_json::json;
/// let m = MonitorSpec::from_params(&[json!("10m"), json!(0.1), json!(0.2), json!(4), json!(100)]).unwrap();
/// assert_eq!((m.window_ms, m.sites, m.scale), (600_000, 4, 100.0));
/// assert_eq!(m.item_of(12.34), Some(1234));
/// assert_eq!(m.value_of(1234), 12.34);
/// assert!(m.item_of(-1.0).is_none());
/// assert_eq!(MonitorSpec::from_params(&[json!(60_000), json!(0.1), json!(0.1), json!(2)]).unwrap().window_ms, 60_000);
/// let e = MonitorSpec::from_params(&[json!("10m"), json!(0.1), json!(0.04), json!(4)]).unwrap_err();
/// assert!(e.contains("phi"), "{e}");
/// assert!(MonitorSpec::from_params(&[json!("10m"), json!(1.5), json!(0.5), json!(4)]).is_err());
/// assert!(MonitorSpec::from_params(&[json!("10m"), json!(0.1), json!(0.5), json!(0)]).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MonitorSpec {
    /// The sliding window `W` in ms: every answer covers the items of the last `W`.
    pub window_ms: i64,
    /// The error ε of every answer.
    pub epsilon: f64,
    /// The frequent-items threshold φ, in `(ε/2, 1]`.
    pub phi: f64,
    /// The number of sites `k` (1 to 4096).
    pub sites: usize,
    /// Values are tracked as the whole numbers `round(value × scale)` (default 1): prices in
    /// cents with 100. Answers divide by it again.
    pub scale: f64,
}

fn number(v: Option<&Json>, name: &str) -> Result<f64, String> {
    match v {
        Some(Json::Number(n)) => n.as_f64().ok_or_else(|| format!("{name} must be a number")),
        Some(Json::String(s)) => s.trim().parse().map_err(|_| format!("{name} must be a number, got {s:?}")),
        Some(other) => Err(format!("{name} must be a number, got {other}")),
        None => Err(format!("{name} is missing")),
    }
}

impl MonitorSpec {
    /// Read `[window, epsilon, phi, sites, scale?]`: `window` a duration (`"10m"`, `"3600s"`)
    /// or a number of ms, `epsilon` in `(0, 1)`, `phi` in `(ε/2, 1]`, `sites` a whole number
    /// from 1 to 4096, `scale` a positive number.
    ///
    /// # Errors
    /// Naming the parameter and its range.
    pub fn from_params(params: &[Json]) -> Result<MonitorSpec, String> {
        if !(4..=5).contains(&params.len()) {
            return Err(format!(
                "{SLIDING_WINDOW_MONITOR_NAME} takes [window, epsilon, phi, sites] and an optional scale, got {} parameters",
                params.len()
            ));
        }
        let window_ms = match &params[0] {
            Json::String(s) => parse_duration_ms(s)?,
            Json::Number(n) => n.as_f64().map(|x| x.round() as i64).unwrap_or(0),
            other => return Err(format!("window must be a duration such as \"10m\" or a number of ms, got {other}")),
        };
        if window_ms < 2 {
            return Err(format!("window must be at least 2 ms, got {window_ms}"));
        }
        let epsilon = number(params.get(1), "epsilon")?;
        if !(epsilon > 0.0 && epsilon < 1.0) {
            return Err(format!("epsilon must be in (0, 1), got {epsilon}"));
        }
        let phi = number(params.get(2), "phi")?;
        if !(phi > epsilon / 2.0 && phi <= 1.0) {
            return Err(format!("phi must be in (epsilon/2, 1] = ({}, 1], got {phi}", epsilon / 2.0));
        }
        let sites = number(params.get(3), "sites")?;
        if !((1.0..=4096.0).contains(&sites) && sites.fract() == 0.0) {
            return Err(format!("sites must be a whole number from 1 to 4096, got {sites}"));
        }
        let scale = if params.len() == 5 { number(params.get(4), "scale")? } else { 1.0 };
        if !(scale > 0.0 && scale.is_finite()) {
            return Err(format!("scale must be a positive number, got {scale}"));
        }
        Ok(MonitorSpec { window_ms, epsilon, phi, sites: sites as usize, scale })
    }

    /// The tracked item of a value: `round(value × scale)`; `None` for a value that is negative,
    /// not finite or too large (≥ 2^53 once scaled), which the job refuses and counts.
    pub fn item_of(&self, value: f64) -> Option<u64> {
        let x = (value * self.scale).round();
        (x.is_finite() && (0.0..9.007_199_254_740_992e15).contains(&x)).then_some(x as u64)
    }

    /// The value an item stands for in answers.
    pub fn value_of(&self, item: u64) -> f64 {
        item as f64 / self.scale
    }
}

/// A query of the monitoring kind: the arguments before the field.
///
/// ```
/// use saams::api::monitor::MonitorQuery;
/// use serde_json::json;
/// assert_eq!(MonitorQuery::parse(&[json!("count")]), Ok(MonitorQuery::Count));
/// assert_eq!(MonitorQuery::parse(&[json!("quantile"), json!(0.5)]), Ok(MonitorQuery::Quantile(0.5)));
/// assert_eq!(MonitorQuery::parse(&[json!("itemCount"), json!(12.5)]), Ok(MonitorQuery::ItemCount(12.5)));
/// assert_eq!(MonitorQuery::parse(&[json!("frequentItems")]), Ok(MonitorQuery::Frequent));
/// assert!(MonitorQuery::parse(&[json!("quantile"), json!(2)]).is_err());
/// assert!(MonitorQuery::parse(&[json!("median")]).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MonitorQuery {
    /// Basic counting: the items of the last `W`, within `ε·c`.
    Count,
    /// Approximate counting: the copies of one value in the last `W`, within `ε·c`.
    ItemCount(f64),
    /// Frequent items at the construct's φ: every value with `c_j ≥ φc`, none below `(φ − ε)c`.
    Frequent,
    /// The φ-quantile (φ in `[0, 1]`): a value whose rank is within `(φ ± ε)·c`.
    Quantile(f64),
}

impl MonitorQuery {
    /// Read `["count"]`, `["itemCount", value]`, `["frequentItems"]` or `["quantile", φ]`.
    ///
    /// # Errors
    /// For another name or a missing or out-of-range argument.
    pub fn parse(args: &[Json]) -> Result<MonitorQuery, String> {
        let name = args.first().and_then(Json::as_str).map(|s| s.trim().to_ascii_lowercase()).unwrap_or_default();
        match name.as_str() {
            "count" => Ok(MonitorQuery::Count),
            "itemcount" => Ok(MonitorQuery::ItemCount(number(args.get(1), "itemCount's value")?)),
            "frequent" | "frequentitems" => Ok(MonitorQuery::Frequent),
            "quantile" => {
                let q = number(args.get(1), "quantile's rank")?;
                if !(0.0..=1.0).contains(&q) {
                    return Err(format!("quantile's rank must be in [0, 1], got {q}"));
                }
                Ok(MonitorQuery::Quantile(q))
            }
            _ => Err(format!(
                "{SLIDING_WINDOW_MONITOR_NAME} answers [\"count\"], [\"itemCount\", value], [\"frequentItems\"] or \
                 [\"quantile\", rank], got {}",
                Json::Array(args.to_vec())
            )),
        }
    }
}
