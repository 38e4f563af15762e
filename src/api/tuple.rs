//! A data tuple: one observation of one stream, as the JSON API carries it.

use std::fmt;

use serde_json::{Map, Value as Json};

use crate::api::time::{format_timestamp, parse_date, parse_time_of_day, parse_timestamp};
use crate::{Datum, Value};

/// One tuple: stream, dataset, event time and named value fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tuple {
    /// The stream (instrument, vessel).
    pub stream_id: String,
    /// The set of streams it belongs to (market, sea area).
    pub dataset_key: String,
    /// Event time in milliseconds since the Unix epoch (UTC); `None` = arrival order.
    pub time_ms: Option<i64>,
    /// Value fields in the order they appeared (`price`, `volume`, `lat`, …).
    pub fields: Vec<(String, Value)>,
}

/// Why a line is not a tuple.
#[derive(Clone, Debug, PartialEq)]
pub struct TupleError(pub String);

impl fmt::Display for TupleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TupleError {}

/// `a == b`, for the short names of fields and streams: names up to 16 bytes are compared as
/// their [`pack_name`] words, loaded inline, not by a call to `memcmp`, whose call and setup
/// cost more than the compare of a five-byte field name (~3 % of a JSON-lines ingest went to
/// such calls when a field was looked up by name).
///
/// ```
/// use saams::api::tuple::same_name;
/// for (a, b) in [("price", "price"), ("", ""), ("volume", "volumes"), ("abcdefgh", "abcdefgX"),
///                ("a-name-longer-than-16", "a-name-longer-than-16"), ("é", "e"), ("ab", "ba")] {
///     assert_eq!(same_name(a, b), a == b, "{a} {b}");
/// }
/// ```
#[inline]
pub fn same_name(a: &str, b: &str) -> bool {
    if a.len() != b.len() {
        return false;
    }
    match (pack_name(a), pack_name(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// A name of at most 16 bytes as two (possibly overlapping) little-endian words and its length:
/// given the length, the words hold every byte once or twice, so equal keys mean equal names.
pub type PackedName = (u64, u64, u8);

/// Pack `s` into a [`PackedName`], or `None` when it is longer than 16 bytes: a key that hashes
/// and compares as three integers (the routers' caches), and the inline compare of [`same_name`].
///
/// ```
/// use saams::api::tuple::pack_name as pack;
/// assert_eq!(pack("EURTRY"), pack("EURTRY"));
/// assert_ne!(pack("EURTRY"), pack("EURTRX"));
/// // Overlapping words: the length keeps "ABCDEFGH" (8) apart from "ABCDEFGHH" (9)...
/// assert_ne!(pack("ABCDEFGH"), pack("ABCDEFGHH"));
/// // ...and every byte counts, short names included.
/// assert_ne!(pack("AB"), pack("BB"));
/// assert_ne!(pack("ABC"), pack("AXC"));
/// assert_eq!(pack(""), Some((0, 0, 0)));
/// assert!(pack("a-name-of-17-byte").is_none());
/// ```
#[inline]
pub fn pack_name(s: &str) -> Option<PackedName> {
    let b = s.as_bytes();
    let n = b.len();
    let u32_at = |i: usize| b.get(i..i + 4).and_then(|w| w.try_into().ok()).map(u32::from_le_bytes);
    let u64_at = |i: usize| b.get(i..i + 8).and_then(|w| w.try_into().ok()).map(u64::from_le_bytes);
    match n {
        0 => Some((0, 0, 0)),
        1..=3 => Some((u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16, 0, n as u8)),
        4..=7 => Some((u64::from(u32_at(0)?), u64::from(u32_at(n - 4)?), n as u8)),
        8..=16 => Some((u64_at(0)?, u64_at(n - 8)?, n as u8)),
        _ => None,
    }
}

/// Keys of a JSON tuple that are not value fields.
const RESERVED: [&str; 7] = ["streamID", "dataSetKey", "date", "time", "timestamp", "objectID", "values"];

impl Tuple {
    /// The value of field `name`, if present.
    ///
    /// ```
    /// let t = saams::api::Tuple::from_json(r#"{"streamID":"A","dataSetKey":"F","price":1.5}"#).unwrap();
    /// assert_eq!(t.field("price"), Some(saams::Datum::Num(1.5)));
    /// assert_eq!(t.field("volume"), None);
    /// ```
    #[inline]
    pub fn field(&self, name: &str) -> Option<Datum<'_>> {
        self.fields.iter().find(|(k, _)| same_name(k, name)).map(|(_, v)| v.as_datum())
    }

    /// Parse the reference JSON form (or the nested `"values"` form, or an ISO `timestamp`).
    ///
    /// ```
    /// use saams::api::Tuple;
    /// let t = Tuple::from_json(r#"{"streamID":"EURTRY","dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654,"volume":1}"#).unwrap();
    /// assert_eq!(t.stream_id, "EURTRY");
    /// assert_eq!(t.time_ms, Some(1_546_387_201_000));
    /// assert!(Tuple::from_json("{not json").is_err());
    /// assert!(Tuple::from_json(r#"{"dataSetKey":"Forex"}"#).is_err());
    /// ```
    ///
    /// # Errors
    /// For malformed JSON, a non-object, a missing or non-string `streamID`/`dataSetKey`, an
    /// unparseable date/time, or a value field that is neither number nor string.
    pub fn from_json(line: &str) -> Result<Tuple, TupleError> {
        let json: Json = serde_json::from_str(line).map_err(|e| TupleError(format!("malformed JSON: {e}")))?;
        Tuple::from_json_value(&json)
    }

    /// As [`Tuple::from_json`], from an already parsed JSON value.
    ///
    /// # Errors
    /// As [`Tuple::from_json`].
    pub fn from_json_value(json: &Json) -> Result<Tuple, TupleError> {
        let obj = json.as_object().ok_or_else(|| TupleError("a tuple must be a JSON object".into()))?;
        let stream_id = string_field(obj, "streamID")?;
        let dataset_key = string_field(obj, "dataSetKey")?;
        let time_ms = match (obj.get("timestamp"), obj.get("date"), obj.get("time")) {
            (Some(Json::String(ts)), _, _) => {
                Some(parse_timestamp(ts).ok_or_else(|| TupleError(format!("bad timestamp {ts:?}")))?)
            }
            (_, Some(Json::String(d)), Some(Json::String(t))) => {
                let days = parse_date(d).ok_or_else(|| TupleError(format!("bad date {d:?}")))?;
                let ms = parse_time_of_day(t).ok_or_else(|| TupleError(format!("bad time {t:?}")))?;
                Some(days * 86_400_000 + ms)
            }
            (None, None, None) => None,
            _ => return Err(TupleError("event time needs a string `timestamp` or both `date` and `time`".into())),
        };
        let mut fields = Vec::new();
        for (k, v) in obj {
            if RESERVED.contains(&k.as_str()) {
                continue;
            }
            push_field(&mut fields, k, v)?;
        }
        if let Some(values) = obj.get("values") {
            let values = values.as_object().ok_or_else(|| TupleError("`values` must be an object".into()))?;
            for (k, v) in values {
                push_field(&mut fields, k, v)?;
            }
        }
        Ok(Tuple { stream_id, dataset_key, time_ms, fields })
    }

    /// The reference JSON form (`date` as `MM/dd/yyyy` is not kept: dates are written ISO,
    /// which [`Tuple::from_json`] reads back to the same time).
    ///
    /// ```
    /// use saams::api::Tuple;
    /// let line = r#"{"streamID":"EURTRY","dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01.5","price":6.0654,"volume":1}"#;
    /// let t = Tuple::from_json(line).unwrap();
    /// assert_eq!(Tuple::from_json(&t.to_json()).unwrap(), t);
    /// ```
    pub fn to_json(&self) -> String {
        let mut obj = Map::new();
        obj.insert("streamID".into(), Json::String(self.stream_id.clone()));
        obj.insert("dataSetKey".into(), Json::String(self.dataset_key.clone()));
        if let Some(ms) = self.time_ms {
            let ts = format_timestamp(ms);
            let (date, time) = ts.trim_end_matches('Z').split_once('T').unwrap_or((&ts, ""));
            obj.insert("date".into(), Json::String(date.to_string()));
            obj.insert("time".into(), Json::String(time.to_string()));
        }
        for (k, v) in &self.fields {
            let j = match v {
                Value::Num(x) => serde_json::Number::from_f64(*x).map(Json::Number).unwrap_or(Json::Null),
                Value::Str(s) => Json::String(s.clone()),
            };
            obj.insert(k.clone(), j);
        }
        Json::Object(obj).to_string()
    }
}

fn string_field(obj: &Map<String, Json>, key: &str) -> Result<String, TupleError> {
    match obj.get(key) {
        Some(Json::String(s)) => Ok(s.clone()),
        Some(Json::Number(n)) => Ok(n.to_string()),
        Some(other) => Err(TupleError(format!("`{key}` must be a string, got {other}"))),
        None => Err(TupleError(format!("missing `{key}`"))),
    }
}

fn push_field(fields: &mut Vec<(String, Value)>, k: &str, v: &Json) -> Result<(), TupleError> {
    match v {
        Json::Number(n) => {
            let x = n.as_f64().ok_or_else(|| TupleError(format!("field `{k}` is not a finite number")))?;
            fields.push((k.to_string(), Value::Num(x)));
        }
        Json::String(s) => fields.push((k.to_string(), Value::Str(s.clone()))),
        Json::Null => {}
        other => return Err(TupleError(format!("field `{k}` must be a number or a string, got {other}"))),
    }
    Ok(())
}
