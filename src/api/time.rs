//! Event-time parsing for tuples: reference `MM/dd/yyyy` + `HH:mm:ss`, ISO dates, fractional
//! seconds, and ISO-8601 timestamps, all to milliseconds since the Unix epoch (UTC).

/// The largest year (in absolute value) the parsers accept: its dates in milliseconds fit an
/// `i64` with room to spare, and a year beyond it in a data file is a typo or garbage, not a date.
///
/// ```
/// use saams::api::time::{MAX_YEAR, parse_date};
/// assert!(parse_date(&format!("{MAX_YEAR}-01-01")).is_some());
/// assert!(parse_date(&format!("{}-01-01", MAX_YEAR + 1)).is_none());
/// ```
pub const MAX_YEAR: i64 = 1_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
/// Exact for years within ±[`MAX_YEAR`] (the parsers refuse others); far beyond, it overflows.
///
/// ```
/// assert_eq!(saams::api::time::days_from_civil(1970, 1, 1), 0);
/// assert_eq!(saams::api::time::days_from_civil(2019, 1, 2), 17898);
/// ```
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month, day) of a day count since 1970-01-01.
///
/// ```
/// assert_eq!(saams::api::time::civil_from_days(17898), (2019, 1, 2));
/// ```
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Parse a date: `MM/dd/yyyy` (reference) or `yyyy-MM-dd` (ISO). Returns days since epoch.
///
/// ```
/// use saams::api::time::parse_date;
/// assert_eq!(parse_date("01/02/2019"), parse_date("2019-01-02"));
/// assert!(parse_date("2019-13-02").is_none());
/// assert!(parse_date("01/02/99999999999999").is_none()); // beyond MAX_YEAR
/// ```
pub fn parse_date(s: &str) -> Option<i64> {
    let s = s.trim();
    let (y, m, d) = if let Some((m, rest)) = s.split_once('/') {
        let (d, y) = rest.split_once('/')?;
        (y.parse::<i64>().ok()?, m.parse::<u32>().ok()?, d.parse::<u32>().ok()?)
    } else {
        let mut it = s.splitn(3, '-');
        let y = it.next()?.parse::<i64>().ok()?;
        let m = it.next()?.parse::<u32>().ok()?;
        let d = it.next()?.parse::<u32>().ok()?;
        (y, m, d)
    };
    if !(-MAX_YEAR..=MAX_YEAR).contains(&y) || !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Parse a time of day `HH:mm[:ss[.fff]]` into milliseconds since midnight.
///
/// ```
/// use saams::api::time::parse_time_of_day;
/// assert_eq!(parse_time_of_day("00:00:01"), Some(1000));
/// assert_eq!(parse_time_of_day("09:30:00.250"), Some(34_200_250));
/// assert!(parse_time_of_day("25:00:00").is_none());
/// ```
pub fn parse_time_of_day(s: &str) -> Option<i64> {
    let s = s.trim();
    let mut it = s.splitn(3, ':');
    let h = it.next()?.parse::<i64>().ok()?;
    let m = it.next()?.parse::<i64>().ok()?;
    let (sec, ms) = match it.next() {
        None => (0, 0),
        Some(sec) => match sec.split_once('.') {
            None => (sec.parse::<i64>().ok()?, 0),
            Some((whole, frac)) => {
                if frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let digits: String = frac.chars().chain("000".chars()).take(3).collect();
                (whole.parse::<i64>().ok()?, digits.parse::<i64>().ok()?)
            }
        },
    };
    if !(0..24).contains(&h) || !(0..60).contains(&m) || !(0..61).contains(&sec) {
        return None;
    }
    Some(((h * 60 + m) * 60 + sec) * 1000 + ms)
}

/// Parse an ISO-8601 timestamp (`2022-01-03T00:00:05`, optional fraction, `Z` or `±hh:mm`).
///
/// ```
/// use saams::api::time::parse_timestamp;
/// assert_eq!(parse_timestamp("1970-01-01T00:00:01Z"), Some(1000));
/// assert_eq!(parse_timestamp("1970-01-01T01:00:00+01:00"), Some(0));
/// assert_eq!(parse_timestamp("1970-01-01 00:00:02"), Some(2000));
/// assert_eq!(parse_timestamp("1970-01-01T00:00:00+99999999999999999:00"), None); // no such offset
/// ```
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    let (date, rest) = s.split_at(s.find(['T', ' '])?);
    let rest = &rest[1..];
    let days = parse_date(date)?;
    let (time, offset_ms) = if let Some(t) = rest.strip_suffix('Z') {
        (t, 0)
    } else if let Some(pos) = rest.rfind(['+', '-']) {
        let (t, off) = rest.split_at(pos);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..].split_once(':').unwrap_or((&off[1..], "0"));
        let (oh, om) = (oh.parse::<i64>().ok()?, om.parse::<i64>().ok()?);
        // Real offsets are within ±18:00; refusing the rest also keeps the arithmetic in range.
        if !(0..=99).contains(&oh) || !(0..60).contains(&om) {
            return None;
        }
        (t, sign * (oh * 60 + om) * 60_000)
    } else {
        (rest, 0)
    };
    Some(days * 86_400_000 + parse_time_of_day(time)? - offset_ms)
}

/// Format milliseconds since epoch as `yyyy-MM-ddTHH:mm:ss[.fff]Z`.
///
/// ```
/// assert_eq!(saams::api::time::format_timestamp(1000), "1970-01-01T00:00:01Z");
/// assert_eq!(saams::api::time::format_timestamp(1500), "1970-01-01T00:00:01.500Z");
/// ```
pub fn format_timestamp(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, f) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    if f == 0 {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f:03}Z")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing (fuzz/ tuple_stock, tuple_ais): a huge year overflowed `days_from_civil`
    /// and a huge zone offset overflowed the offset arithmetic; both are refused now.
    #[test]
    fn out_of_range_years_and_offsets_are_refused_not_overflowed() {
        assert_eq!(parse_date("01/02/2019444444444444444"), None);
        assert_eq!(parse_date("7999999999999992022-01-03"), None);
        assert_eq!(parse_timestamp("7999999999999992022-01-03T00:00:00"), None);
        assert_eq!(parse_timestamp("2022-01-03T00:00:00+9223372036854775807:00"), None);
        assert_eq!(parse_timestamp("2022-01-03T00:00:00-00:9223372036854775807"), None);
        assert_eq!(parse_timestamp("2022-01-03T00:00:00+100:00"), None);
        // The edges still parse, and round-trip.
        let far = parse_date(&format!("{MAX_YEAR}-12-31")).unwrap();
        assert_eq!(civil_from_days(far), (MAX_YEAR, 12, 31));
        assert!(parse_date(&format!("{}-01-01", MAX_YEAR + 1)).is_none());
        assert_eq!(parse_timestamp("1970-01-01T05:30:00+05:30"), Some(0));
        assert_eq!(parse_timestamp("1970-01-01T00:00:00-14:00"), Some(14 * 3_600_000));
    }
}
