//! Durations as the flags write them (`60s`, `500ms`, `5m`): a leaf module, so the sources that
//! read duration flags and the CLI that declares them do not depend on each other.

/// Parse a duration: a number with unit `ms`, `s`, `m`, `h` or `d` (no unit = seconds), in ms.
///
/// ```
/// use saams_jobs::duration::parse_duration_ms;
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
