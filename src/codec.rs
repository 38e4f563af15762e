//! The versioned binary envelope every synopsis is encoded in, and the bounds-checked reader
//! and writer kinds use for their payloads.
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 4 | magic `SAMS` |
//! | 4 | 2 | format version, u16 LE (this is version [`FORMAT_VERSION`]) |
//! | 6 | 2 | kind id (the API's `synopsisID`), u16 LE |
//! | 8 | 8 | seed, u64 LE |
//! | 16 | 1 | number of parameters `p` |
//! | 17 | 8·p | parameters, f64 LE each (the kind's constructor parameters, resolved) |
//! | 17+8p | 4 | payload length `n`, u32 LE |
//! | 21+8p | n | payload (layout documented in each kind's `codec.rs`) |
//! | 21+8p+n | 4 | CRC-32 (IEEE) of every byte before it |
//!
//! Decoding never panics: truncated input, a wrong magic, an unknown version, a bad checksum,
//! or trailing bytes are all [`SynopsisError::Codec`] errors, so the decoder can be fed
//! arbitrary bytes (by a fuzzer, or from a snapshot file a user edited).

use crate::{Kind, SynopsisError};

/// The four bytes every encoded synopsis starts with.
pub const MAGIC: [u8; 4] = *b"SAMS";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// The most items a decoded synopsis of this crate's frequency and quantile kinds may claim to
/// have summarized (2⁶²): far beyond any real stream, and low enough that sums of counts, ranks and
/// merged lengths cannot overflow.
pub(crate) const MAX_ITEMS: u64 = 1 << 62;

/// The envelope's header: which kind, built with which parameters and seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The kind.
    pub kind: Kind,
    /// The format version the bytes were written with.
    pub version: u16,
    /// The seed of the synopsis' hash functions or random choices (0 when it has none).
    pub seed: u64,
    /// The constructor parameters.
    pub params: Vec<f64>,
}

/// A synopsis as bytes in the envelope: each kind implements it in its `codec.rs`, beside the
/// table of its payload's layout, and [`crate::Synopsis::encode`] and
/// [`crate::Synopsis::encode_exact`] answer with it (so a kind's `impl Synopsis` holds no codec
/// code, and its sketch needs nothing of its codec).
///
/// ```
/// use saams::codec::{ToBytes, decode_envelope};
/// use saams::{HyperLogLog, Kind, Synopsis};
/// let hll = HyperLogLog::with_rsd_seed(0.05, 3).unwrap();
/// assert_eq!(hll.to_bytes(), hll.encode());
/// assert_eq!(decode_envelope(&hll.to_bytes()).unwrap().0.kind, Kind::HyperLogLog);
/// ```
pub trait ToBytes {
    /// The envelope (magic, version, kind, parameters, seed) and the kind's payload.
    fn to_bytes(&self) -> Vec<u8>;

    /// Bytes that decode to a state that goes on exactly as this one would
    /// ([`crate::Synopsis::encode_exact`]): [`ToBytes::to_bytes`] unless the kind leaves out of
    /// it state it derives.
    fn to_exact_bytes(&self) -> Vec<u8> {
        self.to_bytes()
    }
}

/// Wrap a payload in the envelope.
///
/// ```
/// use saams::codec::{decode_envelope, encode_envelope};
/// use saams::Kind;
/// let bytes = encode_envelope(Kind::CountMin, 42, &[0.01, 0.99], b"payload");
/// let (header, payload) = decode_envelope(&bytes).unwrap();
/// assert_eq!(header.kind, Kind::CountMin);
/// assert_eq!(header.seed, 42);
/// assert_eq!(header.params, vec![0.01, 0.99]);
/// assert_eq!(payload, b"payload");
/// assert!(decode_envelope(&bytes[..bytes.len() - 1]).is_err());
/// ```
pub fn encode_envelope(kind: Kind, seed: u64, params: &[f64], payload: &[u8]) -> Vec<u8> {
    let mut w = Writer::with_capacity(25 + 8 * params.len() + payload.len());
    w.bytes(&MAGIC);
    w.u16(FORMAT_VERSION);
    w.u16(kind.id());
    w.u64(seed);
    w.u8(params.len() as u8);
    for p in params {
        w.f64(*p);
    }
    w.u32(payload.len() as u32);
    w.bytes(payload);
    let crc = crc32fast::hash(&w.buf);
    w.u32(crc);
    w.into_inner()
}

