//! The one seeded hash every kind uses: XXH3-64 (xxhash-rust), applied to a number's bit
//! pattern or a string's bytes.
//!
//! One function for all kinds means a value hashes the same in every synopsis, worker and
//! process, which is what makes partials built on different workers mergeable.

use crate::Datum;

/// 64-bit hash of a datum under `seed`.
///
/// Numbers hash by their IEEE-754 bits, with `-0.0` folded onto `0.0` and every NaN onto one
/// NaN, so values that compare equal hash equal.
///
/// ```
/// use saams::{hash::hash_datum, Datum};
/// assert_eq!(hash_datum(Datum::Num(0.0), 7), hash_datum(Datum::Num(-0.0), 7));
/// assert_ne!(hash_datum(Datum::Num(1.0), 7), hash_datum(Datum::Num(1.0), 8));
/// assert_eq!(hash_datum(Datum::Str("IBM"), 1), hash_datum(Datum::Str("IBM"), 1));
/// ```
#[inline]
pub fn hash_datum(datum: Datum<'_>, seed: u64) -> u64 {
    match datum {
        Datum::Num(x) => hash_u64(canonical_bits(x), seed),
        Datum::Str(s) => xxhash_rust::xxh3::xxh3_64_with_seed(s.as_bytes(), seed),
    }
}

/// 64-bit hash of an integer under `seed` (XXH3 of its little-endian bytes).
#[inline]
pub fn hash_u64(x: u64, seed: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(&x.to_le_bytes(), seed)
}

/// 64-bit hash of bytes under `seed`.
#[inline]
pub fn hash_bytes(bytes: &[u8], seed: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(bytes, seed)
}

/// The bits a number hashes by: `-0.0` → `0.0`, every NaN → the canonical NaN.
#[inline]
pub fn canonical_bits(x: f64) -> u64 {
    if x == 0.0 {
        0
    } else if x.is_nan() {
        f64::NAN.to_bits()
    } else {
        x.to_bits()
    }
}

/// A small, fast, seedable generator (SplitMix64) for kinds that need reproducible randomness
/// (sampling, random hyperplanes): the same seed gives the same sequence on every platform.
///
/// ```
/// use saams::hash::SplitMix64;
/// let (mut a, mut b) = (SplitMix64::new(5), SplitMix64::new(5));
/// assert_eq!(a.next_u64(), b.next_u64());
/// let u = a.next_f64();
/// assert!((0.0..1.0).contains(&u));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The generator's state (to encode it).
    pub fn state(&self) -> u64 {
        self.state
    }

    /// Next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1).
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal number (Box–Muller).
    pub fn next_gaussian(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}
