//! Allocation-free helpers shared by the line parsers: CSV field splitting, number and time
//! parsing with fast paths for the layouts the datasets use, a tuple's fields written in place.

use saams::Value;
use saams::api::time::{days_from_civil, parse_date, parse_time_of_day, parse_timestamp};

/// The most columns a parser reads: a header column further right cannot be used (the cells
/// of a row past the last column read are not split).
pub(crate) const MAX_COLUMNS: usize = 64;

/// Split a CSV line into its first `out.len()` fields (RFC 4180 quoting: a quoted field may hold
/// commas and doubled quotes; the returned slice is the text between the quotes, with `""` kept).
/// Returns the number of fields (at most `out.len()`; more are not looked at), or `None` for an
/// unterminated quote anywhere in the line.
///
/// Why a limit: a parser that reads the first few columns of a wide row (an AIS row has 17, the
/// AIS parser reads up to the 11th) neither splits nor stores the rest; only a quote in the rest
/// is looked for (one `memchr`), since a quoted field there could make the line malformed.
/// Setting up the 64 cells every row took was ~4 % of an AIS ingest on its own.
pub(crate) fn split_csv<'a>(line: &'a str, out: &mut [&'a str]) -> Option<usize> {
    assert!(!out.is_empty(), "split_csv needs room for a field");
    let wanted = out.len();
    // Unquoted lines (all the shared data): one pass over the bytes, sixteen at a time, a mask
    // of the quotes (any sends the line to the quoted path) and one of the commas. Not
    // `memchr2`: a separator every five or six bytes makes each SIMD search return after a few
    // bytes, and its per-call setup cost more than the scan (~10 % of an AIS ingest); a mask
    // finds every separator of sixteen bytes at once.
    let bytes = line.as_bytes();
    let (mut n, mut start) = (0, 0);
    let mut quoted = false;
    let mut base = 0;
    'scan: while base < bytes.len() {
        let block = match bytes.get(base..).and_then(<[u8]>::first_chunk::<16>) {
            Some(&block) => block,
            None => {
                // The last, short block: padded with spaces (no separator).
                let mut block = [b' '; 16];
                block[..bytes.len() - base].copy_from_slice(&bytes[base..]);
                block
            }
        };
        if byte_mask_16(block, b'"') != 0 {
            // A quote anywhere: the quoted path splits the line from its start.
            quoted = true;
            break;
        }
        let mut commas = byte_mask_16(block, b',');
        while commas != 0 {
            let p = base + commas.trailing_zeros() as usize;
            out[n] = &line[start..p];
            n += 1;
            start = p + 1;
            if n == wanted {
                // The fields wanted are split; the rest only must not hold a quote.
                quoted = memchr::memchr(b'"', &bytes[start..]).is_some();
                if quoted {
                    break 'scan;
                }
                return Some(n);
            }
            commas &= commas - 1;
        }
        base += 16;
    }
    if !quoted {
        out[n] = &line[start..];
        return Some(n + 1);
    }
    let (mut n, mut i) = (0, 0);
    loop {
        let (field, next) = if bytes.get(i) == Some(&b'"') {
            let start = i + 1;
            let mut j = start;
            loop {
                match bytes.get(j) {
                    None => return None,
                    Some(b'"') if bytes.get(j + 1) == Some(&b'"') => j += 2,
                    Some(b'"') => break,
                    Some(_) => j += 1,
                }
            }
            // After the closing quote: a comma or the end of the line.
            match bytes.get(j + 1) {
                None => (&line[start..j], None),
                Some(b',') => (&line[start..j], Some(j + 2)),
                Some(_) => return None,
            }
        } else {
            match line[i..].find(',') {
                Some(k) => (&line[i..i + k], Some(i + k + 1)),
                None => (&line[i..], None),
            }
        };
        if n < wanted {
            out[n] = field;
            n += 1;
        }
        match next {
            Some(k) => i = k,
            None => return Some(n),
        }
    }
}

/// Bit `k` set where `block[k]` is `c`. One SSE2 compare and mask on x86-64 (every x86-64 CPU
/// has SSE2); a byte loop elsewhere.
#[inline(always)]
pub(crate) fn byte_mask_16(block: [u8; 16], c: u8) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set1_epi8};
        // SAFETY: SSE2 is part of the x86-64 baseline (the compiler enables it for the target);
        // these intrinsics compute on registers and touch no memory.
        unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(bytemuck::cast(block), _mm_set1_epi8(c as i8))) as u32 }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        block.iter().enumerate().fold(0, |mask, (k, &b)| mask | u32::from(b == c) << k)
    }
}

