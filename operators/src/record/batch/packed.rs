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
//! Only processes of the same job read it.

use saams::codec::{unzigzag, zigzag};

use super::{Rec, Val};

/// Bytes of a record's widest fixed part: control, group, time, sequence, and a number (or a
/// text's length). Every field is read and written as 8 bytes at its offset, masked to its width,
/// so a field never reaches beyond this.
pub(super) const WINDOW: usize = 1 + 4 + 8 + 8 + 8;

/// Bytes of the shortest record: control, time and sequence in one byte each.
pub(super) const MIN_RECORD: usize = 3;

const NUM: u8 = 0;
const SAME_NUM: u8 = 1;
const STR: u8 = 2;
const PART: u8 = 3;

/// The fields of the record before, which the next is written against (the same on both sides).
#[derive(Default)]
pub(super) struct Before {
    group: u32,
    time: i64,
    seq: u64,
    /// The bits of the last number.
    num: u64,
}

/// A record as it is written: its control byte, its fields as numbers, the bytes of its fixed
/// part, and the text's or partial's bytes that follow it.
pub(super) struct Packed<'a> {
    control: u8,
    group: u64,
    time: u64,
    seq: u64,
    /// The number's bits, or the text's or partial's length.
    value: u64,
    /// Bytes of control and fields (up to [`WINDOW`]).
    pub(super) fixed: usize,
    /// A text's or partial's bytes.
    pub(super) tail: &'a [u8],
}

/// The code (`0..=3`) of the 1, 2, 4 or 8 bytes that hold `z`.
#[inline]
fn width_code(z: u64) -> u8 {
    u8::from(z > 0xff) + u8::from(z > 0xffff) + u8::from(z > 0xffff_ffff)
}

/// The low `bytes` bytes of a word (`bytes` in `1..=8`).
#[inline]
fn low(word: u64, bytes: usize) -> u64 {
    word & (u64::MAX >> (64 - 8 * bytes))
}

impl Before {
    /// `r` as it is written after the records this has seen (and `r` now seen).
    #[inline]
    pub(super) fn pack<'a>(&mut self, r: &'a Rec) -> Packed<'a> {
        let group_code =
            if r.group == self.group { 0 } else { 1 + u8::from(r.group > 0xff) + u8::from(r.group > 0xffff) };
        let time = zigzag(r.time.wrapping_sub(self.time));
        let seq = zigzag(r.seq.wrapping_sub(self.seq) as i64);
        let (time_code, seq_code) = (width_code(time), width_code(seq));
        let fixed = 1 + ((1usize << group_code) >> 1) + (1usize << time_code) + (1usize << seq_code);
        (self.group, self.time, self.seq) = (r.group, r.time, r.seq);
        let (kind, value, fixed, tail): (u8, u64, usize, &[u8]) = match &r.val {
            Val::Num(x) if x.to_bits() == self.num => (SAME_NUM, 0, fixed, &[]),
            Val::Num(x) => {
                self.num = x.to_bits();
                (NUM, self.num, fixed + 8, &[])
            }
            Val::Str(text) => (STR, text.len() as u64, fixed + 4, text.as_bytes()),
            Val::Part(bytes) => (PART, bytes.len() as u64, fixed + 4, bytes),
        };
        let control = group_code | time_code << 2 | seq_code << 4 | kind << 6;
        Packed { control, group: u64::from(r.group), time, seq, value, fixed, tail }
    }

    /// The record of the [`WINDOW`] bytes `w` at the start of `rest` (the batch's bytes from
    /// the record on; `w` is `rest` padded with zeros where it is shorter), and its bytes.
    ///
    /// # Errors
    /// A record longer than `rest`, a text that is not UTF-8.
    #[inline]
    pub(super) fn unpack(&mut self, w: &[u8; WINDOW], rest: &[u8]) -> Result<(Rec, usize), String> {
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&w[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let control = w[0];
        let mut at = 1;
        let group_bytes = (1usize << (control & 3)) >> 1;
        if group_bytes > 0 {
            self.group = low(word(at), group_bytes) as u32;
            at += group_bytes;
        }
        let time_bytes = 1usize << ((control >> 2) & 3);
        self.time = self.time.wrapping_add(unzigzag(low(word(at), time_bytes)));
        at += time_bytes;
        let seq_bytes = 1usize << ((control >> 4) & 3);
        self.seq = self.seq.wrapping_add(unzigzag(low(word(at), seq_bytes)) as u64);
        at += seq_bytes;
        let val = match control >> 6 {
            NUM => {
                self.num = word(at);
                at += 8;
                Val::Num(f64::from_bits(self.num))
            }
            SAME_NUM => Val::Num(f64::from_bits(self.num)),
            kind => {
                let len = low(word(at), 4) as usize;
                at += 4;
                let Some(tail) = rest.get(at..).and_then(|t| t.get(..len)) else {
                    return Err(format!("a value of {len} bytes beyond the batch's end"));
                };
                at += len;
                if kind == STR {
                    match std::str::from_utf8(tail) {
                        Ok(text) => Val::Str(text.into()),
                        Err(e) => return Err(format!("a routed text that is not UTF-8: {e}")),
                    }
                } else {
                    Val::Part(tail.into())
                }
            }
        };
        if at > rest.len() {
            return Err(format!("{at} bytes, {} left in the batch", rest.len()));
        }
        Ok((Rec { group: self.group, time: self.time, seq: self.seq, val }, at))
    }
}

