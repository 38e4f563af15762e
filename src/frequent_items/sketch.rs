//! Construction, update, merge and estimates of the frequent-items wrapper, and the item type
//! stored in the library's sketch.

use std::hash::{Hash, Hasher};

use datasketches::codec::{SketchBytes, SketchSlice};
use datasketches::error::{Error as DsError, ErrorKind};
use datasketches::frequencies::{ErrorType, FrequentItemValue, FrequentItemsSketch};

use crate::hash::canonical_bits;
use crate::params::Params;
use crate::{Datum, Estimate, EstimateValue, Kind, Query, Synopsis, SynopsisError, Value, downcast};

const MIN_LG: u64 = 3;
/// Largest accepted `lgMaxMapSize`: 2^26 slots is ~1 GiB of map for string items, a sane ceiling
/// for one synopsis (the library itself accepts up to 30).
pub const MAX_LG_MAX_MAP_SIZE: u64 = 26;

/// One item as the library stores it: a number by its canonical bit pattern (so `-0.0` = `0.0`
/// and all NaNs are one item, as everywhere in saams), or a string.
///
/// Its DataSketches encoding is a tag byte (0 = number, then 8 bytes LE; 1 = string, then a u32
/// LE length and UTF-8 bytes), so numbers and strings both round-trip exactly.
///
/// A string sits behind a thin pointer (a box holding the boxed text) so that the item is 16
/// bytes, and the library's slot (`Option<Item>`, which reuses the tag) also 16 bytes: the same
/// as a raw `u64` sketch's. With a 24-byte `String` inline every slot of the map was 24 bytes,
/// 30 % more memory and cache traffic on the numeric hot path, paid for a case (strings) that
/// already pays an allocation per new item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    Num(u64),
    #[allow(clippy::redundant_allocation, reason = "the outer box keeps the item 16 bytes (see above)")]
    Str(Box<Box<str>>),
}

// The layout the doc above promises: checked at compile time.
const _: () = assert!(std::mem::size_of::<Option<Item>>() == 16);

/// Hashes only the payload (numbers as one u64, strings as `str` does): the library's
/// MurmurHash3 then reads 8 bytes per number instead of 16 with a derived discriminant. A
/// number and a string may share a hash; equality still tells them apart.
impl Hash for Item {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Item::Num(bits) => state.write_u64(*bits),
            Item::Str(s) => (***s).hash(state),
        }
    }
}

impl Item {
    fn to_value(&self) -> Value {
        match self {
            Item::Num(bits) => Value::Num(f64::from_bits(*bits)),
            Item::Str(s) => Value::Str((***s).to_string()),
        }
    }
}

fn invalid(msg: impl Into<String>) -> DsError {
    DsError::new(ErrorKind::InvalidData, msg)
}

impl FrequentItemValue for Item {
    fn serialize_size(item: &Self) -> usize {
        match item {
            Item::Num(_) => 9,
            Item::Str(s) => 5 + s.len(),
        }
    }

    fn serialize_value(&self, bytes: &mut SketchBytes) {
        match self {
            Item::Num(bits) => {
                bytes.write_u8(0);
                bytes.write_u64_le(*bits);
            }
            Item::Str(s) => {
                bytes.write_u8(1);
                bytes.write_u32_le(s.len() as u32);
                bytes.write(s.as_bytes());
            }
        }
    }

    fn deserialize_value(cursor: &mut SketchSlice<'_>) -> Result<Self, DsError> {
        let short = |_| invalid("frequent item truncated");
        match cursor.read_u8().map_err(short)? {
            0 => {
                let bits = cursor.read_u64_le().map_err(short)?;
                // Only canonical bit patterns are ever stored; anything else is corruption.
                if canonical_bits(f64::from_bits(bits)) != bits {
                    return Err(invalid("non-canonical number item"));
                }
                Ok(Item::Num(bits))
            }
            1 => {
                let len = cursor.read_u32_le().map_err(short)? as usize;
                let rest = cursor.remaining();
                if rest.len() < len {
                    return Err(invalid("string item truncated"));
                }
                let s = std::str::from_utf8(&rest[..len]).map_err(|_| invalid("string item is not UTF-8"))?;
                let item = Item::Str(Box::new(s.into()));
                cursor.advance(len as u64);
                Ok(item)
            }
            t => Err(invalid(format!("unknown item tag {t}"))),
        }
    }
}

