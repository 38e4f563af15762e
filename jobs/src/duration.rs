//! Durations as the flags write them (`60s`, `500ms`, `5m`): a leaf module, so the sources that
//! read duration flags and the CLI that declares them do not depend on each other.

/// Parse a duration: a number with unit `ms`, `s`, `m`, `h` or `d` (no unit = seconds), in ms.
/// One parser for the flags and the requests' windows: [`saams::api::window::parse_duration_ms`].
///
/// ```
/// use saams_jobs::duration::parse_duration_ms;
/// assert_eq!(parse_duration_ms("60s"), Ok(60_000));
/// assert!(parse_duration_ms("soon").is_err());
/// ```
pub use saams::api::window::parse_duration_ms;
