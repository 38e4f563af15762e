//! Stock streams: a geometric random walk of prices with Pareto volumes.

use saams::Value;
use saams::api::Tuple;
use saams::hash::SplitMix64;

use super::random::{gaussian_pair, open01, round_to, uniform};
use super::spec::{GeneratorSpec, START_MS, STOCK_DATASETS};

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

    /// The walk's state so far, as words: what [`StockStream::restore`] needs to go on from
    /// here on another worker or process (the rest follows from the spec and the index).
    pub fn state(&self) -> Vec<u64> {
        let spare = self.spare_gaussian.map_or([0, 0], |z| [1, z.to_bits()]);
        let left = self.remaining.map_or([0, 0], |n| [1, n]);
        vec![self.rng.state(), left[0], left[1], self.time_ms as u64, self.log_price.to_bits(), spare[0], spare[1]]
    }

    /// Go on from `state` ([`StockStream::state`] of the same stream).
    ///
    /// ```
    /// use saams_datasets::generator::{GeneratorSpec, StockStream};
    /// let spec = GeneratorSpec::parse("stocks:2:9").unwrap();
    /// let mut a = StockStream::new(&spec, 1);
    /// a.nth(3);
    /// let mut b = StockStream::new(&spec, 1);
    /// b.restore(&a.state()).unwrap();
    /// assert_eq!(a.collect::<Vec<_>>(), b.collect::<Vec<_>>());
    /// assert!(StockStream::new(&spec, 1).restore(&[1, 2]).is_err());
    /// ```
    ///
    /// # Errors
    /// When `state` is not a stock stream's.
    pub fn restore(&mut self, state: &[u64]) -> Result<(), String> {
        let &[rng, bounded, left, time, log_price, spare, z] = state else {
            return Err(format!("a stock stream's state has 7 words, not {}", state.len()));
        };
        self.rng = SplitMix64::new(rng);
        self.remaining = (bounded == 1).then_some(left);
        self.time_ms = time as i64;
        self.log_price = f64::from_bits(log_price);
        self.spare_gaussian = (spare == 1).then(|| f64::from_bits(z));
        Ok(())
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
