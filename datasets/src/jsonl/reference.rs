//! The first fast path of the JSON-lines parser: a line exactly as `write_reference_json` (and
//! the reference system) writes it, its fixed part compared sixteen bytes at a time.
//!
//! Why: the reference form's fixed part (`{"streamID":"…","objectID":null,"dataSetKey":"…",
//! "date":"…","time":"…"`) is the same literals on every line, and the date nearly always the
//! previous line's; matching the literals as words and the date with its surrounding literals
//! against the last line's (30 bytes, two compares) leaves the scan of the two ids, the time and
//! the value fields. Any difference (key order, spaces, a reserved key among the values, another
//! date form) gives `None`, and the general flat path decides.

use saams::Value;
use saams::api::Tuple;

use super::flat::{
    Key, between, classify, flat_string, number_at, seen_before, skip_ws, string_at, word_from, word_number,
};
use super::values::{same_key, set_text, time_of_day};
use crate::fields::trim;

/// The bytes of `s` (at most 16) as the low bytes of a word: a literal to compare with 16 bytes
/// of a line.
const fn literal(s: &[u8]) -> u128 {
    let mut x = 0u128;
    let mut k = s.len();
    while k > 0 {
        k -= 1;
        x = x << 8 | s[k] as u128;
    }
    x
}

/// The low `n` bytes of a word.
const fn low_bytes(n: u32) -> u128 {
    if n >= 16 { u128::MAX } else { (1u128 << (8 * n)) - 1 }
}

/// `line[start..end]`, a string's contents between two quotes: `None` if out of bounds.
///
/// Why: [`between`] checks both ends for char boundaries (~10 instructions a string, four
/// strings a line); here the quotes around the string make both ends boundaries.
///
/// # Safety
/// `line`'s bytes at `start - 1` and at `end` (if `end < line.len()`) are ASCII (the quotes).
#[inline(always)]
unsafe fn quoted(line: &str, start: usize, end: usize) -> Option<&str> {
    let bytes = line.as_bytes().get(start..end)?;
    // SAFETY: a slice of valid UTF-8 whose ends follow and precede ASCII bytes (the caller's
    // promise) starts and ends at char boundaries, so it is valid UTF-8.
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// `low_bytes(n)` for `n` in `0..=16`.
const LOW_BYTES: [u128; 17] = {
    let mut masks = [0; 17];
    let mut n = 0;
    while n <= 16 {
        masks[n] = low_bytes(n as u32);
        n += 1;
    }
    masks
};

/// A line's first 13 bytes.
const HEAD: &[u8] = b"{\"streamID\":\"";
/// The 32 bytes from the stream id's closing quote to the dataset key's first byte, as two words.
const OBJECT: (&[u8], &[u8]) = b"\",\"objectID\":null,\"dataSetKey\":\"".split_at(16);
/// From the dataset key's closing quote: the date's literal (10 bytes), the date (10), the
/// time's literal (10).
const DATE: &[u8] = b"\",\"date\":\"";
const TIME: &[u8] = b"\",\"time\":\"";

/// The 16 bytes of `b` from `i` as a word (byte `i` lowest).
#[inline(always)]
fn word_at(b: &[u8], i: usize) -> Option<u128> {
    Some(u128::from_le_bytes(*b.get(i..)?.first_chunk::<16>()?))
}

thread_local! {
    /// The 30 bytes from the dataset key's closing quote to the time (the date's literal, the
    /// date, the time's literal) of the last reference line whose date was converted on this
    /// thread, as two words (the second's top two bytes zero), and the date's days.
    static LAST_DATE: std::cell::Cell<(u128, u128, i64)> = const { std::cell::Cell::new((0, 0, 0)) };
}

/// Days since the epoch of the date at `q + 10` (`q`: the dataset key's closing quote), with the
/// literals around it checked: the same as reading the date as a string and converting it with
/// [`crate::fields::date_days`], remembering the last one converted (consecutive tuples of a
/// file nearly always share their date, and converting it was ~3 % of ingest). `None` for a date
/// of another length, or bytes that end or break a string in it (the general path decides).
#[inline(always)]
fn date_days_at(line: &str, q: usize) -> Option<i64> {
    let b = line.as_bytes();
    let (lo, hi) = (word_at(b, q)?, word_at(b, q + 16)? & low_bytes(14));
    // Never the initial zeros: `b[q]` is a quote.
    let (last_lo, last_hi, days) = LAST_DATE.get();
    if lo == last_lo && hi == last_hi {
        return Some(days);
    }
    let date = between(line, q + 10, q + 20)?;
    let plain = !date.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20);
    if lo & low_bytes(10) != literal(DATE) || hi >> 32 != literal(TIME) || !plain {
        return None;
    }
    let days = crate::fields::date_days(trim(date))?;
    LAST_DATE.set((lo, hi, days));
    Some(days)
}

