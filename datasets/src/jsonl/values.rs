//! A reference line's values read in place, inlined into the parser's loop: the time of day, the
//! stream id and dataset key copied into the tuple, the value fields' names compared.

use crate::fields::trim;

/// Milliseconds since midnight of a reference time, `HH:mm:ss` or `HH:mm:ss.fff`, read in place
/// (inlined: the general [`crate::fields::time_of_day_ms`] was a call of ~70 instructions a
/// line); anything else by that function, after a trim (the same values).
#[inline(always)]
pub(super) fn time_of_day(time: &str) -> Option<i64> {
    let b = time.as_bytes();
    let ms = match (b.len(), b.get(8..12)) {
        (8, _) => Some(0),
        (12, Some(&[b'.', f0, f1, f2])) if [f0, f1, f2].iter().all(u8::is_ascii_digit) => {
            Some(u32::from(f0 - b'0') * 100 + u32::from(f1 - b'0') * 10 + u32::from(f2 - b'0'))
        }
        _ => None,
    };
    if let Some(ms) = ms
        && let Some(&head) = b.first_chunk::<8>()
        && let Some((h, m, s)) = crate::fields::hh_mm_ss(head)
        && h < 24
        && m < 60
        && s < 61
    {
        return Some(((i64::from(h) * 60 + i64::from(m)) * 60 + i64::from(s)) * 1000 + i64::from(ms));
    }
    crate::fields::time_of_day_ms(trim(time))
}

/// `dst` becomes `s`, a string of the line `line` (between two quotes). Up to 16 bytes are one
/// 16-byte move from the line when 16 bytes of it start at `s` (after a stream id or dataset key
/// come at least 10 more: a quote and the next literal): `clear` then `push_str` was a call to
/// `memcpy` per string.
#[inline(always)]
pub(super) fn set_text(dst: &mut String, s: &str, line: &[u8]) {
    let start = (s.as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
    match line.get(start..).and_then(<[u8]>::first_chunk::<16>) {
        Some(chunk) if s.len() <= 16 && chunk.as_ptr() == s.as_ptr() => {
            dst.clear();
            dst.reserve(16);
            // SAFETY: `reserve` left room for 16 bytes, all written from `chunk`; the length set
            // keeps the first `s.len()` of them, which are `s`'s bytes (`chunk` starts where `s`
            // does): valid UTF-8.
            unsafe {
                let v = dst.as_mut_vec();
                std::ptr::copy_nonoverlapping(chunk.as_ptr(), v.as_mut_ptr(), 16);
                v.set_len(s.len());
            }
        }
        _ => {
            dst.clear();
            dst.push_str(s);
        }
    }
}

/// `a == b` for the short names of value fields, inlined: up to 16 bytes are compared as two
/// overlapping words each, as `saams::api::tuple::same_name` does (a call from this crate, ~3 %
/// of a reference line's instructions).
#[inline(always)]
pub(super) fn same_key(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let words = |s: &[u8]| -> Option<(u64, u64)> {
        match n {
            8..=16 => Some((u64::from_le_bytes(*s.first_chunk()?), u64::from_le_bytes(*s.last_chunk()?))),
            4..=7 => Some((
                u64::from(u32::from_le_bytes(*s.first_chunk()?)),
                u64::from(u32::from_le_bytes(*s.last_chunk()?)),
            )),
            _ => None,
        }
    };
    match (words(a), words(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}