/// Frequent-items sketch over numbers and strings.
///
/// Guarantees (deterministic, from the library's proof; the library notes its randomized
/// purge makes the proof fail with probability < 1e-14 per purge, which we report as
/// confidence 1.0):
/// - `Count(v)`: the true count lies in `[lower, upper]` and `upper − lower ≤ ε·N` with
///   `ε = 3.5 / 2^lgMaxMapSize`; counts are exact while fewer than 0.75·2^lgMaxMapSize
///   distinct items were seen. The value is the library's estimate (the upper bound for a
///   tracked item, 0 for an untracked one).
/// - `FrequentItems{support}`: every item with true count ≥ support·N is listed (no false
///   negatives), largest estimate first; refused (BadQuery) when support·N is not above the
///   sketch's current maximum error, where no sketch of this size can promise that.
/// - Both hold after merging (the library's merge adds the maximum errors).
///
/// Numbers are stored exactly (by canonical bits), strings as owned strings: updating with a
/// string allocates it the first time it enters the map.
///
/// While only numbers were seen the items live in the library's own `u64` sketch (keyed by
/// canonical bits), which hashes, probes and purges exactly as the `Item` sketch does on
/// numbers (an `Item::Num` hashes as its `u64`), so its state, bytes included, is the same; the
/// first string moves the items into an `Item` sketch. The `u64` form is the fast path: the
/// hasher folds to a constant 8-byte write, where the `Item` form's string case keeps it
/// generic.
#[derive(Clone, Debug)]
pub struct FrequentItems {
    pub(crate) inner: Inner,
}

/// The two forms of the library's sketch (see [`FrequentItems`]).
#[derive(Clone, Debug)]
pub(crate) enum Inner {
    Nums(FrequentItemsSketch<u64>),
    Mixed(FrequentItemsSketch<Item>),
}

/// Call `$body` with `$s` bound to the library sketch, whichever its item type.
macro_rules! with_sketch {
    ($inner:expr, $s:ident => $body:expr) => {
        match $inner {
            Inner::Nums($s) => $body,
            Inner::Mixed($s) => $body,
        }
    };
}

impl Inner {
    /// The same sketch in the `Item` form.
    fn to_mixed(&self) -> FrequentItemsSketch<Item> {
        match self {
            Inner::Mixed(s) => s.clone(),
            Inner::Nums(s) => {
                let image = super::image::nums_to_items(&s.serialize());
                match FrequentItemsSketch::<Item>::deserialize(&image) {
                    Ok(m) => m,
                    // A u64 image re-tagged as numbers is an Item image by construction.
                    Err(e) => unreachable!("re-tagged frequent-items image rejected: {e}"),
                }
            }
        }
    }
}

impl FrequentItems {
    /// A sketch with a map of at most `2^lg_max_map_size` slots (3 ≤ lg ≤ 26).
    ///
    /// ```
    /// use saams::frequent_items::FrequentItems;
    /// assert_eq!(FrequentItems::new(10).unwrap().epsilon(), 3.5 / 1024.0);
    /// assert!(FrequentItems::new(2).is_err());
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `lg_max_map_size` is outside 3..=26.
    pub fn new(lg_max_map_size: u64) -> Result<Self, SynopsisError> {
        if !(MIN_LG..=MAX_LG_MAX_MAP_SIZE).contains(&lg_max_map_size) {
            return Err(bad(format!(
                "lgMaxMapSize must be in {MIN_LG}..={MAX_LG_MAX_MAP_SIZE}, got {lg_max_map_size}"
            )));
        }
        let sketch = FrequentItemsSketch::new(1usize << lg_max_map_size).map_err(|e| bad(e.to_string()))?;
        Ok(FrequentItems { inner: Inner::Nums(sketch) })
    }

