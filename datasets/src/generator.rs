//! The seeded synthetic generator: the engine's embedded default input (`--generate stocks:N[:T]`,
//! `--generate ais:N[:T]`). Without `T` every stream is unbounded: it yields tuples until the
//! reader stops (a live demo or a benchmark that runs until interrupted).
//!
//! Every stream is an independent, non-allocating iterator seeded only by `(spec.seed, stream
//! index)`, so a worker that generates streams `i ≡ w (mod W)` produces exactly the tuples a single
//! worker would produce for them: the output never depends on the number of workers.
//!
//! # Stocks
//! - Dataset keys cycle `Forex`, `Equity`, `Crypto` over the stream index (`i % 3`).
//! - Stream ids come from a fixed list of real symbols per key ([`FOREX_SYMBOLS`],
//!   [`EQUITY_SYMBOLS`], [`CRYPTO_SYMBOLS`], 34 each); stream `i` takes symbol `i / 3` of its key's
//!   list. Past the end of a list the symbol gets a suffix `_<round>` (`EURTRY_1`, …), so any number
//!   of streams gets distinct ids, and the first 102 streams (hence every `stocks:100` stream) have
//!   plain, stable names. The lists are disjoint, so ids are distinct across keys too.
//! - Prices are a geometric random walk with per-stream start price, volatility and drift, emitted
//!   rounded to a per-stream tick (6 significant digits for forex, at least 2 decimals for equities and
//!   crypto), so values repeat as real prices do.
//! - Volumes are Pareto (heavy-tailed) integers ≥ 1 with a per-stream tail index; equities trade in
//!   multiples of 1 share above a 100-share scale.
//! - Event times start at [`START_MS`] (2019-01-02T00:00:00Z, the reference examples' day) plus a
//!   per-stream offset, and advance by exponential gaps (≥ 1 ms, per-stream mean 50 ms – 2 s), so
//!   each stream's times are strictly increasing.
//!
//! # AIS
//! - Dataset keys cycle over [`AIS_AREAS`] (sea areas, each with a bounding box).
//! - Stream ids are 9-digit MMSI-like numbers: the area's country code (MID) followed by six digits
//!   that are a bijection of the stream index, so up to [`MAX_AIS_STREAMS`] vessels are distinct.
//! - Each vessel has a constant AIS ship-type code; it is either moored (speed ≈ 0, reports every
//!   ~3 min) or under way (cruise speed 6–22 kn, reports every 2–30 s). Speed and course change
//!   smoothly (mean-reverting speed, small course drifts, turning back towards the area centre when it
//!   leaves its box); the position advances by speed·dt along the course.
//!
//! ```
//! use saams_datasets::generator::{GeneratorSpec, StockStream};
//! let spec = GeneratorSpec::parse("stocks:100:2000").unwrap();
//! assert_eq!((spec.stream_id(0), spec.dataset_key(0)), ("EURTRY".to_string(), "Forex"));
//! let ticks: Vec<_> = StockStream::new(&spec, 0).collect();
//! assert_eq!(ticks.len(), 2000);
//! assert!(ticks.windows(2).all(|w| w[0].time_ms < w[1].time_ms));
//! ```

use std::fmt;
use std::str::FromStr;

use saams::Value;
use saams::api::Tuple;
use saams::hash::{SplitMix64, hash_u64};

/// Event time of the first possible tuple: 2019-01-02T00:00:00Z in milliseconds since the epoch
/// (the day of the reference system's example files).
pub const START_MS: i64 = 1_546_387_200_000;

/// The largest number of AIS streams with distinct MMSI-like ids.
pub const MAX_AIS_STREAMS: usize = 1_000_000;

/// Forex pairs (the first two are the reference examples' streams).
pub const FOREX_SYMBOLS: [&str; 34] = [
    "EURTRY", "XAUUSD", "EURUSD", "GBPUSD", "USDJPY", "AUDUSD", "NZDUSD", "USDCAD", "USDCHF", "EURGBP", "EURJPY",
    "GBPJPY", "EURCHF", "AUDJPY", "EURAUD", "EURCAD", "GBPCHF", "CADJPY", "AUDNZD", "NZDJPY", "USDTRY", "USDMXN",
    "USDZAR", "USDSEK", "USDNOK", "USDSGD", "USDHKD", "EURNOK", "EURSEK", "GBPAUD", "GBPCAD", "XAGUSD", "EURPLN",
    "USDPLN",
];

