//! A device's partials of one update group for one window, as the cloud job's reader hands them
//! to the update operator inside a [`crate::Rec`] ([`crate::Val::Part`]).
//!
//! The edge runtime (`saams-edge`) maintains, next to its data, the partials of the synopses
//! whose merge is exact (Count-Min, HyperLogLog, Bloom, AMS: [`saams::Kind::merges_exactly`]),
//! and ships them per window. The reader of the partials topic has already checked the
//! shipment (CRC, device, window, sequence) and named each partial by the synopsis' index in
//! this job's plan; what crosses the dataflow is only the group, the window (the record's
//! time), the values summarized and the partials, which the operator merges at the window's
//! close into the window's partial (spread synopses) or the merged state (owned ones).
//!
//! A device that is the only one reading a stream keeps that stream's owned groups *whole*
//! (order-dependent kinds such as DFT included): it feeds them as the cloud's owner would and
//! ships their state as at the window's close ([`DevicePart::whole`]), which the cloud installs
//! in place of its own instead of merging.
//!
//! ```
//! use saams::{CountMin, Datum, Synopsis};
//! use saams_operators::device_part::DevicePart;
//! let mut cm = CountMin::with_accuracy(0.01, 0.99, 7).unwrap();
//! cm.update(Datum::Num(2.5));
//! let part = DevicePart { items: 1, parts: vec![(3, Box::new(cm) as Box<dyn Synopsis>)], whole: None };
//! let back = DevicePart::decode(&part.encode()).unwrap();
//! assert_eq!((back.items, back.parts[0].0), (1, 3));
//! assert_eq!(back.parts[0].1.encode(), part.parts[0].1.encode());
//! assert_eq!(back.whole, None);
//! let whole = DevicePart { whole: Some(40), ..back };
//! assert_eq!(DevicePart::decode(&whole.encode()).unwrap().whole, Some(40));
//! assert!(DevicePart::decode(&[1, 2]).is_err());
//! ```

use saams::Synopsis;
use saams::codec::{Reader, Writer};

/// What a device summarized of one update group in one window.
#[derive(Debug)]
pub struct DevicePart {
    /// The values the partials summarize (every synopsis of a group takes the same values).
    pub items: u64,
    /// Per synopsis (its index in the plan): the device's partial.
    pub parts: Vec<(u32, Box<dyn Synopsis>)>,
    /// `None`: partials, merged into the cloud's state. `Some(n)`: whole states (the device
    /// fed them exactly as the cloud's owner feeds them, its state before this window being
    /// the cloud's), installed in place of the cloud's at the window's close; `n` is the values
    /// the states summarize in their open period (`Held::items`), `items` only this window's.
    pub whole: Option<u64>,
}

impl DevicePart {
    /// The bytes carried in [`crate::Val::Part`]: the values, the number of partials, then per
    /// partial the synopsis index and its codec bytes, then 0 for partials or 1 and the
    /// period's values for whole states.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.varint(self.items);
        w.varint(self.parts.len() as u64);
        for (s, syn) in &self.parts {
            w.varint(u64::from(*s));
            w.len_bytes(&if self.whole.is_some() { syn.encode_exact() } else { syn.encode() });
        }
        match self.whole {
            None => w.u8(0),
            Some(n) => {
                w.u8(1);
                w.varint(n);
            }
        }
        w.into_inner()
    }

    /// Decode [`DevicePart::encode`]'s bytes.
    ///
    /// # Errors
    /// Truncated or malformed bytes, or a partial the codec refuses.
    pub fn decode(bytes: &[u8]) -> Result<DevicePart, String> {
        let mut r = Reader::new(bytes);
        let items = r.varint().map_err(|e| e.to_string())?;
        let n = r.count(2).map_err(|e| e.to_string())?;
        let mut parts = Vec::with_capacity(n);
        for _ in 0..n {
            let s = r.varint().map_err(|e| e.to_string())?;
            let s = u32::try_from(s).map_err(|_| format!("synopsis index {s} out of range"))?;
            let syn = crate::query_view::decode_state(r.len_bytes().map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            parts.push((s, syn));
        }
        let whole = match r.u8().map_err(|e| e.to_string())? {
            0 => None,
            1 => Some(r.varint().map_err(|e| e.to_string())?),
            k => return Err(format!("unknown device part form {k}")),
        };
        r.finish().map_err(|e| e.to_string())?;
        Ok(DevicePart { items, parts, whole })
    }
}

/// Device partials the update operator could not merge (a partial the synopsis refuses to merge,
/// a group whose kinds do not merge exactly) or merged without every synopsis the window
/// registers (a device that did not know of a synopsis yet), since the process started.
static REFUSED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Count one device partial refused by the update operator, and say why on stderr.
pub fn refuse(why: &str) {
    REFUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    eprintln!("saams: device partial refused: {why}");
}

/// Device partials refused by the update operator in this process ([`refuse`]).
pub fn refused() -> u64 {
    REFUSED.load(std::sync::atomic::Ordering::Relaxed)
}
