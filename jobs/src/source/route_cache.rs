//! The update groups a tuple's `(dataSetKey, streamID)` feeds, remembered per dataset by each
//! worker's router ([`RouteCache`]).
//!
//! Why: [`Plan::routes`] looks the two names up in two string-keyed hash maps (hashing both names
//! and comparing them with `memcmp`), and every tuple read from a file or Kafka asked it: ~9 % of a
//! `-w 1` JSON-lines ingest of the paper's workload. Names of at most 16 bytes (stream ids,
//! dataset keys) are read as integers without a copy ([`saams::api::tuple::pack_name`]), so a lookup hashes and compares a few
//! words; longer names go to the plan as before. The generator's path resolves its routes once per
//! stream and does not need this.

use std::collections::HashMap;

use saams::api::tuple::{PackedName, pack_name as pack};
use saams_operators::Plan;

/// Datasets kept before the cache starts over: an input with ever new dataset names must not grow
/// it without bound (an entry's size is set by the plan, not by the input).
const MAX_DATASETS: usize = 1 << 12;

/// The groups of `(dataset, stream)` pairs (per-stream groups, then dataset-wide ones, as
/// [`Plan::routes`] gives them), valid for one
/// [`Routing::version`](saams_operators::plan::Routing::version): live requests that change the
/// plan bump it and the cache starts over.
///
/// Kept per dataset, not per pair: a dataset's entry holds its dataset-wide groups and, for the
/// few streams that have groups of their own (those named in requests), theirs. Any other
/// stream's groups are the dataset-wide ones, without a lookup of its name. Why: an AIS input
/// names thousands of vessels that no request names; one entry per (dataset, vessel) pair put
/// ~8,500 entries (~800 KB) behind every lookup and made it ~20 % of an AIS ingest, while the
/// requests' own streams fit in a few cache lines.
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
    /// Index into `entries` of each dataset name seen (packed).
    index: HashMap<PackedName, usize, foldhash::fast::FixedState>,
    entries: Vec<DatasetEntry>,
    /// The dataset of the last lookup and its entry: inputs run in stretches of one dataset.
    last: Option<(PackedName, usize)>,
    /// The groups of the last name looked up in the plan (names longer than 16 bytes), returned
    /// by reference like the cached ones.
    long: Vec<u32>,
}

/// One dataset's routes, from the plan.
struct DatasetEntry {
    /// The groups of a stream without groups of its own: the dataset-wide ones.
    wide: Box<[u32]>,
    /// Streams with groups of their own: theirs, then the dataset-wide ones.
    streams: HashMap<PackedName, Box<[u32]>, foldhash::fast::FixedState>,
    /// Some stream with groups of its own has a name longer than 16 bytes: long stream names are
    /// looked up in the plan.
    long_streams: bool,
}

impl DatasetEntry {
    fn new(plan: &Plan, dataset: &str) -> DatasetEntry {
        let Some(routes) = plan.routing.routes.get(dataset) else {
            return DatasetEntry { wide: Box::new([]), streams: HashMap::default(), long_streams: false };
        };
        let mut streams = HashMap::default();
        let mut long_streams = false;
        for (name, own) in &routes.streams {
            match pack(name) {
                Some(key) => {
                    streams.insert(key, own.iter().chain(&routes.wide).copied().collect());
                }
                None => long_streams = true,
            }
        }
        DatasetEntry { wide: routes.wide.clone().into_boxed_slice(), streams, long_streams }
    }
}

impl RouteCache {
    /// The groups a tuple of `stream` in `dataset` feeds under `plan`.
    #[inline]
    pub fn groups(&mut self, plan: &Plan, dataset: &str, stream: &str) -> &[u32] {
        if self.version != plan.routing.version || self.entries.len() >= MAX_DATASETS {
            self.index.clear();
            self.entries.clear();
            self.last = None;
            self.version = plan.routing.version;
        }
        let Some(key) = pack(dataset) else {
            return self.look_up_in_plan(plan, dataset, stream);
        };
        let at = match self.last {
            Some((last, at)) if last == key => at,
            _ => {
                let at = match self.index.get(&key) {
                    Some(&at) => at,
                    None => {
                        self.entries.push(DatasetEntry::new(plan, dataset));
                        self.index.insert(key, self.entries.len() - 1);
                        self.entries.len() - 1
                    }
                };
                self.last = Some((key, at));
                at
            }
        };
        let entry = &self.entries[at];
        if entry.streams.is_empty() && !entry.long_streams {
            // A dataset whose only stream with groups of its own has a long name went here too,
            // and that stream's values never reached its synopses.
            return &self.entries[at].wide;
        }
        match pack(stream) {
            Some(name) => self.entries[at].streams.get(&name).unwrap_or(&self.entries[at].wide),
            None if entry.long_streams => self.look_up_in_plan(plan, dataset, stream),
            None => &self.entries[at].wide,
        }
    }

