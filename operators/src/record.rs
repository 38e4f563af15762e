//! What flows between the operators: routed tuple values, synopsis partials, answer lines.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use saams::{Datum, Synopsis};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod batch;
pub mod pool;
mod wire;

pub use batch::RecBatch;

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
    /// A device's partials of its update group for one window, encoded
    /// ([`crate::device_part::DevicePart`]): merged at the window's close, never fed as a value.
    Part(Box<[u8]>),
}

impl Val {
    /// Borrow as the synopses' [`Datum`].
    #[inline]
    pub fn datum(&self) -> Datum<'_> {
        match self {
            Val::Num(x) => Datum::Num(*x),
            Val::Str(s) => Datum::Str(s),
            // The update operator takes partials out of a batch before it feeds anything.
            Val::Part(_) => Datum::Str(""),
        }
    }
}

/// One tuple's value for one update group: the compact form that crosses the exchange (no stream
/// names, no field names: the group says which; the target worker follows from group, sequence
/// and window, [`crate::plan::Routing::target`]). Between processes it is one byte string
/// ([`wire`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Rec {
    /// The update group ([`crate::plan::Routing::groups`]).
    pub group: u32,
    /// Event time (ms since the epoch); its window is [`crate::plan::Plan::window_of`] it.
    pub time: i64,
    /// Arrival sequence, independent of the number of workers (input unit, line).
    pub seq: u64,
    /// The field's value.
    pub val: Val,
}

/// A synopsis that can cross process boundaries: serialized as its codec bytes.
///
/// Timely serializes only what goes to another process, so decoding one is a synopsis that
/// crossed: the bytes it took on the wire are counted there ([`wire_counts`]), from the very
/// bytes received, without encoding anything again.
///
/// Timely measures a container before it writes it (`serialized_size`, then `serialize_into`),
/// which would encode every synopsis that crosses twice: the packed bytes are kept from the
/// first pass for the second. The synopsis is reached through [`SynBox::get_mut`], which drops
/// them, so bytes kept are always those of the synopsis as it is.
#[derive(Debug)]
pub struct SynBox {
    syn: Box<dyn Synopsis>,
    /// The synopsis' packed codec bytes, once serialized.
    wire: OnceLock<Vec<u8>>,
}

impl Clone for SynBox {
    fn clone(&self) -> SynBox {
        SynBox::new(self.syn.clone())
    }
}

impl Serialize for SynBox {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.wire.get_or_init(|| pack_zero_runs(&self.syn.encode())))
    }
}

impl<'de> Deserialize<'de> for SynBox {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let packed: Vec<u8> = serde::de::Deserialize::deserialize(d)?;
        DECODED_BYTES.with(|n| n.set(n.get() + packed.len() as u64));
        let bytes = unpack_zero_runs(&packed).map_err(D::Error::custom)?;
        crate::query_view::decode_state(&bytes).map(SynBox::new).map_err(D::Error::custom)
    }
}

impl SynBox {
    /// Wrap a synopsis.
    pub fn new(syn: Box<dyn Synopsis>) -> SynBox {
        SynBox { syn, wire: OnceLock::new() }
    }

    /// The synopsis.
    pub fn get(&self) -> &dyn Synopsis {
        self.syn.as_ref()
    }

    /// The synopsis, to change (bytes kept for the wire are dropped).
    pub fn get_mut(&mut self) -> &mut Box<dyn Synopsis> {
        self.wire.take();
        &mut self.syn
    }

    /// The synopsis, unwrapped.
    pub fn into_inner(self) -> Box<dyn Synopsis> {
        self.syn
    }

    /// Bytes the synopsis takes on the wire between processes (its codec bytes, zero runs packed).
    /// This encodes it (once: what is shipped after reuses the bytes); the job's counts come from
    /// the decoder ([`wire_counts`]).
    pub fn wire_len(&self) -> usize {
        self.wire.get_or_init(|| pack_zero_runs(&self.syn.encode())).len()
    }
}

thread_local! {
    /// Packed synopsis bytes this thread has decoded: read around a partial's parts.
    static DECODED_BYTES: Cell<u64> = const { Cell::new(0) };
}

/// Partials received from other processes, since the process started.
static PARTIALS_RECEIVED: AtomicU64 = AtomicU64::new(0);
/// Their bytes on the wire (see [`wire_counts`]).
static PARTIAL_WIRE_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes of a partial on the wire besides its parts: synopsis, window, items and the parts'
/// count, as bincode's fixed-width integers.
const PARTIAL_HEADER_BYTES: u64 = 4 + 8 + 8 + 8;
/// Bytes per part besides the synopsis' packed bytes: the bin, and the byte string's length.
const PART_HEADER_BYTES: u64 = 8 + 8;