/// Check the envelope and split it into header and payload.
///
/// # Errors
/// [`SynopsisError::Codec`] for truncated or corrupted bytes, a wrong magic, an unknown format
/// version or kind, or trailing bytes.
pub fn decode_envelope(bytes: &[u8]) -> Result<(Header, &[u8]), SynopsisError> {
    if bytes.len() < 25 {
        return Err(codec_err(format!("{} bytes is shorter than any envelope", bytes.len())));
    }
    let (body, crc_bytes) = bytes.split_at(bytes.len() - 4);
    let mut r = Reader::new(body);
    if r.take(4)? != MAGIC {
        return Err(codec_err("wrong magic: not a saams synopsis"));
    }
    let version = r.u16()?;
    if version != FORMAT_VERSION {
        return Err(codec_err(format!(
            "format version {version} is not supported (this build reads {FORMAT_VERSION})"
        )));
    }
    let id = r.u16()?;
    let kind = Kind::from_id(u64::from(id)).ok_or_else(|| codec_err(format!("unknown kind id {id}")))?;
    let seed = r.u64()?;
    let n = r.u8()? as usize;
    let mut params = Vec::with_capacity(n);
    for _ in 0..n {
        params.push(r.f64()?);
    }
    let len = r.u32()? as usize;
    let payload = r.take(len)?;
    if !r.is_empty() {
        return Err(codec_err("payload length does not match the envelope"));
    }
    let crc = u32::from_le_bytes([crc_bytes[0], crc_bytes[1], crc_bytes[2], crc_bytes[3]]);
    if crc != crc32fast::hash(body) {
        return Err(codec_err("checksum mismatch: the bytes are corrupted"));
    }
    Ok((Header { kind, version, seed, params }, payload))
}

fn codec_err(reason: impl Into<String>) -> SynopsisError {
    SynopsisError::Codec(reason.into())
}

/// Zig-zag: `0, -1, 1, -2, …` as `0, 1, 2, 3, …`, so a signed number small either way (a
/// difference of two times, a counter below zero) takes few bytes as a varint or a short field.
///
/// ```
/// use saams::codec::{unzigzag, zigzag};
/// assert_eq!([0, -1, 1, -2].map(zigzag), [0, 1, 2, 3]);
/// assert_eq!(zigzag(i64::MIN), u64::MAX);
/// assert!([0, -7, 7, i64::MIN, i64::MAX].iter().all(|&x| unzigzag(zigzag(x)) == x));
/// ```
#[inline]
pub fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

