//! AIS position reports from CSV: the NOAA MarineCadastre columns and the Piraeus-style columns,
//! both found by header name.
//!
//! Stream id = the vessel (MMSI / shipid), value fields `lat`, `lon`, `speed`, `course`,
//! `heading`, `shiptype` (and `destination` when present). AIS "not available" sentinels become
//! missing fields, not numbers: speed ≥ 102.3 kn, course ≥ 360°, heading ≥ 360° (511), |lat| > 90
//! (91), |lon| > 180 (181); empty cells are missing too.

use saams::Value;
use saams::api::Tuple;

use crate::fields::{MAX_COLUMNS, opt_number, set_field, split_csv, timestamp_ms, trim};

/// Column positions of an AIS CSV, found in its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AisColumns {
    vessel: usize,
    time: usize,
    lat: usize,
    lon: usize,
    speed: Option<usize>,
    course: Option<usize>,
    heading: Option<usize>,
    shiptype: Option<usize>,
    destination: Option<usize>,
    /// Columns of a row to split: one past the rightmost column read.
    needed: usize,
}

fn find(cols: &[String], names: &[&str]) -> Option<usize> {
    cols.iter().position(|c| names.contains(&c.as_str())).filter(|&i| i < MAX_COLUMNS)
}

impl AisColumns {
    /// The columns named in `header` (case-insensitive): vessel `MMSI`/`shipid`/`vessel_id`, time
    /// `BaseDateTime`/`t`/`timestamp`, `LAT`/`lat`, `LON`/`lon`, and optionally `SOG`/`speed`,
    /// `COG`/`course`, `Heading`, `VesselType`/`shiptype`, `destination`.
    ///
    /// ```
    /// use saams_datasets::ais::AisColumns;
    /// assert!(AisColumns::from_header("MMSI,BaseDateTime,LAT,LON,SOG,COG,Heading").is_ok());
    /// assert!(AisColumns::from_header("t,shipid,lon,lat").is_ok());
    /// assert!(AisColumns::from_header("MMSI,LAT,LON").unwrap_err().contains("time"));
    /// ```
    ///
    /// # Errors
    /// When the vessel, time, latitude or longitude column is missing.
    pub fn from_header(header: &str) -> Result<AisColumns, String> {
        let cols: Vec<String> = header.split(',').map(|c| c.trim().trim_matches('"').to_ascii_lowercase()).collect();
        let need = |what: &str, names: &[&str]| {
            find(&cols, names).ok_or_else(|| format!("AIS header has no {what} column (one of {names:?}): {header:?}"))
        };
        let mut c = AisColumns {
            vessel: need("vessel", &["mmsi", "shipid", "ship_id", "vessel_id", "vesselid"])?,
            time: need("time", &["basedatetime", "t", "timestamp"])?,
            lat: need("latitude", &["lat", "latitude"])?,
            lon: need("longitude", &["lon", "lng", "longitude"])?,
            speed: find(&cols, &["sog", "speed"]),
            course: find(&cols, &["cog", "course"]),
            heading: find(&cols, &["heading"]),
            shiptype: find(&cols, &["vesseltype", "shiptype", "ship_type"]),
            destination: find(&cols, &["destination"]),
            needed: 0,
        };
        let optional = [c.speed, c.course, c.heading, c.shiptype, c.destination];
        c.needed =
            [c.vessel, c.time, c.lat, c.lon].into_iter().chain(optional.into_iter().flatten()).max().unwrap_or(0) + 1;
        Ok(c)
    }

    /// Parse one data row into a tuple of dataset `dataset_key`.
    ///
    /// ```
    /// use saams_datasets::ais::AisColumns;
    /// let c = AisColumns::from_header("MMSI,BaseDateTime,LAT,LON,SOG,COG,Heading,VesselType").unwrap();
    /// let t = c.parse("338148873,2022-01-03T00:00:00,33.60716,-117.91483,0.0,360.0,511,37", "US").unwrap();
    /// assert_eq!(t.stream_id, "338148873");
    /// assert_eq!(t.field("course"), None); // 360 = not available
    /// assert_eq!(t.field("heading"), None); // 511 = not available
    /// assert_eq!(t.field("shiptype"), Some(saams::Datum::Num(37.0)));
    /// ```
    ///
    /// # Errors
    /// A message naming the column: too few columns, an empty vessel id, a bad time, a non-number.
    pub fn parse(&self, line: &str, dataset_key: &str) -> Result<Tuple, String> {
        let mut t = crate::tuple_pool::take_spare();
        match self.parse_into(line, dataset_key, &mut t) {
            Ok(()) => Ok(t),
            Err(e) => {
                crate::tuple_pool::recycle(t);
                Err(e)
            }
        }
    }