/// A mask of the bytes of `w` that end or break a flat string: quotes, backslashes and control
/// bytes (below 0x20), bit `k` for byte `k`. SSE2 (every x86-64 has it): sixteen bytes in about
/// eight instructions, where the word test of the JSON string scan's fallback takes ~20 for eight.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn special_bytes_16(w: [u8; 16]) -> u32 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};
    let x = bytemuck::cast(w);
    // SAFETY: SSE2 is part of the x86-64 baseline (every x86-64 CPU has it, and the compiler
    // enables it for the target); these intrinsics compute on registers and touch no memory.
    unsafe {
        let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        // Unsigned `x <= 0x1f`: the byte is its minimum with 0x1f.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
    }
}

/// Every byte `'0'` (a digit XOR this is its value).
pub(crate) const ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);
/// The high bit of every byte.
const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
/// A `.` XOR `'0'`.
const DOT: u64 = (b'.' ^ b'0') as u64;

/// The high bit of every byte of `x` above 9 (`x`: bytes XOR `'0'`, so digits are 0..=9): the
/// high bit of `x | x + 0x76` is set exactly for bytes of 10 and up. A carry out of a byte of
/// 0x8a or more (high bit set: flagged already) can only flag the next byte too, which makes
/// the caller fall back, never accept.
#[inline]
pub(crate) fn above_nine(x: u64) -> u64 {
    (x | x.wrapping_add(u64::from_le_bytes([0x76; 8]))) & HIGHS
}

/// The number of up to eight decimal digits, one a byte with the most significant in byte 0
/// (bytes 0..=9: zero bytes are leading zeros), by three multiplies that each join neighbouring
/// groups (digits into pairs, pairs into fours, fours into eight), as in simdjson's
/// `parse_eight_digits_unrolled`.
#[inline(always)]
pub(crate) fn eight_digits(x: u64) -> u64 {
    let x = x * 10 + (x >> 8);
    let x = (x & 0x00ff_00ff_00ff_00ff) * 100 + (x >> 16 & 0x00ff_00ff_00ff_00ff);
    ((x & 0x0000_ffff_0000_ffff) * 10_000 + (x >> 32 & 0x0000_ffff)) & 0xffff_ffff
}

/// The value of a plain decimal `digits` or `digits.digits` of `len` bytes (1..=8, the dot
/// included, no sign), given as `x`: its bytes XOR `'0'` in the top `len` bytes of the word (the
/// last character in byte 7), zero bytes below. `None` if those bytes are anything else (more
/// than one dot, a dot first or last, a byte that is neither digit nor dot): the caller's
/// general path decides those.
///
/// At most eight digits make a mantissa below 10^8 < 2^53, so `mantissa / 10^fraction_digits`
/// is Clinger's fast path: correctly rounded, the same value as `str::parse`.
#[inline]
pub(crate) fn short_decimal(x: u64, len: usize) -> Option<f64> {
    let (m, fraction_digits) = short_decimal_parts(x, len)?;
    Some(m as f64 / EXACT_POW10[fraction_digits])
}

/// [`short_decimal`]'s mantissa (the digits without the dot) and number of fraction digits.
#[inline(always)]
pub(crate) fn short_decimal_parts(x: u64, len: usize) -> Option<(u64, usize)> {
    let big = above_nine(x);
    if big == 0 {
        return Some((eight_digits(x), 0));
    }
    // One byte above 9, the dot, with a digit on either side.
    let dot = big.trailing_zeros() / 8;
    if big & (big - 1) != 0 || x >> (8 * dot) & 0xff != DOT || dot == 7 || dot as usize == 8 - len {
        return None;
    }
    // The integer digits move up a byte over the dot: the digits are contiguous again.
    let below = (1u64 << (8 * dot)) - 1;
    let joined = (x & below) << 8 | x & !(below | 0xff << (8 * dot));
    Some((eight_digits(joined), 7 - dot as usize))
}