/// Equity tickers.
pub const EQUITY_SYMBOLS: [&str; 34] = [
    "SPY", "IBM", "AAPL", "MSFT", "AMZN", "GOOG", "META", "BAC", "AIG", "JPM", "XOM", "CVX", "WMT", "KO", "PEP",
    "INTC", "CSCO", "ORCL", "NVDA", "AMD", "TSLA", "NFLX", "DIS", "GE", "F", "GM", "T", "VZ", "PFE", "MRK", "JNJ",
    "QQQ", "IWM", "DIA",
];

/// Crypto pairs.
pub const CRYPTO_SYMBOLS: [&str; 34] = [
    "BTCUSD", "ETHUSD", "LTCUSD", "BTCEUR", "ETHEUR", "LTCEUR", "BCHUSD", "XRPUSD", "ADAUSD", "DOTUSD", "SOLUSD",
    "DOGEUSD", "LINKUSD", "XLMUSD", "ETCUSD", "EOSUSD", "TRXUSD", "XTZUSD", "ATOMUSD", "ALGOUSD", "AVAXUSD",
    "MATICUSD", "UNIUSD", "AAVEUSD", "COMPUSD", "ZECUSD", "DASHUSD", "XMRUSD", "FILUSD", "ICPUSD", "NEARUSD",
    "SHIBUSD", "BATUSD", "MKRUSD",
];

/// The stock dataset keys, in the order they cycle over stream indices.
pub const STOCK_DATASETS: [&str; 3] = ["Forex", "Equity", "Crypto"];

/// A sea area: name (the AIS dataset key), AIS country code of its vessels, bounding box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AisArea {
    /// The dataset key.
    pub name: &'static str,
    /// Maritime identification digits (country) used as the first 3 digits of the MMSI.
    pub mid: u32,
    /// Southern edge, degrees.
    pub lat_min: f64,
    /// Northern edge, degrees.
    pub lat_max: f64,
    /// Western edge, degrees.
    pub lon_min: f64,
    /// Eastern edge, degrees.
    pub lon_max: f64,
}

/// The AIS areas, in the order they cycle over stream indices.
pub const AIS_AREAS: [AisArea; 6] = [
    AisArea { name: "SaronicGulf", mid: 237, lat_min: 37.45, lat_max: 38.00, lon_min: 23.10, lon_max: 23.75 },
    AisArea { name: "GulfOfMexico", mid: 366, lat_min: 27.50, lat_max: 30.20, lon_min: -95.50, lon_max: -88.00 },
    AisArea { name: "ChesapeakeBay", mid: 367, lat_min: 36.80, lat_max: 39.50, lon_min: -76.60, lon_max: -75.90 },
    AisArea { name: "SanFranciscoBay", mid: 338, lat_min: 37.40, lat_max: 38.10, lon_min: -122.60, lon_max: -122.00 },
    AisArea { name: "NorthSea", mid: 244, lat_min: 51.50, lat_max: 54.50, lon_min: 2.00, lon_max: 7.50 },
    AisArea { name: "SingaporeStrait", mid: 563, lat_min: 1.05, lat_max: 1.40, lon_min: 103.50, lon_max: 104.40 },
];

/// What the generator produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GeneratorKind {
    /// Stock ticks: `price`, `volume`.
    Stocks,
    /// AIS position reports: `lat`, `lon`, `speed`, `course`, `heading`, `shiptype`.
    Ais,
}

impl GeneratorKind {
    /// The name used in specs (`stocks`, `ais`).
    pub fn name(self) -> &'static str {
        match self {
            GeneratorKind::Stocks => "stocks",
            GeneratorKind::Ais => "ais",
        }
    }
}

/// Why a generator spec was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "generator spec: {}", self.0)
    }
}

impl std::error::Error for SpecError {}

/// What to generate: kind, number of streams, tuples per stream (or unbounded), seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GeneratorSpec {
    /// Stocks or AIS.
    pub kind: GeneratorKind,
    /// Number of streams (instruments or vessels), ≥ 1.
    pub streams: usize,
    /// Tuples each stream yields; `None`: unbounded, every stream yields tuples for as long as it
    /// is read (its first tuples are the same as a bounded spec's with the same seed).
    pub tuples_per_stream: Option<u64>,
    /// The seed; with the stream index it determines every value.
    pub seed: u64,
}

impl GeneratorSpec {
    /// How `T` is written for an unbounded spec by [`Display`](fmt::Display) (and read back by
    /// [`Self::parse`]).
    pub const UNBOUNDED: &'static str = "unbounded";
    /// Seed when the spec leaves it out (the reference examples' seed).
    pub const DEFAULT_SEED: u64 = 12_345;

