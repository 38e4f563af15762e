//! The general flat path of the JSON-lines parser and the pieces both fast paths share: strings
//! without escapes, numbers, the reserved keys.

use saams::Value;
use saams::api::Tuple;

use super::values::same_key;

/// A string without escapes at `s[i]` (which must be its opening quote).
#[inline]
pub(super) fn string_at(s: &str, i: usize) -> Option<(&str, usize)> {
    if s.as_bytes().get(i) != Some(&b'"') {
        return None;
    }
    flat_string(s, i)
}

/// A flat JSON value: a string without escapes, a number (its text), or null.
#[derive(Clone, Copy)]
enum Flat<'a> {
    Str(&'a str),
    Num(&'a str),
    Null,
}

/// What a key of the reference form is; `Field` is a value field.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Stream = 0,
    Dataset = 1,
    Date = 2,
    Time = 3,
    Timestamp = 4,
    Object = 5,
    Values = 6,
    Field = 7,
}

#[inline(always)]
pub(super) fn classify(key: &[u8]) -> Key {
    // Length and last byte first: value fields (`price`, `volume`, …) rarely get to a compare.
    if !matches!(
        (key.len(), key.last()),
        (8, Some(b'D')) | (10, Some(b'y')) | (4, Some(b'e')) | (9, Some(b'p')) | (6, Some(b's'))
    ) {
        return Key::Field;
    }
    match key {
        b"streamID" => Key::Stream,
        b"dataSetKey" => Key::Dataset,
        b"date" => Key::Date,
        b"time" => Key::Time,
        b"timestamp" => Key::Timestamp,
        b"objectID" => Key::Object,
        b"values" => Key::Values,
        _ => Key::Field,
    }
}

#[inline]
pub(super) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// A string without escapes starting at the opening quote `s[i]`; returns it and the index after
/// the closing quote. The quote is ASCII, so both ends are char boundaries of `s`.
///
/// Sixteen bytes at a time on x86-64 ([`crate::fields::special_bytes_16`]), then eight at a
/// time while eight remain (a word test for a quote, a backslash or a control byte, as in
/// `memchr`'s fallback): the names and values of a reference line are a few to a dozen bytes,
/// and the byte loop's test and branch per byte were ~14 % of a JSON-lines ingest's instructions
/// (the word test ~3 % more than the SSE2 one). Always inlined: a call's prologue and epilogue
/// cost as much as the scan of a short name.
#[inline(always)]
pub(super) fn flat_string(s: &str, i: usize) -> Option<(&str, usize)> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    // High bit set in (at least) the lowest byte of `x` that is zero.
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let b = s.as_bytes();
    let start = i + 1;
    let mut j = start;
    #[cfg(target_arch = "x86_64")]
    while let Some(&w) = b.get(j..).and_then(<[u8]>::first_chunk::<16>) {
        let special = crate::fields::special_bytes_16(w);
        if special == 0 {
            j += 16;
            continue;
        }
        j += special.trailing_zeros() as usize;
        return match b[j] {
            b'"' => Some((between(s, start, j)?, j + 1)),
            _ => None,
        };
    }
    while let Some(w) = b.get(j..j + 8) {
        let x = u64::from_le_bytes(w.try_into().ok()?);
        // Bytes below 0x20 (the subtraction's borrow cannot reach past the first such byte, and
        // bytes of 0x80 and up keep a clear high bit in `!x`), quotes and backslashes.
        let special = x.wrapping_sub(ONES * 0x20) & !x & HIGHS
            | zero_byte(x ^ (ONES * u64::from(b'"')))
            | zero_byte(x ^ (ONES * u64::from(b'\\')));
        if special == 0 {
            j += 8;
            continue;
        }
        // The lowest flagged byte is a real match (false flags only follow a true one).
        j += (special.trailing_zeros() / 8) as usize;
        return match b[j] {
            b'"' => Some((between(s, start, j)?, j + 1)),
            _ => None,
        };
    }
    while j < b.len() {
        match b[j] {
            b'"' => return Some((between(s, start, j)?, j + 1)),
            b'\\' | 0..=0x1f => return None,
            _ => j += 1,
        }
    }
    None
}

/// True if `key` names one of `fields` (a repeated key: the slow path decides). A plain loop:
/// `Iterator::any` was an out-of-line call per value field.
#[inline(always)]
pub(super) fn seen_before(fields: &[(String, Value)], key: &str) -> bool {
    for (k, _) in fields {
        if same_key(k, key) {
            return true;
        }
    }
    false
}