/// Milliseconds since midnight of the time at `b[i..]` (after its opening quote), `HH:mm:ss` or
/// `HH:mm:ss.fff`, read in place, and the index after its closing quote; other forms through the
/// string scan and [`time_of_day`] (the same values).
#[inline(always)]
fn time_at(line: &str, i: usize) -> Option<(i64, usize)> {
    // The time and what follows it as one word: `HH:mm:ss` in the low eight bytes, then a
    // quote, or a dot, three digits and a quote (near the line's end: the general path).
    let Some(w) = word_at(line.as_bytes(), i) else { return other_time_at(line, i) };
    let (h, m, s) = crate::fields::hh_mm_ss((w as u64).to_le_bytes()).unwrap_or((99, 0, 0));
    let rest = (w >> 64) as u64;
    // The three fraction digits XOR `'0'`: each at most 9 (`+ 0x76` leaves its high bit clear).
    let fraction = (rest >> 8 & 0xff_ffff) ^ 0x30_3030;
    let (ms, end) = if rest as u8 == b'"' {
        (0, i + 9)
    } else if rest as u8 == b'.' && (rest >> 32) as u8 == b'"' && (fraction | (fraction + 0x76_7676)) & 0x80_8080 == 0 {
        let digit = |k: u32| (fraction >> (8 * k) & 0xff) as u32;
        (digit(0) * 100 + digit(1) * 10 + digit(2), i + 13)
    } else {
        return other_time_at(line, i);
    };
    if h >= 24 || m >= 60 || s >= 61 {
        return other_time_at(line, i);
    }
    Some((((i64::from(h) * 60 + i64::from(m)) * 60 + i64::from(s)) * 1000 + i64::from(ms), end))
}

/// [`time_at`] for the forms it does not read in place.
#[inline(never)]
fn other_time_at(line: &str, i: usize) -> Option<(i64, usize)> {
    let (time, end) = string_at(line, i - 1)?;
    Some((time_of_day(time)?, end))
}

/// The index of the quote closing the string whose first byte is `b[i]` (no escapes in it), by
/// one 16-byte test for a short string (near the line's end, where the last key is, the line's
/// last 16 bytes shifted down to `i`); longer ones through [`flat_string`].
#[inline(always)]
fn closing_quote(line: &str, i: usize) -> Option<usize> {
    let b = line.as_bytes();
    #[cfg(target_arch = "x86_64")]
    {
        let special = match b.get(i..).and_then(<[u8]>::first_chunk::<16>) {
            Some(&w) => crate::fields::special_bytes_16(w),
            None => match (b.last_chunk::<16>(), b.len().checked_sub(i)) {
                (Some(&w), Some(rest)) => crate::fields::special_bytes_16(w) >> (16 - rest),
                _ => 0,
            },
        };
        if special != 0 {
            let j = i + special.trailing_zeros() as usize;
            return (b[j] == b'"').then_some(j);
        }
    }
    flat_string(line, i - 1).map(|(_, end)| end - 1)
}

/// Parse a line in the reference form into `t` (see the [module docs](self)); `None` leaves the
/// line to the general flat path. Same tuple as that path wherever both succeed.
pub(super) fn parse_reference(line: &str, t: &mut Tuple) -> Option<()> {
    let b = line.as_bytes();
    let i = reference_object(line, t)?;
    if i + 1 != b.len() && skip_ws(b, i + 1) != b.len() {
        return None;
    }
    Some(())
}