/// A plain decimal of 9 to 16 bytes (`body`, no sign) whose first `len - 8` bytes are digits and
/// whose last eight are digits with at most one dot (nine-digit vessel ids, longitudes like
/// `117.91483`): two words, joined as `lead × 10^(digits of the last word) + last`. `None` for
/// anything else, or a mantissa past 2^53 (the caller's general path decides).
#[inline]
fn two_word_decimal(body: &[u8]) -> Option<f64> {
    let (lead, last) = body.split_at_checked(body.len().checked_sub(8)?)?;
    if !(1..=8).contains(&lead.len()) {
        return None;
    }
    let lead = (right_aligned(lead) ^ ZEROS) & u64::MAX << (8 * (8 - lead.len()));
    if above_nine(lead) != 0 {
        return None;
    }
    let (m, fraction_digits) = short_decimal_parts(u64::from_le_bytes(*last.first_chunk::<8>()?) ^ ZEROS, 8)?;
    let scale = if fraction_digits > 0 { 10_000_000 } else { 100_000_000 };
    let m = eight_digits(lead) * scale + m;
    (m <= 1 << 53).then(|| m as f64 / EXACT_POW10[fraction_digits])
}

/// The bytes of `b` (its last 8 if longer) in the top bytes of a word, the last in byte 7, zero
/// bytes below: loaded as two overlapping words of 4 or 2 bytes (no copy of unknown length, which
/// is a call to `memcpy`).
#[inline]
fn right_aligned(b: &[u8]) -> u64 {
    let n = b.len();
    if let Some(&w) = b.last_chunk::<8>() {
        return u64::from_le_bytes(w);
    }
    if let (Some(&lo), Some(&hi)) = (b.first_chunk::<4>(), b.last_chunk::<4>()) {
        return u64::from(u32::from_le_bytes(hi)) << 32 | u64::from(u32::from_le_bytes(lo)) << (8 * (8 - n));
    }
    if let (Some(&lo), Some(&hi)) = (b.first_chunk::<2>(), b.last_chunk::<2>()) {
        return u64::from(u16::from_le_bytes(hi)) << 48 | u64::from(u16::from_le_bytes(lo)) << (8 * (8 - n));
    }
    b.first().map_or(0, |&c| u64::from(c) << 56)
}

/// Field `k` of `fields` becomes `(name, value)`, reusing the name's buffer (the same names come
/// in the same places row after row).
#[inline]
pub(crate) fn set_field(fields: &mut Vec<(String, Value)>, k: usize, name: &str, value: Value) {
    match fields.get_mut(k) {
        Some((old, v)) => {
            if !saams::api::tuple::same_name(old, name) {
                old.clear();
                old.push_str(name);
            }
            *v = value;
        }
        None => fields.push((name.to_string(), value)),
    }
}

/// Powers of ten exactly representable as `f64` (10^0 … 10^22).
pub(crate) const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// `s` as an `f64`, the same value as `s.parse::<f64>()` (correctly rounded), without its general
/// machinery for the plain decimals the datasets hold.
///
/// Why: the float parser of the standard library was ~5 % of an ingest profile. For
/// `[+-]?digits[.digits]` with at most 19 digits (so at most 19 fraction digits) and a mantissa
/// below 2^53, `mantissa / 10^k` is one correctly rounded IEEE division of two exact values
/// (Clinger's fast path), so the result is the correctly rounded value of the decimal. Everything
/// else (exponents, long mantissas, `inf`, `.5`, …) goes to `str::parse`.
///
/// ```
/// use saams_datasets::parse_f64;
/// for s in ["33.60716", "-117.91483", "338148873", "0.1", "1e3", "inf", "x", "", "1.", "+2.5"] {
///     assert_eq!(parse_f64(s), s.parse::<f64>().ok(), "{s}");
/// }
/// ```
#[inline]
pub fn parse_f64(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let (neg, int_start) = match b.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    // Up to sixteen bytes of digits and a dot (nearly every number of the datasets: prices,
    // coordinates, speeds, vessel ids): read as one or two words.
    let body = &b[int_start..];
    let word_path = match body.len() {
        1..=8 => short_decimal((right_aligned(body) ^ ZEROS) & u64::MAX << (8 * (8 - body.len())), body.len()),
        9..=16 => two_word_decimal(body),
        _ => None,
    };
    if let Some(x) = word_path {
        return Some(if neg { -x } else { x });
    }
    let mut i = int_start;
    let mut m: u64 = 0;
    // Every digit goes into `m`; more than 19 of them (which could overflow it, or be more
    // significant digits than the fast path takes) go to the standard parser instead, leading
    // zeros included: counting only significant ones cost two operations a digit.
    while i < b.len() && b[i].is_ascii_digit() {
        m = m.wrapping_mul(10).wrapping_add(u64::from(b[i] - b'0'));
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac = 0usize;
    if int_digits > 0 && i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            m = m.wrapping_mul(10).wrapping_add(u64::from(b[i] - b'0'));
            i += 1;
        }
        frac = i - frac_start;
        if frac == 0 {
            return s.parse().ok();
        }
    }
    if int_digits == 0 || i != b.len() || int_digits + frac > 19 || m > 1 << 53 {
        return s.parse().ok();
    }
    let x = m as f64 / EXACT_POW10[frac];
    Some(if neg { -x } else { x })
}

