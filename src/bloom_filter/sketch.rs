//! Construction, sizing, update, merge and queries of the blocked Bloom filter.

use crate::linear_hash::hash_item;
use crate::params::Params;
use crate::{Datum, Estimate, EstimateValue, Kind, Query, Synopsis, SynopsisError, downcast};

/// The seed used when a request gives none, so every filter built from the reference
/// parameters hashes alike and partials from any worker merge.
pub const DEFAULT_SEED: u64 = 0x424C_4F4F_4D46_0003;

/// Bits per block: one 64-byte cache line.
pub const BLOCK_BITS: usize = 512;
/// Most hash positions per value.
pub const MAX_HASHES: u32 = 24;
/// Most blocks a filter may have (2^32 bits, 512 MiB): a guard against parameters that would
/// exhaust memory.
pub const MAX_BLOCKS: usize = 1 << 23;

/// One cache line of filter bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Block(pub(crate) [u64; 8]);

/// A blocked Bloom filter: `blocks` cache lines of 512 bits, `k` bit positions per value, all
/// in the one block the value hashes to.
///
/// Guarantee: [`BloomFilter::contains`] is true for every inserted value (no false
/// negatives, deterministic). For a value never inserted it is true with probability at most
/// `fpp` as long as at most `n` distinct values were inserted: `blocks` and `k` are the
/// smallest filter (fewest blocks, then fewest hashes) whose exact blocked false-positive
/// rate, `Σ_c Poisson(c; n/blocks) · (1 − (1 − 1/512)^(k·c))^k`, is at most `fpp`. That is
/// about 10–15 % more bits than the textbook `m = −n ln(fpp)/ln²2` of an unblocked filter,
/// bought for one cache miss per operation instead of `k`. Merging (bitwise OR) is exact: the
/// guarantee holds for the union while it has at most `n` distinct values.
#[derive(Clone, Debug, PartialEq)]
pub struct BloomFilter {
    expected_items: u64,
    fpp: f64,
    seed: u64,
    hashes: u32,
    blocks: Vec<Block>,
}

/// ln(c!) — exact summation for small c, Stirling's series above.
fn ln_factorial(c: u64) -> f64 {
    if c < 32 {
        (2..=c).map(|i| (i as f64).ln()).sum()
    } else {
        let x = c as f64;
        x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x) - 1.0 / (360.0 * x * x * x)
    }
}

/// The false-positive rate of a blocked filter of `blocks` blocks with `k` hashes holding `n`
/// distinct values: the number of values per block is Poisson(n/blocks), and a block holding
/// `c` values answers "yes" to a new value with probability `(1 − (1 − 1/512)^(k·c))^k`.
pub fn blocked_false_positive_rate(n: u64, blocks: usize, k: u32) -> f64 {
    let lambda = n as f64 / blocks as f64;
    let kf = f64::from(k);
    let ln_q = (1.0 - 1.0 / BLOCK_BITS as f64).ln();
    let fpr_at = |c: f64| (1.0 - (kf * c * ln_q).exp()).powf(kf);
    if lambda > 4096.0 {
        // Blocks are (all but) full; the Poisson spread no longer matters.
        return fpr_at(lambda);
    }
    let spread = 12.0 * lambda.sqrt() + 12.0;
    let lo = (lambda - spread).floor().max(0.0) as u64;
    let hi = (lambda + spread).ceil() as u64;
    let ln_lambda = lambda.ln();
    let mut ln_fact = ln_factorial(lo);
    let mut sum = 0.0;
    for c in lo..=hi {
        if c > lo {
            ln_fact += (c as f64).ln();
        }
        let ln_p = if lambda == 0.0 {
            if c == 0 { 0.0 } else { f64::NEG_INFINITY }
        } else {
            -lambda + c as f64 * ln_lambda - ln_fact
        };
        sum += ln_p.exp() * fpr_at(c as f64);
    }
    sum.min(1.0)
}