impl Packed<'_> {
    /// The record's bytes: its fixed part into `out` (whose bytes past [`Packed::fixed`] it
    /// leaves undefined), then [`Packed::tail`].
    #[inline]
    pub(super) fn write_fixed(&self, out: &mut [u8; WINDOW]) {
        let mut put = |at: usize, word: u64| out[at..at + 8].copy_from_slice(&word.to_le_bytes());
        put(0, u64::from(self.control));
        let mut at = 1;
        put(at, self.group);
        at += (1usize << (self.control & 3)) >> 1;
        put(at, self.time);
        at += 1usize << ((self.control >> 2) & 3);
        put(at, self.seq);
        at += 1usize << ((self.control >> 4) & 3);
        put(at, self.value);
    }

    /// Bytes of the whole record.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.fixed + self.tail.len()
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
    for (i, r) in recs.iter().enumerate() {
        let packed = before.pack(r);
        let Some(window) = out[at..].first_chunk_mut::<WINDOW>() else { unreachable!("sized for every fixed part") };
        packed.write_fixed(window);
        at += packed.fixed;
        if !packed.tail.is_empty() {
            // Room for the text and for the fixed parts of the records after it.
            let end = at + packed.tail.len() + (recs.len() - i) * WINDOW;
            if end > out.len() {
                out.resize(end, 0);
            }
            out[at..at + packed.tail.len()].copy_from_slice(packed.tail);
            at += packed.tail.len();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(recs: &[Rec]) -> Vec<u8> {
        let (mut sender, mut receiver) = (Before::default(), Before::default());
        let mut bytes = Vec::new();
        for r in recs {
            let packed = sender.pack(r);
            let mut w = [0u8; WINDOW];
            packed.write_fixed(&mut w);
            let at = bytes.len();
            bytes.extend_from_slice(&w[..packed.fixed]);
            bytes.extend_from_slice(packed.tail);
            assert_eq!(bytes.len() - at, packed.len());
            let mut read = [0u8; WINDOW];
            let n = (bytes.len() - at).min(WINDOW);
            read[..n].copy_from_slice(&bytes[at..at + n]);
            let (back, len) = receiver.unpack(&read, &bytes[at..]).expect("unpack");
            assert_eq!((&back, len), (r, packed.len()));
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
}
