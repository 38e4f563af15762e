//! Striped byte ranges: how a long file is shared by workers that read side by side in event time.
//!
//! Why: a time-ordered file cut into `U` consecutive ranges has range `k` start where range
//! `k - 1` ends in event time. A worker given a later range cannot route it until the job's
//! frontier gets there (its windows would stay open, its values wait in the reorder buffers), so
//! it waited: at `-w 2` on a 2 M-line file of four ranges, about 1,000 of ~1,380 read rounds read
//! nothing and `-w 2` ran 1.3× `-w 1`. Here the file is cut into stripes (2 MiB over the units,
//! within [`MIN_STRIPE_BYTES`] and [`STRIPE_BYTES`]), and unit `k` of `U` reads stripes `k`,
//! `k + U`, `k + 2U`, … in order: the units' positions stay within `U` stripes of each other,
//! so every worker reads at once.
//!
//! What a stripe holds is what a byte range holds: the lines that start in it. The lines of a
//! unit get as their sequence number their byte offset in the file and, above it, the index of
//! the file's first unit ([`Stripes::units_before`]), so tuples of equal event time keep the
//! file's order whatever the number of units or workers.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// The most bytes a stripe holds (1 MiB is ~8,000 reference lines): files whose ranges are no
/// longer are read in those ranges. A little less than the line reader's 1 MiB block, so that
/// a stripe and its last line are read in one block: a stripe of a whole block left a short
/// block for its last line, and a short block's buffer, coming round as the one read into, was
/// zeroed to a block's length again (a 1 MiB `memset` per stripe, 4 % of a run's samples).
/// (16 KiB less: a stripe, its last line and the reads past it fit a block.)
pub const STRIPE_BYTES: u64 = (1 << 20) - (16 << 10);

/// Bytes read past a stripe's end with it (its last line ends there unless it is longer), and
/// at a time after that. Why this small: every byte read past the stripe's end is read again
/// by the unit holding the next stripe; at 8 KiB, a 637 MB file in ~208 KB stripes was read
/// 4 % over (the kernel's read copy is a quarter of a `-w 1` run); a reference line is ~127
/// bytes.
pub(super) const TAIL_READ: usize = 1024;

/// How many bytes apart a file's units start, at most (while their stripes are at least
/// [`MIN_STRIPE_BYTES`]): the stripes are this divided by the units. Why: a worker's units
/// reach the reorder buffers in time order, but two workers' do not, and the further apart
/// they are the more the buffers sort and hold; at `-w 2` on a 635 MB file of ten units,
/// stripes of 1 MiB (units 10 MiB apart) ran 1.1x `-w 1`, of 400 kB 1.3x, of 150 kB 1.5x.
pub const UNITS_SPREAD_BYTES: u64 = 2 << 20;

/// The least bytes a stripe holds: moving to the next stripe costs a file open, a seek and the
/// stripe's partial first line (at 64 KiB the 635 MB file took 20 % more CPU than at 150 kB).
pub const MIN_STRIPE_BYTES: u64 = 128 << 10;

/// One unit's stripes of a file of `len` bytes: `[first + i·stride, … + size)` for `i = 0, 1, …`
/// while the start is inside the file (the last stripe of the file may be shorter).
///
/// ```
/// use saams_jobs::source::stripes::Stripes;
/// // A 10-byte file in stripes of 2 bytes shared by 2 units: unit 1 reads [2,4), [6,8).
/// let unit1 = Stripes { first: 2, size: 2, stride: 4, len: 10 };
/// assert_eq!(unit1.starts().collect::<Vec<_>>(), [2, 6]);
/// assert_eq!(unit1.stripe_at(5), Some((6, 8)), "after a stripe's end: the next stripe");
/// assert_eq!(unit1.stripe_at(3), Some((2, 4)));
/// assert_eq!(unit1.stripe_at(8), None, "past the unit's last stripe");
/// assert_eq!(unit1.bytes_after(2), 2);
/// let unit0 = Stripes { first: 0, size: 2, stride: 4, len: 10 };
/// assert_eq!(unit0.starts().collect::<Vec<_>>(), [0, 4, 8]);
/// assert_eq!(unit0.units_before(), 0);
/// assert_eq!(unit1.units_before(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stripes {
    /// Where the unit's first stripe starts.
    pub first: u64,
    /// A stripe's length.
    pub size: u64,
    /// From one of the unit's stripes to its next: `size` times the file's units.
    pub stride: u64,
    /// The file's length when it was cut.
    pub len: u64,
}