    /// A spec with the default seed.
    ///
    /// ```
    /// use saams_datasets::generator::{GeneratorKind, GeneratorSpec};
    /// let s = GeneratorSpec::new(GeneratorKind::Ais, 3, Some(10)).unwrap();
    /// assert_eq!(s.seed, GeneratorSpec::DEFAULT_SEED);
    /// assert!(GeneratorSpec::new(GeneratorKind::Ais, 0, Some(10)).is_err());
    /// assert_eq!(GeneratorSpec::new(GeneratorKind::Ais, 3, None).unwrap().total_tuples(), None);
    /// ```
    ///
    /// # Errors
    /// When `streams` is 0, or above [`MAX_AIS_STREAMS`] for AIS.
    pub fn new(
        kind: GeneratorKind,
        streams: usize,
        tuples_per_stream: Option<u64>,
    ) -> Result<GeneratorSpec, SpecError> {
        if streams == 0 {
            return Err(SpecError("the number of streams must be at least 1".into()));
        }
        if kind == GeneratorKind::Ais && streams > MAX_AIS_STREAMS {
            return Err(SpecError(format!("at most {MAX_AIS_STREAMS} AIS streams (distinct MMSIs), got {streams}")));
        }
        Ok(GeneratorSpec { kind, streams, tuples_per_stream, seed: Self::DEFAULT_SEED })
    }

    /// The same spec with another seed.
    pub fn with_seed(self, seed: u64) -> GeneratorSpec {
        GeneratorSpec { seed, ..self }
    }

    /// Parse `kind:N[:T[:seed]]`, kind `stocks` or `ais` (case-insensitive). Without `T` (or with
    /// `T` = `unbounded`) every stream is unbounded; `seed` defaults to [`Self::DEFAULT_SEED`]. `_`
    /// is allowed as a digit separator (`ais:8_000:1_000`).
    ///
    /// ```
    /// use saams_datasets::generator::{GeneratorKind, GeneratorSpec};
    /// let s = GeneratorSpec::parse("stocks:100:2000").unwrap();
    /// assert_eq!((s.kind, s.streams, s.tuples_per_stream), (GeneratorKind::Stocks, 100, Some(2000)));
    /// assert_eq!(GeneratorSpec::parse("ais:5").unwrap().tuples_per_stream, None);
    /// assert_eq!(GeneratorSpec::parse("ais:5:unbounded:7").unwrap(), GeneratorSpec::parse("ais:5").unwrap().with_seed(7));
    /// assert_eq!(GeneratorSpec::parse("ais:5:10:7").unwrap().seed, 7);
    /// assert!(GeneratorSpec::parse("bonds:5").is_err());
    /// assert!(GeneratorSpec::parse("stocks:0").is_err());
    /// assert!(GeneratorSpec::parse("stocks:x").is_err());
    /// assert!(GeneratorSpec::parse("stocks:3:abc").is_err());
    /// assert!(GeneratorSpec::parse("stocks:1:2:3:4").is_err());
    /// ```
    ///
    /// # Errors
    /// For an unknown kind, a missing or non-integer count, `N = 0`, or extra components.
    pub fn parse(spec: &str) -> Result<GeneratorSpec, SpecError> {
        let mut parts = spec.trim().split(':');
        let kind = match parts.next().map(str::to_ascii_lowercase).as_deref() {
            Some("stocks" | "stock") => GeneratorKind::Stocks,
            Some("ais") => GeneratorKind::Ais,
            Some(other) => {
                return Err(SpecError(format!(
                    "unknown kind {other:?} in {spec:?}; expected `stocks:N[:T[:seed]]` or `ais:N[:T[:seed]]`"
                )));
            }
            None => return Err(SpecError("empty spec".into())),
        };
        let number =
            |what: &str, s: Option<&str>| -> Result<Option<u64>, SpecError> {
                match s {
                    None => Ok(None),
                    Some(s) => s.replace('_', "").parse::<u64>().map(Some).map_err(|_| {
                        SpecError(format!("{what} must be a non-negative integer, got {s:?} in {spec:?}"))
                    }),
                }
            };
        let streams = number("the number of streams N", parts.next())?.ok_or_else(|| {
            SpecError(format!("missing the number of streams in {spec:?}; expected `kind:N[:T[:seed]]`"))
        })?;
        let tuples = match parts.next() {
            None => None,
            Some(t) if t.eq_ignore_ascii_case(Self::UNBOUNDED) => None,
            Some(t) => Some(t.replace('_', "").parse::<u64>().map_err(|_| {
                SpecError(format!(
                    "tuples per stream T must be a non-negative integer or `{}`, got {t:?} in {spec:?}",
                    Self::UNBOUNDED
                ))
            })?),
        };
        let seed = number("the seed", parts.next())?.unwrap_or(Self::DEFAULT_SEED);
        if parts.next().is_some() {
            return Err(SpecError(format!("too many components in {spec:?}; expected `kind:N[:T[:seed]]`")));
        }
        let streams = usize::try_from(streams).map_err(|_| SpecError(format!("too many streams: {streams}")))?;
        Ok(GeneratorSpec::new(kind, streams, tuples)?.with_seed(seed))
    }