/// `s` without leading and trailing whitespace, looking only at its two end bytes when they are
/// plainly not whitespace (printable ASCII): the cells of a CSV row nearly never need trimming,
/// and `str::trim`'s Unicode-aware scan was ~7 % of an AIS ingest. Same result as `str::trim`.
///
/// ```
/// use saams_datasets::trim;
/// assert_eq!(trim("338148873"), "338148873");
/// assert_eq!(trim(" 12.5\t"), "12.5");
/// assert_eq!(trim("\u{a0}x\u{3000}"), "x");
/// ```
#[inline]
pub fn trim(s: &str) -> &str {
    let solid = |c: Option<&u8>| c.is_some_and(|&c| c.is_ascii_graphic());
    if solid(s.as_bytes().first()) && solid(s.as_bytes().last()) { s } else { s.trim() }
}

/// A finite number, or a message naming the column.
#[inline]
pub(crate) fn number(s: &str, column: &str) -> Result<f64, String> {
    finite(trim(s), s, column)
}

/// The value of `trimmed` (the cell `s` trimmed) if it is a finite number, or the message.
#[inline]
fn finite(trimmed: &str, s: &str, column: &str) -> Result<f64, String> {
    match parse_f64(trimmed) {
        Some(x) if x.is_finite() => Ok(x),
        _ => Err(format!("{column}: not a number: {s:?}")),
    }
}

/// An optional number: empty → `None`.
#[inline]
pub(crate) fn opt_number(s: &str, column: &str) -> Result<Option<f64>, String> {
    let t = trim(s);
    if t.is_empty() { Ok(None) } else { finite(t, s, column).map(Some) }
}

#[inline]
fn digits(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some(v)
}

fn valid_ymd(y: u32, m: u32, d: u32) -> bool {
    let leap = (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let dim = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    d >= 1 && d <= dim
}

/// Days since the epoch of `yyyy-MM-dd` or `MM/dd/yyyy` (fast path for the fixed-width forms,
/// general parser otherwise).
#[inline]
pub(crate) fn date_days(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let ymd = if b.len() == 10 && b[4] == b'-' && b[7] == b'-' {
        Some((digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?))
    } else if b.len() == 10 && b[2] == b'/' && b[5] == b'/' {
        Some((digits(&b[6..10])?, digits(&b[0..2])?, digits(&b[3..5])?))
    } else {
        None
    };
    match ymd {
        Some((y, m, d)) if valid_ymd(y, m, d) => Some(days_from_civil(i64::from(y), m, d)),
        Some(_) => None,
        None => parse_date(s),
    }
}

/// Hours, minutes and seconds of `HH:mm:ss` (eight bytes), read as one word: the six digits and
/// two colons are checked and the three two-digit numbers formed with a few word operations, not
/// a loop per digit (the time of day was ~3 % of a JSON-lines ingest's instructions).
#[inline(always)]
pub(crate) fn hh_mm_ss(b: [u8; 8]) -> Option<(u32, u32, u32)> {
    // Digits become 0..=9 and colons 0; anything else leaves a byte above 9 (or a colon's
    // place nonzero).
    let x = u64::from_le_bytes(b) ^ u64::from_le_bytes(*b"00:00:00");
    // Adding 0x76 to a byte sets its high bit when it is 10 or more; adding 0x7f, when it is
    // not 0. A byte whose own high bit is set is out already (its carry into the next byte
    // cannot make the word pass).
    let over = u64::from_le_bytes([0x76, 0x76, 0x7f, 0x76, 0x76, 0x7f, 0x76, 0x76]);
    if (x | x.wrapping_add(over)) & u64::from_le_bytes([0x80; 8]) != 0 {
        return None;
    }
    // Byte i of `pairs` is 10 × digit i + digit i+1 (at most 99: no carry between bytes).
    let pairs = x * 10 + (x >> 8);
    Some(((pairs & 0xff) as u32, (pairs >> 24 & 0xff) as u32, (pairs >> 48 & 0xff) as u32))
}

/// Milliseconds since midnight of `HH:mm:ss[.fff]` (fast path for the fixed-width forms).
#[inline]
pub(crate) fn time_of_day_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if let Some(&head) = b.first_chunk::<8>()
        && head[2] == b':'
        && head[5] == b':'
    {
        let (h, m, sec) = hh_mm_ss(head)?;
        let ms = match b.len() {
            8 => 0,
            12 if b[8] == b'.' => digits(&b[9..12])?,
            _ => return parse_time_of_day(s),
        };
        if h >= 24 || m >= 60 || sec >= 61 {
            return None;
        }
        return Some(((i64::from(h) * 60 + i64::from(m)) * 60 + i64::from(sec)) * 1000 + i64::from(ms));
    }
    parse_time_of_day(s)
}