/// Parse the reference-form line at the start of `text` (a block of lines) into `t`, finding
/// the line's end as part of the parse: the closing brace and the line end right after it
/// (`\n`, `\r\n`, or the end of `text`). The line's length with its line end, or `None`
/// (anything else after the brace, or not the reference form: `t` is then in any state and the
/// caller parses the line by itself, [`super::parse_json_tuple_into`]).
///
/// Why: the file source searched each line's end first (`memchr`, ~85 instructions on a
/// 127-byte line) and then parsed it; no token of the reference form can hold a line end (strings
/// stop at control bytes, numbers, the time and the literals take none), so the parse itself
/// stops at the line's closing brace. The bytes this reads past the line's end (16-byte words
/// near it) decide nothing the line's own bytes do not: the tuple is the one
/// [`super::parse_json_tuple_into`] gives for the line alone (a test and the `tuple_jsonl` fuzz
/// target compare them).
///
/// ```
/// use saams::api::Tuple;
/// use saams_datasets::jsonl::{parse_json_tuple, parse_reference_line};
/// let a = r#"{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654,"volume":1}"#;
/// let text = format!("{a}\r\n{a}\n");
/// let mut t = Tuple::default();
/// assert_eq!(parse_reference_line(&text, &mut t), Some(a.len() + 2));
/// assert_eq!(t, parse_json_tuple(a).unwrap());
/// assert_eq!(parse_reference_line(&text[a.len() + 2..], &mut t), Some(a.len() + 1));
/// assert_eq!(parse_reference_line(&text[..a.len()], &mut t), Some(a.len()));
/// // A space after the brace: the line is the general parser's.
/// assert_eq!(parse_reference_line(&format!("{a} \n"), &mut t), None);
/// ```
#[inline]
pub fn parse_reference_line(text: &str, t: &mut Tuple) -> Option<usize> {
    let b = text.as_bytes();
    let i = reference_object(text, t)?;
    match b.get(i + 1) {
        Some(b'\n') => Some(i + 2),
        None => Some(i + 1),
        Some(b'\r') if b.get(i + 2) == Some(&b'\n') => Some(i + 3),
        _ => None,
    }
}

/// The reference-form object at the start of `line` parsed into `t`; the index of its closing
/// brace (what follows it is the caller's to check).
#[inline(always)]
fn reference_object(line: &str, t: &mut Tuple) -> Option<usize> {
    let b = line.as_bytes();
    if word_at(b, 0)? & low_bytes(13) != literal(HEAD) {
        return None;
    }
    // Each part goes into `t` as soon as it is read (a line that fails later leaves `t` to the
    // general path, which overwrites it): fewer values live across the line, so fewer of them
    // wait on the stack (the function kept a 264-byte frame, 161 stack accesses a line).
    let stream_end = closing_quote(line, 13)?;
    // SAFETY: byte 12 is the head's last quote, and `stream_end` a quote.
    set_text(&mut t.stream_id, unsafe { quoted(line, 13, stream_end) }?, b);
    let dataset_start = stream_end + 32;
    if word_at(b, stream_end)? != literal(OBJECT.0) || word_at(b, stream_end + 16)? != literal(OBJECT.1) {
        return None;
    }
    let dataset_end = closing_quote(line, dataset_start)?;
    // SAFETY: the byte before `dataset_start` is the literal's last quote, `dataset_end` a quote.
    set_text(&mut t.dataset_key, unsafe { quoted(line, dataset_start, dataset_end) }?, b);
    let days = date_days_at(line, dataset_end)?;
    let (ms, mut i) = time_at(line, dataset_end + 30)?;
    t.time_ms = Some(days * 86_400_000 + ms);
    let n = value_fields(line, &mut i, t)?;
    t.fields.truncate(n);
    Some(i)
}

/// The most value fields whose names [`NAMES`] keeps.
const KEPT_NAMES: usize = 8;

/// The longest value-field name [`NAMES`] keeps: `,"` name `":` in one 16-byte word.
const KEPT_NAME_LEN: usize = 12;

thread_local! {
    /// The value fields' names of the reference lines parsed on this thread, by position: for
    /// each, the bytes `,"name":` as the low bytes of a word and their number (0: none kept).
    /// Entries `0..k` up to the first empty one always name distinct value fields (no reserved
    /// key among them): an entry is written only after the line's name at that position passed
    /// both checks with the entries before it equal to that line's earlier names, and writing
    /// it empties the next one (kept from another line, it may repeat the new name).
    ///
    /// Why: a file's lines nearly always repeat their value fields' names; a line whose names
    /// equal the kept ones, position by position, has them checked by one masked 16-byte compare
    /// each instead of a scan for the closing quote, the `:`, the reserved-key test and the
    /// search of the earlier names (~30 instructions a field).
    static NAMES: [std::cell::Cell<(u128, u32)>; KEPT_NAMES] = const {
        [const { std::cell::Cell::new((0, 0)) }; KEPT_NAMES]
    };
}

