//! The query view of a synopsis *resident* on an edge device ([`QueryView`]): what the
//! registered continuous queries read of its state, which the device ships per window in place
//! of the state (`saams-edge --resident`), and which the cloud job holds where it would hold
//! the state, answering those queries from it exactly as from the state.
//!
//! Why a view and not the state: the paper workload's per-stream states take ~20 KB per stream
//! (DFT's sliding window of points, Count-Min's counters, HyperLogLog's registers), while its
//! continuous queries read ~200 B of them: DFT's normalized coefficients (the `coefficients`
//! query and the pair correlations), one Count-Min estimate, one distinct count. A device that
//! is its streams' only reader keeps the states (it is their owner) and ships the view; the
//! cloud writes the answers, runs the pair queries across devices and publishes them.
//!
//! What a view holds:
//! - DFT: its [`Spectrum`] (points, window length, constant or not, coefficients), from which
//!   `coefficients`, `Total` and the pair `Correlation` are computed as the DFT computes them;
//! - other kinds: each continuous query's outcome as the device's state answered it (the
//!   estimate with its bounds, or the error), looked up by the query.
//!
//! Anything else — an ad-hoc query the device was not asked, a merge (a LOAD), values — is
//! refused with an error naming the device: the state is on the device.
//!
//! Two encodings: [`QueryView::encode_compact`] is what crosses the network in a shipment
//! (version, kind, spectrum, outcomes; the device and the synopsis' parameters are known to the
//! cloud from the shipment), and the view's codec bytes ([`saams::codec::ToBytes`]: `SAQV`,
//! version, device, parameters, then the compact form) what crosses the dataflow, checkpoints
//! and processes ([`decode_state`] reads both these and the library's synopses).
//!
//! ```
//! use saams::{CountMin, Datum, Kind, Query, Synopsis, Value};
//! use saams_operators::query_view::{QueryView, decode_state};
//! let mut cm = CountMin::with_accuracy(0.01, 0.99, 7).unwrap();
//! cm.update(Datum::Num(2.5));
//! let q = Query::Count(Value::Num(2.5));
//! let view = QueryView::of(&cm, &[q.clone()]);
//! let shipped = view.encode_compact();
//! let back = QueryView::decode_compact(&shipped, "pi-1", "[0.01,0.99,7]").unwrap();
//! assert_eq!(back.estimate(&q).unwrap(), cm.estimate(&q).unwrap());
//! assert_eq!(back.kind(), Kind::CountMin);
//! assert!(back.estimate(&Query::Count(Value::Num(1.0))).unwrap_err().to_string().contains("pi-1"));
//! let again = decode_state(&back.encode()).unwrap();
//! assert_eq!(again.estimate(&q).unwrap(), cm.estimate(&q).unwrap());
//! ```

use saams::codec::{Reader, ToBytes, Writer};
use saams::dft::Spectrum;
use saams::{Datum, Dft, Estimate, EstimateValue, Kind, PairQuery, Query, Synopsis, SynopsisError};

/// The first bytes of a view's codec bytes (a library synopsis' start with `SAMS`).
pub const MAGIC: &[u8; 4] = b"SAQV";
/// The view format this build writes and reads (first byte of the compact form).
pub const VERSION: u8 = 1;

/// How a query was answered on the device.
type Outcome = Result<Estimate, SynopsisError>;

/// What the continuous queries of one synopsis read of its state, as at one window's close.
#[derive(Clone, Debug)]
pub struct QueryView {
    kind: Kind,
    /// The device the state is resident on (for the errors; not shipped).
    device: String,
    /// The synopsis' construct parameters as JSON text (pairs must agree; not shipped).
    params: String,
    /// DFT: what its queries read.
    spectrum: Option<Spectrum>,
    /// Other kinds: per continuous query, its outcome.
    answers: Vec<(Query, Outcome)>,
    /// Values that reached the view (a resident synopsis is fed on its device only).
    dropped: u64,
}