impl Stripes {
    /// The stripes of a file of `len` bytes cut into `units` units (`units ≥ 2`, and `len` more
    /// than `units` stripes of [`STRIPE_BYTES`]): one per unit, stripe `k` of each round for unit
    /// `k`, of [`UNITS_SPREAD_BYTES`] over the units (within [`MIN_STRIPE_BYTES`] and
    /// [`STRIPE_BYTES`]).
    pub fn of_file(len: u64, units: u64) -> Vec<Stripes> {
        let spread = (UNITS_SPREAD_BYTES / units.max(1)).clamp(MIN_STRIPE_BYTES, STRIPE_BYTES);
        let size = len.div_ceil(units).min(spread);
        (0..units)
            .map(|k| Stripes { first: k * size, size, stride: units * size, len })
            .filter(|s| s.first < len)
            .collect()
    }

    /// The index of this unit among its file's units: the sequence numbers of all of them share
    /// the first unit's index, so equal times keep the file's order.
    pub fn units_before(&self) -> u64 {
        self.first / self.size.max(1)
    }

    /// The starts of the unit's stripes.
    pub fn starts(&self) -> std::iter::StepBy<std::ops::Range<u64>> {
        let (len, stride) = (self.len, self.stride.max(1));
        (self.first..len).step_by(stride as usize)
    }

    /// The end of the stripe starting at `start`.
    pub fn end_of(&self, start: u64) -> u64 {
        (start + self.size).min(self.len)
    }

    /// The stripe a reader positioned at byte `offset` reads on in: the stripe holding it, or,
    /// when `offset` is past a stripe's end (its last line ran on into the next unit's stripe),
    /// the unit's next stripe; `None` when no stripe of the unit is left.
    pub fn stripe_at(&self, offset: u64) -> Option<(u64, u64)> {
        let stride = self.stride.max(1);
        let i = offset.saturating_sub(self.first) / stride;
        let start = self.first + i * stride;
        let start = if offset >= self.end_of(start) { start + stride } else { start };
        (start < self.len).then(|| (start, self.end_of(start)))
    }

    /// Bytes of the unit's stripes after the one starting at `start`.
    pub fn bytes_after(&self, start: u64) -> u64 {
        let next = start + self.stride.max(1);
        if next >= self.len {
            return 0;
        }
        let count = (self.len - next).div_ceil(self.stride.max(1));
        let last = next + (count - 1) * self.stride.max(1);
        (count - 1) * self.size + self.end_of(last) - last
    }
}

/// A file read from `pos` that reads no further than a little past `end` in one read
/// ([`TAIL_READ`]), then in small reads: a line reader's block ends at the stripe's end (the
/// next stripe is another unit's), and only the stripe's last line is read past it.
///
/// Reads are positioned (`pread`) in a file the unit opened once. Why: a unit opened its file,
/// sought and closed it again for every stripe (3,060 `openat` + `lseek` + `close` for a 637 MB
/// file at `-w 1`).
pub(super) struct StripeFile {
    file: Arc<File>,
    pos: u64,
    end: u64,
}

impl StripeFile {
    /// `file` read from byte `pos`, for a stripe ending at `end`.
    pub(super) fn at(file: &Arc<File>, pos: u64, end: u64) -> StripeFile {
        StripeFile { file: Arc::clone(file), pos, end }
    }
}