/// The number [`zigzag`] wrote.
#[inline]
pub fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Appends little-endian fields to a byte buffer.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Writer { buf: Vec::new() }
    }
    /// An empty writer with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Self {
        Writer { buf: Vec::with_capacity(n) }
    }
    /// Append a byte.
    pub fn u8(&mut self, x: u8) {
        self.buf.push(x);
    }
    /// Append a u16.
    pub fn u16(&mut self, x: u16) {
        self.buf.extend_from_slice(&x.to_le_bytes());
    }
    /// Append a u32.
    pub fn u32(&mut self, x: u32) {
        self.buf.extend_from_slice(&x.to_le_bytes());
    }
    /// Append a u64.
    pub fn u64(&mut self, x: u64) {
        self.buf.extend_from_slice(&x.to_le_bytes());
    }
    /// Append an i64.
    pub fn i64(&mut self, x: i64) {
        self.buf.extend_from_slice(&x.to_le_bytes());
    }
    /// Append an f64.
    pub fn f64(&mut self, x: f64) {
        self.buf.extend_from_slice(&x.to_le_bytes());
    }
    /// Append an unsigned LEB128 varint (small counts take one byte).
    pub fn varint(&mut self, mut x: u64) {
        while x >= 0x80 {
            self.buf.push((x as u8) | 0x80);
            x >>= 7;
        }
        self.buf.push(x as u8);
    }
    /// Append raw bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    /// Append a length-prefixed (varint) byte string.
    pub fn len_bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }
    /// Append an owned value (tag byte 0 = number, 1 = string).
    pub fn value(&mut self, v: &crate::Value) {
        match v {
            crate::Value::Num(x) => {
                self.u8(0);
                self.f64(*x);
            }
            crate::Value::Str(s) => {
                self.u8(1);
                self.len_bytes(s.as_bytes());
            }
        }
    }
    /// The bytes written.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads little-endian fields, returning an error (never panicking) when bytes run out.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }
    /// True when every byte was read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }
    /// Take `n` raw bytes.
    ///
    /// # Errors
    /// When fewer than `n` bytes are left.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], SynopsisError> {
        if n > self.buf.len() {
            return Err(codec_err(format!("truncated: needed {n} more bytes, {} left", self.buf.len())));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], SynopsisError> {
        let b = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }
    /// Read a byte.
    ///
    /// # Errors
    /// When no byte is left.
    pub fn u8(&mut self) -> Result<u8, SynopsisError> {
        Ok(self.array::<1>()?[0])
    }
    /// Read a u16.
    ///
    /// # Errors
    /// When the bytes run out.
    pub fn u16(&mut self) -> Result<u16, SynopsisError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    /// Read a u32.
    ///
    /// # Errors
    /// When the bytes run out.
    pub fn u32(&mut self) -> Result<u32, SynopsisError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    /// Read a u64.
    ///
    /// # Errors
    /// When the bytes run out.
    pub fn u64(&mut self) -> Result<u64, SynopsisError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// Read an i64.
    ///
    /// # Errors
    /// When the bytes run out.
    pub fn i64(&mut self) -> Result<i64, SynopsisError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    /// Read an f64.
    ///
    /// # Errors
    /// When the bytes run out.
    pub fn f64(&mut self) -> Result<f64, SynopsisError> {
        Ok(f64::from_le_bytes(self.array()?))
    }
    /// Read an unsigned LEB128 varint.
    ///
    /// # Errors
    /// When the bytes run out, the varint is longer than 10 bytes, or it is not in its shortest
    /// form (a last byte of zero after a continuation byte, e.g. `[0x81, 0x00]` for 1). The
    /// writer only writes the shortest form, and refusing the others keeps every accepted
    /// payload re-encoding to the bytes it came from, so a synopsis has one encoding.
    ///
    /// ```
    /// use saams::codec::Reader;
    /// assert_eq!(Reader::new(&[0x81, 0x01]).varint().unwrap(), 129);
    /// assert_eq!(Reader::new(&[0x00]).varint().unwrap(), 0);
    /// let overlong = Reader::new(&[0x81, 0x00]).varint().unwrap_err();
    /// assert!(overlong.to_string().contains("shortest form"), "{overlong}");
    /// ```
    pub fn varint(&mut self) -> Result<u64, SynopsisError> {
        let mut x = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(codec_err("varint overflows 64 bits"));
            }
            x |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if b == 0 && shift > 0 {
                    return Err(codec_err("varint is not in its shortest form"));
                }
                return Ok(x);
            }
        }
        Err(codec_err("varint longer than 10 bytes"))
    }
    /// Read a count that must fit in what is left (`min_item_bytes` per item), so a corrupted
    /// count cannot make the decoder allocate gigabytes.
    ///
    /// # Errors
    /// When the count is larger than the remaining bytes allow.
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize, SynopsisError> {
        let n = self.varint()?;
        let max = self.buf.len() / min_item_bytes.max(1);
        if n > max as u64 {
            return Err(codec_err(format!("count {n} exceeds what {} remaining bytes can hold", self.buf.len())));
        }
        Ok(n as usize)
    }
    /// Read a length-prefixed byte string.
    ///
    /// # Errors
    /// When the bytes run out.
    pub fn len_bytes(&mut self) -> Result<&'a [u8], SynopsisError> {
        let n = self.count(1)?;
        self.take(n)
    }
    /// Read a value written by [`Writer::value`].
    ///
    /// # Errors
    /// When the bytes run out, the tag is unknown, or a string is not UTF-8.
    pub fn value(&mut self) -> Result<crate::Value, SynopsisError> {
        match self.u8()? {
            0 => Ok(crate::Value::Num(self.f64()?)),
            1 => {
                let b = self.len_bytes()?;
                let s = std::str::from_utf8(b).map_err(|_| codec_err("string value is not UTF-8"))?;
                Ok(crate::Value::Str(s.to_string()))
            }
            t => Err(codec_err(format!("unknown value tag {t}"))),
        }
    }
    /// Fail unless every byte was read.
    ///
    /// # Errors
    /// When bytes are left over.
    pub fn finish(&self) -> Result<(), SynopsisError> {
        if self.buf.is_empty() { Ok(()) } else { Err(codec_err(format!("{} trailing bytes", self.buf.len()))) }
    }
}