impl QueryView {
    /// The view of `state` for `queries` (a DFT's spectrum instead, which answers all of its).
    pub fn of(state: &dyn Synopsis, queries: &[Query]) -> QueryView {
        let spectrum = state.as_any().downcast_ref::<Dft>().map(Dft::spectrum);
        let answers = if spectrum.is_some() {
            Vec::new()
        } else {
            let mut answers: Vec<(Query, Outcome)> = Vec::with_capacity(queries.len());
            for q in queries {
                if !answers.iter().any(|(x, _)| x == q) {
                    answers.push((q.clone(), state.estimate(q)));
                }
            }
            answers
        };
        QueryView { kind: state.kind(), device: String::new(), params: String::new(), spectrum, answers, dropped: 0 }
    }

    /// True when `bytes` are a view's codec bytes.
    pub fn is_view(bytes: &[u8]) -> bool {
        bytes.starts_with(MAGIC)
    }

    /// The view as shipped: version, kind, the spectrum or the outcomes.
    pub fn encode_compact(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(VERSION);
        w.varint(u64::from(self.kind.id()));
        match &self.spectrum {
            Some(s) => {
                w.u8(1);
                w.varint(s.n);
                w.varint(s.m as u64);
                w.u8(u8::from(s.centered));
                w.varint(s.coefficients.len() as u64);
                for (re, im) in &s.coefficients {
                    w.f64(*re);
                    w.f64(*im);
                }
            }
            None => w.u8(0),
        }
        w.varint(self.answers.len() as u64);
        for (q, outcome) in &self.answers {
            write_query(&mut w, q);
            write_outcome(&mut w, self.kind, outcome);
        }
        w.into_inner()
    }

    /// Read a shipped view of a synopsis with construct parameters `params` resident on `device`.
    ///
    /// # Errors
    /// Another version, an unknown kind, truncated or malformed bytes.
    pub fn decode_compact(bytes: &[u8], device: &str, params: &str) -> Result<QueryView, SynopsisError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != VERSION {
            return Err(SynopsisError::Codec(format!("query view version {version} (this build reads {VERSION})")));
        }
        let id = r.varint()?;
        let kind = Kind::from_id(id).ok_or_else(|| SynopsisError::Codec(format!("query view of unknown kind {id}")))?;
        let spectrum = match r.u8()? {
            0 => None,
            1 => {
                let (n, m, centered) = (r.varint()?, r.varint()? as usize, r.u8()? != 0);
                let c = r.count(16)?;
                let coefficients = (0..c).map(|_| Ok((r.f64()?, r.f64()?))).collect::<Result<_, SynopsisError>>()?;
                Some(Spectrum { n, m, centered, coefficients })
            }
            k => return Err(SynopsisError::Codec(format!("query view form {k}"))),
        };
        if spectrum.is_some() != (kind == Kind::Dft) {
            return Err(SynopsisError::Codec(format!(
                "a {kind} query view with{} a spectrum",
                if spectrum.is_some() { "" } else { "out" }
            )));
        }
        let n = r.count(2)?;
        let mut answers = Vec::with_capacity(n);
        for _ in 0..n {
            let q = read_query(&mut r)?;
            answers.push((q, read_outcome(&mut r)?));
        }
        r.finish()?;
        Ok(QueryView { kind, device: device.to_string(), params: params.to_string(), spectrum, answers, dropped: 0 })
    }

    /// The device the synopsis is resident on.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The error for what only the device's state can answer.
    fn resident(&self, what: &str) -> SynopsisError {
        SynopsisError::BadQuery {
            kind: self.kind,
            reason: format!(
                "{what}: the synopsis is resident on device {} (saams-edge --resident), which holds its state; the cloud holds \
                 only what its continuous queries read",
                self.device
            ),
        }
    }
}