    /// The smallest sketch whose per-item error bound is at most `epsilon`·N.
    ///
    /// ```
    /// use saams::frequent_items::FrequentItems;
    /// assert_eq!(FrequentItems::with_epsilon(0.001).unwrap().lg_max_map_size(), 12);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] when `epsilon` is not in (0, 1) or needs a map beyond
    /// 2^26.
    pub fn with_epsilon(epsilon: f64) -> Result<Self, SynopsisError> {
        SynopsisError::unless_fraction(Kind::FrequentItems, "epsilon", epsilon)?;
        let lg = (MIN_LG..=MAX_LG_MAX_MAP_SIZE)
            .find(|lg| 3.5 / (1u64 << lg) as f64 <= epsilon)
            .ok_or_else(|| bad(format!("epsilon {epsilon} needs lgMaxMapSize > {MAX_LG_MAX_MAP_SIZE}")))?;
        FrequentItems::new(lg)
    }

    /// Build from the reference parameters `[lgMaxMapSize]`.
    ///
    /// ```
    /// use saams::{frequent_items::FrequentItems, params::Params, Kind};
    /// let raw = serde_json::json!([10]);
    /// let s = FrequentItems::from_params(&Params::new(Kind::FrequentItems, raw.as_array().unwrap())).unwrap();
    /// assert_eq!(s.lg_max_map_size(), 10);
    /// ```
    ///
    /// # Errors
    /// [`SynopsisError::BadParameter`] for a wrong count or an out-of-range value.
    pub fn from_params(p: &Params) -> Result<Self, SynopsisError> {
        p.arity(1, 1)?;
        FrequentItems::new(p.integer(0, "lgMaxMapSize", MIN_LG)?)
    }

    /// `lg` of the maximum map size.
    pub fn lg_max_map_size(&self) -> u8 {
        with_sketch!(&self.inner, s => s.lg_max_map_size())
    }

    /// ε: the per-item error bound as a fraction of the stream weight.
    pub fn epsilon(&self) -> f64 {
        with_sketch!(&self.inner, s => s.epsilon())
    }

    /// Current maximum error of any count (the library's offset), in items.
    pub fn maximum_error(&self) -> u64 {
        with_sketch!(&self.inner, s => s.maximum_error())
    }

    /// Number of items summarized.
    pub fn total(&self) -> u64 {
        with_sketch!(&self.inner, s => s.total_weight())
    }

    #[inline(always)]
    fn item_of(d: Datum<'_>) -> Item {
        match d {
            Datum::Num(x) => Item::Num(canonical_bits(x)),
            Datum::Str(s) => Item::Str(Box::new(s.into())),
        }
    }

    /// One item, checking the stream weight first: the path of a batch that could reach
    /// `u64::MAX` (the library panics on an overflow; the wrapper saturates instead).
    fn update_near_the_weight_limit(&mut self, item: Datum<'_>) {
        if matches!(item, Datum::Str(_)) && matches!(self.inner, Inner::Nums(_)) {
            self.inner = Inner::Mixed(self.inner.to_mixed());
        }
        match (&mut self.inner, item) {
            (Inner::Nums(s), Datum::Num(x)) if s.total_weight() < u64::MAX => s.update(canonical_bits(x)),
            (Inner::Mixed(s), d) if s.total_weight() < u64::MAX => s.update(Self::item_of(d)),
            _ => {}
        }
    }
}

fn bad(reason: String) -> SynopsisError {
    SynopsisError::BadParameter { kind: Kind::FrequentItems, reason }
}

impl Synopsis for FrequentItems {
    fn kind(&self) -> Kind {
        Kind::FrequentItems
    }

    #[inline]
    fn update(&mut self, item: Datum<'_>) {
        self.update_batch(std::slice::from_ref(&item));
    }

