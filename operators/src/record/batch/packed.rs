//! A [`super::RecBatch`]'s records between processes, each written against the record before it.
//!
//! Why: the records of a routed batch come in runs of one update group whose times are close and
//! whose arrival sequences grow by small steps, so most of a record's 21 bytes of group, time and
//! sequence say what the record before it said. Written as it differs from that record — the
//! group only when it changes, time and sequence as differences in the bytes they need, a number
//! seen just before not at all — a record of the paper's workload takes ~12 bytes instead of 33
//! (with its length), and reading one is a few loads of fixed width, masked, instead of a
//! length's checks and a byte string's.
//!
//! Layout of a record (little-endian): a control byte, then its fields in this order:
//! - bits 0–1, the group: `0` the record before's (`0` before the first); `1`, `2`, `3` the group
//!   in 1, 2 or 4 bytes;
//! - bits 2–3, the time: its difference from the record before's (`0` before the first),
//!   zig-zag (small negative differences are small numbers), in 1, 2, 4 or 8 bytes;
//! - bits 4–5, the sequence: likewise;
//! - bits 6–7, the value: `0` a number, its `f64` in 8 bytes; `1` the number of the last record
//!   that had one again, bit for bit (`0.0` before the first), no bytes; `2` a text, `3` a device
//!   partial: its length `u32`, then its bytes.
//!
//! Where each field of a record starts follows from its control byte alone: a table of the 256
//! control bytes ([`LAYOUTS`]) holds the offsets and the fixed length, so neither side works
//! them out field by field (that chain of shifts and adds, a `Result` a record and a bounds
//! check a field made packing and unpacking ~110 instructions a record each).
//!
//! Only processes of the same job read it.

use saams::codec::{unzigzag, zigzag};

use super::{Rec, Val};

/// Bytes of a record's widest fixed part: control, group, time, sequence, and a number (or a
/// text's length).
pub(super) const MAX_FIXED: usize = 1 + 4 + 8 + 8 + 8;

/// Bytes read and written at a record's start: every field is read and written as 8 bytes at
/// its offset, masked to its width. Wider than [`MAX_FIXED`] so that an offset masked to 5 bits
/// (the value's, at most 21) is a word within it without a check: the table's offsets are
/// numbers the compiler cannot bound.
pub(super) const WINDOW: usize = 32 + 8;

const _: () = assert!(MAX_FIXED <= WINDOW, "a record's fixed part lies within its window");

/// Bytes of the shortest record: control, time and sequence in one byte each.
pub(super) const MIN_RECORD: usize = 3;

const NUM: u8 = 0;
const SAME_NUM: u8 = 1;
const STR: u8 = 2;
const PART: u8 = 3;

/// Where a record's fields start, and its fixed length, for one control byte.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Layout {
    /// Offset of the time's difference (the group, when written, is at 1).
    time: u8,
    /// Offset of the sequence's difference.
    seq: u8,
    /// Offset of the number, or of a text's or partial's length.
    value: u8,
    /// Bytes of control and fields (up to [`MAX_FIXED`]).
    fixed: u8,
}

/// The layout of every control byte.
pub(super) static LAYOUTS: [Layout; 256] = layouts();

const fn layouts() -> [Layout; 256] {
    let mut all = [Layout { time: 0, seq: 0, value: 0, fixed: 0 }; 256];
    let mut control = 0;
    while control < 256 {
        let group = [0, 1, 2, 4][control & 3];
        let time = 1 + group;
        let seq = time + (1 << ((control >> 2) & 3));
        let value = seq + (1 << ((control >> 4) & 3));
        let fixed = value + [8, 0, 4, 4][control >> 6];
        all[control] = Layout { time: time as u8, seq: seq as u8, value: value as u8, fixed: fixed as u8 };
        control += 1;
    }
    all
}

/// The mask of a group of code `0..=3` (code 0: none written).
const GROUP_MASKS: [u64; 4] = [0, 0xff, 0xffff, 0xffff_ffff];

/// The mask of a difference of code `0..=3` (1, 2, 4 or 8 bytes).
const MASKS: [u64; 4] = [0xff, 0xffff, 0xffff_ffff, u64::MAX];

