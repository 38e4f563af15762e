//! The hot-path form of [`crate::hash::hash_datum`] for the linear sketches: the same XXH3-64
//! value, bit for bit, with the 8-byte case of XXH3 written out so it always inlines into the
//! update loops (the generic library call does not, and costs a call per update).

use crate::Datum;
use crate::hash::{canonical_bits, hash_bytes};

/// XXH3-64 with `seed` of the 8 little-endian bytes of `x`, as `xxh3_64_with_seed` computes it
/// (the 4–8 byte path with the default secret).
#[inline(always)]
fn xxh3_u64(x: u64, seed: u64) -> u64 {
    // Default secret bytes 8..16 and 16..24, little-endian.
    const SECRET_8: u64 = 0x1cad_21f7_2c81_017c;
    const SECRET_16: u64 = 0xdb97_9083_e96d_d4de;
    let seed = seed ^ (u64::from((seed as u32).swap_bytes()) << 32);
    let flip = (SECRET_8 ^ SECRET_16).wrapping_sub(seed);
    // input64 = high 4 bytes + (low 4 bytes << 32)
    let mut v = x.rotate_left(32) ^ flip;
    v ^= v.rotate_left(49) ^ v.rotate_left(24);
    v = v.wrapping_mul(0x9FB2_1C65_1E98_DF25);
    v ^= (v >> 35).wrapping_add(8);
    v = v.wrapping_mul(0x9FB2_1C65_1E98_DF25);
    v ^ (v >> 28)
}

/// [`crate::hash::hash_datum`], inlined for numbers.
#[inline(always)]
pub(crate) fn hash_item(item: Datum<'_>, seed: u64) -> u64 {
    match item {
        Datum::Num(x) => xxh3_u64(canonical_bits(x), seed),
        Datum::Str(s) => hash_bytes(s.as_bytes(), seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{SplitMix64, hash_datum};

    #[test]
    fn equals_the_library_hash() {
        let mut rng = SplitMix64::new(1);
        let specials = [0.0, -0.0, 1.0, -1.0, f64::NAN, f64::INFINITY, f64::MIN_POSITIVE, 1e300, 367_000_000.0];
        for i in 0..100_000 {
            let x = if i < specials.len() { specials[i] } else { f64::from_bits(rng.next_u64()) };
            let seed = if i % 3 == 0 { i as u64 } else { rng.next_u64() };
            assert_eq!(hash_item(Datum::Num(x), seed), hash_datum(Datum::Num(x), seed), "{x} {seed}");
        }
        for s in ["", "a", "IBM", "367000000", "a longer string than sixteen bytes"] {
            assert_eq!(hash_item(Datum::Str(s), 9), hash_datum(Datum::Str(s), 9));
        }
    }
}