    /// Look a pair up in the plan (a name longer than 16 bytes).
    fn look_up_in_plan(&mut self, plan: &Plan, dataset: &str, stream: &str) -> &[u32] {
        let (own, wide) = plan.routes(dataset, stream);
        self.long.clear();
        self.long.extend(own.iter().chain(wide));
        &self.long
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::sink::file::SnapshotDir;

    fn request(id: usize, dataset: &str, stream: &str) -> String {
        format!(
            r#"{{"dataSetKey":"{dataset}","noOfP":1,"param":["HyperLogLog","price","NotQueryable",0.02],"requestID":{id},"streamID":"{stream}","synopsisID":2}}"#
        )
    }

    /// Every lookup equals the plan's own answer (own groups, then dataset-wide ones), for streams
    /// with and without groups, short and long names, datasets with and without routes, in any
    /// order, and after the plan changes.
    #[test]
    fn lookups_equal_the_plans_routes() {
        let long = "a-stream-name-longer-than-sixteen";
        let pairs = [
            ("Forex", "EURTRY"),
            ("Forex", ""),
            ("Forex", long),
            ("US", ""),
            ("Equity", "SPY"),
            ("a-dataset-name-of-25-byte", "X"),
            ("a-dataset-name-of-25-byte", ""),
            // The only stream with groups of its own in its dataset has a long name: its lookups
            // returned the (empty) dataset-wide groups, and its values reached no synopsis.
            ("Vessels", long),
        ];
        let mut text: Vec<String> = pairs.iter().enumerate().map(|(i, (d, s))| request(i + 1, d, s)).collect();
        // Five groups of one stream (five fields).
        for field in ["price", "volume", "bid", "ask", "spread"] {
            text.push(request(text.len() + 1, "Equity", "QQQ").replace(r#""price""#, &format!("{field:?}")));
        }
        let requests = saams::api::request::parse_requests(&format!("[{}]", text.join(",")));
        let mut plan = Plan::build(&requests, 1, 60_000, Arc::new(SnapshotDir::new(None)));
        let datasets = ["Forex", "US", "Equity", "Crypto", "a-dataset-name-of-25-byte", "", "Vessels"];
        let streams = ["EURTRY", "USDJPY", "SPY", "338148873", long, "", "another-long-name-of-a-vessel", "QQQ"];
        let mut cache = RouteCache::default();
        let mut nonempty = 0;
        for round in 0..3 {
            for (i, d) in datasets.iter().cycle().take(60).enumerate() {
                let s = streams[(i * 7 + round) % streams.len()];
                let (own, wide) = plan.routes(d, s);
                let expected: Vec<u32> = own.iter().chain(wide).copied().collect();
                assert_eq!(cache.groups(&plan, d, s), &expected[..], "{d}/{s} in round {round}");
                nonempty += usize::from(!expected.is_empty());
            }
            // A live request changes the plan: the routes are taken from it again.
            plan.routing_mut().version += 1;
            plan.routing_mut().routes.entry("Crypto".into()).or_default().wide.push(0);
        }
        assert!(nonempty > 60, "the lookups must mostly find groups ({nonempty})");
        assert!(!cache.groups(&plan, "Crypto", "BTCUSD").is_empty());
        for _ in 0..2 {
            // Looked up twice: the second time from the dataset's cached entry.
            assert_eq!(cache.groups(&plan, "Vessels", long).len(), 1);
            assert!(cache.groups(&plan, "Vessels", "338148873").is_empty());
            assert_eq!(cache.groups(&plan, "Equity", "QQQ").len(), 5);
            assert_eq!(cache.groups(&plan, "Equity", "SPY").len(), 1);
        }
    }
}
