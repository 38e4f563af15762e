//! Item identities: a number's canonical bits (numbers compare exactly), a string's 64-bit XXH3
//! hash under a fixed seed, so identities agree across workers and processes.

use crate::hash::{canonical_bits, hash_bytes};
use crate::{Datum, Value};

/// Seed of the string identity hash: fixed, so identities agree across workers and processes.
const STRING_SEED: u64 = 0x5341_414d_535f_4954;

/// The identity of a datum, and the text to remember when it is a string.
#[inline]
pub(crate) fn identity(item: Datum<'_>) -> (u64, Option<&str>) {
    match item {
        Datum::Num(x) => (canonical_bits(x), None),
        Datum::Str(s) => (string_identity(s), Some(s)),
    }
}

/// The identity of a string item.
#[inline]
pub(super) fn string_identity(s: &str) -> u64 {
    hash_bytes(s.as_bytes(), STRING_SEED)
}

/// The identity of an owned value (for queries).
pub(crate) fn value_identity(v: &Value) -> u64 {
    identity(v.as_datum()).0
}