/// `path` opened for positioned reads (one open file for all of a unit's stripes).
pub(super) fn open_shared(path: &Path) -> Result<Arc<File>, String> {
    File::open(path).map(Arc::new).map_err(|e| format!("{}: {e}", path.display()))
}

impl Read for StripeFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let limit = self.end.saturating_add(TAIL_READ as u64);
        let most = if self.pos < limit { (limit - self.pos).min(buf.len() as u64) as usize } else { TAIL_READ };
        let most = most.min(buf.len());
        let n = self.file.read_at(&mut buf[..most], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte of the file is in exactly one unit's stripes, the stripes of a unit are `units`
    /// apart, and `stripe_at` and `bytes_after` agree with the stripes listed.
    #[test]
    fn stripes_partition_the_file() {
        for (len, units) in [(10u64, 2u64), (5 * STRIPE_BYTES + 7, 3), (7 * STRIPE_BYTES, 7), (3 * STRIPE_BYTES + 1, 2)]
        {
            let all = Stripes::of_file(len, units);
            let mut owner = vec![usize::MAX; len as usize];
            for (u, s) in all.iter().enumerate() {
                let starts: Vec<u64> = s.starts().collect();
                for (i, &a) in starts.iter().enumerate() {
                    for b in a..s.end_of(a) {
                        assert_eq!(owner[b as usize], usize::MAX, "byte {b} twice");
                        owner[b as usize] = u;
                    }
                    assert_eq!(s.stripe_at(a), Some((a, s.end_of(a))));
                    let after: u64 = starts[i + 1..].iter().map(|&x| s.end_of(x) - x).sum();
                    assert_eq!(s.bytes_after(a), after, "len {len} units {units} unit {u} stripe {a}");
                }
                let last = *starts.last().unwrap();
                assert_eq!(s.stripe_at(s.end_of(last)), None);
            }
            assert!(owner.iter().all(|&o| o != usize::MAX), "len {len} units {units}: a byte in no stripe");
        }
    }

    /// A stripe's reader stops its reads at the stripe's end, then reads on in small steps.
    #[test]
    fn reads_stop_at_the_stripe_end() {
        let path = std::env::temp_dir().join(format!("saams-stripe-file-{}", std::process::id()));
        std::fs::write(&path, vec![b'x'; 40_000]).unwrap();
        let mut f = StripeFile::at(&Arc::new(File::open(&path).unwrap()), 100, 1000);
        let mut buf = vec![0; 1 << 16];
        assert_eq!(f.read(&mut buf).unwrap(), 900 + TAIL_READ);
        assert_eq!(f.read(&mut buf).unwrap(), TAIL_READ);
        std::fs::remove_file(&path).unwrap();
    }

    /// Readers of one open file at different places read their own bytes, however their reads
    /// interleave (positioned reads: the file's shared offset is never used).
    #[test]
    fn readers_of_one_open_file_keep_their_own_positions() {
        let path = std::env::temp_dir().join(format!("saams-stripe-shared-{}", std::process::id()));
        let bytes: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = open_shared(&path).unwrap();
        let (mut a, mut b) = (StripeFile::at(&file, 0, 20_000), StripeFile::at(&file, 20_000, 50_000));
        let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
        let mut buf = [0u8; 777];
        for _ in 0..200 {
            let n = a.read(&mut buf).unwrap();
            got_a.extend_from_slice(&buf[..n]);
            let n = b.read(&mut buf[..333]).unwrap();
            got_b.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got_a, bytes[..got_a.len()], "reader from 0");
        assert_eq!(got_b, bytes[20_000..20_000 + got_b.len()], "reader from 20,000");
        assert!(got_a.len() > 20_000 && got_b.len() == 30_000, "{} {}", got_a.len(), got_b.len());
        std::fs::remove_file(&path).unwrap();
    }
}
