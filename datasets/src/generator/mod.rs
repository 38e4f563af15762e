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

mod ais;
mod random;
mod spec;
mod stock;

use saams::api::Tuple;

pub use ais::{AisReport, AisStream};
pub use spec::{
    AIS_AREAS, AisArea, CRYPTO_SYMBOLS, EQUITY_SYMBOLS, FOREX_SYMBOLS, GeneratorKind, GeneratorSpec, MAX_AIS_STREAMS,
    START_MS, STOCK_DATASETS, SpecError,
};
pub use stock::{StockStream, StockTick};

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
