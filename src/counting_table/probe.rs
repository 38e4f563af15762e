//! Where each record of a batch ends its probe in a table, found without writing to the table:
//! the first pass of a merge's batch ([`super::merge`]). Counts are added, and new items
//! placed, only once the whole batch has been probed, so no probe's loads wait on the store of
//! a record added just before (a wide load over a slot still being written stalls until the
//! store completes).
//!
//! Sticky Sampling's 16-byte records ([`super::Entry`]) are probed eight slots at a time with
//! AVX2 where the CPU has it (a probe's end is data-dependent, so a loop over the slots
//! mispredicts its exit at random); any other record, or CPU, takes the scalar loop, which
//! ends alike.

#[cfg(target_arch = "x86_64")]
use super::record::Entry;
use super::record::Record;
use super::table::mix;

/// Where the probe for an id ended: the slot holding the id (`found`), or else the first empty
/// slot from its home.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ProbeEnd {
    pub slot: usize,
    pub found: bool,
}

/// The end of the probe for `id` from slot `start` (its home, or a slot past it whose
/// predecessors from the home neither hold the id nor are empty), one slot at a time.
#[inline]
fn probe_end<R: Record>(slots: &[R], id: u64, start: usize) -> ProbeEnd {
    let mask = slots.len() - 1;
    let mut i = start;
    loop {
        let s = slots[i];
        if s.count() == 0 {
            return ProbeEnd { slot: i, found: false };
        }
        if s.id() == id {
            return ProbeEnd { slot: i, found: true };
        }
        i = (i + 1) & mask;
    }
}

/// [`probe_end`] from each record's home, for every record of `batch` (`ends` as long).
pub(super) fn probe_ends_scalar<R: Record>(slots: &[R], batch: &[R], ends: &mut [ProbeEnd]) {
    let mask = slots.len() - 1;
    for (r, end) in batch.iter().zip(ends) {
        *end = probe_end(slots, r.id(), (mix(r.id()) as usize) & mask);
    }
}

/// Where each record of `batch` ends its probe in `slots` (read only), into `ends` (as long as
/// `batch`): Sticky Sampling's records eight slots at a time where the CPU has AVX2 and BMI2,
/// others (or on other CPUs) one slot at a time, as [`probe_ends_scalar`].
pub(super) fn probe_ends<R: Record>(slots: &[R], batch: &[R], ends: &mut [ProbeEnd]) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(slots), Some(batch)) = (R::as_entries(slots), R::as_entries(batch))
        && std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("bmi2")
    {
        // SAFETY: the CPU has AVX2 and BMI2.
        unsafe { avx2::probe_ends(slots, batch, ends) };
        return;
    }
    probe_ends_scalar(slots, batch, ends);
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm256_castsi256_pd, _mm256_cmpeq_epi64, _mm256_loadu_si256, _mm256_movemask_pd, _mm256_set_epi64x,
        _pext_u32,
    };

    use super::{Entry, ProbeEnd, mix, probe_end};

    /// Slots compared at once: four 32-byte loads of two records each.
    const WIDTH: usize = 8;

    /// [`super::probe_ends_scalar`], eight slots at a time. Each two-record load is compared
    /// with `[id, 0, id, 0]`, which sets bit `2j` of a mask where slot `j` holds the id and bit
    /// `2j + 1` where it is empty (an empty slot's id word may equal the id: 0). The probe ends
    /// at the first slot that holds the id or is empty, found or not without a branch (it is,
    /// at random, about every other record of a merge); eight slots with neither, or that
    /// wrap past the table's end, go on one slot at a time.
    ///
    /// # Safety
    /// The CPU must have AVX2 and BMI2.
    #[target_feature(enable = "avx2,bmi2")]
    pub(super) unsafe fn probe_ends(slots: &[Entry], batch: &[Entry], ends: &mut [ProbeEnd]) {
        // An `Entry` is two words, id then count (`#[repr(C)]`): a 32-byte load reads two.
        const _: () = assert!(std::mem::size_of::<Entry>() == 16 && std::mem::offset_of!(Entry, count) == 8);
        let mask = slots.len() - 1;
        for (r, end) in batch.iter().zip(ends.iter_mut()) {
            let id = r.id;
            let home = (mix(id) as usize) & mask;
            if home + WIDTH <= slots.len() {
                let key = _mm256_set_epi64x(0, id as i64, 0, id as i64);
                let at = slots[home..home + WIDTH].as_ptr().cast::<__m256i>();
                let mut bits = 0u32;
                for k in 0..WIDTH / 2 {
                    // SAFETY: the eight slots from `home` are in bounds (checked above, and
                    // `at` is their slice's start); an unaligned load needs no alignment.
                    let pair = unsafe { _mm256_loadu_si256(at.add(k)) };
                    let eq = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(pair, key)));
                    bits |= (eq as u32) << (4 * k);
                }
                // A bit a slot: `empty` from the odd bits, `holds` from the even ones.
                let empty = _pext_u32(bits, 0xAAAA);
                let holds = _pext_u32(bits, 0x5555) & !empty;
                if (holds | empty) != 0 {
                    let j = (holds | empty).trailing_zeros() as usize;
                    *end = ProbeEnd { slot: home + j, found: holds >> j & 1 != 0 };
                    continue;
                }
            }
            *end = probe_end(slots, id, home);
        }
    }
}