/// `(blocks, k)` of the smallest blocked filter meeting `fpp` for `n` values.
pub(crate) fn geometry(n: u64, fpp: f64) -> Result<(usize, u32), SynopsisError> {
    let bad = |reason: String| SynopsisError::BadParameter { kind: Kind::BloomFilter, reason };
    if n == 0 {
        return Err(bad("expected n must be at least 1".into()));
    }
    SynopsisError::unless_fraction(Kind::BloomFilter, "fpp", fpp)?;
    let mut best: Option<(usize, u32)> = None;
    for k in 1..=MAX_HASHES {
        if blocked_false_positive_rate(n, MAX_BLOCKS, k) > fpp {
            continue;
        }
        let upper = best.map_or(MAX_BLOCKS, |(b, _)| b);
        if blocked_false_positive_rate(n, upper, k) > fpp {
            continue;
        }
        // Smallest block count in [1, upper] meeting fpp (the rate falls as blocks grow).
        let (mut lo, mut hi) = (1usize, upper);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if blocked_false_positive_rate(n, mid, k) <= fpp {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if best.is_none_or(|(b, _)| lo < b) {
            best = Some((lo, k));
        }
    }
    best.ok_or_else(|| {
        bad(format!("{n} items at fpp {fpp} need more than {} bits", MAX_BLOCKS as u64 * BLOCK_BITS as u64))
    })
}

/// The murmur3 64-bit finalizer: a bijective mixer deriving the bit positions from the hash.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The `k` bit positions (0..512) of the value with hash `h` inside its block: 9 bits of the
/// mixed hash per position, seven positions per 64-bit word, re-mixing for more. Every form
/// below (insert, query, batch) visits exactly these positions, so the filter's bits, and
/// hence its bytes, are those of version 1.
#[inline(always)]
fn for_each_position(h: u64, k: u32, mut f: impl FnMut(usize) -> bool) -> bool {
    let mut g = mix(h);
    let mut left = 7;
    for _ in 0..k {
        if left == 0 {
            g = mix(g ^ 0x9E37_79B9_7F4A_7C15);
            left = 7;
        }
        if !f((g & 511) as usize) {
            return false;
        }
        g >>= 9;
        left -= 1;
    }
    true
}

/// Set the value's bits in its block, one read-modify-write per position on the one cache
/// line (cheaper than assembling a 512-bit mask on the stack and OR-ing eight words).
#[inline(always)]
fn set_bits(block: &mut Block, h: u64, k: u32) {
    for_each_position(h, k, |pos| {
        block.0[pos >> 6] |= 1 << (pos & 63);
        true
    });
}

/// Are all the value's bits set? Tests every position without branching on the bits: an
/// early exit mispredicts on about every other absent value, and each misprediction stops the
/// processor from overlapping the next queries' cache misses with this one's.
#[inline(always)]
fn has_bits(block: &Block, h: u64, k: u32) -> bool {
    let mut missing = 0u64;
    for_each_position(h, k, |pos| {
        missing |= !block.0[pos >> 6] & (1 << (pos & 63));
        true
    });
    missing == 0
}

impl BloomFilter {
    /// A filter for up to `expected_items` distinct values at false-positive rate `fpp`, with
    /// the default seed.
    ///
    /// ```
    /// use saams::bloom_filter::BloomFilter;
    /// let f = BloomFilter::with_capacity(150_000, 0.01).unwrap();
    /// assert!(f.false_positive_rate() <= 0.01);
    /// assert!(BloomFilter::with_capacity(0, 0.01).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `expected_items` is 0, `fpp` is outside (0, 1),
    /// or the filter would need more than 2^32 bits.
    pub fn with_capacity(expected_items: u64, fpp: f64) -> Result<Self, SynopsisError> {
        Self::with_capacity_seed(expected_items, fpp, DEFAULT_SEED)
    }

    /// As [`BloomFilter::with_capacity`] with an explicit hash seed (filters merge only with
    /// equal seeds).
    ///
    /// # Errors
    /// As [`BloomFilter::with_capacity`].
    pub fn with_capacity_seed(expected_items: u64, fpp: f64, seed: u64) -> Result<Self, SynopsisError> {
        let (blocks, hashes) = geometry(expected_items, fpp)?;
        Ok(BloomFilter { expected_items, fpp, seed, hashes, blocks: vec![Block::default(); blocks] })
    }

    /// A filter from the reference request parameters `[expected n, fpp]`, or
    /// `[expected n, fpp, seed]`.
    ///
    /// ```
    /// use saams::{bloom_filter::BloomFilter, params::Params, Kind};
    /// let raw = serde_json::json!([150000, 0.01]);
    /// let f = BloomFilter::from_params(&Params::new(Kind::BloomFilter, raw.as_array().unwrap())).unwrap();
    /// assert_eq!(f.expected_items(), 150_000);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong number of parameters or values out of range.
    pub fn from_params(p: &Params<'_>) -> Result<Self, SynopsisError> {
        p.arity(2, 3)?;
        let n = p.integer(0, "expected n", 1)?;
        let fpp = p.fraction(1, "fpp")?;
        let seed = if p.has(2) { p.u64(2, "seed")? } else { DEFAULT_SEED };
        Self::with_capacity_seed(n, fpp, seed)
    }

    /// Filters built from stored geometry (the decoder).
    pub(crate) fn from_parts(expected_items: u64, fpp: f64, seed: u64, hashes: u32, blocks: Vec<Block>) -> Self {
        BloomFilter { expected_items, fpp, seed, hashes, blocks }
    }

    /// The designed number of distinct values.
    pub fn expected_items(&self) -> u64 {
        self.expected_items
    }

    /// The designed false-positive rate.
    pub fn fpp(&self) -> f64 {
        self.fpp
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Bit positions per value, `k`.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Number of 512-bit blocks.
    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Total bits, `512 · blocks`.
    pub fn num_bits(&self) -> usize {
        self.blocks.len() * BLOCK_BITS
    }

    pub(crate) fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The false-positive rate of this filter once it holds its designed number of values
    /// (at most [`BloomFilter::fpp`]).
    pub fn false_positive_rate(&self) -> f64 {
        blocked_false_positive_rate(self.expected_items, self.blocks.len(), self.hashes)
    }

    #[inline]
    fn block_index(&self, h: u64) -> usize {
        ((u128::from(h) * self.blocks.len() as u128) >> 64) as usize
    }

    #[inline]
    fn insert_hash(&mut self, h: u64) {
        let (i, k) = (self.block_index(h), self.hashes);
        if let Some(block) = self.blocks.get_mut(i) {
            set_bits(block, h, k);
        }
    }

    #[inline]
    fn contains_hash(&self, h: u64) -> bool {
        match self.blocks.get(self.block_index(h)) {
            Some(block) => has_bits(block, h, self.hashes),
            None => false,
        }
    }

    /// Might `item` have been inserted? Always true for inserted items.
    ///
    /// ```
    /// use saams::{bloom_filter::BloomFilter, Datum, Synopsis};
    /// let mut f = BloomFilter::with_capacity(100, 0.01).unwrap();
    /// f.update(Datum::Num(7.0));
    /// assert!(f.contains(Datum::Num(7.0)));
    /// ```
    pub fn contains(&self, item: Datum<'_>) -> bool {
        self.contains_hash(hash_item(item, self.seed))
    }

    /// `other` as a Bloom filter of the same parameters, seed and geometry, or why not.
    fn compatible<'a>(&self, other: &'a dyn Synopsis) -> Result<&'a BloomFilter, SynopsisError> {
        let other = downcast::<BloomFilter>(Kind::BloomFilter, other)?;
        let same = self.expected_items == other.expected_items
            && self.fpp.to_bits() == other.fpp.to_bits()
            && self.seed == other.seed
            && self.hashes == other.hashes
            && self.blocks.len() == other.blocks.len();
        SynopsisError::unless_compatible(Kind::BloomFilter, same, || {
            format!(
                "parameters differ: (n {}, fpp {}, seed {}) vs (n {}, fpp {}, seed {})",
                self.expected_items, self.fpp, self.seed, other.expected_items, other.fpp, other.seed
            )
        })?;
        Ok(other)
    }
}