/// A synopsis state from its codec bytes: a query view's, or a library synopsis'.
///
/// # Errors
/// Bytes neither decodes.
pub fn decode_state(bytes: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    if !QueryView::is_view(bytes) {
        return saams::registry::decode(bytes);
    }
    let mut r = Reader::new(&bytes[MAGIC.len()..]);
    let text = |r: &mut Reader<'_>| {
        String::from_utf8(r.len_bytes()?.to_vec())
            .map_err(|_| SynopsisError::Codec("query view text is not UTF-8".into()))
    };
    let (device, params) = (text(&mut r)?, text(&mut r)?);
    let rest = r.remaining();
    Ok(Box::new(QueryView::decode_compact(r.take(rest)?, &device, &params)?))
}

impl ToBytes for QueryView {
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.bytes(MAGIC);
        w.len_bytes(self.device.as_bytes());
        w.len_bytes(self.params.as_bytes());
        w.bytes(&self.encode_compact());
        w.into_inner()
    }
}

impl Synopsis for QueryView {
    fn kind(&self) -> Kind {
        self.kind
    }

    /// A resident synopsis is fed on its device: values that reach its view here are counted,
    /// and its answers are refused from then on (they would not cover them).
    fn update(&mut self, _item: Datum<'_>) {
        self.dropped += 1;
    }

    fn merge(&mut self, _other: &dyn Synopsis) -> Result<(), SynopsisError> {
        Err(SynopsisError::Incompatible {
            kind: self.kind,
            reason: format!(
                "the synopsis is resident on device {}: nothing can be merged into its query view",
                self.device
            ),
        })
    }

    fn estimate(&self, query: &Query) -> Result<Estimate, SynopsisError> {
        if self.dropped > 0 {
            return Err(self.resident(&format!("{} values reached the cloud", self.dropped)));
        }
        if let Some(s) = &self.spectrum {
            return match query {
                Query::Vector => s.vector(),
                Query::Total => Ok(s.total()),
                q => Err(SynopsisError::UnsupportedQuery { kind: Kind::Dft, query: format!("{q:?}") }),
            };
        }
        match self.answers.iter().find(|(q, _)| q == query) {
            Some((_, outcome)) => outcome.clone(),
            None => Err(self.resident(&format!("{query:?} is not one of its continuous queries"))),
        }
    }

    fn estimate_pair(&self, other: &dyn Synopsis, query: &PairQuery) -> Result<Estimate, SynopsisError> {
        let (Some(mine), PairQuery::Correlation) = (&self.spectrum, query) else {
            return Err(self.resident(&format!("{query:?}")));
        };
        let theirs = match other.as_any().downcast_ref::<QueryView>() {
            Some(view) if view.params == self.params => view.spectrum.clone(),
            Some(view) => {
                return Err(SynopsisError::Incompatible {
                    kind: Kind::Dft,
                    reason: format!("parameters differ: {} vs {}", self.params, view.params),
                });
            }
            // A DFT the cloud holds whole: a resident group's byte budget ships raw values or
            // whole states some windows (`saams-edge --resident`), so a pair may mix them.
            None => other.as_any().downcast_ref::<Dft>().map(Dft::spectrum),
        };
        let theirs = theirs.ok_or_else(|| self.resident("a correlation with a synopsis that is not a DFT"))?;
        same_coefficients(mine, &theirs)?;
        mine.correlation(&theirs)
    }

    fn size_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.spectrum.as_ref().map_or(0, |s| s.coefficients.len() * 16)
            + self.answers.len() * std::mem::size_of::<(Query, Outcome)>()
    }
}

