//! Exact answers, to check synopses against: counts per value, distinct counts, frequent items,
//! F2 and inner products, quantiles and ranks, Pearson correlation, and all of them per
//! event-time window and stream.
//!
//! Values are keyed as the synopses hash them (numbers by their canonical bits, so `-0.0 == 0.0`;
//! strings by their text).

use std::collections::{BTreeMap, HashMap};

use saams::api::Tuple;
use saams::hash::canonical_bits;
use saams::{Datum, Value};

/// A value as a map key (numbers by canonical bits).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// A number's canonical bits.
    Num(u64),
    /// A string.
    Str(String),
}

impl Key {
    /// The key of a datum.
    pub fn of(d: Datum<'_>) -> Key {
        match d {
            Datum::Num(x) => Key::Num(canonical_bits(x)),
            Datum::Str(s) => Key::Str(s.to_string()),
        }
    }

    /// Back to a value.
    pub fn to_value(&self) -> Value {
        match self {
            Key::Num(b) => Value::Num(f64::from_bits(*b)),
            Key::Str(s) => Value::Str(s.clone()),
        }
    }
}

/// Exact frequencies of the values of one field.
///
/// ```
/// use saams::Datum;
/// use saams_datasets::oracle::ExactCounts;
/// let mut c = ExactCounts::default();
/// for x in [1.0, 2.0, 2.0, -0.0, 0.0] { c.add(Datum::Num(x)); }
/// assert_eq!(c.count(Datum::Num(2.0)), 2);
/// assert_eq!(c.count(Datum::Num(0.0)), 2);
/// assert_eq!((c.total(), c.distinct()), (5, 3));
/// assert_eq!(c.f2(), 1 + 4 + 4);
/// assert_eq!(c.frequent(0.4).len(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExactCounts {
    counts: HashMap<Key, u64>,
    total: u64,
}

impl ExactCounts {
    /// Count one occurrence.
    pub fn add(&mut self, d: Datum<'_>) {
        self.add_n(d, 1);
    }

    /// Count `n` occurrences.
    pub fn add_n(&mut self, d: Datum<'_>, n: u64) {
        *self.counts.entry(Key::of(d)).or_default() += n;
        self.total += n;
    }

    /// Occurrences of a value.
    pub fn count(&self, d: Datum<'_>) -> u64 {
        self.counts.get(&Key::of(d)).copied().unwrap_or(0)
    }

    /// Number of items counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Number of distinct values.
    pub fn distinct(&self) -> u64 {
        self.counts.len() as u64
    }

    /// Second frequency moment: Σ count².
    pub fn f2(&self) -> u128 {
        self.counts.values().map(|&c| u128::from(c) * u128::from(c)).sum()
    }

    /// Inner product of two frequency vectors: Σ countₐ(v)·count_b(v).
    ///
    /// ```
    /// use saams::Datum;
    /// use saams_datasets::oracle::ExactCounts;
    /// let (mut a, mut b) = (ExactCounts::default(), ExactCounts::default());
    /// for x in ["x", "x", "y"] { a.add(Datum::Str(x)); }
    /// for x in ["x", "z"] { b.add(Datum::Str(x)); }
    /// assert_eq!(a.inner_product(&b), 2);
    /// ```
    pub fn inner_product(&self, other: &ExactCounts) -> u128 {
        let (small, large) = if self.counts.len() <= other.counts.len() { (self, other) } else { (other, self) };
        small.counts.iter().map(|(k, &c)| u128::from(c) * u128::from(large.counts.get(k).copied().unwrap_or(0))).sum()
    }

    /// Values occurring at least `support × total` times, most frequent first (ties by key).
    pub fn frequent(&self, support: f64) -> Vec<(Value, u64)> {
        let threshold = support * self.total as f64;
        let mut items: Vec<(&Key, u64)> =
            self.counts.iter().filter(|(_, c)| **c as f64 >= threshold).map(|(k, c)| (k, *c)).collect();
        items.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        items.into_iter().map(|(k, c)| (k.to_value(), c)).collect()
    }