/// Milliseconds since the epoch of an ISO timestamp (`2022-01-03T00:00:05`, fast path without a
/// zone; `Z`, offsets and fractions through the general parser).
#[inline]
pub(crate) fn timestamp_ms(s: &str) -> Option<i64> {
    let s = trim(s);
    if s.len() >= 19
        && matches!(s.as_bytes()[10], b'T' | b' ')
        && let (Some(d), Some(t)) = (date_days(&s[..10]), time_of_day_ms(&s[11..]))
    {
        return Some(d * 86_400_000 + t);
    }
    parse_timestamp(s)
}

/// `count` seeded strings of one to `max_len` bytes, mostly digits, the rest drawn from `alphabet`:
/// the numbers the word-at-a-time decimal paths take and everything next to them.
#[cfg(test)]
pub(crate) fn short_numbers(state: &mut u64, alphabet: &[u8], max_len: u64, count: usize) -> Vec<String> {
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    };
    (0..count)
        .map(|_| {
            let len = 1 + next() % max_len;
            (0..len)
                .map(|_| {
                    let r = next();
                    let byte = if r.is_multiple_of(3) {
                        alphabet[(r >> 2) as usize % alphabet.len()]
                    } else {
                        b'0' + (r % 10) as u8
                    };
                    char::from(byte)
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_is_str_trim() {
        for s in ["12.5", " 12.5\t", "\u{a0}x\u{3000}", "", " ", "x", "é", "-1 ", "\n2022-01-03T00:00:00\r", "a b"] {
            assert_eq!(trim(s), s.trim(), "{s:?}");
        }
    }

    /// Every byte value at every place of a block, among bytes of every other value.
    #[test]
    fn byte_masks_flag_exactly_the_byte() {
        assert_eq!(byte_mask_16(*b"a,b,,c..........", b','), 0b11010);
        for c in [b',', b'"', 0, 0x7f, 0x80, 0xff] {
            for at in 0..16 {
                for other in 0..=255u8 {
                    let mut block = [other; 16];
                    block[at] = c;
                    let expected = if other == c { 0xffff } else { 1 << at };
                    assert_eq!(byte_mask_16(block, c), expected, "{c} at {at} among {other}");
                }
            }
        }
    }

    /// Unquoted rows split as `str::split(',')` does (first 64 cells), whatever sits next to a
    /// comma (`-` and other bytes one apart from it, multi-byte characters) and wherever commas
    /// fall in the sixteen-byte blocks.
    #[test]
    fn unquoted_rows_split_at_every_comma() {
        let pieces = ["", "-", "+", ".", "-117.91483", "2022-01-03T00:00:00", "é", "€x", "511", "a b", "\t", "0.0"];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..5_000 {
            let mut out = [""; MAX_COLUMNS];
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let cells = 1 + (state % 80) as usize;
            let row: Vec<&str> =
                (0..cells).map(|i| pieces[((state >> (i % 50)) as usize + i) % pieces.len()]).collect();
            let line = row.join(",");
            let expected: Vec<&str> = line.split(',').take(MAX_COLUMNS).collect();
            let n = split_csv(&line, &mut out).unwrap();
            assert_eq!(&out[..n], &expected[..], "{line:?}");
            // The first few fields only: the same as far as they go.
            let mut first = [""; 5];
            let n = split_csv(&line, &mut first).unwrap();
            assert_eq!(&first[..n], &expected[..n.min(expected.len())], "{line:?}");
            assert_eq!(n, expected.len().min(5), "{line:?}");
        }
    }

    #[test]
    fn splits_quoted_fields() {
        let mut out = [""; MAX_COLUMNS];
        let n = split_csv(r#"1,"RAY ""CHIEF"" TONEY",,"a,b""#, &mut out).unwrap();
        assert_eq!(&out[..n], &["1", r#"RAY ""CHIEF"" TONEY"#, "", "a,b"]);
        assert_eq!(split_csv(r#"1,"open"#, &mut out), None);
        assert_eq!(split_csv(r#""x"y,1"#, &mut out), None);
        assert_eq!(split_csv("a,,b,", &mut out), Some(4));
        // Fewer fields wanted than the row has: a quote past them still decides whether the
        // line is well formed, and a quoted field among them is split as before.
        let mut two = [""; 2];
        assert_eq!(split_csv(r#"1,2,3,"open"#, &mut two), None);
        assert_eq!(split_csv(r#"1,2,3,"a,b",4"#, &mut two), Some(2));
        assert_eq!(two, ["1", "2"]);
        assert_eq!(split_csv(r#""a,b",x,y"#, &mut two), Some(2));
        assert_eq!(two, ["a,b", "x"]);
        assert_eq!(split_csv("only", &mut two), Some(1));
    }

    #[test]
    fn fast_float_path_agrees_with_the_standard_parser() {
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "+0",
            "0.0",
            "-0.000",
            "1",
            "6.0654",
            "167.41",
            "-117.91483",
            "33.60716",
            "9007199254740992",
            "9007199254740993",
            "18446744073709551615",
            "18446744073709551616",
            "0.1",
            "0.30000000000000004",
            "1234567890123456789",
            "12345678901234567890",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            "00012.5000",
            "1.",
            ".5",
            "1e5",
            "-1E-3",
            "inf",
            "NaN",
            "",
            "-",
            "+",
            "1.2.3",
            "1,5",
            " 1",
            "١",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = (x % 1_000_000_000_000) as f64;
            let scale = 10f64.powi((x >> 40) as i32 % 12);
            cases.push(format!("{}", digits / scale));
            cases.push(format!("{:.*}", ((x >> 50) % 18) as usize, (x >> 11) as f64 / (1u64 << 40) as f64));
        }
        // Up to seventeen bytes of digits, dots, signs and other bytes (the one- and two-word
        // paths and every way out of them).
        cases.extend(short_numbers(&mut x, b"0123456789.-+e x", 17, 400_000));
        cases.extend(
            ["338148873", "-117.91483", "9007199254740992", "9007199254740993", "1.2345678", "12345678.1234567"]
                .map(String::from),
        );
        for c in &cases {
            let fast = parse_f64(c).map(f64::to_bits);
            let std = c.parse::<f64>().ok().map(f64::to_bits);
            assert_eq!(fast, std, "{c:?}");
        }
    }

    #[test]
    fn fast_time_paths_agree_with_the_general_parsers() {
        for d in ["2019-01-02", "01/02/2019", "2020-02-29"] {
            assert_eq!(date_days(d), parse_date(d), "{d}");
        }
        assert_eq!(date_days("2019-02-29"), None);
        assert_eq!(date_days("13/02/2019"), None);
        for t in ["00:00:01", "23:59:59.999", "09:30:00.25", "9:30"] {
            assert_eq!(time_of_day_ms(t), parse_time_of_day(t), "{t}");
        }
        // Every byte at every place of an eight-byte time: the word test takes exactly the
        // digits and colons the byte-by-byte reading takes.
        let digit_pair =
            |b: &[u8]| b.iter().all(u8::is_ascii_digit).then(|| u32::from(b[0] - b'0') * 10 + u32::from(b[1] - b'0'));
        for place in 0..8 {
            for byte in 0..=255u8 {
                let mut t = *b"17:45:39";
                t[place] = byte;
                let expected = (t[2] == b':' && t[5] == b':')
                    .then(|| Some((digit_pair(&t[0..2])?, digit_pair(&t[3..5])?, digit_pair(&t[6..8])?)))
                    .flatten();
                assert_eq!(hh_mm_ss(t), expected, "{t:?}");
            }
        }
        assert_eq!(hh_mm_ss(*b"99:99:99"), Some((99, 99, 99)));
        assert_eq!(hh_mm_ss(*b"00:00:00"), Some((0, 0, 0)));
        assert_eq!(time_of_day_ms("24:00:00"), None);
        for ts in ["2022-01-03T00:00:05", "2022-01-03 23:59:59", "2022-01-03T00:00:05Z", "2022-01-03T00:00:05.5+01:00"]
        {
            assert_eq!(timestamp_ms(ts), parse_timestamp(ts), "{ts}");
        }
    }
}
