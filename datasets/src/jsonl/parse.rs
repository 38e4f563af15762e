//! The fast JSON tuple parser: one pass over a flat line's bytes, the general parser
//! ([`Tuple::from_json`]) for everything else.

use saams::Value;
use saams::api::Tuple;

use super::values::{same_key, set_text, time_of_day};
use crate::fields::trim;
use crate::tuple_pool::{recycle, take_spare};

/// Parse a JSON tuple: the same tuples and errors as [`Tuple::from_json`], about 10× faster on
/// flat objects (the reference form). Lines with escapes in strings, nested objects, arrays,
/// booleans, duplicate keys or numeric ids take [`Tuple::from_json`]'s path. Fields keep the line's
/// order (`Tuple::from_json` may sort them), so compare fields by name.
///
/// The fast path makes one pass over the line's bytes and allocates only what the [`Tuple`] owns:
/// keys are classified as they are read (no lookups by name afterwards), strings are slices of
/// the line (a `&str` is valid UTF-8 already, so nothing is validated again), numbers and the
/// date/time are parsed from the bytes.
///
/// ```
/// use saams::api::Tuple;
/// use saams_datasets::jsonl::parse_json_tuple;
/// let line = r#"{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654,"volume":1}"#;
/// let t = parse_json_tuple(line).unwrap();
/// assert_eq!(t, Tuple::from_json(line).unwrap());
/// assert_eq!(parse_json_tuple(r#"{"streamID":"A"}"#).unwrap_err().0, "missing `dataSetKey`");
/// ```
///
/// # Errors
/// As [`Tuple::from_json`].
pub fn parse_json_tuple(line: &str) -> Result<Tuple, saams::api::TupleError> {
    let mut t = take_spare();
    match parse_json_tuple_into(line, &mut t) {
        Ok(()) => Ok(t),
        Err(e) => {
            recycle(t);
            Err(e)
        }
    }
}

/// [`parse_json_tuple`] into `t`, reusing its strings and fields (a reader that keeps one tuple
/// and parses every line into it allocates nothing and moves no tuple around).
///
/// ```
/// use saams::api::Tuple;
/// use saams_datasets::jsonl::parse_json_tuple_into;
/// let mut t = Tuple::from_json(r#"{"streamID":"A","dataSetKey":"D","x":1}"#).unwrap();
/// let line = r#"{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654}"#;
/// parse_json_tuple_into(line, &mut t).unwrap();
/// assert_eq!(t, Tuple::from_json(line).unwrap());
/// assert!(parse_json_tuple_into("{", &mut t).is_err());
/// ```
///
/// # Errors
/// As [`Tuple::from_json`]; `t` is then left in any state.
pub fn parse_json_tuple_into(line: &str, t: &mut Tuple) -> Result<(), saams::api::TupleError> {
    if parse_reference(line, t).is_some() {
        return Ok(());
    }
    *t = match parse_flat(line) {
        Some(t) => t,
        None => Tuple::from_json(line)?,
    };
    Ok(())
}
/// `i` past `literal` if `b[i..]` starts with it (a compare of known length, inlined rather than
/// a call to `memcmp`).
#[inline]
fn expect<const N: usize>(b: &[u8], i: usize, literal: &[u8; N]) -> Option<usize> {
    (b.get(i..i.checked_add(N)?)? == literal).then_some(i + N)
}

/// A string without escapes at `s[i]` (which must be its opening quote).
#[inline]
fn string_at(s: &str, i: usize) -> Option<(&str, usize)> {
    if s.as_bytes().get(i) != Some(&b'"') {
        return None;
    }
    flat_string(s, i)
}

/// The first fast path: a line exactly as `write_reference_json` (and the reference system)
/// writes it, `{"streamID":"…","objectID":null,"dataSetKey":"…","date":"…","time":"…",` then
/// value fields, no whitespace. The fixed part is matched as literals, so only the value fields'
/// keys are looked at; any difference (key order, spaces, a reserved key among the values) gives
/// `None` and [`parse_flat`] decides. Same tuple as [`parse_flat`] wherever both succeed.
fn parse_reference(line: &str, t: &mut Tuple) -> Option<()> {
    let b = line.as_bytes();
    let i = expect(b, 0, b"{\"streamID\":")?;
    let (stream_id, i) = string_at(line, i)?;
    let i = expect(b, i, b",\"objectID\":null,\"dataSetKey\":")?;
    let (dataset_key, i) = string_at(line, i)?;
    let i = expect(b, i, b",\"date\":")?;
    let (date, i) = string_at(line, i)?;
    let i = expect(b, i, b",\"time\":")?;
    let (time, mut i) = string_at(line, i)?;
    let time_ms = same_date_days(date)? * 86_400_000 + time_of_day(time)?;
    // Value fields overwrite `t`'s in place (names and text values reuse their buffers); the
    // first `n` are this line's.
    let mut n = 0;
    loop {
        match b.get(i)? {
            b'}' => break,
            b',' => i += 1,
            _ => return None,
        }
        let (key, j) = string_at(line, i)?;
        i = expect(b, j, b":")?;
        if classify(key.as_bytes()) != Key::Field || seen_before(&t.fields[..n], key) {
            return None;
        }
        let value = match b.get(i)? {
            b'"' => {
                let (v, j) = flat_string(line, i)?;
                i = j;
                // The text buffer of the value this one replaces, if it had one.
                match t.fields.get_mut(n).map(|f| std::mem::replace(&mut f.1, Value::Num(0.0))) {
                    Some(Value::Str(mut old)) => {
                        old.clear();
                        old.push_str(v);
                        Value::Str(old)
                    }
                    _ => Value::Str(v.to_string()),
                }
            }
            b'-' | b'0'..=b'9' => {
                let (x, j) = number_at(line, i)?;
                i = j;
                Value::Num(Some(x).filter(|x| x.is_finite())?)
            }
            b'n' if b[i..].starts_with(b"null") => {
                i += 4;
                continue;
            }
            _ => return None,
        };
        match t.fields.get_mut(n) {
            Some((k, v)) => {
                if !same_key(k, key) {
                    k.clear();
                    k.push_str(key);
                }
                *v = value;
            }
            None => t.fields.push((key.to_string(), value)),
        }
        n += 1;
    }
    if skip_ws(b, i + 1) != b.len() {
        return None;
    }
    t.fields.truncate(n);
    set_text(&mut t.stream_id, stream_id, b);
    set_text(&mut t.dataset_key, dataset_key, b);
    t.time_ms = Some(time_ms);
    Some(())
}

