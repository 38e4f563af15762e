//! Free-form JSON values (`requestID`, `uid`, parameters) inside typed values that travel
//! between processes.
//!
//! Timely serializes exchanged data with bincode, which cannot read a [`serde_json::Value`] (its
//! `Deserialize` asks the format what comes next, and bincode's binary form does not say). So
//! on a binary wire each value travels as its JSON text; in a human-readable format (JSON
//! itself: checkpoints' request logs) it stays the value it is. Used with
//! `#[serde(with = "wire_json::optional")]` / `"wire_json::many"`.
//!
//! ```
//! use saams::api::request::parse_requests;
//! let requests = parse_requests(
//!     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","requestID":{"n":[1,2.5]},"param":["CountMin","price","NotQueryable",0.01,0.99,7]}"#,
//! );
//! // Through a binary format (bincode, as timely sends it) and JSON alike, nothing changes.
//! let bytes = bincode::serialize(&requests).unwrap();
//! assert_eq!(bincode::deserialize::<saams::api::request::Parsed>(&bytes).unwrap(), requests);
//! let text = serde_json::to_string(&requests).unwrap();
//! assert!(text.contains(r#""request_id":{"n":[1,2.5]}"#));
//! assert_eq!(serde_json::from_str::<saams::api::request::Parsed>(&text).unwrap(), requests);
//! ```

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value as Json;

/// One value: itself in a human-readable format, its JSON text in a binary one.
struct Wire<'a>(&'a Json);

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() { self.0.serialize(s) } else { s.serialize_str(&self.0.to_string()) }
    }
}

/// The value [`Wire`] wrote.
struct Owned(Json);

impl<'de> Deserialize<'de> for Owned {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            Json::deserialize(d).map(Owned)
        } else {
            let text = String::deserialize(d)?;
            serde_json::from_str(&text).map(Owned).map_err(D::Error::custom)
        }
    }
}

/// `Option<serde_json::Value>` fields.
pub mod optional {
    use super::*;

    /// Write an optional value.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(v: &Option<Json>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(Wire).serialize(s)
    }

    /// Read an optional value.
    ///
    /// # Errors
    /// Those of the deserializer, or a value that is not JSON.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Json>, D::Error> {
        Ok(Option::<Owned>::deserialize(d)?.map(|o| o.0))
    }
}

/// `Vec<serde_json::Value>` fields.
pub mod many {
    use super::*;

    /// Write a list of values.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(v: &[Json], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(Wire))
    }

    /// Read a list of values.
    ///
    /// # Errors
    /// Those of the deserializer, or a value that is not JSON.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Json>, D::Error> {
        Ok(Vec::<Owned>::deserialize(d)?.into_iter().map(|o| o.0).collect())
    }
}