/// The pair estimate of `a` with `b`, each a state or a query view (a pair of DFTs may mix a
/// resident group's view with a state the cloud holds whole): in that order, as the states'
/// own estimate gives it.
///
/// ```
/// use saams::{Dft, PairQuery, Synopsis};
/// use saams_operators::query_view::{QueryView, estimate_pair};
/// let (mut a, mut b) = (Dft::new(1.0, 16, 64, 4).unwrap(), Dft::new(1.0, 16, 64, 4).unwrap());
/// for i in 0..200 {
///     a.update(saams::Datum::Num((i as f64 / 10.0).sin()));
///     b.update(saams::Datum::Num((i as f64 / 10.0).sin() + 0.1 * (i % 3) as f64));
/// }
/// let view = QueryView::decode_compact(&QueryView::of(&b, &[]).encode_compact(), "pi-1", "").unwrap();
/// let whole = a.estimate_pair(&b, &PairQuery::Correlation).unwrap();
/// assert_eq!(estimate_pair(&a, &view, &PairQuery::Correlation).unwrap(), whole);
/// ```
///
/// # Errors
/// Those of the states' estimate.
pub fn estimate_pair(a: &dyn Synopsis, b: &dyn Synopsis, query: &PairQuery) -> Result<Estimate, SynopsisError> {
    match (a.as_any().downcast_ref::<Dft>(), b.as_any().downcast_ref::<QueryView>()) {
        (Some(dft), Some(view)) if *query == PairQuery::Correlation => {
            let (mine, theirs) = (dft.spectrum(), view.spectrum.as_ref());
            let theirs = theirs.ok_or_else(|| view.resident("a correlation with a synopsis that is not a DFT"))?;
            same_coefficients(&mine, theirs)?;
            mine.correlation(theirs)
        }
        _ => a.estimate_pair(b, query),
    }
}

/// Two spectra of DFTs keeping as many coefficients (what the states' parameter check covers
/// when one of them is a view, which holds no parameters of its own).
fn same_coefficients(a: &Spectrum, b: &Spectrum) -> Result<(), SynopsisError> {
    if a.coefficients.len() == b.coefficients.len() {
        return Ok(());
    }
    let reason = format!("{} vs {} coefficients", a.coefficients.len(), b.coefficients.len());
    Err(SynopsisError::Incompatible { kind: Kind::Dft, reason })
}

/// A number: small whole numbers (counts, bounds) in a varint of twice their value, others as
/// an odd marker and their bits — exact either way.
fn write_num(w: &mut Writer, x: f64) {
    if x.fract() == 0.0 && x.is_sign_positive() && x < (1u64 << 52) as f64 {
        w.varint((x as u64) << 1);
    } else {
        w.varint(1);
        w.f64(x);
    }
}

fn read_num(r: &mut Reader<'_>) -> Result<f64, SynopsisError> {
    match r.varint()? {
        1 => r.f64(),
        v if v & 1 == 0 => Ok((v >> 1) as f64),
        v => Err(SynopsisError::Codec(format!("number marker {v}"))),
    }
}

fn write_query(w: &mut Writer, q: &Query) {
    match q {
        Query::Count(v) => {
            w.u8(0);
            w.value(v);
        }
        Query::Distinct => w.u8(1),
        Query::Contains(v) => {
            w.u8(2);
            w.value(v);
        }
        Query::FrequentItems { support } => {
            w.u8(3);
            w.f64(*support);
        }
        Query::IsFrequent(v) => {
            w.u8(4);
            w.value(v);
        }
        Query::F2 => w.u8(5),
        Query::Quantile(x) => {
            w.u8(6);
            w.f64(*x);
        }
        Query::Rank(x) => {
            w.u8(7);
            w.f64(*x);
        }
        Query::Vector => w.u8(8),
        Query::Total => w.u8(9),
    }
}

fn read_query(r: &mut Reader<'_>) -> Result<Query, SynopsisError> {
    Ok(match r.u8()? {
        0 => Query::Count(r.value()?),
        1 => Query::Distinct,
        2 => Query::Contains(r.value()?),
        3 => Query::FrequentItems { support: r.f64()? },
        4 => Query::IsFrequent(r.value()?),
        5 => Query::F2,
        6 => Query::Quantile(r.f64()?),
        7 => Query::Rank(r.f64()?),
        8 => Query::Vector,
        9 => Query::Total,
        t => return Err(SynopsisError::Codec(format!("unknown query tag {t}"))),
    })
}