    /// The total number of tuples all streams yield; `None` when unbounded.
    ///
    /// ```
    /// use saams_datasets::generator::GeneratorSpec;
    /// assert_eq!(GeneratorSpec::parse("stocks:3:10").unwrap().total_tuples(), Some(30));
    /// assert_eq!(GeneratorSpec::parse("stocks:3").unwrap().total_tuples(), None);
    /// ```
    pub fn total_tuples(&self) -> Option<u64> {
        self.tuples_per_stream.map(|t| t.saturating_mul(self.streams as u64))
    }

    /// Stream id of stream `i` (see the module docs for the naming scheme).
    ///
    /// ```
    /// use saams_datasets::generator::GeneratorSpec;
    /// let s = GeneratorSpec::parse("stocks:200").unwrap();
    /// assert_eq!(s.stream_id(1), "SPY");
    /// assert_eq!(s.stream_id(102), "EURTRY_1");
    /// let a = GeneratorSpec::parse("ais:10").unwrap();
    /// assert_eq!(a.stream_id(0).len(), 9);
    /// ```
    pub fn stream_id(&self, i: usize) -> String {
        match self.kind {
            GeneratorKind::Stocks => {
                let list: &[&str; 34] = match i % 3 {
                    0 => &FOREX_SYMBOLS,
                    1 => &EQUITY_SYMBOLS,
                    _ => &CRYPTO_SYMBOLS,
                };
                let j = i / 3;
                let (base, round) = (list[j % list.len()], j / list.len());
                if round == 0 { base.to_string() } else { format!("{base}_{round}") }
            }
            GeneratorKind::Ais => mmsi(i).to_string(),
        }
    }

    /// Dataset key of stream `i`: `Forex`/`Equity`/`Crypto` cycling, or the AIS area's name.
    ///
    /// ```
    /// use saams_datasets::generator::GeneratorSpec;
    /// let s = GeneratorSpec::parse("stocks:4").unwrap();
    /// assert_eq!([s.dataset_key(0), s.dataset_key(1), s.dataset_key(2), s.dataset_key(3)], ["Forex", "Equity", "Crypto", "Forex"]);
    /// assert_eq!(GeneratorSpec::parse("ais:1").unwrap().dataset_key(0), "SaronicGulf");
    /// ```
    pub fn dataset_key(&self, i: usize) -> &'static str {
        match self.kind {
            GeneratorKind::Stocks => STOCK_DATASETS[i % 3],
            GeneratorKind::Ais => AIS_AREAS[i % AIS_AREAS.len()].name,
        }
    }

    /// The stream indices worker `index` of `peers` generates: `i ≡ index (mod peers)`.
    ///
    /// ```
    /// use saams_datasets::generator::GeneratorSpec;
    /// let s = GeneratorSpec::parse("stocks:5").unwrap();
    /// assert_eq!(s.streams_for_worker(1, 2).collect::<Vec<_>>(), vec![1, 3]);
    /// ```
    pub fn streams_for_worker(&self, index: usize, peers: usize) -> impl Iterator<Item = usize> + use<> {
        (index..self.streams).step_by(peers.max(1))
    }

    /// The seeded generator of stream `i` (depends only on kind, seed and `i`).
    fn rng(&self, i: usize) -> SplitMix64 {
        let salt = match self.kind {
            GeneratorKind::Stocks => 0x0057_04C5_u64,
            GeneratorKind::Ais => 0xA15_u64,
        };
        SplitMix64::new(hash_u64(i as u64, self.seed ^ salt.rotate_left(40)))
    }
}

impl FromStr for GeneratorSpec {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GeneratorSpec::parse(s)
    }
}

impl fmt::Display for GeneratorSpec {
    /// The canonical `kind:N:T:seed` form (`T` = `unbounded` when unbounded), which
    /// [`GeneratorSpec::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.tuples_per_stream {
            Some(t) => write!(f, "{}:{}:{t}:{}", self.kind.name(), self.streams, self.seed),
            None => write!(f, "{}:{}:{}:{}", self.kind.name(), self.streams, Self::UNBOUNDED, self.seed),
        }
    }
}

/// The MMSI-like id of AIS stream `i`: the area's MID, then a bijection of `i mod 10^6`.
fn mmsi(i: usize) -> u64 {
    let area = &AIS_AREAS[i % AIS_AREAS.len()];
    // 7919 is odd and not a multiple of 5, hence invertible modulo 10^6.
    let low = ((i as u64 % 1_000_000) * 7919 + 104_729) % 1_000_000;
    u64::from(area.mid) * 1_000_000 + low
}