    /// One loop over the batch with the library's update inlined into it, instead of one
    /// dynamic call per item (the operators feed batches). The stream weight is checked once a
    /// batch when the batch cannot reach its limit, and the item type matched once a batch: a
    /// check and a match per item were the wrapper's cost over the raw library.
    fn update_batch(&mut self, items: &[Datum<'_>]) {
        // Saturate instead of letting the library panic on a u64 overflow of the stream weight
        // (2^64 items is not reachable in practice, but update must never panic).
        let room = |weight: u64| weight <= u64::MAX - items.len() as u64;
        match &mut self.inner {
            Inner::Nums(s) if room(s.total_weight()) => {
                for (i, item) in items.iter().enumerate() {
                    match *item {
                        Datum::Num(x) => s.update(canonical_bits(x)),
                        Datum::Str(_) => {
                            self.inner = Inner::Mixed(self.inner.to_mixed());
                            return self.update_batch(&items[i..]);
                        }
                    }
                }
            }
            Inner::Mixed(s) if room(s.total_weight()) => items.iter().for_each(|d| s.update(Self::item_of(*d))),
            _ => items.iter().for_each(|d| self.update_near_the_weight_limit(*d)),
        }
    }

    fn merge(&mut self, other: &dyn Synopsis) -> Result<(), SynopsisError> {
        let other = downcast::<FrequentItems>(Kind::FrequentItems, other)?;
        if other.lg_max_map_size() != self.lg_max_map_size() {
            return Err(SynopsisError::Incompatible {
                kind: Kind::FrequentItems,
                reason: format!("lgMaxMapSize differs: {} vs {}", self.lg_max_map_size(), other.lg_max_map_size()),
            });
        }
        if self.total().checked_add(other.total()).is_none() {
            return Err(SynopsisError::Incompatible {
                kind: Kind::FrequentItems,
                reason: "combined stream weight overflows 64 bits".into(),
            });
        }
        match (&mut self.inner, &other.inner) {
            (Inner::Nums(a), Inner::Nums(b)) => a.merge(b),
            (Inner::Mixed(a), Inner::Mixed(b)) => a.merge(b),
            (Inner::Mixed(a), nums) => a.merge(&nums.to_mixed()),
            (Inner::Nums(_), Inner::Mixed(b)) => {
                let mut a = self.inner.to_mixed();
                a.merge(b);
                self.inner = Inner::Mixed(a);
            }
        }
        Ok(())
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        match query {
            Query::Count(v) => {
                let (estimate, lower, upper) = match (&self.inner, v.as_datum()) {
                    (Inner::Nums(s), Datum::Num(x)) => {
                        let bits = canonical_bits(x);
                        (s.estimate(&bits), s.lower_bound(&bits), s.upper_bound(&bits))
                    }
                    // No string was ever counted: the library's answer for an untracked item.
                    (Inner::Nums(s), Datum::Str(_)) => (0, 0, s.maximum_error()),
                    (Inner::Mixed(s), d) => {
                        let item = Self::item_of(d);
                        (s.estimate(&item), s.lower_bound(&item), s.upper_bound(&item))
                    }
                };
                Ok(Estimate::number(estimate as f64, lower as f64, upper as f64, 1.0))
            }
            Query::FrequentItems { support } => {
                if !(*support > 0.0 && *support <= 1.0) {
                    return Err(SynopsisError::BadQuery {
                        kind: Kind::FrequentItems,
                        reason: format!("support must be in (0, 1], got {support}"),
                    });
                }
                let n = self.total();
                let need = (support * n as f64).ceil() as u64; // true count ≥ need ⇔ count ≥ s·N
                let max_err = self.maximum_error();
                if need <= max_err {
                    return Err(SynopsisError::BadQuery {
                        kind: Kind::FrequentItems,
                        reason: format!(
                            "support {support} × {n} items is within the sketch's maximum error {max_err}: \
                             no false negatives cannot be promised (use support > {})",
                            max_err as f64 / n as f64
                        ),
                    });
                }
                // The library lists items whose upper bound is > threshold: threshold = need − 1.
                let threshold = need.saturating_sub(1);
                let items = match &self.inner {
                    Inner::Nums(s) => s
                        .frequent_items_with_threshold(ErrorType::NoFalseNegatives, threshold)
                        .iter()
                        .map(|r| (Value::Num(f64::from_bits(*r.item())), r.estimate() as f64))
                        .collect(),
                    Inner::Mixed(s) => s
                        .frequent_items_with_threshold(ErrorType::NoFalseNegatives, threshold)
                        .iter()
                        .map(|r| (r.item().to_value(), r.estimate() as f64))
                        .collect(),
                };
                Ok(Estimate { value: EstimateValue::Items(items), lower: 0.0, upper: max_err as f64, confidence: 1.0 })
            }
            Query::Total => {
                let n = self.total() as f64;
                Ok(Estimate::number(n, n, n, 1.0))
            }
            q => Err(SynopsisError::UnsupportedQuery { kind: Kind::FrequentItems, query: format!("{q:?}") }),
        }
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + with_sketch!(&self.inner, s => s.estimated_size())
    }
}