    /// The `k` most frequent values, most frequent first (ties by key).
    pub fn top_k(&self, k: usize) -> Vec<(Value, u64)> {
        let mut all = self.frequent(0.0);
        all.truncate(k);
        all
    }

    /// Merge another count table into this one.
    pub fn merge(&mut self, other: &ExactCounts) {
        for (k, c) in &other.counts {
            *self.counts.entry(k.clone()).or_default() += c;
        }
        self.total += other.total;
    }
}

/// Exact quantiles and ranks of a set of numbers.
///
/// ```
/// use saams_datasets::oracle::ExactQuantiles;
/// let q = ExactQuantiles::new(vec![5.0, 1.0, 3.0, 3.0, 2.0]);
/// assert_eq!(q.quantile(0.0), Some(1.0));
/// assert_eq!(q.quantile(0.5), Some(3.0));
/// assert_eq!(q.quantile(1.0), Some(5.0));
/// assert_eq!(q.rank_range(3.0), (2, 4));
/// assert!(q.is_within(2.0, 0.5, 0.2)); // rank of 2.0 is 2 of 5; 0.5·5 = 2.5, within 0.2·5 = 1
/// assert!(!q.is_within(5.0, 0.5, 0.2));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ExactQuantiles {
    sorted: Vec<f64>,
}

impl ExactQuantiles {
    /// From values (NaNs dropped).
    pub fn new(mut values: Vec<f64>) -> ExactQuantiles {
        values.retain(|x| !x.is_nan());
        values.sort_by(f64::total_cmp);
        ExactQuantiles { sorted: values }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// True if there are no values.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The values in ascending order.
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    /// The value of rank `⌈q·n⌉` (1-based; the smallest value for q = 0), `None` when empty or q
    /// outside [0, 1].
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.sorted.is_empty() || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let r = (q * self.sorted.len() as f64).ceil() as usize;
        Some(self.sorted[r.clamp(1, self.sorted.len()) - 1])
    }

    /// `(number of values < x, number of values ≤ x)`: every rank x can have.
    pub fn rank_range(&self, x: f64) -> (usize, usize) {
        (self.sorted.partition_point(|v| *v < x), self.sorted.partition_point(|v| *v <= x))
    }

    /// Normalized rank of `x`: the midpoint of its rank range over n (0 when empty).
    pub fn rank(&self, x: f64) -> f64 {
        if self.sorted.is_empty() {
            return 0.0;
        }
        let (lo, hi) = self.rank_range(x);
        (lo + hi) as f64 / 2.0 / self.sorted.len() as f64
    }

    /// True if `answer` is an ε-approximate `q`-quantile: some rank of it lies within `ε·n` of `q·n`
    /// (the guarantee of GK, KLL and the window quantile sketches).
    pub fn is_within(&self, answer: f64, q: f64, eps: f64) -> bool {
        let n = self.sorted.len() as f64;
        let (lo, hi) = self.rank_range(answer);
        let target = q * n;
        // Ranks of `answer` span [lo, hi]; accept if that interval meets [target - εn, target + εn].
        (lo as f64) <= target + eps * n && (hi as f64) >= target - eps * n
    }
}

/// Pearson correlation of two equally long series; `None` if lengths differ, fewer than 2 points,
/// or a series is constant.
///
/// ```
/// use saams_datasets::oracle::pearson;
/// assert!((pearson(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]).unwrap() - 1.0).abs() < 1e-12);
/// assert!((pearson(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
/// assert_eq!(pearson(&[1.0, 1.0], &[1.0, 2.0]), None);
/// ```
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some((sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0))
}

/// The start of the tumbling event-time window of length `window_ms` holding `time_ms`.
///
/// ```
/// assert_eq!(saams_datasets::oracle::window_start(61_500, 60_000), 60_000);
/// assert_eq!(saams_datasets::oracle::window_start(-1, 60_000), -60_000);
/// ```
pub fn window_start(time_ms: i64, window_ms: i64) -> i64 {
    time_ms.div_euclid(window_ms.max(1)) * window_ms.max(1)
}

