//! AIS streams: one vessel's position reports, moored or under way in its sea area.

use saams::Value;
use saams::api::Tuple;
use saams::hash::SplitMix64;

use super::random::{gaussian_pair, round_to, uniform};
use super::spec::{AIS_AREAS, AisArea, GeneratorSpec, START_MS};

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

    /// The vessel's state so far, as words: what [`AisStream::restore`] needs to go on from
    /// here on another worker or process (the rest follows from the spec and the index).
    pub fn state(&self) -> Vec<u64> {
        let left = self.remaining.map_or([0, 0], |n| [1, n]);
        let floats = [self.speed, self.course, self.lat, self.lon].map(f64::to_bits);
        [self.rng.state(), left[0], left[1], self.time_ms as u64].into_iter().chain(floats).collect()
    }

    /// Go on from `state` ([`AisStream::state`] of the same vessel).
    ///
    /// ```
    /// use saams_datasets::generator::{AisStream, GeneratorSpec};
    /// let spec = GeneratorSpec::parse("ais:2:9").unwrap();
    /// let mut a = AisStream::new(&spec, 1);
    /// a.nth(3);
    /// let mut b = AisStream::new(&spec, 1);
    /// b.restore(&a.state()).unwrap();
    /// assert_eq!(a.collect::<Vec<_>>(), b.collect::<Vec<_>>());
    /// assert!(AisStream::new(&spec, 1).restore(&[]).is_err());
    /// ```
    ///
    /// # Errors
    /// When `state` is not a vessel's.
    pub fn restore(&mut self, state: &[u64]) -> Result<(), String> {
        let &[rng, bounded, left, time, speed, course, lat, lon] = state else {
            return Err(format!("a vessel's state has 8 words, not {}", state.len()));
        };
        self.rng = SplitMix64::new(rng);
        self.remaining = (bounded == 1).then_some(left);
        self.time_ms = time as i64;
        [self.speed, self.course, self.lat, self.lon] = [speed, course, lat, lon].map(f64::from_bits);
        Ok(())
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