/// The code (`0..=3`) of the 1, 2, 4 or 8 bytes a number needs, by the place of its highest
/// bit set (of 1 for 0).
static WIDTH_CODES: [u8; 64] = {
    let mut codes = [0u8; 64];
    let mut high: usize = 0;
    while high < 64 {
        let bytes = (high + 1).div_ceil(8);
        codes[high] = if bytes <= 1 {
            0
        } else if bytes == 2 {
            1
        } else if bytes <= 4 {
            2
        } else {
            3
        };
        high += 1;
    }
    codes
};

/// The code (`0..=3`) of the 1, 2, 4 or 8 bytes that hold `z`.
#[inline]
fn width_code(z: u64) -> u8 {
    WIDTH_CODES[(z | 1).ilog2() as usize]
}

/// The code (`1..=3`) of the 1, 2 or 4 bytes that hold a group.
#[inline]
fn group_code(group: u32) -> u8 {
    1 + u8::from(group > 0xff) + u8::from(group > 0xffff)
}

/// The little-endian word at `at` of a window (`at + 8 <= N`).
#[inline]
fn word<const N: usize>(w: &[u8; N], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&w[at..at + 8]);
    u64::from_le_bytes(b)
}

/// Write `value` as the 8 bytes at `at` of a window.
#[inline]
fn put(w: &mut [u8; WINDOW], at: usize, value: u64) {
    w[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// The fields of the record before, which the next is written against (the same on both sides).
#[derive(Clone, Copy, Default)]
pub(super) struct Before {
    group: u32,
    time: i64,
    seq: u64,
    /// The bits of the last number.
    num: u64,
}

impl Layout {
    /// Offset of the time (at most 5).
    #[inline]
    fn time_at(self) -> usize {
        usize::from(self.time) & 7
    }

    /// Offset of the sequence (at most 13).
    #[inline]
    fn seq_at(self) -> usize {
        usize::from(self.seq) & 15
    }

    /// Offset of the value (at most 21).
    #[inline]
    fn value_at(self) -> usize {
        usize::from(self.value) & 31
    }
}

impl Before {
    /// `r` written after the records this has seen (and `r` now seen): its fixed part at the
    /// start of `out` (the bytes of `out` past it left undefined); returns that part's length
    /// and the text's or partial's bytes that follow it.
    #[inline]
    pub(super) fn pack<'a>(&mut self, r: &'a Rec, out: &mut [u8; WINDOW]) -> (usize, &'a [u8]) {
        let (kind, value, tail): (u8, u64, &[u8]) = match &r.val {
            Val::Num(x) => return (self.pack_number(r, x.to_bits(), out), &[]),
            Val::Str(text) => (STR, text.len() as u64, text.as_bytes()),
            Val::Part(bytes) => (PART, bytes.len() as u64, bytes),
        };
        (self.pack_fields(r, kind, value, out), tail)
    }

    /// [`Before::pack`] of a record whose value is the number of bits `bits`.
    #[inline]
    fn pack_number(&mut self, r: &Rec, bits: u64, out: &mut [u8; WINDOW]) -> usize {
        // SAME_NUM when it repeats, without a branch on it.
        let kind = NUM | u8::from(bits == self.num);
        self.num = bits;
        self.pack_fields(r, kind, bits, out)
    }

    /// The fixed part of `r` of value kind `kind` and value word `value` (the number's bits, a
    /// length) at the start of `out`; returns its length.
    #[inline]
    fn pack_fields(&mut self, r: &Rec, kind: u8, value: u64, out: &mut [u8; WINDOW]) -> usize {
        let group = if r.group == self.group { 0 } else { group_code(r.group) };
        let time = zigzag(r.time.wrapping_sub(self.time));
        let seq = zigzag(r.seq.wrapping_sub(self.seq) as i64);
        (self.group, self.time, self.seq) = (r.group, r.time, r.seq);
        let control = group | width_code(time) << 2 | width_code(seq) << 4 | kind << 6;
        let layout = LAYOUTS[usize::from(control)];
        // Each word written over the unused bytes of the one before.
        out[0] = control;
        put(out, 1, u64::from(r.group));
        put(out, layout.time_at(), time);
        put(out, layout.seq_at(), seq);
        put(out, layout.value_at(), value);
        usize::from(layout.fixed)
    }

    /// The leading records of `recs` whose values are numbers, packed one after the other at the
    /// start of `out` as long as a window of it is left: how many, and their bytes.
    ///
    /// Why: a batch is nearly all numbers, and a loop over them that needs no buffer grown and
    /// no tail copied keeps the records before in registers.
    pub(super) fn pack_numbers(&mut self, recs: &[Rec], out: &mut [u8]) -> (usize, usize) {
        let mut before = *self;
        let mut at = 0;
        let mut n = 0;
        for r in recs {
            let Val::Num(x) = r.val else { break };
            let Some(window) = out.get_mut(at..).and_then(|o| o.first_chunk_mut::<WINDOW>()) else { break };
            at += before.pack_number(r, x.to_bits(), window);
            n += 1;
        }
        *self = before;
        (n, at)
    }

    /// Group, time and sequence of the record whose window is `w`.
    #[inline]
    fn read_keys(&mut self, w: &[u8; WINDOW], control: u8, layout: Layout) {
        let group = usize::from(control & 3);
        if group != 0 {
            self.group = (word(w, 1) & GROUP_MASKS[group]) as u32;
        }
        let time = word(w, layout.time_at()) & MASKS[usize::from((control >> 2) & 3)];
        self.time = self.time.wrapping_add(unzigzag(time));
        let seq = word(w, layout.seq_at()) & MASKS[usize::from((control >> 4) & 3)];
        self.seq = self.seq.wrapping_add(unzigzag(seq) as u64);
    }

    /// The record at the start of the [`WINDOW`] bytes `w` whose control byte says a number or
    /// the last number again (as [`numbers_ahead`] found it), and its bytes. Any other control
    /// byte is read as the last number again.
    ///
    /// Why: the records of a batch are nearly all numbers with a window of bytes after them;
    /// such a record's fixed part lies within the window whatever its control byte says, so it
    /// is read without a check or a `Result`.
    #[inline]
    pub(super) fn unpack_number(&mut self, w: &[u8; WINDOW]) -> (Rec, usize) {
        let control = w[0];
        let layout = LAYOUTS[usize::from(control)];
        self.read_keys(w, control, layout);
        let num = word(w, layout.value_at());
        if control >> 6 == NUM {
            self.num = num;
        }
        let rec = Rec { group: self.group, time: self.time, seq: self.seq, val: Val::Num(f64::from_bits(self.num)) };
        (rec, usize::from(layout.fixed))
    }

    /// The record of the [`WINDOW`] bytes `w` at the start of `rest` (the batch's bytes from
    /// the record on; `w` is `rest` padded with zeros where it is shorter), and its bytes.
    ///
    /// # Errors
    /// A record longer than `rest`, a text that is not UTF-8.
    pub(super) fn unpack(&mut self, w: &[u8; WINDOW], rest: &[u8]) -> Result<(Rec, usize), String> {
        let control = w[0];
        let layout = LAYOUTS[usize::from(control)];
        self.read_keys(w, control, layout);
        let fixed = usize::from(layout.fixed);
        let (val, at) = match control >> 6 {
            NUM => {
                self.num = word(w, layout.value_at());
                (Val::Num(f64::from_bits(self.num)), fixed)
            }
            SAME_NUM => (Val::Num(f64::from_bits(self.num)), fixed),
            kind => {
                let len = (word(w, layout.value_at()) & 0xffff_ffff) as usize;
                let Some(tail) = rest.get(fixed..).and_then(|t| t.get(..len)) else {
                    return Err(format!("a value of {len} bytes beyond the batch's end"));
                };
                let val = if kind == STR {
                    match std::str::from_utf8(tail) {
                        Ok(text) => Val::Str(text.into()),
                        Err(e) => return Err(format!("a routed text that is not UTF-8: {e}")),
                    }
                } else {
                    Val::Part(tail.into())
                };
                (val, fixed + len)
            }
        };
        if at > rest.len() {
            return Err(format!("{at} bytes, {} left in the batch", rest.len()));
        }
        Ok((Rec { group: self.group, time: self.time, seq: self.seq, val }, at))
    }
}

/// `recs` as a batch's bytes ([`super::RecBatch`]'s layout, padded to a multiple of 8) at the
/// start of `out`; returns their length. `out` is grown when it is too short, never shrunk nor
/// cleared: what lies past the batch's bytes is left over from earlier batches.
///
/// Why: a buffer cleared and zeroed again for every batch cost a `memset` of its size per
/// message, most of them far shorter than the buffer.
pub(super) fn write_batch(recs: &[Rec], out: &mut Vec<u8>) -> usize {
    let fixed_parts = 8 + recs.len() * WINDOW;
    if out.len() < fixed_parts {
        out.resize(fixed_parts.max(CHUNK), 0);
    }
    out[..8].copy_from_slice(&(recs.len() as u64).to_le_bytes());
    let mut at = 8;
    let mut before = Before::default();
    let mut i = 0;
    while i < recs.len() {
        let (numbers, len) = before.pack_numbers(&recs[i..], &mut out[at..]);
        (i, at) = (i + numbers, at + len);
        let Some(r) = recs.get(i) else { break };
        // A text or a partial.
        let Some(window) = out.get_mut(at..).and_then(|o| o.first_chunk_mut::<WINDOW>()) else {
            unreachable!("sized for every fixed part")
        };
        let (fixed, tail) = before.pack(r, window);
        at += fixed;
        i += 1;
        // Room for the text and for the fixed parts of the records after it.
        let end = at + tail.len() + (recs.len() - i) * WINDOW;
        if end > out.len() {
            out.resize(end, 0);
        }
        out[at..at + tail.len()].copy_from_slice(tail);
        at += tail.len();
    }
    let padded = at.next_multiple_of(8);
    if out.len() < padded {
        out.resize(padded, 0);
    }
    out[at..padded].fill(0);
    padded
}

/// Bytes of the buffer a batch is first written into (grown when a batch needs more).
const CHUNK: usize = 16 << 10;

/// How many of the next `most` records of a batch's `bytes`, from `at` on, are numbers (or the
/// last number again) each with a whole [`WINDOW`] of bytes from its start, and their bytes:
/// the records [`Before::unpack_numbers`] reads. Their control bytes alone say it.
pub(super) fn numbers_ahead(bytes: &[u8], at: usize, most: usize) -> (usize, usize) {
    let (mut n, mut end) = (0, at);
    while n < most
        && bytes.len().saturating_sub(end) >= WINDOW
        && let Some(&control) = bytes.get(end)
        && control >> 6 <= SAME_NUM
    {
        end += usize::from(LAYOUTS[usize::from(control)].fixed);
        n += 1;
    }
    (n, end - at)
}

impl Before {
    /// The `n` records of `bytes` from `at` on that [`numbers_ahead`] counted, appended to `out`.
    ///
    /// Why: counted first, the records are written into the vector's room with one reservation
    /// (an exact-length `extend`), not a check of its room a record; and the records before,
    /// moved into the closure, stay in registers (borrowed, they were loaded and stored through
    /// memory a record: the vector's writes might have reached them).
    pub(super) fn unpack_numbers(&mut self, bytes: &[u8], at: usize, n: usize, out: &mut Vec<Rec>) {
        let (mut before, mut at) = (*self, at);
        out.extend((0..n).map(move |_| {
            let window = bytes.get(at..).and_then(|rest| rest.first_chunk::<WINDOW>()).unwrap_or(&[0; WINDOW]);
            let (rec, len) = before.unpack_number(window);
            at += len;
            rec
        }));
        // The last record read is the record before the next, and its number the last number.
        if n > 0
            && let Some(Rec { group, time, seq, val: Val::Num(x) }) = out.last()
        {
            *self = Before { group: *group, time: *time, seq: *seq, num: x.to_bits() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(recs: &[Rec]) -> Vec<u8> {
        let (mut sender, mut receiver) = (Before::default(), Before::default());
        let mut bytes = Vec::new();
        for r in recs {
            let mut w = [0u8; WINDOW];
            let (fixed, tail) = sender.pack(r, &mut w);
            let at = bytes.len();
            bytes.extend_from_slice(&w[..fixed]);
            bytes.extend_from_slice(tail);
            let mut read = [0u8; WINDOW];
            let n = (bytes.len() - at).min(WINDOW);
            read[..n].copy_from_slice(&bytes[at..at + n]);
            let (back, len) = receiver.unpack(&read, &bytes[at..]).expect("unpack");
            assert_eq!((&back, len), (r, fixed + tail.len()));
        }
        bytes
    }

    /// A run of one group with close times and sequences takes a few bytes a record: a control
    /// byte, one byte each of time and sequence, the number (none when it repeats).
    #[test]
    fn a_run_of_one_group_takes_a_few_bytes_a_record() {
        let rec = |seq: u64, x: f64| Rec { group: 300, time: 1_000 + seq as i64, seq, val: Val::Num(x) };
        let recs = [rec(5, 1.5), rec(6, 1.5), rec(9, 2.5), rec(7, 2.5)];
        let bytes = round_trip(&recs);
        // The first: control, group in 2 bytes, time in 2, sequence in 1, number; then control,
        // time, sequence (+ the number that changed).
        assert_eq!(bytes.len(), (1 + 2 + 2 + 1 + 8) + 3 + (3 + 8) + 3);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(unzigzag(zigzag(i64::MIN)), i64::MIN);
    }

    /// The widest differences and every kind of value come back as they were.
    #[test]
    fn extremes_come_back_as_they_were() {
        let recs = [
            Rec { group: u32::MAX, time: i64::MIN, seq: u64::MAX, val: Val::Num(f64::MIN_POSITIVE) },
            Rec { group: 0, time: i64::MAX, seq: 0, val: Val::Num(-0.0) },
            Rec { group: 70_000, time: 0, seq: 1 << 40, val: Val::Str("Ünïcödé ✓".into()) },
            Rec { group: 255, time: -1, seq: 1 << 40, val: Val::Part(vec![0, 255].into()) },
            Rec { group: 256, time: -1, seq: 3, val: Val::Str("".into()) },
        ];
        let bytes = round_trip(&recs);
        assert_eq!(bytes[0] & 3, 3, "a group in 4 bytes");
        assert_eq!((bytes[0] >> 2) & 3, 3, "a time difference in 8 bytes");
    }

    /// The first record of a batch whose control byte is `control`: the smallest group,
    /// time and sequence of each width, a number, the number before (`0.0`), a text, a partial.
    fn first_record_of(control: usize) -> Rec {
        let z = |code: usize| [1u64, 0x100, 0x1_0000, 1 << 32][code];
        Rec {
            group: [0, 1, 0x100, 0x1_0000][control & 3],
            time: unzigzag(z((control >> 2) & 3)),
            seq: unzigzag(z((control >> 4) & 3)) as u64,
            val: match control >> 6 {
                0 => Val::Num(1.5),
                1 => Val::Num(0.0),
                2 => Val::Str("ab".into()),
                _ => Val::Part(vec![1, 2].into()),
            },
        }
    }

    /// Every control byte: the record packed under it says so, its bytes are its fields' widths,
    /// and it is read back whatever the bytes after it (the masks keep them out), by the number
    /// path where it is a number and by the checked path always.
    #[test]
    fn every_control_byte_is_read_back_within_its_layout() {
        for control in 0..256 {
            let rec = first_record_of(control);
            let mut w = [0xa5u8; WINDOW];
            let (fixed, tail) = Before::default().pack(&rec, &mut w);
            assert_eq!(usize::from(w[0]), control, "{rec:?}");
            let widths = [0, 1, 2, 4][control & 3]
                + (1 << ((control >> 2) & 3))
                + (1 << ((control >> 4) & 3))
                + [8, 0, 4, 4][control >> 6];
            assert_eq!(fixed, 1 + widths, "control {control:#04x}");
            assert_eq!(usize::from(LAYOUTS[control].fixed), fixed);
            // The bytes after the fixed part: the tail, then bytes of no record.
            let mut bytes = w[..fixed].to_vec();
            bytes.extend_from_slice(tail);
            bytes.resize(bytes.len() + WINDOW, 0x5a);
            let window = bytes.first_chunk::<WINDOW>().expect("a window");
            let (back, len) = Before::default().unpack(window, &bytes).expect("unpack");
            assert_eq!((&back, len), (&rec, fixed + tail.len()), "control {control:#04x}");
            if control >> 6 <= usize::from(SAME_NUM) {
                assert_eq!(numbers_ahead(&bytes, 0, 1), (1, fixed), "control {control:#04x}");
                assert_eq!(Before::default().unpack_number(window), (rec.clone(), fixed), "control {control:#04x}");
                let mut read = Vec::new();
                Before::default().unpack_numbers(&bytes, 0, 1, &mut read);
                assert_eq!(read, [rec], "control {control:#04x}");
            } else {
                assert_eq!(numbers_ahead(&bytes, 0, 1), (0, 0), "control {control:#04x}");
            }
        }
        assert_eq!(LAYOUTS.iter().map(|l| usize::from(l.fixed)).max(), Some(MAX_FIXED));
        assert!(LAYOUTS.iter().all(|l| l.time_at() + 8 <= WINDOW && l.seq_at() + 8 <= WINDOW));
        assert!(LAYOUTS.iter().all(|l| usize::from(l.value) == l.value_at()));
        assert_eq!(LAYOUTS.iter().map(|l| usize::from(l.fixed)).min(), Some(MIN_RECORD));
    }

    /// The width codes are the bytes a difference needs, at each boundary.
    #[test]
    fn width_codes_are_the_bytes_a_difference_needs() {
        let cases = [(0, 0), (0xff, 0), (0x100, 1), (0xffff, 1), (0x1_0000, 2), (u64::from(u32::MAX), 2)];
        for (z, code) in cases.into_iter().chain([(1 << 32, 3), (u64::MAX, 3)]) {
            assert_eq!(width_code(z), code, "{z:#x}");
        }
        assert_eq!([0xff, 0x100, 0xffff, 0x1_0000].map(group_code), [1, 2, 2, 3]);
    }

    /// The numbers ahead stop at the count asked for, at a text and where less than a window is
    /// left; packed numbers stop at a text and where less than a window of room is left.
    #[test]
    fn numbers_ahead_stop_at_a_text_and_at_the_last_window() {
        // Numbers that change: 8 bytes each.
        let num = |seq: u64| Rec { group: 1, time: 2, seq, val: Val::Num(seq as f64 + 0.5) };
        let mut recs: Vec<Rec> = (0..10).map(num).collect();
        recs.insert(4, Rec { group: 1, time: 2, seq: 4, val: Val::Str("t".into()) });
        let mut out = vec![0u8; recs.len() * WINDOW];
        let mut sender = Before::default();
        let (n, len) = sender.pack_numbers(&recs, &mut out);
        assert_eq!(n, 4);
        assert_eq!(len, (1 + 1 + 1 + 1 + 8) + 3 * (1 + 1 + 1 + 8));
        let text = out[len..].first_chunk_mut::<WINDOW>().expect("room");
        assert_eq!(sender.pack(&recs[4], text), (1 + 1 + 1 + 4, &b"t"[..]));
        assert_eq!(numbers_ahead(&out, 0, 10), (4, len));
        assert_eq!(numbers_ahead(&out, 0, 3), (3, len - 11));
        // Read on from the records before: the fourth after the first three.
        let (mut before, mut read) = (Before::default(), Vec::new());
        before.unpack_numbers(&out, 0, 3, &mut read);
        before.unpack_numbers(&out, len - 11, 1, &mut read);
        assert_eq!(read, recs[..4]);
        // Records of 12 and 11 bytes at 0, 12 and 23 have their windows in 23 + WINDOW bytes (the
        // fourth's, at 34, would end past them).
        assert_eq!(Before::default().pack_numbers(&recs, &mut out[..23 + WINDOW]).0, 3);
        assert_eq!(numbers_ahead(&out[..12 + WINDOW], 0, 10), (2, 23));
        assert_eq!(numbers_ahead(&out[..WINDOW - 1], 0, 10), (0, 0));
    }
}
