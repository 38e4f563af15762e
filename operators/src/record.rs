//! What flows between the operators: routed tuple values, synopsis partials, answer lines.

use saams::{Datum, Synopsis, registry};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A field value: numbers travel without allocation; text only when a field is text.
///
/// Text is a `Box<str>` (no capacity field), which makes a [`Rec`] 40 bytes instead of 48: every
/// routed value is written into a container, exchanged and buffered for its window. On the wire
/// it is a string either way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Val {
    /// A number.
    Num(f64),
    /// Text.
    Str(Box<str>),
}

impl Val {
    /// Borrow as the synopses' [`Datum`].
    #[inline]
    pub fn datum(&self) -> Datum<'_> {
        match self {
            Val::Num(x) => Datum::Num(*x),
            Val::Str(s) => Datum::Str(s),
        }
    }
}

/// One tuple's value for one update group: the compact form that crosses the exchange (no stream
/// names, no field names: the group says which; the target worker follows from group, sequence
/// and window, [`crate::plan::Plan::target`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rec {
    /// The update group ([`crate::plan::Plan::groups`]).
    pub group: u32,
    /// Event time (ms since the epoch); its window is [`crate::plan::Plan::window_of`] it.
    pub time: i64,
    /// Arrival sequence, independent of the number of workers (input unit, line).
    pub seq: u64,
    /// The field's value.
    pub val: Val,
}

/// A synopsis that can cross process boundaries: serialized as its codec bytes.
#[derive(Clone, Debug)]
pub struct SynBox(pub Box<dyn Synopsis>);

impl Serialize for SynBox {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&pack_zero_runs(&self.0.encode()))
    }
}

impl<'de> Deserialize<'de> for SynBox {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let packed: Vec<u8> = serde::de::Deserialize::deserialize(d)?;
        let bytes = unpack_zero_runs(&packed).map_err(D::Error::custom)?;
        registry::decode(&bytes).map(SynBox).map_err(D::Error::custom)
    }
}

impl SynBox {
    /// Bytes the synopsis takes on the wire between processes (its codec bytes, zero runs packed).
    pub fn wire_len(&self) -> usize {
        pack_zero_runs(&self.0.encode()).len()
    }
}

/// Longest output [`unpack_zero_runs`] accepts (a bound on what a corrupt message can allocate).
const MAX_UNPACKED: u64 = 1 << 32;

/// Pack a synopsis' codec bytes for the wire: every run of zero bytes becomes a 0 byte and the
/// run's length as a varint; other bytes are copied. Partials of a window are mostly zero (counters
/// and registers no tuple of the window touched), so this is their sparse encoding; it is lossless,
/// so what the receiver decodes, and every answer, is unchanged.
///
/// ```
/// use saams_operators::record::{pack_zero_runs, unpack_zero_runs};
/// let bytes = [7, 0, 0, 0, 0, 0, 3, 0];
/// let packed = pack_zero_runs(&bytes);
/// assert_eq!(packed, vec![7, 0, 5, 3, 0, 1]);
/// assert_eq!(unpack_zero_runs(&packed).unwrap(), bytes);
/// ```
pub fn pack_zero_runs(bytes: &[u8]) -> Vec<u8> {
    let mut w = saams::codec::Writer::with_capacity(bytes.len() / 4 + 16);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == 0 {
            let run = bytes[i..].iter().take_while(|&&b| b == 0).count();
            w.u8(0);
            w.varint(run as u64);
            i += run;
        } else {
            w.u8(bytes[i]);
            i += 1;
        }
    }
    w.into_inner()
}

/// Undo [`pack_zero_runs`].
///
/// # Errors
/// For a truncated or overlong run length, a zero-length run, or an output longer than 4 GiB.
pub fn unpack_zero_runs(packed: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(packed.len() * 4);
    let mut r = saams::codec::Reader::new(packed);
    while !r.is_empty() {
        let b = r.u8().map_err(|e| e.to_string())?;
        if b != 0 {
            out.push(b);
            continue;
        }
        let run = r.varint().map_err(|e| format!("zero run: {e}"))?;
        if run == 0 || out.len() as u64 + run > MAX_UNPACKED {
            return Err(format!("bad zero run of {run} bytes after {} bytes", out.len()));
        }
        out.resize(out.len() + run as usize, 0);
    }
    Ok(out)
}

/// Partials of one synopsis for one window on their way to the synopsis' home worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Partial {
    /// The synopsis ([`crate::plan::Plan::synopses`]).
    pub syn: u32,
    /// The window they summarize.
    pub window: u64,
    /// Items summarized.
    pub items: u64,
    /// Partials with their bin (merge order at the home worker).
    pub parts: Vec<(u64, SynBox)>,
}

/// A synopsis' merged state after a window, on its way to the worker answering pair queries.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Snapshot {
    /// The synopsis.
    pub syn: u32,
    /// The window whose close produced it.
    pub window: u64,
    /// Items summarized.
    pub items: u64,
    /// The worker it goes to.
    pub dest: u32,
    /// The state.
    pub state: SynBox,
}

/// What the update, merge and fold operators emit: answer lines, partials, snapshots.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Out {
    /// One estimation, as a JSON line (no newline).
    Line(String),
    /// Partials to merge.
    Partial(Partial),
    /// A merged state for pair queries.
    Snapshot(Snapshot),
    /// A worker's open partials for an ad-hoc query or SAVE answered now ([`crate::ask`]).
    Ask(crate::ask::AskPart),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_run_packing_round_trips_sparse_and_dense_bytes() {
        let mut rng = saams::hash::SplitMix64::new(42);
        for density in [0u64, 1, 10, 50, 100] {
            for len in [0usize, 1, 2, 127, 128, 129, 5_000, 70_000] {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| if rng.next_u64() % 100 < density { (rng.next_u64() % 256) as u8 } else { 0 })
                    .collect();
                let packed = pack_zero_runs(&bytes);
                assert_eq!(unpack_zero_runs(&packed).as_deref(), Ok(&bytes[..]), "density {density} len {len}");
                if density <= 1 && len >= 5_000 {
                    assert!(packed.len() * 10 < len, "sparse bytes should shrink: {} of {len}", packed.len());
                }
            }
        }
    }

    #[test]
    fn corrupt_zero_runs_are_errors() {
        assert!(unpack_zero_runs(&[0]).is_err(), "truncated run length");
        assert!(unpack_zero_runs(&[5, 0, 0]).is_err(), "zero-length run");
        assert!(unpack_zero_runs(&[0, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]).is_err(), "run past the bound");
    }

    #[test]
    fn a_partial_survives_the_wire_encoding_bit_for_bit() {
        let params = [serde_json::json!(0.002), serde_json::json!(0.99), serde_json::json!(12345)];
        let mut cm = registry::construct(1, &params).expect("CountMin");
        for i in 0..100 {
            cm.update_at(Datum::Num(f64::from(i % 7)), i64::from(i));
        }
        let syn = SynBox(cm.clone_box());
        let packed = pack_zero_runs(&syn.0.encode());
        assert_eq!(syn.wire_len(), packed.len());
        assert!(packed.len() * 4 < syn.0.encode().len(), "a 100-item Count-Min is mostly zeros");
        let back = registry::decode(&unpack_zero_runs(&packed).expect("unpack")).expect("decode");
        assert_eq!(back.encode(), syn.0.encode());
    }
}
