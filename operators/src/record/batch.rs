//! [`RecBatch`]: the container of routed records that crosses the update operator's exchange,
//! with bytes between processes written by hand.
//!
//! Why: a `Vec<Rec>` crosses processes through timely's blanket `ContainerBytes`, which runs
//! bincode over the vector twice (once to measure it, once to write it) and once more to read
//! it, a serde call chain per record each time: ~114 instructions a tuple of a `-n 2 -w 1` job
//! on the paper's workload (about a third of what the second process added per tuple). Here a
//! batch is packed once, when timely measures it, and read in one pass: each record written
//! against the one before it ([`packed`]), ~12 bytes a record of that workload where one
//! record's own layout took 33. Both sides run the batch's numbers (nearly all of its records)
//! through loops of their own: the packer's over the leading numbers into room sized for them,
//! the reader's over the numbers its control bytes say lie a whole window before the end,
//! written into the vector with one reservation; a text, a partial and the last records of a
//! batch take the checked path.
//!
//! Layout (little-endian): the record count `u64`, then the records ([`packed`]); zero bytes up
//! to a multiple of 8 (timely's framing).

use std::cell::RefCell;
use std::io::Write;

use timely::Accountable;
use timely::bytes::arc::Bytes;
use timely::dataflow::channels::ContainerBytes;

use super::pool;
use super::{Rec, Val};

mod packed;

use packed::{Before, MIN_RECORD, WINDOW, numbers_ahead, write_batch};

/// Routed records in one container: what the reader sent, as the update operator takes it.
///
/// Dropped (timely drops every container it delivered or wrote to another process), its
/// vector goes to the thread's [`pool`], where the next container decoded or filled here
/// takes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecBatch(pub Vec<Rec>);

impl Drop for RecBatch {
    fn drop(&mut self) {
        // Bytes kept for this batch are no batch's once its vector may hold another.
        let _ = WRITTEN.try_with(|w| {
            if let Ok(mut w) = w.try_borrow_mut()
                && w.batch == Some(self.identity())
            {
                w.batch = None;
            }
        });
        pool::give_back(std::mem::take(&mut self.0));
    }
}

impl Accountable for RecBatch {
    #[inline]
    fn record_count(&self) -> i64 {
        i64::try_from(self.0.len()).unwrap_or(i64::MAX)
    }
    #[inline]
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Bytes of the count.
const COUNT: usize = 8;

/// A batch's bytes as [`ContainerBytes::length_in_bytes`] wrote them, for the
/// [`ContainerBytes::into_bytes`] that follows it.
///
/// Why: timely measures a message and then writes it (`Pusher::push`: `length_in_bytes`, then
/// `into_bytes`, on the same borrowed container), and this layout's length is known only once
/// every record has been packed: packed once and kept, the records are not packed twice.
/// (Measured by a pass that only adds up widths, the records would be packed once and a half:
/// that pass needs every difference, width and comparison the packing does, and `into_bytes`,
/// generic over its writer, would still copy what it packs, through a buffer of its own.) The
/// bytes kept are used once, by the next `into_bytes` of the same vector of the same length (a
/// batch cannot change while timely borrows it for both), and forgotten when that batch is
/// dropped, so a later batch in the same allocation never finds them.
struct Written {
    /// Which batch: its vector's address and length; `None` once written out.
    batch: Option<(usize, usize)>,
    /// The batch's bytes at the start, then what earlier batches left.
    bytes: Vec<u8>,
    /// Bytes of the batch.
    len: usize,
}

/// Bytes above which the kept buffer is freed after a batch (a batch of large texts or
/// partials), so a thread keeps at most this much.
const MAX_KEPT_BYTES: usize = 1 << 20;

thread_local! {
    static WRITTEN: RefCell<Written> = const { RefCell::new(Written { batch: None, bytes: Vec::new(), len: 0 }) };
}

impl RecBatch {
    /// The batch's bytes before the padding.
    #[cfg(test)]
    fn unpadded_len(&self) -> usize {
        let mut before = Before::default();
        let mut window = [0u8; WINDOW];
        COUNT
            + self
                .0
                .iter()
                .map(|r| {
                    let (fixed, tail) = before.pack(r, &mut window);
                    fixed + tail.len()
                })
                .sum::<usize>()
    }