/// `s[start..end]` (`None` off a char boundary), by two checked splits: `str::get` with a range
/// was an out-of-line call per string (~3 % of a JSON-lines ingest's instructions).
#[inline(always)]
pub(super) fn between(s: &str, start: usize, end: usize) -> Option<&str> {
    Some(s.split_at_checked(end)?.0.split_at_checked(start)?.1)
}

/// A JSON number (strict grammar) starting at `s[i]`; returns its text and the index after it.
#[inline]
fn flat_number(s: &str, i: usize) -> Option<(&str, usize)> {
    let b = s.as_bytes();
    let mut j = i;
    let digits = |j: &mut usize| {
        let s = *j;
        while *j < b.len() && b[*j].is_ascii_digit() {
            *j += 1;
        }
        *j > s
    };
    if b.get(j) == Some(&b'-') {
        j += 1;
    }
    if b.get(j) == Some(&b'0') {
        j += 1;
    } else if !digits(&mut j) {
        return None;
    }
    if b.get(j) == Some(&b'.') {
        j += 1;
        if !digits(&mut j) {
            return None;
        }
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if !digits(&mut j) {
            return None;
        }
    }
    Some((s.get(i..j)?, j))
}

/// A JSON number (strict grammar) starting at `s[i]`, its value and the index after it: the
/// same as [`flat_number`] then [`crate::fields::parse_f64`], in one pass over the digits for
/// plain decimals (the value then is Clinger's fast path, as in `parse_f64`); exponents and long
/// mantissas take those two functions. Not inlined: the reference path calls [`word_number`]
/// itself and this only when that refuses (its registers cost a prologue a number).
#[inline(never)]
pub(super) fn number_at(s: &str, i: usize) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let neg = b.get(i) == Some(&b'-');
    let mut j = i + usize::from(neg);
    if let Some((x, len)) = word_from(b, j).and_then(|w| word_number(w, b, j)) {
        return Some((if neg { -x } else { x }, j + len));
    }
    let digits_start = j;
    let mut m: u64 = 0;
    match b.get(j) {
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => {
            while let Some(&c) = b.get(j).filter(|c| c.is_ascii_digit()) {
                m = m.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
                j += 1;
            }
        }
        _ => return None,
    }
    let mut frac = 0;
    if b.get(j) == Some(&b'.') {
        j += 1;
        let start = j;
        while let Some(&c) = b.get(j).filter(|c| c.is_ascii_digit()) {
            m = m.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
            j += 1;
        }
        frac = j - start;
        if frac == 0 {
            return None;
        }
    }
    // More than 19 digits (leading zeros of a fraction included: counting only significant
    // ones cost two operations a digit) could overflow `m`: the general parser takes those.
    let digits = j - digits_start - usize::from(frac > 0);
    if matches!(b.get(j), Some(b'e' | b'E')) || digits > 19 || m > 1 << 53 {
        let (text, end) = flat_number(s, i)?;
        return Some((crate::fields::parse_f64(text)?, end));
    }
    let x = if frac == 0 { m as f64 } else { m as f64 / crate::fields::EXACT_POW10[frac] };
    Some((if neg { -x } else { x }, j))
}

/// The value and length of the plain decimal (`digits` or `digits.digits`, at most eight bytes)
/// at `b[j]`, given `w`: the eight bytes from there (zero bytes past the line's end). `None` for
/// anything else (a leading zero, an exponent, a longer number): [`number_at`]'s loop decides.
///
/// Why: one word read decides where the number ends (the first byte that is not a digit, or the
/// second when the first is a dot), so the mantissa is formed once, without a second scan for
/// the dot; below 10^8 < 2^53 the value is Clinger's fast path (as `short_decimal`), and an
/// integer needs no division (a division's latency was ~10 % of a reference line's time).
/// Up to eight bytes of digits and a dot (prices, volumes) read as one word: the eight bytes from
/// `b[j]`, or (near the line's end, where a last field's number is) the line's last eight shifted
/// down to it, zero bytes above.
#[inline(always)]
pub(super) fn word_from(b: &[u8], j: usize) -> Option<u64> {
    match b.get(j..).and_then(<[u8]>::first_chunk::<8>) {
        Some(&w) => Some(u64::from_le_bytes(w)),
        None => b.last_chunk::<8>().and_then(|&w| {
            let rest = b.len().checked_sub(j).filter(|&r| r > 0)?;
            Some(u64::from_le_bytes(w) >> (8 * (8 - rest)))
        }),
    }
}