/// Partials this process received from other processes, and the bytes they took on the wire
/// (each synopsis' packed codec bytes as received, plus the fixed-width fields around them),
/// counted as timely decodes them: every partial that crosses a process boundary is decoded
/// exactly once, by the worker it goes to, and nothing else is (partials between workers of
/// one process are moved, not serialized). Summed over the processes of a job, this is every
/// partial that crossed.
pub fn wire_counts() -> (u64, u64) {
    (PARTIALS_RECEIVED.load(Ordering::Relaxed), PARTIAL_WIRE_BYTES.load(Ordering::Relaxed))
}

/// Decode a partial's parts, counting the partial and its bytes on the wire ([`wire_counts`]).
fn counted_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(u64, SynBox)>, D::Error> {
    let before = DECODED_BYTES.with(Cell::get);
    let parts: Vec<(u64, SynBox)> = Deserialize::deserialize(d)?;
    let packed = DECODED_BYTES.with(Cell::get) - before;
    PARTIALS_RECEIVED.fetch_add(1, Ordering::Relaxed);
    PARTIAL_WIRE_BYTES
        .fetch_add(PARTIAL_HEADER_BYTES + PART_HEADER_BYTES * parts.len() as u64 + packed, Ordering::Relaxed);
    Ok(parts)
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
    /// The synopsis ([`crate::plan::Routing::synopses`]).
    pub syn: u32,
    /// The window they summarize.
    pub window: u64,
    /// Items summarized.
    pub items: u64,
    /// Partials with their bin (merge order at the home worker). Decoding them counts them
    /// ([`wire_counts`]).
    #[serde(deserialize_with = "counted_parts")]
    pub parts: Vec<(u64, SynBox)>,
}

/// A synopsis' merged state after a window, on its way to the worker answering pair queries.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Snapshot {
    /// The synopsis.
    pub syn: u32,
    /// The window whose close produced it.
    pub window: u64,
    /// The first window the state covers (a landmark synopsis' first window).
    pub since: u64,
    /// Items summarized.
    pub items: u64,
    /// The worker it goes to.
    pub dest: u32,
    /// The state.
    pub state: SynBox,
}

#[cfg(test)]
mod tests {
    use super::*;
    use saams::registry;

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
        let mut syn = SynBox::new(cm.clone_box());
        let packed = pack_zero_runs(&syn.get().encode());
        assert_eq!(syn.wire_len(), packed.len());
        assert!(packed.len() * 4 < syn.get().encode().len(), "a 100-item Count-Min is mostly zeros");
        let back = registry::decode(&unpack_zero_runs(&packed).expect("unpack")).expect("decode");
        assert_eq!(back.encode(), syn.get().encode());
        // The bytes kept from the first encoding follow a change of the synopsis.
        let wire = bincode::serialize(&syn).expect("serialize");
        assert_eq!(bincode::serialize(&syn).expect("serialize again"), wire);
        for i in 0..1000 {
            syn.get_mut().update(Datum::Num(f64::from(i)));
        }
        let changed: SynBox = bincode::deserialize(&bincode::serialize(&syn).expect("serialize")).expect("decode");
        assert_eq!(changed.get().encode(), syn.get().encode());
        assert_ne!(bincode::serialize(&syn).expect("serialize"), wire);
    }

    #[test]
    fn decoding_a_partial_counts_it_and_its_wire_bytes_once() {
        let params = [serde_json::json!(0.01), serde_json::json!(0.99), serde_json::json!(7)];
        let mut cm = registry::construct(1, &params).expect("CountMin");
        for i in 0..50 {
            cm.update(Datum::Num(f64::from(i)));
        }
        let packed = SynBox::new(cm.clone_box()).wire_len() as u64;
        let partial = Partial {
            syn: 3,
            window: 60_000,
            items: 50,
            parts: vec![(0, SynBox::new(cm.clone_box())), (2, SynBox::new(cm))],
        };
        let text = serde_json::to_string(&partial).expect("serialize");
        let (partials, bytes) = wire_counts();
        assert_eq!(wire_counts(), (partials, bytes), "encoding counts nothing");
        let back: Partial = serde_json::from_str(&text).expect("deserialize");
        assert_eq!(back.parts.len(), 2);
        assert_eq!(back.parts[1].1.get().encode(), partial.parts[1].1.get().encode());
        let (after_partials, after_bytes) = wire_counts();
        assert_eq!(after_partials - partials, 1);
        assert_eq!(after_bytes - bytes, 28 + 2 * (16 + packed));
    }
}
