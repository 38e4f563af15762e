//! Which tuples a synopsis summarizes, in event time: its *window*, chosen per synopsis in its
//! construct request (`"window": {"type": "tumbling", "size": "60s"}`), and the span an answer
//! covers ([`Span`], the `window` object of every continuous answer).
//!
//! - **landmark**: from the synopsis' first window on (the reference system's only behaviour:
//!   its synopses accumulate from construction, answered every `--window`);
//! - **tumbling** of `size`: consecutive, disjoint windows, each summarized by a synopsis that
//!   starts empty; a window's answer covers exactly its tuples (Flink's `TUMBLE`, Kafka Streams'
//!   `TimeWindows` without grace);
//! - **sliding** of `size` every `slide`: panes of `slide`, each summarized alone; an answer
//!   merges the last `size / slide` panes (Flink's `HOP`).
//!
//! Durations are written as the job's flags write them ([`parse_duration_ms`]).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// The most panes a sliding window may hold (`size / slide`): each is a synopsis in memory.
pub const MAX_PANES: i64 = 1440;

/// Parse a duration: a number with unit `ms`, `s`, `m`, `h` or `d` (no unit = seconds), in ms.
///
/// ```
/// use saams::api::window::parse_duration_ms;
/// assert_eq!(parse_duration_ms("60s"), Ok(60_000));
/// assert_eq!(parse_duration_ms("250ms"), Ok(250));
/// assert_eq!(parse_duration_ms("2"), Ok(2_000));
/// assert!(parse_duration_ms("soon").is_err());
/// ```
///
/// # Errors
/// For text that is not a non-negative number with a known unit.
pub fn parse_duration_ms(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let x: f64 = num.parse().map_err(|_| format!("bad duration {s:?}: expected e.g. 60s, 500ms, 5m"))?;
    let scale = match unit.trim() {
        "ms" => 1.0,
        "" | "s" => 1_000.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        other => return Err(format!("bad duration unit {other:?} in {s:?} (ms, s, m, h, d)")),
    };
    let ms = x * scale;
    if !ms.is_finite() || !(0.0..=1e15).contains(&ms) {
        return Err(format!("duration {s:?} out of range"));
    }
    Ok(ms.round() as i64)
}

/// A duration as the API writes it back: the largest whole unit (`90s`, `10m`, `1h`, `250ms`).
///
/// ```
/// use saams::api::window::format_duration_ms;
/// assert_eq!(format_duration_ms(60_000), "1m");
/// assert_eq!(format_duration_ms(90_000), "90s");
/// assert_eq!(format_duration_ms(3_600_000), "1h");
/// assert_eq!(format_duration_ms(1_500), "1500ms");
/// ```
pub fn format_duration_ms(ms: i64) -> String {
    for (unit, scale) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms != 0 && ms % scale == 0 {
            return format!("{}{unit}", ms / scale);
        }
    }
    format!("{ms}ms")
}

/// The three window types, as answers name them (`"type"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WindowType {
    /// From the synopsis' first window on.
    Landmark,
    /// Disjoint windows of a fixed size.
    Tumbling,
    /// Windows of a fixed size every `slide`.
    Sliding,
}

impl WindowType {
    /// The name answers and requests use.
    pub fn name(self) -> &'static str {
        match self {
            WindowType::Landmark => "landmark",
            WindowType::Tumbling => "tumbling",
            WindowType::Sliding => "sliding",
        }
    }
}

/// A synopsis' window, as its construct request (or the job's `--window-type`) chose it.
/// Sizes are event-time milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum WindowSpec {
    /// From the synopsis' first window on (the reference system's behaviour).
    #[default]
    Landmark,
    /// Disjoint windows of `size` ms, aligned to the epoch.
    Tumbling {
        /// Window length.
        size: i64,
    },
    /// Windows of `size` ms ending every `slide` ms (aligned to the epoch): panes of `slide`.
    Sliding {
        /// Window length.
        size: i64,
        /// Distance between window ends, the pane length; divides `size`.
        slide: i64,
    },
}

/// The span of event time an answer covers: `[start, end)` in ms, and the window type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The window type of the synopsis answered.
    pub kind: WindowType,
    /// First millisecond covered.
    pub start: i64,
    /// First millisecond after it.
    pub end: i64,
}

impl Span {
    /// A span of type `kind`.
    pub fn new(kind: WindowType, start: i64, end: i64) -> Span {
        Span { kind, start, end }
    }
}

impl fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WindowSpec::Landmark => f.write_str(r#"{"type":"landmark"}"#),
            WindowSpec::Tumbling { size } => {
                write!(f, r#"{{"type":"tumbling","size":"{}"}}"#, format_duration_ms(size))
            }
            WindowSpec::Sliding { size, slide } => write!(
                f,
                r#"{{"type":"sliding","size":"{}","slide":"{}"}}"#,
                format_duration_ms(size),
                format_duration_ms(slide)
            ),
        }
    }
}