#[inline(always)]
pub(super) fn word_number(w: u64, b: &[u8], j: usize) -> Option<(f64, usize)> {
    let x = w ^ crate::fields::ZEROS;
    // The high bit of every byte that is not a digit.
    let other = crate::fields::above_nine(x);
    let first = if other == 0 { 8 } else { other.trailing_zeros() / 8 };
    let dot = first < 8 && (w >> (8 * first)) as u8 == b'.';
    let len = if dot {
        let rest = other & other.wrapping_sub(1);
        if rest == 0 { 8 } else { rest.trailing_zeros() / 8 }
    } else {
        first
    };
    let int_digits = if dot { first } else { len };
    // A digit before the dot and after it; no leading zero before a digit.
    if int_digits == 0 || (dot && len < first + 2) || (int_digits > 1 && w as u8 == b'0') {
        return None;
    }
    // An exponent, or more digits past the word, take the general path.
    match b.get(j + len as usize) {
        Some(b'e' | b'E') => return None,
        Some(c) if len == 8 && (c.is_ascii_digit() || *c == b'.') => return None,
        _ => {}
    }
    // The number's bytes to the top of the word (the last in byte 7), zero bytes below.
    let top = x << (8 * (8 - len));
    if !dot {
        return Some((crate::fields::eight_digits(top) as f64, len as usize));
    }
    // The integer digits move up a byte over the dot: the digits are contiguous again.
    let at = 8 * (first + 8 - len);
    let below = (1u64 << at) - 1;
    let joined = (top & below) << 8 | top & !(below | 0xff << at);
    let m = crate::fields::eight_digits(joined) as f64;
    Some((m / crate::fields::EXACT_POW10[(len - first - 1) as usize], len as usize))
}

/// The most value fields the fast path takes (more go to the general parser).
const MAX_FLAT_FIELDS: usize = 16;

