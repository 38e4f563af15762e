//! Scaled streams: N streams derived from a few real ones, so a 500-stream experiment can run on
//! the 16 real instruments (or 500 of the 8 469 real vessels).
//!
//! Output stream `r` (0 ≤ r < N) is copy `k = r / B` of base stream `b = r % B`, where the `B` base
//! streams are the real `(dataSetKey, streamID)` pairs in sorted order. Copy 0 is the real stream,
//! unchanged. Copy `k ≥ 1` gets:
//! - the id `<streamID>_r<k>` (same dataset key), hence N distinct ids;
//! - a constant event-time shift in `[0, max_shift_ms)`, so every replica is, like its base, in
//!   event-time order;
//! - value perturbations constant for the replica: `price` and `speed` multiplied by `1 + e` with
//!   `e` uniform in `[-perturbation, perturbation]` (rounded to the original's decimals, at least 2),
//!   `lat`/`lon` moved by up to `perturbation × 5°`; other fields (volume, course, heading,
//!   shiptype, strings) are kept.
//!
//! Everything a replica gets is drawn from `(seed, base dataset key, base stream id, k)`, so the
//! output is deterministic and independent of reading order or parallelism. When N < B only the
//! first N base streams (sorted) are kept, and tuples of the others are dropped.

use std::collections::HashMap;
use std::fmt;

use saams::Value;
use saams::api::Tuple;
use saams::hash::{SplitMix64, hash_bytes};

/// How to scale: number of output streams, seed, time shift and value perturbation bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleSpec {
    /// Output streams N (≥ 1).
    pub streams: usize,
    /// Seed of every replica's shift and perturbation.
    pub seed: u64,
    /// Replica time shifts are uniform in `[0, max_shift_ms)`.
    pub max_shift_ms: i64,
    /// Relative value perturbation bound, in `[0, 0.5]`.
    pub perturbation: f64,
}

impl ScaleSpec {
    /// N streams with the default seed (12345), shifts below one minute and ±1 % perturbations.
    pub fn new(streams: usize) -> ScaleSpec {
        ScaleSpec { streams, seed: 12_345, max_shift_ms: 60_000, perturbation: 0.01 }
    }
}

/// Why a scaler cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleError(pub String);

impl fmt::Display for ScaleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "scaled streams: {}", self.0)
    }
}

impl std::error::Error for ScaleError {}

/// One replica's constant transformation.
#[derive(Clone, Debug, PartialEq)]
struct Replica {
    stream_id: String,
    shift_ms: i64,
    factor: f64,
    dlat: f64,
    dlon: f64,
}

/// Turns tuples of the base streams into tuples of the N scaled streams.
#[derive(Clone, Debug)]
pub struct Scaler {
    /// dataSetKey → streamID → replicas (nested so lookups borrow `&str`).
    replicas: HashMap<String, HashMap<String, Vec<Replica>>>,
    streams: Vec<(String, String)>,
}

impl Scaler {
    /// A scaler over `bases` (`(dataSetKey, streamID)` pairs; duplicates ignored, order irrelevant).
    ///
    /// ```
    /// use saams_datasets::scaled::{ScaleSpec, Scaler};
    /// let bases = [("Equity".to_string(), "SPY".to_string()), ("Equity".to_string(), "IBM".to_string())];
    /// let s = Scaler::new(&ScaleSpec::new(5), bases).unwrap();
    /// let ids: Vec<&str> = s.streams().iter().map(|(_, id)| id.as_str()).collect();
    /// assert_eq!(ids, ["IBM", "SPY", "IBM_r1", "SPY_r1", "IBM_r2"]);
    /// assert!(Scaler::new(&ScaleSpec::new(0), [("a".to_string(), "b".to_string())]).is_err());
    /// ```
    ///
    /// # Errors
    /// When N is 0, there are no base streams, the shift is negative or the perturbation is
    /// outside `[0, 0.5]`.
    pub fn new(spec: &ScaleSpec, bases: impl IntoIterator<Item = (String, String)>) -> Result<Scaler, ScaleError> {
        if spec.streams == 0 {
            return Err(ScaleError("the number of streams must be at least 1".into()));
        }
        if spec.max_shift_ms < 0 {
            return Err(ScaleError(format!("max_shift_ms must not be negative, got {}", spec.max_shift_ms)));
        }
        if !(0.0..=0.5).contains(&spec.perturbation) {
            return Err(ScaleError(format!("perturbation must be in [0, 0.5], got {}", spec.perturbation)));
        }
        let mut bases: Vec<(String, String)> = bases.into_iter().collect();
        bases.sort();
        bases.dedup();
        if bases.is_empty() {
            return Err(ScaleError("no base streams".into()));
        }
        let mut replicas: HashMap<String, HashMap<String, Vec<Replica>>> = HashMap::new();
        let mut streams = Vec::with_capacity(spec.streams);
        for r in 0..spec.streams {
            let (k, base) = (r / bases.len(), &bases[r % bases.len()]);
            let replica = make_replica(spec, base, k);
            streams.push((base.0.clone(), replica.stream_id.clone()));
            replicas.entry(base.0.clone()).or_default().entry(base.1.clone()).or_default().push(replica);
        }
        Ok(Scaler { replicas, streams })
    }

    /// The output streams `(dataSetKey, streamID)`, in output index order.
    pub fn streams(&self) -> &[(String, String)] {
        &self.streams
    }