/// Uniform in (0, 1]: safe to take the log of.
#[inline]
fn open01(rng: &mut SplitMix64) -> f64 {
    1.0 - rng.next_f64()
}

/// Uniform in [lo, hi).
#[inline]
fn uniform(rng: &mut SplitMix64, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.next_f64()
}

/// A standard normal pair (Box–Muller, both branches), so a tick costs one log/sqrt.
#[inline]
fn gaussian_pair(rng: &mut SplitMix64) -> (f64, f64) {
    let r = (-2.0 * open01(rng).ln()).sqrt();
    let (s, c) = (std::f64::consts::TAU * rng.next_f64()).sin_cos();
    (r * c, r * s)
}

/// Round to `scale` = 10^k steps; dividing an integer by an exact power of ten gives the double
/// nearest the decimal, so values print short.
#[inline]
fn round_to(x: f64, scale: f64) -> f64 {
    (x * scale).round() / scale
}

/// One generated stock tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StockTick {
    /// Event time, milliseconds since the epoch (UTC).
    pub time_ms: i64,
    /// Price, rounded to the stream's tick.
    pub price: f64,
    /// Traded volume, ≥ 1.
    pub volume: u64,
}

/// A deterministic stream of stock ticks (no allocation per tick).
#[derive(Clone, Debug)]
pub struct StockStream {
    stream_id: String,
    dataset_key: &'static str,
    rng: SplitMix64,
    /// `None`: unbounded.
    remaining: Option<u64>,
    time_ms: i64,
    mean_gap_ms: f64,
    log_price: f64,
    drift: f64,
    sigma: f64,
    price_scale: f64,
    min_price: f64,
    pareto_xm: f64,
    pareto_inv_alpha: f64,
    spare_gaussian: Option<f64>,
}

impl StockStream {
    /// Stream `i` of `spec` (its kind is not checked: any index yields stock ticks).
    ///
    /// ```
    /// use saams_datasets::generator::{GeneratorSpec, StockStream};
    /// let spec = GeneratorSpec::parse("stocks:3:50:1").unwrap();
    /// let a: Vec<_> = StockStream::new(&spec, 2).collect();
    /// let b: Vec<_> = StockStream::new(&spec, 2).collect();
    /// assert_eq!(a, b);
    /// assert!(a.iter().all(|t| t.volume >= 1 && t.price > 0.0));
    /// ```
    pub fn new(spec: &GeneratorSpec, i: usize) -> StockStream {
        let mut rng = spec.rng(i);
        let dataset_key = STOCK_DATASETS[i % 3];
        // Per-class ranges: start price (log-uniform), per-tick volatility, decimals, volume scale.
        let (p_lo, p_hi, sig_lo, sig_hi, xm): (f64, f64, f64, f64, f64) = match i % 3 {
            0 => (0.5, 150.0, 1e-5, 6e-5, 1.0),
            1 => (5.0, 600.0, 5e-5, 4e-4, 100.0),
            _ => (0.05, 60_000.0, 2e-4, 2e-3, 1.0),
        };
        let p0 = uniform(&mut rng, p_lo.ln(), p_hi.ln()).exp();
        let decimals = match i % 3 {
            0 => 5 - p0.log10().floor() as i32,
            _ => 2.max(3 - p0.log10().floor() as i32).min(8),
        };
        let price_scale = 10f64.powi(decimals.clamp(0, 10));
        let sigma = uniform(&mut rng, sig_lo, sig_hi);
        // Drift: at most ±1 % of the volatility per tick (±1 σ over 10 000 ticks), minus the Itô term.
        let drift = uniform(&mut rng, -0.01, 0.01) * sigma - 0.5 * sigma * sigma;
        let mean_gap_ms = uniform(&mut rng, 50f64.ln(), 2000f64.ln()).exp();
        let offset = (mean_gap_ms * rng.next_f64()) as i64;
        let alpha = uniform(&mut rng, 1.1, 1.8);
        StockStream {
            stream_id: spec.stream_id(i),
            dataset_key,
            rng,
            remaining: spec.tuples_per_stream,
            time_ms: START_MS + offset,
            mean_gap_ms,
            log_price: p0.ln(),
            drift,
            sigma,
            price_scale,
            min_price: 1.0 / price_scale,
            pareto_xm: xm,
            pareto_inv_alpha: 1.0 / alpha,
            spare_gaussian: None,
        }
    }