/// The fast path of [`parse_json_tuple`]: `None` whenever the line is not a flat object that
/// parses cleanly (then the general parser decides, errors included).
pub(super) fn parse_flat(line: &str) -> Option<Tuple> {
    let b = line.as_bytes();
    // Values of the reserved keys, by `Key as usize`; a bit per reserved key seen (duplicates
    // make the general parser decide, as they do for value fields).
    let mut reserved: [Option<Flat<'_>>; 7] = [None; 7];
    let mut seen = 0u8;
    let mut fields: [(&str, Flat<'_>); MAX_FLAT_FIELDS] = [("", Flat::Null); MAX_FLAT_FIELDS];
    let mut n = 0;
    let mut kept = 0;
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (key, next) = flat_string(line, i)?;
        i = skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let (value, next) = match b.get(i)? {
            b'"' => flat_string(line, i).map(|(s, j)| (Flat::Str(s), j))?,
            b'-' | b'0'..=b'9' => flat_number(line, i).map(|(s, j)| (Flat::Num(s), j))?,
            b'n' if b[i..].starts_with(b"null") => (Flat::Null, i + 4),
            _ => return None,
        };
        match classify(key.as_bytes()) {
            Key::Field => {
                if n == MAX_FLAT_FIELDS || fields[..n].iter().any(|(k, _)| *k == key) {
                    return None;
                }
                kept += usize::from(!matches!(value, Flat::Null));
                fields[n] = (key, value);
                n += 1;
            }
            k => {
                let bit = 1u8 << (k as u8);
                if seen & bit != 0 {
                    return None;
                }
                seen |= bit;
                reserved[k as usize] = Some(value);
            }
        }
        i = skip_ws(b, next);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => break,
            _ => return None,
        }
    }
    if skip_ws(b, i + 1) != b.len() {
        return None;
    }
    let text = |k: Key| match reserved[k as usize] {
        Some(Flat::Str(s)) => Some(s),
        _ => None,
    };
    let (stream_id, dataset_key) = (text(Key::Stream)?, text(Key::Dataset)?);
    let time_ms = match (reserved[Key::Timestamp as usize], reserved[Key::Date as usize], reserved[Key::Time as usize])
    {
        (Some(Flat::Str(ts)), _, _) => Some(crate::fields::timestamp_ms(ts)?),
        (_, Some(Flat::Str(d)), Some(Flat::Str(t))) => {
            Some(crate::fields::date_days(d.trim())? * 86_400_000 + crate::fields::time_of_day_ms(t.trim())?)
        }
        (None, None, None) => None,
        _ => return None,
    };
    let mut out = Vec::with_capacity(kept);
    for &(k, v) in &fields[..n] {
        match v {
            Flat::Num(s) => {
                out.push((k.to_string(), Value::Num(crate::fields::parse_f64(s).filter(|x| x.is_finite())?)))
            }
            Flat::Str(s) => out.push((k.to_string(), Value::Str(s.to_string()))),
            Flat::Null => {}
        }
    }
    Some(Tuple { stream_id: stream_id.to_string(), dataset_key: dataset_key.to_string(), time_ms, fields: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `number_at` is `flat_number` then `parse_f64`: same value (bit for bit), same end, same
    /// refusals, on edge cases and on seeded random digit strings with a trailing delimiter.
    #[test]
    fn number_at_agrees_with_flat_number_then_parse_f64() {
        let two_pass = |s: &str| {
            let (text, end) = flat_number(s, 0)?;
            Some((text.parse::<f64>().ok()?.to_bits(), end))
        };
        let one_pass = |s: &str| number_at(s, 0).map(|(x, end)| (x.to_bits(), end));
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.5",
            "01",
            "00.1",
            "1.",
            "1.e5",
            ".5",
            "-",
            "-a",
            "1e5",
            "1E-3",
            "2.5e+2",
            "1e",
            "13.9814",
            "9007199254740993",
            "9007199254740992.5",
            "12345678901234567890",
            "0.0000000000000000000001",
            "1.00000000000000000000000",
            "123456789012345678901234567890.5",
            "+1",
            "1,",
            "7}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (int, frac) = (x % 1_000_000_007, (x >> 32) % 100_000);
            let mut s = match x % 5 {
                0 => format!("{int}"),
                1 => format!("-{int}.{frac}"),
                2 => format!("{int}.{frac:05}"),
                3 => format!("0.{frac}{int}"),
                _ => format!("{int}{int}.{frac}"),
            };
            s.push(if x.is_multiple_of(2) { ',' } else { '}' });
            cases.push(s);
        }
        // Short numbers of digits, dots and other bytes, alone and with the rest of a line after
        // them (eight bytes from the number's start: the word-at-a-time path).
        cases.extend(crate::fields::short_numbers(&mut x, b"0123456789.-+eE,} x", 9, 200_000));
        // The number at a line's end, after eight bytes or more (the word is the line's last
        // eight bytes shifted down to the number).
        let at_end = |s: &str| {
            let line = format!("{{\"volume\":{s}");
            let two = flat_number(&line, 10).and_then(|(text, end)| Some((text.parse::<f64>().ok()?.to_bits(), end)));
            assert_eq!(number_at(&line, 10).map(|(x, end)| (x.to_bits(), end)), two, "{line:?}");
        };
        for s in &cases {
            assert_eq!(one_pass(s), two_pass(s), "{s:?}");
            let line = format!("{s},\"volume\":1}}");
            assert_eq!(one_pass(&line), two_pass(&line), "{line:?}");
            at_end(s);
        }
    }

    /// The word-at-a-time scan finds what a byte loop finds: the closing quote, or a refusal at
    /// the first backslash or control byte, wherever it falls in a word (every byte value, every
    /// position, multi-byte characters around it).
    #[test]
    fn flat_string_agrees_with_a_byte_loop() {
        fn byte_loop(s: &str) -> Option<(&str, usize)> {
            let b = s.as_bytes();
            let end = (1..b.len()).find(|&j| b[j] == b'"' || b[j] == b'\\' || b[j] < 0x20)?;
            (b[end] == b'"').then(|| (&s[1..end], end + 1))
        }
        let fillers = ["", "a", "abcdefg", "abcdefgh", "é", "ÿ€", "0123456789abcdef", "x\u{7f}y"];
        let mut checked = 0;
        for before in fillers {
            for special in (0u8..0x80).map(char::from).chain(['é', '\u{80}']) {
                for after in ["", "\"", "tail\"", "\\\"", "\u{1}\""] {
                    // The special byte at every place of a 16-byte block and of the 8-byte words.
                    for offset in 0..17 {
                        let s = format!("\"{}{before}{special}{after}", "p".repeat(offset));
                        assert_eq!(flat_string(&s, 0), byte_loop(&s), "{s:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, fillers.len() * 130 * 5 * 17);
    }

    #[test]
    fn every_reserved_key_is_classified_and_nothing_else() {
        let reserved = ["streamID", "dataSetKey", "date", "time", "timestamp", "objectID", "values"];
        for (k, name) in reserved.iter().enumerate() {
            assert_eq!(classify(name.as_bytes()) as usize, k, "{name}");
        }
        for name in ["price", "volume", "valueS", "Time", "streamId", "dataSetkey", "", "timestamps", "e", "D"] {
            assert!(classify(name.as_bytes()) == Key::Field, "{name}");
        }
    }
}