    /// Append the replicas of `t` to `out` (none if its stream is not a selected base).
    ///
    /// ```
    /// use saams::api::Tuple;
    /// use saams_datasets::scaled::{ScaleSpec, Scaler};
    /// let t = Tuple::from_json(r#"{"streamID":"SPY","dataSetKey":"Equity","timestamp":"2013-10-07T04:00:00Z","price":167.41,"volume":100}"#).unwrap();
    /// let s = Scaler::new(&ScaleSpec::new(3), [("Equity".to_string(), "SPY".to_string())]).unwrap();
    /// let mut out = Vec::new();
    /// s.replicate(&t, &mut out);
    /// assert_eq!(out.len(), 3);
    /// assert_eq!(out[0], t);
    /// assert_eq!(out[2].stream_id, "SPY_r2");
    /// assert_eq!(out[2].field("volume"), t.field("volume"));
    /// ```
    pub fn replicate(&self, t: &Tuple, out: &mut Vec<Tuple>) {
        let Some(reps) = self.replicas.get(t.dataset_key.as_str()).and_then(|m| m.get(t.stream_id.as_str())) else {
            return;
        };
        for rep in reps {
            out.push(apply(rep, t));
        }
    }

    /// Wrap a tuple iterator (e.g. a [`crate::TupleReader`]) so it yields the scaled streams' tuples.
    pub fn scale<I, E>(&self, input: I) -> Scaled<'_, I>
    where
        I: Iterator<Item = Result<Tuple, E>>,
    {
        Scaled { scaler: self, input, buffer: Vec::new() }
    }
}

/// Iterator adaptor returned by [`Scaler::scale`]: errors pass through, tuples become replicas.
pub struct Scaled<'a, I> {
    scaler: &'a Scaler,
    input: I,
    buffer: Vec<Tuple>,
}

impl<I, E> Iterator for Scaled<'_, I>
where
    I: Iterator<Item = Result<Tuple, E>>,
{
    type Item = Result<Tuple, E>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(t) = self.buffer.pop() {
                return Some(Ok(t));
            }
            match self.input.next()? {
                Err(e) => return Some(Err(e)),
                Ok(t) => {
                    self.scaler.replicate(&t, &mut self.buffer);
                    self.buffer.reverse();
                }
            }
        }
    }
}

fn make_replica(spec: &ScaleSpec, base: &(String, String), k: usize) -> Replica {
    if k == 0 {
        return Replica { stream_id: base.1.clone(), shift_ms: 0, factor: 1.0, dlat: 0.0, dlon: 0.0 };
    }
    let key = format!("{}\u{0}{}", base.0, base.1);
    let mut rng =
        SplitMix64::new(hash_bytes(key.as_bytes(), spec.seed ^ (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    let shift_ms = if spec.max_shift_ms == 0 { 0 } else { (rng.next_u64() % spec.max_shift_ms as u64) as i64 };
    let p = spec.perturbation;
    let factor = 1.0 + p * (2.0 * rng.next_f64() - 1.0);
    let dlat = 5.0 * p * (2.0 * rng.next_f64() - 1.0);
    let dlon = 5.0 * p * (2.0 * rng.next_f64() - 1.0);
    Replica { stream_id: format!("{}_r{k}", base.1), shift_ms, factor, dlat, dlon }
}

/// Number of decimals of `x` as written (the smallest d ≤ 8 with x·10^d integral), at least `min`.
fn decimals(x: f64, min: i32) -> i32 {
    (0..=8)
        .find(|&d| {
            let s = x * 10f64.powi(d);
            (s - s.round()).abs() < 1e-9 * s.abs().max(1.0)
        })
        .unwrap_or(8)
        .max(min)
}

fn round_like(value: f64, like: f64, min_decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals(like, min_decimals));
    (value * scale).round() / scale
}

fn apply(rep: &Replica, t: &Tuple) -> Tuple {
    if rep.factor == 1.0 && rep.shift_ms == 0 && rep.dlat == 0.0 && rep.dlon == 0.0 && rep.stream_id == t.stream_id {
        return t.clone();
    }
    let fields = t
        .fields
        .iter()
        .map(|(k, v)| {
            let v = match (k.as_str(), v) {
                ("price" | "speed", Value::Num(x)) => Value::Num(round_like(x * rep.factor, *x, 2)),
                ("lat", Value::Num(x)) => Value::Num(round_like((x + rep.dlat).clamp(-90.0, 90.0), *x, 5)),
                ("lon", Value::Num(x)) => {
                    Value::Num(round_like((x + rep.dlon + 180.0).rem_euclid(360.0) - 180.0, *x, 5))
                }
                _ => v.clone(),
            };
            (k.clone(), v)
        })
        .collect();
    Tuple {
        stream_id: rep.stream_id.clone(),
        dataset_key: t.dataset_key.clone(),
        time_ms: t.time_ms.map(|ms| ms + rep.shift_ms),
        fields,
    }
}

/// The distinct `(dataSetKey, streamID)` pairs of a tuple iterator (errors skipped), sorted: the
/// bases a [`Scaler`] needs when they are not known from file names.
///
/// ```
/// use saams::api::Tuple;
/// let t = |s: &str| Ok::<_, ()>(Tuple { stream_id: s.into(), dataset_key: "D".into(), time_ms: None, fields: vec![] });
/// let bases = saams_datasets::scaled::collect_bases(vec![t("b"), t("a"), t("b")]);
/// assert_eq!(bases, [("D".to_string(), "a".to_string()), ("D".to_string(), "b".to_string())]);
/// ```
pub fn collect_bases<E>(input: impl IntoIterator<Item = Result<Tuple, E>>) -> Vec<(String, String)> {
    let set: std::collections::BTreeSet<(String, String)> =
        input.into_iter().flatten().map(|t| (t.dataset_key, t.stream_id)).collect();
    set.into_iter().collect()
}
