//! Walking and sorting the records of a table's slots without a mispredicted branch per slot.

use super::record::Record;

/// Records handled at a time by the batched walks and merges: a few kilobytes on the stack.
pub(super) const BATCH: usize = 256;

/// Call `f` with the non-empty records of `slots`, in slot order, a few hundred at a time.
/// Which slots are empty is random, so a branch per slot mispredicts about as often as a table
/// is empty; gathering the records first (every slot copied, the write position advancing only
/// past records) has no such branch.
#[inline]
pub(super) fn for_each_batch<R: Record>(slots: &[R], mut f: impl FnMut(&[R])) {
    let mut buf = [R::default(); BATCH];
    for chunk in slots.chunks(BATCH) {
        let mut w = 0;
        for s in chunk {
            buf[w] = *s;
            w += usize::from(s.count() != 0);
        }
        f(&buf[..w]);
    }
}

/// Sort records by id, as `sort_unstable_by_key(|r| r.id())` does (ids are distinct, so the
/// order is the same): a least-significant-digit radix sort over only the bits where ids differ
/// (numbers' low mantissa bits are mostly zero, their sign and exponent bits alike), in digits
/// of at most 11 bits. It makes the sorts of encoding and of Sticky Sampling's coin tosses
/// several times faster than a comparison sort on tens of thousands of records.
pub(super) fn sort_by_id<R: Record>(records: &mut Vec<R>) {
    const MAX_DIGIT_BITS: u32 = 11;
    if records.len() < 512 {
        records.sort_unstable_by_key(|r| r.id());
        return;
    }
    let first = records[0].id();
    let varying = records.iter().fold(0, |acc, r| acc | (r.id() ^ first));
    let low = varying.trailing_zeros();
    let span = 64 - varying.leading_zeros() - low;
    let passes = span.div_ceil(MAX_DIGIT_BITS) as usize;
    if passes == 0 {
        return;
    }
    let bits = span.div_ceil(passes as u32);
    let (buckets, mask) = (1usize << bits, (1u64 << bits) - 1);
    let digit = |id: u64, pass: usize| ((id >> (low + bits * pass as u32)) & mask) as usize;
    let mut counts = vec![0usize; passes * buckets];
    for r in records.iter() {
        for pass in 0..passes {
            counts[pass * buckets + digit(r.id(), pass)] += 1;
        }
    }
    let mut scratch = vec![R::default(); records.len()];
    for (pass, count) in counts.chunks_exact_mut(buckets).enumerate() {
        if count.contains(&records.len()) {
            continue;
        }
        // Each bucket's count becomes the position of its next record.
        let mut sum = 0;
        for c in count.iter_mut() {
            (*c, sum) = (sum, sum + *c);
        }
        for r in records.iter() {
            let b = digit(r.id(), pass);
            scratch[count[b]] = *r;
            count[b] += 1;
        }
        std::mem::swap(records, &mut scratch);
    }
}
