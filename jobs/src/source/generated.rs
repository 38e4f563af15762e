//! The embedded seeded generator as a source: unit `i` is generated stream `i` (read by worker
//! `i mod W`), its arrival sequence is the tuple's index in the stream. Values are handed out as
//! plain numbers with their field names, with no allocation per tuple.
//!
//! A spec without a tuple count (`stocks:N`) gives streams that never end: [`Generated::next_values`]
//! always has a next tuple, and the job reads until it is stopped (SIGINT/SIGTERM, see
//! [`stop`](super::stop)). The arrival sequence shares a 64-bit word with the stream index (40 bits
//! for the index), so a single stream stays in order for 2^40 ≈ 10^12 tuples: 12 days at a
//! million tuples per second on that one stream.

use saams_datasets::{AisStream, GeneratorKind, GeneratorSpec, StockStream};

/// Field names of stock ticks, in [`Generated::next_values`] order.
pub const STOCK_FIELDS: [&str; 2] = ["price", "volume"];
/// Field names of AIS reports, in [`Generated::next_values`] order.
pub const AIS_FIELDS: [&str; 6] = ["lat", "lon", "speed", "course", "heading", "shiptype"];

enum Stream {
    Stocks(StockStream),
    Ais(AisStream),
}

/// One generated stream.
pub struct Generated {
    stream: Stream,
    /// The stream id.
    pub stream_id: String,
    /// The dataset key.
    pub dataset_key: String,
    /// The field names of the values.
    pub fields: &'static [&'static str],
    index: u64,
}

impl Generated {
    /// Stream `i` of `spec`.
    pub fn open(spec: &GeneratorSpec, i: usize) -> Generated {
        let (stream, fields): (Stream, &'static [&'static str]) = match spec.kind {
            GeneratorKind::Stocks => (Stream::Stocks(StockStream::new(spec, i)), &STOCK_FIELDS),
            GeneratorKind::Ais => (Stream::Ais(AisStream::new(spec, i)), &AIS_FIELDS),
        };
        Generated {
            stream,
            stream_id: spec.stream_id(i),
            dataset_key: spec.dataset_key(i).to_string(),
            fields,
            index: 0,
        }
    }

    /// Tuples handed out so far.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The stream's state (tuples handed out, and the generator's walk): stream `i` of the
    /// same spec goes on from it exactly ([`Generated::restore`]), on any worker or process,
    /// without generating the way there again as [`Generated::skip`] does.
    pub fn state(&self) -> (u64, Vec<u64>) {
        let walk = match &self.stream {
            Stream::Stocks(s) => s.state(),
            Stream::Ais(s) => s.state(),
        };
        (self.index, walk)
    }

    /// Stream `i` of `spec`, going on from `state` ([`Generated::state`]).
    ///
    /// ```
    /// use saams_datasets::GeneratorSpec;
    /// use saams_jobs::source::generated::Generated;
    /// let spec = GeneratorSpec::parse("ais:3:20").unwrap();
    /// let (mut a, mut values) = (Generated::open(&spec, 2), [0.0; 6]);
    /// a.skip(7);
    /// let mut b = Generated::restore(&spec, 2, a.state()).unwrap();
    /// let mut other = [0.0; 6];
    /// assert_eq!(a.next_values(&mut values), b.next_values(&mut other));
    /// assert_eq!((values, b.index()), (other, 8));
    /// ```
    ///
    /// # Errors
    /// When `state` is not one of this spec's kind of stream.
    pub fn restore(spec: &GeneratorSpec, i: usize, (index, walk): (u64, Vec<u64>)) -> Result<Generated, String> {
        let mut g = Generated::open(spec, i);
        match &mut g.stream {
            Stream::Stocks(s) => s.restore(&walk)?,
            Stream::Ais(s) => s.restore(&walk)?,
        }
        g.index = index;
        Ok(g)
    }

    /// Pass over the next `n` tuples (a resumed job reads on from a checkpoint's position: the
    /// streams are random walks, so the way there is generated again); false if the stream
    /// ended first.
    ///
    /// ```
    /// use saams_datasets::GeneratorSpec;
    /// use saams_jobs::source::generated::Generated;
    /// let spec = GeneratorSpec::parse("stocks:2:10").unwrap();
    /// let (mut a, mut b, mut values) = (Generated::open(&spec, 1), Generated::open(&spec, 1), [0.0; 6]);
    /// for _ in 0..4 {
    ///     a.next_values(&mut values);
    /// }
    /// assert!(b.skip(4));
    /// let (mut va, mut vb) = ([0.0; 6], [0.0; 6]);
    /// assert_eq!(a.next_values(&mut va), b.next_values(&mut vb));
    /// assert_eq!(va, vb);
    /// assert!(!b.skip(100));
    /// ```
    pub fn skip(&mut self, n: u64) -> bool {
        let mut values = [0.0; 6];
        (0..n).all(|_| self.next_values(&mut values).is_some())
    }

    /// The next tuple: its index (1-based), event time, and values (in [`Generated::fields`] order);
    /// `None` after the spec's tuples per stream (never for an unbounded spec).
    ///
    /// ```
    /// use saams_datasets::GeneratorSpec;
    /// use saams_jobs::source::generated::Generated;
    /// let mut values = [0.0; 6];
    /// let mut bounded = Generated::open(&GeneratorSpec::parse("stocks:2:3").unwrap(), 1);
    /// assert_eq!((0..5).filter_map(|_| bounded.next_values(&mut values)).count(), 3);
    /// let mut unbounded = Generated::open(&GeneratorSpec::parse("stocks:2").unwrap(), 1);
    /// assert_eq!(unbounded.next_values(&mut values).map(|(index, _)| index), Some(1));
    /// assert_eq!((0..100_000).filter_map(|_| unbounded.next_values(&mut values)).count(), 100_000);
    /// ```
    #[inline]
    pub fn next_values(&mut self, values: &mut [f64; 6]) -> Option<(u64, i64)> {
        let time = match &mut self.stream {
            Stream::Stocks(s) => {
                let t = s.next()?;
                values[0] = t.price;
                values[1] = t.volume as f64;
                t.time_ms
            }
            Stream::Ais(s) => {
                let r = s.next()?;
                *values = [r.lat, r.lon, r.speed, r.course, r.heading, f64::from(r.shiptype)];
                r.time_ms
            }
        };
        self.index += 1;
        Some((self.index, time))
    }
}