    /// The stream id.
    pub fn stream_id(&self) -> &str {
        &self.stream_id
    }

    /// The dataset key.
    pub fn dataset_key(&self) -> &'static str {
        self.dataset_key
    }

    /// Ticks not yet yielded; `None` when unbounded.
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// A tick as a [`Tuple`] of this stream (`price`, `volume`); allocates the tuple's strings.
    ///
    /// ```
    /// use saams_datasets::generator::{GeneratorSpec, StockStream};
    /// let spec = GeneratorSpec::parse("stocks:1:1").unwrap();
    /// let mut s = StockStream::new(&spec, 0);
    /// let tick = s.next().unwrap();
    /// let t = s.to_tuple(&tick);
    /// assert_eq!((t.stream_id.as_str(), t.dataset_key.as_str()), ("EURTRY", "Forex"));
    /// assert_eq!(t.field("price"), Some(saams::Datum::Num(tick.price)));
    /// ```
    pub fn to_tuple(&self, tick: &StockTick) -> Tuple {
        Tuple {
            stream_id: self.stream_id.clone(),
            dataset_key: self.dataset_key.to_string(),
            time_ms: Some(tick.time_ms),
            fields: vec![("price".into(), Value::Num(tick.price)), ("volume".into(), Value::Num(tick.volume as f64))],
        }
    }

    #[inline]
    fn gaussian(&mut self) -> f64 {
        match self.spare_gaussian.take() {
            Some(z) => z,
            None => {
                let (a, b) = gaussian_pair(&mut self.rng);
                self.spare_gaussian = Some(b);
                a
            }
        }
    }
}

impl Iterator for StockStream {
    type Item = StockTick;

    #[inline]
    fn next(&mut self) -> Option<StockTick> {
        if let Some(left) = &mut self.remaining {
            *left = left.checked_sub(1)?;
        }
        let gap = -self.mean_gap_ms * open01(&mut self.rng).ln();
        self.time_ms += 1 + gap as i64;
        let z = self.gaussian();
        self.log_price += self.drift + self.sigma * z;
        let price = round_to(self.log_price.exp(), self.price_scale).max(self.min_price);
        // Pareto(xm, alpha) by inversion, capped so a tick never overflows an i32 volume field.
        let v = self.pareto_xm * open01(&mut self.rng).powf(-self.pareto_inv_alpha);
        let volume = (v.min(2e9) as u64).max(1);
        Some(StockTick { time_ms: self.time_ms, price, volume })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.remaining {
            Some(left) => {
                let n = usize::try_from(left).unwrap_or(usize::MAX);
                (n, Some(n))
            }
            None => (usize::MAX, None),
        }
    }
}

/// One generated AIS position report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AisReport {
    /// Event time, milliseconds since the epoch (UTC), whole seconds.
    pub time_ms: i64,
    /// Latitude, degrees (5 decimals).
    pub lat: f64,
    /// Longitude, degrees (5 decimals).
    pub lon: f64,
    /// Speed over ground, knots (1 decimal).
    pub speed: f64,
    /// Course over ground, degrees in [0, 360) (1 decimal).
    pub course: f64,
    /// True heading, whole degrees in [0, 360).
    pub heading: f64,
    /// AIS ship-type code, constant per vessel.
    pub shiptype: u32,
}

/// AIS ship-type codes and their cumulative weights (fishing, towing, sailing, pleasure, tug,
/// passenger, cargo, tanker, other).
const SHIP_TYPES: [(u32, f64); 9] =
    [(30, 0.08), (31, 0.11), (36, 0.16), (37, 0.30), (52, 0.38), (60, 0.48), (70, 0.78), (80, 0.95), (90, 1.0)];

/// A deterministic stream of one vessel's position reports (no allocation per report).
#[derive(Clone, Debug)]
pub struct AisStream {
    stream_id: String,
    dataset_key: &'static str,
    area: AisArea,
    rng: SplitMix64,
    /// `None`: unbounded.
    remaining: Option<u64>,
    time_ms: i64,
    mean_gap_s: f64,
    lat: f64,
    lon: f64,
    speed: f64,
    cruise_speed: f64,
    course: f64,
    heading_offset: f64,
    shiptype: u32,
}