fn duration_field(obj: &serde_json::Map<String, Json>, key: &str, ty: &str) -> Result<i64, String> {
    let ms = match obj.get(key) {
        Some(Json::String(s)) => parse_duration_ms(s),
        Some(Json::Number(n)) => parse_duration_ms(&n.to_string()),
        Some(other) => Err(format!("must be a duration such as \"60s\", got {other}")),
        None => return Err(format!("a {ty} window needs `{key}` (a duration such as \"60s\")")),
    }
    .map_err(|e| format!("the {ty} window's `{key}`: {e}"))?;
    if ms <= 0 {
        return Err(format!("the {ty} window's `{key}` must be positive"));
    }
    Ok(ms)
}

impl WindowSpec {
    /// The type.
    pub fn kind(self) -> WindowType {
        match self {
            WindowSpec::Landmark => WindowType::Landmark,
            WindowSpec::Tumbling { .. } => WindowType::Tumbling,
            WindowSpec::Sliding { .. } => WindowType::Sliding,
        }
    }

    /// Read a request's `window` object.
    ///
    /// ```
    /// use saams::api::window::WindowSpec;
    /// let w = |v| WindowSpec::from_json(&serde_json::json!(v));
    /// assert_eq!(w(serde_json::json!({"type": "tumbling", "size": "60s"})), Ok(WindowSpec::Tumbling { size: 60_000 }));
    /// assert_eq!(
    ///     w(serde_json::json!({"type": "sliding", "size": "10m", "slide": "1m"})),
    ///     Ok(WindowSpec::Sliding { size: 600_000, slide: 60_000 })
    /// );
    /// assert_eq!(w(serde_json::json!({"type": "landmark"})), Ok(WindowSpec::Landmark));
    /// assert!(w(serde_json::json!({"type": "sliding", "size": "10m", "slide": "3m"})).unwrap_err().contains("multiple"));
    /// assert!(w(serde_json::json!({"type": "session"})).unwrap_err().contains("session"));
    /// ```
    ///
    /// # Errors
    /// For a non-object, an unknown type or field, a missing or non-positive duration, a
    /// sliding size that is not a whole number of slides, or more than [`MAX_PANES`] of them.
    pub fn from_json(v: &Json) -> Result<WindowSpec, String> {
        let Some(obj) = v.as_object() else {
            return Err(format!(r#"`window` must be an object such as {{"type":"tumbling","size":"60s"}}, got {v}"#));
        };
        let ty = match obj.get("type") {
            Some(Json::String(s)) => s.trim().to_ascii_lowercase(),
            Some(other) => return Err(format!("the window's `type` must be a string, got {other}")),
            None => return Err("the window needs a `type`: landmark, tumbling or sliding".into()),
        };
        let allowed: &[&str] = match ty.as_str() {
            "landmark" => &["type"],
            "tumbling" => &["type", "size"],
            "sliding" => &["type", "size", "slide"],
            other => {
                return Err(format!("unknown window type {other:?}: expected landmark, tumbling or sliding"));
            }
        };
        if let Some(extra) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!("a {ty} window has no field `{extra}` (its fields: {})", allowed.join(", ")));
        }
        match ty.as_str() {
            "landmark" => Ok(WindowSpec::Landmark),
            "tumbling" => Ok(WindowSpec::Tumbling { size: duration_field(obj, "size", "tumbling")? }),
            _ => {
                let size = duration_field(obj, "size", "sliding")?;
                let slide = duration_field(obj, "slide", "sliding")?;
                WindowSpec::sliding(size, slide)
            }
        }
    }

    /// A sliding window, checked: `slide` divides `size`, at most [`MAX_PANES`] panes.
    ///
    /// # Errors
    /// As [`WindowSpec::from_json`] for sliding windows.
    pub fn sliding(size: i64, slide: i64) -> Result<WindowSpec, String> {
        if slide <= 0 || size <= 0 || size % slide != 0 {
            return Err(format!(
                "a sliding window's size ({}) must be a positive multiple of its slide ({})",
                format_duration_ms(size),
                format_duration_ms(slide)
            ));
        }
        if size / slide > MAX_PANES {
            return Err(format!(
                "a sliding window of {} every {} keeps {} panes; at most {MAX_PANES} are allowed",
                format_duration_ms(size),
                format_duration_ms(slide),
                size / slide
            ));
        }
        Ok(WindowSpec::Sliding { size, slide })
    }