thread_local! {
    /// The last date [`same_date_days`] converted: its 10 bytes (and a set top bit) and days.
    static LAST_DATE: std::cell::Cell<(u128, i64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Days since the epoch of a reference date (`MM/dd/yyyy`, or what [`crate::fields`] takes),
/// remembering the last one converted on this thread: consecutive tuples of a file nearly
/// always share their date, and converting it (civil date to days) was ~3 % of ingest.
#[inline]
fn same_date_days(date: &str) -> Option<i64> {
    // The reference form's dates are 10 bytes: two loads make the key (no copy of a slice of
    // unknown length, which is a call to `memcpy`); other lengths are converted every time.
    let b = date.as_bytes();
    let (Some(head), Some(&[t0, t1])) = (b.first_chunk::<8>(), b.get(8..)) else {
        return crate::fields::date_days(trim(date));
    };
    let key = u128::from(u64::from_le_bytes(*head)) | u128::from(u16::from_le_bytes([t0, t1])) << 64 | 1 << 127;
    let (last, days) = LAST_DATE.get();
    if last == key {
        return Some(days);
    }
    let days = crate::fields::date_days(trim(date))?;
    LAST_DATE.set((key, days));
    Some(days)
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
enum Key {
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
fn classify(key: &[u8]) -> Key {
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
fn skip_ws(b: &[u8], mut i: usize) -> usize {
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
fn flat_string(s: &str, i: usize) -> Option<(&str, usize)> {
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
fn seen_before(fields: &[(String, Value)], key: &str) -> bool {
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
fn between(s: &str, start: usize, end: usize) -> Option<&str> {
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
/// mantissas take those two functions.
#[inline]
fn number_at(s: &str, i: usize) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let neg = b.get(i) == Some(&b'-');
    let mut j = i + usize::from(neg);
    // Up to eight bytes of digits and a dot (prices, volumes) read as one word: the eight bytes
    // from the number's start, or (near the line's end, where a last field's number is) the
    // line's last eight shifted down to it, zero bytes above. The number ends at the first byte
    // that is neither a digit nor a dot.
    let word = match b.get(j..).and_then(<[u8]>::first_chunk::<8>) {
        Some(&w) => Some(u64::from_le_bytes(w)),
        None => b.last_chunk::<8>().and_then(|&w| {
            let rest = b.len().checked_sub(j).filter(|&r| r > 0)?;
            Some(u64::from_le_bytes(w) >> (8 * (8 - rest)))
        }),
    };
    if let Some(w) = word {
        let x = w ^ crate::fields::ZEROS;
        let stop = crate::fields::above_nine(x) & !crate::fields::byte_matches(w, b'.');
        let len = (stop.trailing_zeros() / 8) as usize;
        // JSON has no leading zero before a digit; exponents take the general path.
        if (1..8).contains(&len)
            && !(b[j] == b'0' && b.get(j + 1) != Some(&b'.') && len > 1)
            && !matches!(b.get(j + len), Some(b'e' | b'E'))
            && let Some((m, fraction_digits)) = crate::fields::short_decimal_parts(x << (8 * (8 - len)), len)
        {
            // Below 10^8 < 2^53: Clinger's fast path (as `short_decimal`), and no division for
            // an integer (a division's latency was ~10 % of a reference line's time).
            let x =
                if fraction_digits == 0 { m as f64 } else { m as f64 / crate::fields::EXACT_POW10[fraction_digits] };
            return Some((if neg { -x } else { x }, j + len));
        }
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

/// The most value fields the fast path takes (more go to the general parser).
const MAX_FLAT_FIELDS: usize = 16;

/// The fast path of [`parse_json_tuple`]: `None` whenever the line is not a flat object that
/// parses cleanly (then the general parser decides, errors included).
fn parse_flat(line: &str) -> Option<Tuple> {
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

#[cfg(test)]
mod reference_path_tests {
    use super::*;

    /// Lines as `write_reference_json` writes them take the first fast path (not the general
    /// flat one): stock ticks, a last field that is an integer, a fraction of a second or none.
    #[test]
    fn reference_lines_take_the_reference_path() {
        let mut t = take_spare();
        for line in [
            r#"{"streamID":"CADJPY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:00.019","price":13.9814,"volume":1}"#,
            r#"{"streamID":"SPY","objectID":null,"dataSetKey":"equity_usa","date":"10/07/2013","time":"04:00:00.465","price":167.41,"volume":1400}"#,
            r#"{"streamID":"367120567","objectID":null,"dataSetKey":"ChesapeakeBay","date":"01/02/2019","time":"00:00:28","lat":38.13098,"lon":-76.47571,"speed":12}"#,
        ] {
            assert!(parse_reference(line, &mut t).is_some(), "{line}");
            assert_eq!(Some(t.clone()), parse_flat(line), "{line}");
        }
    }
}