impl AisStream {
    /// Vessel `i` of `spec` (its kind is not checked: any index yields AIS reports).
    ///
    /// ```
    /// use saams_datasets::generator::{AisStream, GeneratorSpec};
    /// let spec = GeneratorSpec::parse("ais:2:100").unwrap();
    /// let r: Vec<_> = AisStream::new(&spec, 1).collect();
    /// assert_eq!(r.len(), 100);
    /// assert!(r.iter().all(|p| p.shiptype == r[0].shiptype && (0.0..360.0).contains(&p.course)));
    /// ```
    pub fn new(spec: &GeneratorSpec, i: usize) -> AisStream {
        let mut rng = spec.rng(i);
        let area = AIS_AREAS[i % AIS_AREAS.len()];
        let u = rng.next_f64();
        let shiptype = SHIP_TYPES.iter().find(|(_, w)| u < *w).map_or(90, |(c, _)| *c);
        let moored = rng.next_f64() < 0.3;
        let cruise_speed = if moored {
            0.0
        } else {
            match shiptype {
                30 | 36 | 37 => uniform(&mut rng, 4.0, 12.0),
                31 | 52 => uniform(&mut rng, 5.0, 11.0),
                60 => uniform(&mut rng, 12.0, 22.0),
                _ => uniform(&mut rng, 9.0, 16.0),
            }
        };
        let mean_gap_s = if moored { 180.0 } else { uniform(&mut rng, 2.0, 30.0) };
        let lat = uniform(&mut rng, area.lat_min, area.lat_max);
        let lon = uniform(&mut rng, area.lon_min, area.lon_max);
        let course = uniform(&mut rng, 0.0, 360.0);
        let heading_offset = uniform(&mut rng, -4.0, 4.0);
        let offset = (mean_gap_s * 1000.0 * rng.next_f64()) as i64 / 1000 * 1000;
        AisStream {
            stream_id: spec.stream_id(i),
            dataset_key: area.name,
            area,
            rng,
            remaining: spec.tuples_per_stream,
            time_ms: START_MS + offset,
            mean_gap_s,
            lat,
            lon,
            speed: cruise_speed,
            cruise_speed,
            course,
            heading_offset,
            shiptype,
        }
    }

    /// The stream id (MMSI-like).
    pub fn stream_id(&self) -> &str {
        &self.stream_id
    }

    /// The dataset key (area).
    pub fn dataset_key(&self) -> &'static str {
        self.dataset_key
    }

    /// Reports not yet yielded; `None` when unbounded.
    pub fn remaining(&self) -> Option<u64> {
        self.remaining
    }

    /// A report as a [`Tuple`] of this vessel (`lat`, `lon`, `speed`, `course`, `heading`,
    /// `shiptype`); allocates the tuple's strings.
    ///
    /// ```
    /// use saams_datasets::generator::{AisStream, GeneratorSpec};
    /// let spec = GeneratorSpec::parse("ais:1:1").unwrap();
    /// let mut s = AisStream::new(&spec, 0);
    /// let r = s.next().unwrap();
    /// let t = s.to_tuple(&r);
    /// assert_eq!(t.dataset_key, "SaronicGulf");
    /// assert_eq!(t.field("lat"), Some(saams::Datum::Num(r.lat)));
    /// assert_eq!(t.fields.len(), 6);
    /// ```
    pub fn to_tuple(&self, r: &AisReport) -> Tuple {
        Tuple {
            stream_id: self.stream_id.clone(),
            dataset_key: self.dataset_key.to_string(),
            time_ms: Some(r.time_ms),
            fields: vec![
                ("lat".into(), Value::Num(r.lat)),
                ("lon".into(), Value::Num(r.lon)),
                ("speed".into(), Value::Num(r.speed)),
                ("course".into(), Value::Num(r.course)),
                ("heading".into(), Value::Num(r.heading)),
                ("shiptype".into(), Value::Num(f64::from(r.shiptype))),
            ],
        }
    }
}

impl Iterator for AisStream {
    type Item = AisReport;

