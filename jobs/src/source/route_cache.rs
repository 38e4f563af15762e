//! The update groups a tuple's `(dataSetKey, streamID)` feeds, remembered per name pair by each
//! worker's router ([`RouteCache`]).
//!
//! Why: [`Plan::routes`] looks the two names up in two string-keyed hash maps (hashing both names
//! and comparing them with `memcmp`), and every tuple read from a file or Kafka asked it: ~9 % of a
//! `-w 1` JSON-lines ingest of the paper's workload. Names of at most 16 bytes (stream ids,
//! dataset keys) are read here as integers without a copy, so a lookup hashes and compares a few
//! words; longer names go to the plan as before. The generator's path resolves its routes once per
//! stream and does not need this.

use std::collections::HashMap;

use saams_operators::Plan;

/// A name of at most 16 bytes as two (possibly overlapping) little-endian words and its length:
/// given the length, the words hold every byte once or twice, so equal keys mean equal names.
type PackedName = (u64, u64, u8);

/// Pack `s` into a [`PackedName`], or `None` when it is longer than 16 bytes.
///
/// ```
/// use saams_jobs::source::route_cache::pack;
/// assert_eq!(pack("EURTRY"), pack("EURTRY"));
/// assert_ne!(pack("EURTRY"), pack("EURTRX"));
/// // Overlapping words: the length keeps "ABCDEFGH" (8) apart from "ABCDEFGHH" (9)...
/// assert_ne!(pack("ABCDEFGH"), pack("ABCDEFGHH"));
/// // ...and every byte counts, short names included.
/// assert_ne!(pack("AB"), pack("BB"));
/// assert_ne!(pack("ABC"), pack("AXC"));
/// assert_eq!(pack(""), Some((0, 0, 0)));
/// assert!(pack("a-name-of-17-byte").is_none());
/// ```
#[inline]
pub fn pack(s: &str) -> Option<PackedName> {
    let b = s.as_bytes();
    let n = b.len();
    let u32_at = |i: usize| b.get(i..i + 4).and_then(|w| w.try_into().ok()).map(u32::from_le_bytes);
    let u64_at = |i: usize| b.get(i..i + 8).and_then(|w| w.try_into().ok()).map(u64::from_le_bytes);
    match n {
        0 => Some((0, 0, 0)),
        1..=3 => Some((u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16, 0, n as u8)),
        4..=7 => Some((u64::from(u32_at(0)?), u64::from(u32_at(n - 4)?), n as u8)),
        8..=16 => Some((u64_at(0)?, u64_at(n - 8)?, n as u8)),
        _ => None,
    }
}

/// Entries kept before the cache starts over: an input with ever new stream names (vessels,
/// sensors) that feed no synopsis must not grow it without bound.
const MAX_ENTRIES: usize = 1 << 16;

/// The groups of `(dataset, stream)` pairs (per-stream groups, then dataset-wide ones, as
/// [`Plan::routes`] gives them), valid for one [`Plan::version`]: live requests that change the
/// plan bump it and the cache starts over.
///
/// ```
/// use std::sync::Arc;
/// use saams_jobs::source::route_cache::RouteCache;
/// use saams_operators::{Plan, SnapshotStore};
/// struct NoFiles;
/// impl SnapshotStore for NoFiles {
///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
///     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
/// }
/// let requests = saams::api::request::parse_requests(concat!(
///     r#"[{"dataSetKey":"Forex","noOfP":1,"param":["CountMin","price","NotQueryable",0.01,0.99,1],"requestID":1,"streamID":"EURTRY","synopsisID":1},"#,
///     r#"{"dataSetKey":"Forex","noOfP":1,"param":["HyperLogLog","price","NotQueryable",0.02],"requestID":2,"streamID":"","synopsisID":2}]"#,
/// ));
/// let plan = Plan::build(&requests, 1, 60_000, Arc::new(NoFiles));
/// let mut cache = RouteCache::default();
/// let (per_stream, wide) = plan.routes("Forex", "EURTRY");
/// let expected: Vec<u32> = per_stream.iter().chain(wide).copied().collect();
/// assert_eq!(expected.len(), 2);
/// assert_eq!(cache.groups(&plan, "Forex", "EURTRY"), &expected[..]);
/// assert_eq!(cache.groups(&plan, "Forex", "EURTRY"), &expected[..]); // from the cache
/// assert_eq!(cache.groups(&plan, "Forex", "USDJPY"), &expected[1..]); // dataset-wide only
/// assert!(cache.groups(&plan, "Equity", "EURTRY").is_empty());
/// // Names longer than 16 bytes are looked up in the plan.
/// assert!(cache.groups(&plan, "Forex", "a-stream-name-of-29-bytes-xyz").len() == 1);
/// ```
#[derive(Default)]
pub struct RouteCache {
    version: u64,
    map: HashMap<(PackedName, PackedName), Box<[u32]>, foldhash::fast::FixedState>,
    /// The groups of the last pair of long names (returned by reference, like the cached ones).
    long: Vec<u32>,
}

impl RouteCache {
    /// The groups a tuple of `stream` in `dataset` feeds under `plan`.
    #[inline]
    pub fn groups(&mut self, plan: &Plan, dataset: &str, stream: &str) -> &[u32] {
        let resolve = |out: &mut Vec<u32>| {
            let (per_stream, wide) = plan.routes(dataset, stream);
            out.clear();
            out.extend(per_stream.iter().chain(wide));
        };
        let Some(key) = pack(dataset).zip(pack(stream)) else {
            resolve(&mut self.long);
            return &self.long;
        };
        if self.version != plan.version || self.map.len() >= MAX_ENTRIES {
            self.map.clear();
            self.version = plan.version;
        }
        self.map.entry(key).or_insert_with(|| {
            let mut groups = Vec::new();
            resolve(&mut groups);
            groups.into_boxed_slice()
        })
    }
}