/// Values of one field of tuples grouped by `(dataSetKey, streamID, window start)`, in arrival
/// order within a group. A dataset-level group (every stream of a dataset) has an empty stream id.
#[derive(Clone, Debug, Default)]
pub struct Windowed {
    window_ms: Option<i64>,
    groups: BTreeMap<(String, String, i64), Vec<Value>>,
}

impl Windowed {
    /// Group `field` of `tuples` per stream and per dataset, by tumbling windows of `window_ms`
    /// (`None` = one window for the whole input, start 0). Tuples without the field are skipped;
    /// tuples without an event time go to window 0.
    ///
    /// ```
    /// use saams::api::Tuple;
    /// use saams_datasets::oracle::Windowed;
    /// let t = |s: &str, ms: i64, p: f64| Tuple { stream_id: s.into(), dataset_key: "F".into(), time_ms: Some(ms), fields: vec![("price".into(), saams::Value::Num(p))] };
    /// let w = Windowed::new([t("A", 0, 1.0), t("A", 1500, 2.0), t("B", 500, 1.0)].iter(), "price", Some(1000));
    /// assert_eq!(w.counts("F", "A", 0).unwrap().total(), 1);
    /// assert_eq!(w.counts("F", "", 0).unwrap().count(saams::Datum::Num(1.0)), 2);
    /// assert_eq!(w.windows("F", "A"), vec![0, 1000]);
    /// ```
    pub fn new<'a>(tuples: impl IntoIterator<Item = &'a Tuple>, field: &str, window_ms: Option<i64>) -> Windowed {
        let mut groups: BTreeMap<(String, String, i64), Vec<Value>> = BTreeMap::new();
        for t in tuples {
            let Some(v) = t.field(field) else { continue };
            let w = match (window_ms, t.time_ms) {
                (Some(len), Some(ms)) => window_start(ms, len),
                _ => 0,
            };
            let v = v.to_owned_value();
            groups.entry((t.dataset_key.clone(), t.stream_id.clone(), w)).or_default().push(v.clone());
            groups.entry((t.dataset_key.clone(), String::new(), w)).or_default().push(v);
        }
        Windowed { window_ms, groups }
    }

    /// The window length (`None` = unwindowed).
    pub fn window_ms(&self) -> Option<i64> {
        self.window_ms
    }

    /// The values of a group, in arrival order.
    pub fn values(&self, dataset_key: &str, stream_id: &str, window: i64) -> Option<&[Value]> {
        self.groups.get(&(dataset_key.to_string(), stream_id.to_string(), window)).map(Vec::as_slice)
    }

    /// The window starts of a stream (or dataset, with an empty stream id), ascending.
    pub fn windows(&self, dataset_key: &str, stream_id: &str) -> Vec<i64> {
        self.groups.keys().filter(|(d, s, _)| d == dataset_key && s == stream_id).map(|(_, _, w)| *w).collect()
    }

    /// Every group key `(dataSetKey, streamID, window start)`.
    pub fn keys(&self) -> impl Iterator<Item = &(String, String, i64)> {
        self.groups.keys()
    }

    /// Exact counts of a group.
    pub fn counts(&self, dataset_key: &str, stream_id: &str, window: i64) -> Option<ExactCounts> {
        let values = self.values(dataset_key, stream_id, window)?;
        let mut c = ExactCounts::default();
        for v in values {
            c.add(v.as_datum());
        }
        Some(c)
    }

    /// Exact quantiles of a group's numeric values.
    pub fn quantiles(&self, dataset_key: &str, stream_id: &str, window: i64) -> Option<ExactQuantiles> {
        let values = self.values(dataset_key, stream_id, window)?;
        Some(ExactQuantiles::new(values.iter().filter_map(|v| v.as_datum().as_f64()).collect()))
    }

    /// The last `n` numeric values of a group (fewer if it has fewer): the count-based sliding window
    /// DFT, LSH and window quantiles summarize.
    pub fn last_n(&self, dataset_key: &str, stream_id: &str, window: i64, n: usize) -> Vec<f64> {
        let values: Vec<f64> = self
            .values(dataset_key, stream_id, window)
            .unwrap_or(&[])
            .iter()
            .filter_map(|v| v.as_datum().as_f64())
            .collect();
        values[values.len().saturating_sub(n)..].to_vec()
    }
}