    #[inline]
    fn next(&mut self) -> Option<AisReport> {
        if let Some(left) = &mut self.remaining {
            *left = left.checked_sub(1)?;
        }
        let gap_s = (self.mean_gap_s * uniform(&mut self.rng, 0.5, 1.5)).round().max(1.0);
        self.time_ms += gap_s as i64 * 1000;
        let (z1, z2) = gaussian_pair(&mut self.rng);
        // Speed: mean-reverting towards the cruise speed, never negative.
        let reversion = (gap_s / 120.0).min(1.0);
        let jitter = if self.cruise_speed == 0.0 { 0.05 } else { 0.3 };
        self.speed = (self.speed + reversion * (self.cruise_speed - self.speed) + jitter * z1).max(0.0);
        // Course: a small drift, or a turn back towards the centre when outside the area.
        let (lat_c, lon_c) =
            ((self.area.lat_min + self.area.lat_max) / 2.0, (self.area.lon_min + self.area.lon_max) / 2.0);
        let outside = self.lat < self.area.lat_min
            || self.lat > self.area.lat_max
            || self.lon < self.area.lon_min
            || self.lon > self.area.lon_max;
        if outside {
            let home = (lon_c - self.lon).atan2(lat_c - self.lat).to_degrees();
            let diff = (home - self.course + 540.0).rem_euclid(360.0) - 180.0;
            self.course += diff.clamp(-15.0, 15.0);
        } else {
            self.course += 1.5 * z2 * (gap_s / 10.0).sqrt().min(3.0);
        }
        self.course = self.course.rem_euclid(360.0);
        // Advance: nautical miles = knots × hours; 1 nm = 1/60 degree of latitude.
        let dist_deg = self.speed * gap_s / 3600.0 / 60.0;
        let (s, c) = self.course.to_radians().sin_cos();
        self.lat = (self.lat + dist_deg * c).clamp(-89.0, 89.0);
        self.lon += dist_deg * s / self.lat.to_radians().cos();
        self.lon = (self.lon + 180.0).rem_euclid(360.0) - 180.0;
        let course = round_to(self.course, 10.0) % 360.0;
        let heading = (self.course + self.heading_offset).rem_euclid(360.0).round() % 360.0;
        Some(AisReport {
            time_ms: self.time_ms,
            lat: round_to(self.lat, 1e5),
            lon: round_to(self.lon, 1e5),
            speed: round_to(self.speed, 10.0),
            course,
            heading,
            shiptype: self.shiptype,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.remaining {
            Some(left) => {
                let n = usize::try_from(left).unwrap_or(usize::MAX);
                (n, Some(n))
            }
            None => (usize::MAX, None),
        }
    }
}

/// One generated stream of either kind, yielding [`Tuple`]s.
#[derive(Clone, Debug)]
pub enum GeneratedStream {
    /// A stock stream.
    Stock(StockStream),
    /// A vessel.
    Ais(AisStream),
}

impl GeneratedStream {
    /// Stream `i` of `spec`, of the spec's kind.
    pub fn new(spec: &GeneratorSpec, i: usize) -> GeneratedStream {
        match spec.kind {
            GeneratorKind::Stocks => GeneratedStream::Stock(StockStream::new(spec, i)),
            GeneratorKind::Ais => GeneratedStream::Ais(AisStream::new(spec, i)),
        }
    }

    /// The next tuple and its event time.
    pub fn next_tuple(&mut self) -> Option<(i64, Tuple)> {
        match self {
            GeneratedStream::Stock(s) => s.next().map(|t| (t.time_ms, s.to_tuple(&t))),
            GeneratedStream::Ais(s) => s.next().map(|r| (r.time_ms, s.to_tuple(&r))),
        }
    }
}

/// The tuples of several generated streams merged in event-time order (ties by stream index): what
/// a replay of the generator emits.
///
/// ```
/// use saams_datasets::generator::GeneratorSpec;
/// let spec = GeneratorSpec::parse("stocks:5:100").unwrap();
/// let all: Vec<_> = spec.interleaved(0, 1).collect();
/// assert_eq!(all.len(), 500);
/// assert!(all.windows(2).all(|w| w[0].time_ms <= w[1].time_ms));
/// // Two workers together produce the same tuples.
/// assert_eq!(spec.interleaved(0, 2).count() + spec.interleaved(1, 2).count(), 500);
/// ```
#[derive(Clone, Debug)]
pub struct Interleaved {
    streams: Vec<GeneratedStream>,
    next: Vec<Option<Tuple>>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(i64, usize)>>,
}

impl Iterator for Interleaved {
    type Item = Tuple;

    fn next(&mut self) -> Option<Tuple> {
        let std::cmp::Reverse((_, k)) = self.heap.pop()?;
        let out = self.next[k].take();
        if let Some((time, t)) = self.streams[k].next_tuple() {
            self.next[k] = Some(t);
            self.heap.push(std::cmp::Reverse((time, k)));
        }
        out
    }
}

impl GeneratorSpec {
    /// The tuples of the streams worker `index` of `peers` generates (see
    /// [`Self::streams_for_worker`]), merged in event-time order.
    pub fn interleaved(&self, index: usize, peers: usize) -> Interleaved {
        let mut streams: Vec<GeneratedStream> =
            self.streams_for_worker(index, peers).map(|i| GeneratedStream::new(self, i)).collect();
        let mut next = Vec::with_capacity(streams.len());
        let mut heap = std::collections::BinaryHeap::with_capacity(streams.len());
        for (k, s) in streams.iter_mut().enumerate() {
            match s.next_tuple() {
                Some((time, t)) => {
                    heap.push(std::cmp::Reverse((time, k)));
                    next.push(Some(t));
                }
                None => next.push(None),
            }
        }
        Interleaved { streams, next, heap }
    }
}