    /// Which batch this is, to [`Written`]: its records' address and number (the records
    /// cannot change between the two calls, which borrow them both).
    fn identity(&self) -> (usize, usize) {
        (self.0.as_ptr() as usize, self.0.len())
    }

    /// The records of `bytes` (a batch's layout).
    ///
    /// # Errors
    /// Bytes that are no batch: what is wrong, and where.
    pub fn decode(bytes: &[u8]) -> Result<RecBatch, String> {
        let count = bytes.first_chunk::<COUNT>().ok_or_else(|| format!("a routed batch of {} bytes", bytes.len()))?;
        let count = u64::from_le_bytes(*count);
        // A corrupt count must not allocate more than the bytes can hold.
        let fits = (bytes.len() - COUNT) / MIN_RECORD;
        let mut recs = RecBatch(pool::take((count as usize).min(fits)));
        let mut before = Before::default();
        let mut at = COUNT;
        let mut i = 0;
        while i < count {
            // Numbers with a whole window of bytes left: counted, then read without a check.
            let (numbers, len) = numbers_ahead(bytes, at, usize::try_from(count - i).unwrap_or(usize::MAX));
            before.unpack_numbers(bytes, at, numbers, &mut recs.0);
            (i, at) = (i + numbers as u64, at + len);
            if i == count {
                break;
            }
            // A text, a partial, or one of the last records: checked against the bytes left,
            // its fixed part read from a copy padded with zeros where the bytes end.
            let rest = &bytes[at..];
            let mut tail = [0u8; WINDOW];
            let window = match rest.first_chunk::<WINDOW>() {
                Some(window) => window,
                None => {
                    tail[..rest.len()].copy_from_slice(rest);
                    &tail
                }
            };
            match before.unpack(window, rest) {
                Ok((rec, len)) => {
                    recs.0.push(rec);
                    at += len;
                    i += 1;
                }
                Err(e) => {
                    return Err(format!(
                        "a routed batch of {count} records ends in record {i} ({} bytes): {e}",
                        bytes.len()
                    ));
                }
            }
        }
        if bytes[at..].iter().any(|&b| b != 0) || bytes.len() - at >= 8 {
            return Err(format!("a routed batch of {count} records has {} bytes more", bytes.len() - at));
        }
        Ok(recs)
    }
}

impl ContainerBytes for RecBatch {
    fn from_bytes(bytes: Bytes) -> Self {
        // Only processes of the same job write these bytes; timely's own containers panic on
        // bytes they cannot read, and so does this one, saying what was wrong.
        match RecBatch::decode(&bytes) {
            Ok(batch) => batch,
            Err(e) => panic!("saams: {e}"),
        }
    }

    fn length_in_bytes(&self) -> usize {
        let kept = WRITTEN.try_with(|w| {
            let mut w = w.borrow_mut();
            w.len = write_batch(&self.0, &mut w.bytes);
            w.batch = Some(self.identity());
            w.len
        });
        // At a thread's exit the buffer may be gone: the batch is packed here only to measure it.
        kept.unwrap_or_else(|_| write_batch(&self.0, &mut Vec::new()))
    }

