//! [`RecBatch`]: the container of routed records that crosses the update operator's exchange,
//! with bytes between processes written by hand.
//!
//! Why: a `Vec<Rec>` crosses processes through timely's blanket `ContainerBytes`, which runs
//! bincode over the vector twice (once to measure it, once to write it) and once more to read
//! it, a serde call chain per record each time: ~114 instructions a tuple of a `-n 2 -w 1` job
//! on the paper's workload (about a third of what the second process added per tuple). Here a
//! batch is measured from its records' lengths and written and read in one pass of fixed-layout
//! records ([`super::wire`]).
//!
//! Layout (little-endian): the record count `u64`, then per record its length `u32` and its
//! [`super::wire`] bytes; zero bytes up to a multiple of 8 (timely's framing).

use std::io::Write;

use timely::Accountable;
use timely::bytes::arc::Bytes;
use timely::dataflow::channels::ContainerBytes;

use super::pool;
use super::wire::{MIN_LEN, NUM_LEN, decode, decode_num, encode_into, encoded_len, write_num};
use super::{Rec, Val};

/// Routed records in one container: what the reader sent, as the update operator takes it.
///
/// Dropped (timely drops every container it delivered or wrote to another process), its
/// vector goes to the thread's [`pool`], where the next container decoded or filled here
/// takes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecBatch(pub Vec<Rec>);

impl Drop for RecBatch {
    fn drop(&mut self) {
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

/// Bytes of the count and of each record's length.
const COUNT: usize = 8;
const LEN: usize = 4;

/// A number's length, as written before it.
const NUM_LEN_BYTES: [u8; LEN] = (NUM_LEN as u32).to_le_bytes();

/// Records are written through a buffer of this many bytes (a few writes per message, not one
/// per record).
const CHUNK: usize = 8 << 10;

impl RecBatch {
    /// The batch's bytes before the padding.
    fn unpadded_len(&self) -> usize {
        COUNT + self.0.iter().map(|r| LEN + encoded_len(r)).sum::<usize>()
    }

    /// The records of `bytes` (a batch's layout).
    ///
    /// # Errors
    /// Bytes that are no batch: what is wrong, and where.
    pub fn decode(bytes: &[u8]) -> Result<RecBatch, String> {
        let count = bytes.get(..COUNT).ok_or_else(|| format!("a routed batch of {} bytes", bytes.len()))?;
        let count = u64::from_le_bytes(count.try_into().unwrap_or([0; COUNT]));
        // A corrupt count must not allocate more than the bytes can hold.
        let fits = (bytes.len() - COUNT) / (LEN + MIN_LEN);
        let mut recs = pool::take((count as usize).min(fits));
        let mut at = COUNT;
        for i in 0..count {
            let len = bytes.get(at..at + LEN).map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; LEN])));
            let record = len.and_then(|len| bytes.get(at + LEN..at + LEN + len as usize));
            let Some(record) = record else {
                return Err(format!("a routed batch of {count} records ends in record {i} ({} bytes)", bytes.len()));
            };
            let number = <&[u8; NUM_LEN]>::try_from(record).ok().and_then(decode_num);
            let rec = match number {
                Some(rec) => rec,
                None => decode(record).map_err(|e| format!("record {i} of a routed batch: {e}"))?,
            };
            recs.push(rec);
            at += LEN + record.len();
        }
        if bytes[at..].iter().any(|&b| b != 0) || bytes.len() - at >= 8 {
            return Err(format!("a routed batch of {count} records has {} bytes more", bytes.len() - at));
        }
        Ok(RecBatch(recs))
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
        self.unpadded_len().next_multiple_of(8)
    }

    fn into_bytes<W: Write>(&self, writer: &mut W) {
        let mut chunk: Vec<u8> = Vec::with_capacity(CHUNK);
        chunk.extend_from_slice(&(self.0.len() as u64).to_le_bytes());
        let mut written = 0;
        for r in &self.0 {
            if chunk.len() + LEN + NUM_LEN > CHUNK {
                written += chunk.len();
                write_all(writer, &chunk);
                chunk.clear();
            }
            if let Val::Num(_) = r.val {
                let mut num = [0u8; NUM_LEN];
                write_num(r, &mut num);
                chunk.extend_from_slice(&NUM_LEN_BYTES);
                chunk.extend_from_slice(&num);
            } else {
                chunk.extend_from_slice(&(encoded_len(r) as u32).to_le_bytes());
                encode_into(r, &mut chunk);
            }
        }
        written += chunk.len();
        chunk.resize(chunk.len() + (written.next_multiple_of(8) - written), 0);
        write_all(writer, &chunk);
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
        // A number costs its layout and its length: 33 bytes.
        let one = RecBatch(vec![Rec { group: 1, time: 2, seq: 3, val: Val::Num(4.0) }]);
        assert_eq!(one.unpadded_len(), COUNT + LEN + NUM_LEN);
    }

    /// Bytes that are no batch are errors that say what is wrong, not panics or huge allocations.
    #[test]
    fn bytes_that_are_no_batch_are_clear_errors() {
        let batch = RecBatch(vec![Rec { group: 1, time: 2, seq: 3, val: Val::Str("abc".into()) }; 3]);
        let good = bytes_of(&batch);
        assert!(RecBatch::decode(&good[..5]).unwrap_err().contains("of 5 bytes"));
        assert!(RecBatch::decode(&good[..good.len() - 8]).unwrap_err().contains("ends in record 2"));
        let mut many = good.clone();
        many[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(RecBatch::decode(&many).unwrap_err().contains("record 3 of a routed batch"));
        let mut tag = good.clone();
        tag[COUNT + LEN + 20] = 9;
        assert!(
            RecBatch::decode(&tag)
                .unwrap_err()
                .contains("record 0 of a routed batch: a routed value of unknown kind 9")
        );
        let mut more = good.clone();
        more.extend([0u8; 8]);
        assert!(RecBatch::decode(&more).unwrap_err().contains("bytes more"));
    }
}