/// The kept name at position `p` of the value fields, if the line at `b[i]` starts with it
/// (`,"name":`): the name's end (its closing quote) in `b`.
#[inline(always)]
fn kept_name_at(b: &[u8], i: usize, p: usize) -> Option<usize> {
    let (word, len) = NAMES.with(|names| names.get(p).map(std::cell::Cell::get))?;
    // The mask from a table: `low_bytes(len)`, a variable 128-bit shift, was ~12 instructions.
    (len != 0 && word_at(b, i)? & *LOW_BYTES.get(len as usize)? == word).then(|| i + len as usize - 2)
}

/// Keep `key`, which passed the checks of a value field's name at position `p` of a line whose
/// earlier names are the kept entries `0..p` (see [`NAMES`]), emptying the entry after it; true
/// if kept. A name too long to keep empties entry `p` instead (false), as does a position past
/// the kept ones (nothing to empty).
#[cold]
fn keep_name(key: &str, p: usize) -> bool {
    NAMES.with(|names| {
        let Some(entry) = names.get(p) else { return false };
        let k = key.as_bytes();
        if k.len() > KEPT_NAME_LEN {
            entry.set((0, 0));
            return false;
        }
        let mut word = literal(b"\":") << (8 * (k.len() + 2)) | literal(b",\"");
        for (at, &c) in k.iter().enumerate() {
            word |= u128::from(c) << (8 * (at + 2));
        }
        entry.set((word, k.len() as u32 + 4));
        if let Some(next) = names.get(p + 1) {
            next.set((0, 0));
        }
        true
    })
}