    fn into_bytes<W: Write>(&self, writer: &mut W) {
        let kept = WRITTEN.try_with(|w| {
            let mut w = w.borrow_mut();
            if w.batch.take() != Some(self.identity()) {
                w.len = write_batch(&self.0, &mut w.bytes);
            }
            write_all(writer, &w.bytes[..w.len]);
            if w.bytes.capacity() > MAX_KEPT_BYTES {
                w.bytes = Vec::new();
            }
        });
        if kept.is_err() {
            let mut bytes = Vec::new();
            let len = write_batch(&self.0, &mut bytes);
            write_all(writer, &bytes[..len]);
        }
    }
}

/// Write `bytes` whole: timely sizes its buffers by [`ContainerBytes::length_in_bytes`], so a
/// failure is a bug in that length.
fn write_all<W: Write>(writer: &mut W, bytes: &[u8]) {
    if let Err(e) = writer.write_all(bytes) {
        panic!("saams: a routed batch's {} bytes not written: {e}", bytes.len());
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn bytes_of(batch: &RecBatch) -> Vec<u8> {
        let mut out = Vec::new();
        batch.into_bytes(&mut out);
        out
    }

    /// Every kind of value, the extremes of the fields and an empty batch come back as they were
    /// sent, and the bytes written are the length announced (a multiple of 8).
    #[test]
    fn a_batch_survives_the_wire_and_its_length_is_what_is_written() {
        let vals = [
            Val::Num(-0.0),
            Val::Num(f64::MAX),
            Val::Str("".into()),
            Val::Str("Ünïcödé vessel 367 ✓".into()),
            Val::Part(vec![0, 1, 2, 255].into()),
            Val::Part(Vec::new().into()),
        ];
        let mut recs: Vec<Rec> = vals
            .into_iter()
            .enumerate()
            .map(|(i, val)| Rec { group: u32::MAX - i as u32, time: i64::MIN + i as i64, seq: u64::MAX - 7, val })
            .collect();
        // Enough numbers to need several chunks.
        recs.extend((0..2000u64).map(|i| Rec { group: 7, time: i as i64, seq: i, val: Val::Num(i as f64 / 3.0) }));
        for n in [0, 1, 3, 6, recs.len()] {
            let batch = RecBatch(recs[..n].to_vec());
            let bytes = bytes_of(&batch);
            assert_eq!(bytes.len(), batch.length_in_bytes(), "{n} records");
            assert_eq!(bytes.len() % 8, 0);
            assert_eq!(RecBatch::decode(&bytes).expect("decode"), batch);
            assert_eq!(RecBatch::from_bytes(timely::bytes::arc::BytesMut::from(bytes).freeze()), batch);
        }
        // A run of one group: a control byte, a byte each of time and sequence and the number.
        let run =
            RecBatch((0..4).map(|i| Rec { group: 1, time: 2 + i, seq: 3 + i as u64, val: Val::Num(4.0) }).collect());
        assert_eq!(run.unpadded_len(), COUNT + (1 + 1 + 1 + 1 + 8) + 3 * 3);
    }

    /// A batch is written as it was measured, and another batch, or one written again without
    /// being measured, as it is.
    #[test]
    fn the_bytes_written_are_the_batch_written_whatever_was_measured_before() {
        let rec = |group: u32, x: f64| Rec { group, time: 5, seq: 9, val: Val::Num(x) };
        let a = RecBatch(vec![rec(1, 1.0), rec(1, 2.0)]);
        let b = RecBatch(vec![rec(2, 3.0), rec(3, 4.0)]);
        let write = |batch: &RecBatch| {
            let mut out = Vec::new();
            batch.into_bytes(&mut out);
            RecBatch::decode(&out).expect("decode")
        };
        assert_eq!(a.length_in_bytes(), (8 + 12 + 11usize).next_multiple_of(8));
        assert_eq!(write(&b), b, "measured a, wrote b");
        a.length_in_bytes();
        assert_eq!(write(&a), a);
        assert_eq!(write(&a), a, "again, not measured");
        let mut c = a.clone();
        c.length_in_bytes();
        c.0.pop();
        assert_eq!(write(&c), c, "changed after it was measured");
        // Measured, dropped, and its vector refilled as long by the next batch.
        let d = RecBatch({
            let mut v = pool::take(2);
            v.extend([rec(1, 1.0), rec(1, 2.0)]);
            v
        });
        let at = d.0.as_ptr();
        d.length_in_bytes();
        drop(d);
        let e = RecBatch({
            let mut v = pool::take(2);
            v.extend([rec(4, 5.0), rec(4, 6.0)]);
            v
        });
        assert_eq!(e.0.as_ptr(), at, "the same allocation");
        assert_eq!(write(&e), e);
    }

    /// Bytes that are no batch are errors that say what is wrong, not panics or huge allocations.
    #[test]
    fn bytes_that_are_no_batch_are_clear_errors() {
        // A count far beyond the bytes takes no more room than the bytes could hold (the test's
        // thread starts with no vector kept: the failed batch's is the one kept).
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend([0u8; 16]);
        // A zero control byte: a number, one byte each of time and sequence: 11 bytes, then 5 more.
        assert!(RecBatch::decode(&huge).unwrap_err().contains("ends in record 1"));
        assert!(pool::take(0).capacity() <= 16 / MIN_RECORD);
        let batch = RecBatch(vec![Rec { group: 1, time: 2, seq: 3, val: Val::Str("abc".into()) }; 3]);
        let good = bytes_of(&batch);
        assert!(RecBatch::decode(&good[..5]).unwrap_err().contains("of 5 bytes"));
        assert!(RecBatch::decode(&good[..good.len() - 8]).unwrap_err().contains("ends in record 2"));
        let mut many = good.clone();
        many[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(RecBatch::decode(&many).unwrap_err().contains("ends in record 3"));
        // The first text: control, group, time, sequence, its length, "abc".
        let text = COUNT + 4;
        assert_eq!(&good[text..text + 7], &[3, 0, 0, 0, b'a', b'b', b'c']);
        let mut not_utf8 = good.clone();
        not_utf8[text + 4] = 0xff;
        let e = RecBatch::decode(&not_utf8).unwrap_err();
        assert!(e.contains("ends in record 0") && e.contains("not UTF-8"), "{e}");
        let mut long = good.clone();
        long[text..text + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(RecBatch::decode(&long).unwrap_err().contains("a value of 4294967295 bytes beyond the batch's end"));
        let mut more = good.clone();
        more.extend([0u8; 8]);
        assert!(RecBatch::decode(&more).unwrap_err().contains("bytes more"));
        let mut not_zero = good.clone();
        *not_zero.last_mut().expect("padded") = 1;
        assert!(RecBatch::decode(&not_zero).unwrap_err().contains("1 bytes more"));
    }

    /// A record's fields, numbers as their bits (a NaN is equal to itself here).
    fn fields(r: &Rec) -> (u32, i64, u64, Result<u64, Vec<u8>>) {
        let val = match &r.val {
            Val::Num(x) => Ok(x.to_bits()),
            Val::Str(text) => Err(text.as_bytes().to_vec()),
            Val::Part(bytes) => Err(bytes.to_vec()),
        };
        (r.group, r.time, r.seq, val)
    }

    /// Values of every kind, numbers that repeat and numbers of any bits.
    fn any_val() -> impl Strategy<Value = Val> {
        prop_oneof![
            4 => (0..3u8).prop_map(|x| Val::Num(f64::from(x) / 4.0)),
            4 => any::<u64>().prop_map(|bits| Val::Num(f64::from_bits(bits))),
            1 => ".{0,20}".prop_map(|text: String| Val::Str(text.into())),
            1 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(|b| Val::Part(b.into())),
        ]
    }

    /// Records in runs (a few groups, close times and sequences) and with fields at any extreme.
    fn any_rec() -> impl Strategy<Value = Rec> {
        let group = prop_oneof![0..3u32, any::<u32>()];
        let time = prop_oneof![-3..3i64, any::<i64>(), Just(i64::MIN), Just(i64::MAX)];
        let seq = prop_oneof![0..5u64, any::<u64>(), Just(u64::MAX)];
        (group, time, seq, any_val()).prop_map(|(group, time, seq, val)| Rec { group, time, seq, val })
    }

    proptest! {
        /// Any batch comes back bit for bit, in the length announced.
        #[test]
        fn any_batch_comes_back_as_it_was(recs in proptest::collection::vec(any_rec(), 0..300)) {
            let batch = RecBatch(recs);
            let bytes = bytes_of(&batch);
            prop_assert_eq!(bytes.len(), batch.length_in_bytes());
            prop_assert_eq!(bytes.len() % 8, 0);
            let back = RecBatch::decode(&bytes).expect("decode");
            let (sent, got): (Vec<_>, Vec<_>) = (batch.0.iter().map(fields).collect(), back.0.iter().map(fields).collect());
            prop_assert_eq!(sent, got);
        }

        /// Bytes changed, cut or made up are read or refused, never a panic, and never more
        /// records than the bytes can hold.
        #[test]
        fn damaged_bytes_never_panic(
            recs in proptest::collection::vec(any_rec(), 0..60),
            changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
            cut in any::<prop::sample::Index>(),
            noise in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let mut bytes = bytes_of(&RecBatch(recs));
            for (at, b) in changes {
                let at = at.index(bytes.len());
                bytes[at] = b;
            }
            for damaged in [&bytes[..], &bytes[..cut.index(bytes.len() + 1)], &noise[..]] {
                if let Ok(batch) = RecBatch::decode(damaged) {
                    prop_assert!(batch.0.len() <= damaged.len() / MIN_RECORD);
                }
            }
        }
    }
}