fn write_outcome(w: &mut Writer, kind: Kind, outcome: &Outcome) {
    match outcome {
        Ok(e) => {
            match &e.value {
                EstimateValue::Number(x) => {
                    w.u8(0);
                    write_num(w, *x);
                }
                EstimateValue::Bool(b) => {
                    w.u8(1);
                    w.u8(u8::from(*b));
                }
                EstimateValue::Items(items) => {
                    w.u8(2);
                    w.varint(items.len() as u64);
                    for (v, x) in items {
                        w.value(v);
                        write_num(w, *x);
                    }
                }
                EstimateValue::Vector(v) => {
                    w.u8(3);
                    w.varint(v.len() as u64);
                    v.iter().for_each(|x| w.f64(*x));
                }
            }
            for x in [e.lower, e.upper, e.confidence] {
                write_num(w, x);
            }
        }
        Err(e) => {
            // The error as it is (variant, kind, text): the cloud's answer line is the device's.
            let (tag, kind, text) = match e {
                SynopsisError::NotYet { kind, reason } => (4, *kind, reason.as_str()),
                SynopsisError::BadParameter { kind, reason } => (6, *kind, reason.as_str()),
                SynopsisError::Incompatible { kind, reason } => (7, *kind, reason.as_str()),
                SynopsisError::UnsupportedQuery { kind, query } => (8, *kind, query.as_str()),
                SynopsisError::BadQuery { kind, reason } => (9, *kind, reason.as_str()),
                SynopsisError::Codec(reason) => (10, kind, reason.as_str()),
                SynopsisError::UnknownKind(id) => {
                    w.u8(5);
                    w.varint(*id);
                    return;
                }
            };
            w.u8(tag);
            w.varint(u64::from(kind.id()));
            w.len_bytes(text.as_bytes());
        }
    }
}

fn read_outcome(r: &mut Reader<'_>) -> Result<Outcome, SynopsisError> {
    let tag = r.u8()?;
    let value = match tag {
        0 => EstimateValue::Number(read_num(r)?),
        1 => EstimateValue::Bool(r.u8()? != 0),
        2 => {
            let n = r.count(3)?;
            let items = (0..n).map(|_| Ok((r.value()?, read_num(r)?))).collect::<Result<_, SynopsisError>>()?;
            EstimateValue::Items(items)
        }
        3 => {
            let n = r.count(8)?;
            EstimateValue::Vector((0..n).map(|_| r.f64()).collect::<Result<_, _>>()?)
        }
        5 => return Ok(Err(SynopsisError::UnknownKind(r.varint()?))),
        4 | 6..=10 => {
            let id = r.varint()?;
            let kind = Kind::from_id(id).ok_or_else(|| SynopsisError::Codec(format!("error of unknown kind {id}")))?;
            let text = String::from_utf8(r.len_bytes()?.to_vec())
                .map_err(|_| SynopsisError::Codec("error text is not UTF-8".into()))?;
            return Ok(Err(match tag {
                4 => SynopsisError::NotYet { kind, reason: text },
                6 => SynopsisError::BadParameter { kind, reason: text },
                7 => SynopsisError::Incompatible { kind, reason: text },
                8 => SynopsisError::UnsupportedQuery { kind, query: text },
                9 => SynopsisError::BadQuery { kind, reason: text },
                _ => SynopsisError::Codec(text),
            }));
        }
        t => return Err(SynopsisError::Codec(format!("unknown outcome tag {t}"))),
    };
    let (lower, upper, confidence) = (read_num(r)?, read_num(r)?, read_num(r)?);
    Ok(Ok(Estimate { value, lower, upper, confidence }))
}