/// The value fields from `b[*i]` to the closing brace (where `*i` is left), written over `t`'s
/// first fields in place (names and text values reuse their buffers); their number.
#[inline(always)]
fn value_fields(line: &str, i: &mut usize, t: &mut Tuple) -> Option<usize> {
    let b = line.as_bytes();
    let mut n = 0;
    // Every name so far equal to the kept one at its position, or kept there (see `NAMES`); a
    // name not kept, or a `null` value (its field not stored, so its name not among those the
    // later names are checked against), ends that for the line.
    let mut kept = true;
    loop {
        match b.get(*i)? {
            b'}' => return Some(n),
            b',' if b.get(*i + 1) == Some(&b'"') => {}
            _ => return None,
        }
        let key = match kept.then(|| kept_name_at(b, *i, n)).flatten() {
            Some(key_end) => {
                // SAFETY: `b[*i + 1]` and `b[key_end]` are quotes (compared with the kept name).
                let key = unsafe { quoted(line, *i + 2, key_end) }?;
                *i = key_end + 2;
                key
            }
            None => {
                let key_end = closing_quote(line, *i + 2)?;
                // SAFETY: `b[*i + 1]` is a quote (matched above) and `b[key_end]` one.
                let key = unsafe { quoted(line, *i + 2, key_end) }?;
                *i = key_end + 2;
                if b.get(key_end + 1) != Some(&b':')
                    || classify(key.as_bytes()) != Key::Field
                    || seen_before(&t.fields[..n], key)
                {
                    return None;
                }
                kept = kept && keep_name(key, n);
                key
            }
        };
        let value = match b.get(*i)? {
            &c @ (b'-' | b'0'..=b'9') => {
                let j = *i + usize::from(c == b'-');
                let (x, j) = match word_from(b, j).and_then(|w| word_number(w, b, j)) {
                    Some((x, len)) => (if c == b'-' { -x } else { x }, j + len),
                    None => number_at(line, *i)?,
                };
                *i = j;
                // Out of range (`1e400`): the general parser's error.
                Value::Num(Some(x).filter(|x| x.is_finite())?)
            }
            b'"' => {
                let (v, j) = flat_string(line, *i)?;
                *i = j;
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
            b'n' if b[*i..].starts_with(b"null") => {
                *i += 4;
                kept = false;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonl::flat::parse_flat;
    use crate::tuple_pool::take_spare;

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

    /// The last key's closing quote is found in the line's last 16 bytes shifted down to it:
    /// keys and values of every length at the line's end, with a quote, a backslash or a control
    /// byte in the key, give what the general flat path gives (or leave the line to it).
    #[test]
    fn keys_at_the_line_end_agree_with_the_flat_path() {
        let mut t = take_spare();
        let head = r#"{"streamID":"A","objectID":null,"dataSetKey":"D","date":"01/02/2019","time":"00:00:01""#;
        let mut taken = 0;
        for len in 1..24 {
            for odd in ["", "\\", "\u{1}", "\""] {
                for value in ["1", "-0.25", "12345678", "\"x\"", "null"] {
                    let key = format!("{}{odd}", "k".repeat(len));
                    let line = format!("{head},\"p\":2,\"{key}\":{value}}}");
                    let flat = parse_flat(&line);
                    if parse_reference(&line, &mut t).is_some() {
                        assert_eq!(Some(t.clone()), flat, "{line}");
                        taken += 1;
                    }
                }
            }
        }
        assert_eq!(taken, 23 * 5, "every line without an escape takes the reference path");
    }

    /// Value-field names checked against the names kept from earlier lines (`NAMES`) decide as
    /// the full checks do: random runs of lines whose names repeat, change order, repeat within
    /// a line, are reserved keys, are too long to keep or have `null` values, each parsed with
    /// the names kept from the lines before it and with none kept, alike (tuple or refusal).
    #[test]
    fn kept_names_decide_as_the_full_checks() {
        let (mut warm, mut cold) = (take_spare(), take_spare());
        let head = r#"{"streamID":"A","objectID":null,"dataSetKey":"D","date":"01/02/2019","time":"00:00:01""#;
        let names = ["a", "b", "price", "volume", "date", "twelve_bytes", "thirteen_byte", "lat", "lon"];
        let values = ["1", "-2.5", "\"x\"", "null"];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut taken, mut refused) = (0, 0);
        let mut fields: Vec<(usize, usize)> = Vec::new();
        for _ in 0..20_000 {
            // Mostly the last line's names again, or with one change.
            match next(5) {
                0 => fields = (0..next(11)).map(|_| (next(names.len()), next(values.len()))).collect(),
                1 if !fields.is_empty() => {
                    let at = next(fields.len());
                    fields[at] = (next(names.len()), next(values.len()));
                }
                2 if fields.len() < 12 => fields.push((next(names.len()), next(values.len()))),
                _ => {}
            }
            let body: String = fields.iter().map(|&(k, v)| format!(",\"{}\":{}", names[k], values[v])).collect();
            let line = format!("{head}{body}}}");
            let kept: Vec<_> = NAMES.with(|n| n.iter().map(std::cell::Cell::get).collect());
            NAMES.with(|n| n.iter().for_each(|c| c.set((0, 0))));
            let full = parse_reference(&line, &mut cold).map(|()| cold.clone());
            NAMES.with(|n| n.iter().zip(&kept).for_each(|(c, &k)| c.set(k)));
            let fast = parse_reference(&line, &mut warm).map(|()| warm.clone());
            assert_eq!(fast, full, "{line}");
            if fast.is_some() { taken += 1 } else { refused += 1 }
        }
        assert!(taken > 5_000 && refused > 1_000, "{taken} {refused}");
    }

    /// Times read from one word give what the general flat path gives (or leave the line to
    /// it): every byte value in each place of the fraction and the seconds, the boundaries of
    /// the hour, minute and second, and times near the line's end.
    #[test]
    fn times_agree_with_the_flat_path() {
        let mut t = take_spare();
        let head = r#"{"streamID":"A","objectID":null,"dataSetKey":"D","date":"01/02/2019","time":""#;
        let mut times: Vec<String> =
            ["00:00:01", "23:59:60.999", "24:00:00", "00:60:00", "00:00:61", "1:00:00", "00:00:01.5"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        for at in [6, 7, 8, 9, 10, 11] {
            for c in (0x20u8..0x7f).filter(|&c| c != b'"' && c != b'\\') {
                let mut time = b"12:34:56.789".to_vec();
                time[at] = c;
                times.push(String::from_utf8(time).expect("ASCII"));
            }
        }
        let mut taken = 0;
        for time in &times {
            for tail in [",\"p\":1}", "}"] {
                let line = format!("{head}{time}\"{tail}");
                let flat = parse_flat(&line);
                // The line is in the reference layout: only the time decides, and it decides alike.
                assert_eq!(parse_reference(&line, &mut t).is_some(), flat.is_some(), "{line}");
                if flat.is_some() {
                    assert_eq!(Some(t.clone()), flat, "{line}");
                    taken += 1;
                }
            }
        }
        assert!(taken > 100, "{taken}");
    }
}
