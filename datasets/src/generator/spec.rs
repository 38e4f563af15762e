//! What to generate ([`GeneratorSpec`]: kind, streams, tuples per stream, seed), and what a
//! stream's index alone determines: its id, its dataset key and its seeded random generator.

use std::fmt;
use std::str::FromStr;

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
    pub(super) fn rng(&self, i: usize) -> SplitMix64 {
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