impl Synopsis for BloomFilter {
    fn kind(&self) -> Kind {
        Kind::BloomFilter
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        self.insert_hash(hash_item(item, self.seed));
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = self.compatible(other)?;
        for (a, b) in self.blocks.iter_mut().zip(&other.blocks) {
            for (x, y) in a.0.iter_mut().zip(b.0) {
                *x |= y;
            }
        }
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::Contains(v) => {
                let yes = self.contains(v.as_datum());
                let (x, confidence) = if yes { (1.0, 1.0 - self.fpp) } else { (0.0, 1.0) };
                Ok(Estimate { value: EstimateValue::Bool(yes), lower: x, upper: x, confidence })
            }
            other => Err(SynopsisError::UnsupportedQuery { kind: Kind::BloomFilter, query: format!("{other:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.blocks.capacity() * std::mem::size_of::<Block>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;

    /// Version 1's mask, as first written: the positions, assembled into eight words.
    fn v1_mask(h: u64, k: u32) -> [u64; 8] {
        let mut m = [0u64; 8];
        let mut g = mix(h);
        let mut left = 7;
        for _ in 0..k {
            if left == 0 {
                g = mix(g ^ 0x9E37_79B9_7F4A_7C15);
                left = 7;
            }
            let pos = (g & 511) as usize;
            m[pos >> 6] |= 1 << (pos & 63);
            g >>= 9;
            left -= 1;
        }
        m
    }

    #[test]
    fn bits_are_those_of_version_1() {
        let mut rng = SplitMix64::new(3);
        for k in 1..=MAX_HASHES {
            for _ in 0..2_000 {
                let (h, other) = (rng.next_u64(), rng.next_u64());
                let mut block = Block::default();
                set_bits(&mut block, h, k);
                assert_eq!(block.0, v1_mask(h, k), "k {k}");
                assert!(has_bits(&block, h, k));
                let m = v1_mask(other, k);
                let v1_contains = block.0.iter().zip(m).all(|(w, bits)| bits & !w == 0);
                assert_eq!(has_bits(&block, other, k), v1_contains, "k {k}");
            }
        }
    }
}