    /// The job default `--window-type` names: `landmark`, `tumbling` (of the job's window,
    /// `cadence_ms`) or `sliding:SIZE` (panes of the job's window).
    ///
    /// ```
    /// use saams::api::window::WindowSpec;
    /// assert_eq!(WindowSpec::from_flag("landmark", 60_000), Ok(WindowSpec::Landmark));
    /// assert_eq!(WindowSpec::from_flag("tumbling", 60_000), Ok(WindowSpec::Tumbling { size: 60_000 }));
    /// assert_eq!(WindowSpec::from_flag("sliding:10m", 60_000), Ok(WindowSpec::Sliding { size: 600_000, slide: 60_000 }));
    /// assert!(WindowSpec::from_flag("sliding", 60_000).is_err());
    /// ```
    ///
    /// # Errors
    /// For another name, or a sliding size that is no multiple of the job's window.
    pub fn from_flag(flag: &str, cadence_ms: i64) -> Result<WindowSpec, String> {
        let flag = flag.trim().to_ascii_lowercase();
        match flag.split_once(':') {
            None if flag == "landmark" => Ok(WindowSpec::Landmark),
            None if flag == "tumbling" => Ok(WindowSpec::Tumbling { size: cadence_ms }),
            Some(("sliding", size)) => WindowSpec::sliding(parse_duration_ms(size)?, cadence_ms),
            _ => Err(format!(
                "--window-type {flag:?}: expected landmark, tumbling (windows of --window) or sliding:SIZE \
                 (e.g. sliding:10m, sliding every --window)"
            )),
        }
    }

    /// Check the window against the job's window (`cadence_ms`: fences, checkpoints and answers
    /// happen at its boundaries): a tumbling size and a sliding slide must be multiples of it.
    ///
    /// ```
    /// use saams::api::window::WindowSpec;
    /// assert!(WindowSpec::Tumbling { size: 120_000 }.check_cadence(60_000).is_ok());
    /// let e = WindowSpec::Tumbling { size: 90_000 }.check_cadence(60_000).unwrap_err();
    /// assert!(e.contains("multiple of the job's --window (1m)"), "{e}");
    /// ```
    ///
    /// # Errors
    /// Naming the window and the job's window.
    pub fn check_cadence(self, cadence_ms: i64) -> Result<(), String> {
        let unit = match self {
            WindowSpec::Landmark => return Ok(()),
            WindowSpec::Tumbling { size } => size,
            WindowSpec::Sliding { slide, .. } => slide,
        };
        if cadence_ms <= 0 || unit % cadence_ms != 0 {
            let what = if self.kind() == WindowType::Tumbling { "size" } else { "slide" };
            return Err(format!(
                "window {self}: its {what} must be a multiple of the job's --window ({}): windows close at \
                 the job's window boundaries",
                format_duration_ms(cadence_ms)
            ));
        }
        Ok(())
    }

    /// The period (start, ms) the state summarizing job window `w` belongs to, for windows
    /// aligned to the epoch (the request script's synopses): a tumbling window, a sliding
    /// pane; 0 for landmark (one period).
    ///
    /// ```
    /// use saams::api::window::WindowSpec;
    /// assert_eq!(WindowSpec::Tumbling { size: 120_000 }.period_of(180_000), 120_000);
    /// assert_eq!(WindowSpec::Sliding { size: 600_000, slide: 60_000 }.period_of(180_000), 180_000);
    /// assert_eq!(WindowSpec::Landmark.period_of(180_000), 0);
    /// ```
    pub fn period_of(self, w: u64) -> u64 {
        match self {
            WindowSpec::Landmark => 0,
            WindowSpec::Tumbling { size: p } | WindowSpec::Sliding { slide: p, .. } => w - w % p.max(1) as u64,
        }
    }

    /// The length of a period ([`WindowSpec::period_of`]); `None` for landmark.
    pub fn period_ms(self) -> Option<u64> {
        match self {
            WindowSpec::Landmark => None,
            WindowSpec::Tumbling { size: p } | WindowSpec::Sliding { slide: p, .. } => Some(p.max(1) as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_windows_say_why() {
        let w = |v: Json| WindowSpec::from_json(&v).unwrap_err();
        assert!(w(serde_json::json!("60s")).contains("must be an object"));
        assert!(w(serde_json::json!({"type": "tumbling"})).contains("needs `size`"));
        assert!(w(serde_json::json!({"type": "tumbling", "size": "0s"})).contains("positive"));
        assert!(w(serde_json::json!({"type": "tumbling", "size": "soon"})).contains("bad duration"));
        assert!(w(serde_json::json!({"type": "tumbling", "size": "1m", "slide": "1m"})).contains("no field `slide`"));
        assert!(w(serde_json::json!({"type": "sliding", "size": "1d", "slide": "1s"})).contains("at most"));
        assert_eq!(
            WindowSpec::from_json(&serde_json::json!({"type": "Tumbling", "size": 30})),
            Ok(WindowSpec::Tumbling { size: 30_000 })
        );
    }

    #[test]
    fn a_window_prints_as_it_is_written() {
        for v in [
            serde_json::json!({"type": "landmark"}),
            serde_json::json!({"type": "tumbling", "size": "90s"}),
            serde_json::json!({"type": "sliding", "size": "10m", "slide": "1m"}),
        ] {
            let spec = WindowSpec::from_json(&v).unwrap();
            assert_eq!(serde_json::from_str::<Json>(&spec.to_string()).unwrap(), v);
        }
    }
}