    /// [`AisColumns::parse`] into `t`, overwriting its strings and fields in place (a reader that
    /// keeps one tuple allocates nothing per row). On an error `t` is unchanged.
    ///
    /// # Errors
    /// As [`AisColumns::parse`].
    pub fn parse_into(&self, line: &str, dataset_key: &str, t: &mut Tuple) -> Result<(), String> {
        // Only the columns up to the rightmost one read are split (an AIS row has 17, the NOAA
        // columns read end at the 11th); a row of at most 16 of them needs no 64-cell array.
        let (mut few, mut all);
        let cols: &mut [&str] = if self.needed <= 16 {
            few = [""; 16];
            &mut few[..self.needed]
        } else {
            all = [""; MAX_COLUMNS];
            &mut all[..self.needed]
        };
        let n = split_csv(line, cols).ok_or("unterminated quote")?;
        let get = |i: usize| if i < n { Ok(cols[i]) } else { Err(format!("expected more than {i} columns, got {n}")) };
        let vessel = trim(get(self.vessel)?);
        if vessel.is_empty() {
            return Err("vessel id is empty".into());
        }
        let time_ms = parse_ais_time(get(self.time)?)?;
        let optional = |i: Option<usize>, name: &str| match i {
            Some(i) if i < n => opt_number(cols[i], name),
            _ => Ok(None),
        };
        // Every column is read (and its error reported) before the tuple is touched.
        let values = [
            ("lat", opt_number(get(self.lat)?, "lat")?.filter(|x| x.abs() <= 90.0)),
            ("lon", opt_number(get(self.lon)?, "lon")?.filter(|x| x.abs() <= 180.0)),
            ("speed", optional(self.speed, "speed")?.filter(|x| (0.0..102.25).contains(x))),
            ("course", optional(self.course, "course")?.filter(|x| (0.0..360.0).contains(x))),
            ("heading", optional(self.heading, "heading")?.filter(|x| (0.0..360.0).contains(x))),
            ("shiptype", optional(self.shiptype, "shiptype")?.filter(|&x| x >= 0.0)),
        ];
        let destination = self.destination.filter(|&i| i < n).map(|i| cols[i].trim()).filter(|d| !d.is_empty());
        // The tuple's strings and field names are overwritten in place, so a row costs no
        // allocation (seven per row before: ~12 % of an AIS ingest went to malloc and free).
        t.stream_id.clear();
        t.stream_id.push_str(vessel);
        t.dataset_key.clear();
        t.dataset_key.push_str(dataset_key);
        t.time_ms = Some(time_ms);
        let mut k = 0;
        for (name, x) in values {
            if let Some(x) = x {
                set_field(&mut t.fields, k, name, Value::Num(x));
                k += 1;
            }
        }
        if let Some(d) = destination {
            let text = match t.fields.get_mut(k).map(|f| std::mem::replace(&mut f.1, Value::Num(0.0))) {
                Some(Value::Str(mut old)) => {
                    old.clear();
                    old.push_str(d);
                    old
                }
                _ => d.to_string(),
            };
            let text = if text.contains("\"\"") { text.replace("\"\"", "\"") } else { text };
            set_field(&mut t.fields, k, "destination", Value::Str(text));
            k += 1;
        }
        t.fields.truncate(k);
        Ok(())
    }
}

/// An AIS time: an ISO timestamp, or an integer since the epoch (≥ 10^11 → milliseconds, as
/// Piraeus' `t`; smaller → seconds).
fn parse_ais_time(s: &str) -> Result<i64, String> {
    let s = trim(s);
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let v: i64 = s.parse().map_err(|_| format!("time: out of range: {s:?}"))?;
        return Ok(if v >= 100_000_000_000 { v } else { v * 1000 });
    }
    timestamp_ms(s).ok_or_else(|| format!("time: bad timestamp {s:?}"))
}
