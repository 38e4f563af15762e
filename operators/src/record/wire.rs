//! A [`Rec`]'s bytes between processes when it crosses in a serialized container (through
//! serde: one byte string per record). The update exchange's container, [`super::RecBatch`],
//! writes its records in a layout of its own, each against the one before.
//!
//! Why: timely writes what crosses a process boundary with bincode, which, through the derived
//! `Serialize`, writes every field through its own call (a `Write` per field, the enum's
//! variant index, the number): serializing and deserializing the paper workload's values took
//! ~130 instructions a record. Packed here into one fixed layout and written as one byte string,
//! a record costs one length and one copy each way (bincode borrows the bytes from the message
//! when it decodes).
//!
//! Layout (little-endian): group `u32`, time `i64`, seq `u64`, then a tag byte and the value:
//! `0` and the `f64` of a number, `1` and the UTF-8 of a text, `2` and a device partial's bytes
//! (the value runs to the end of the string). Only processes of the same job read it.

use std::fmt;

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Rec, Val};

/// Bytes before the value's tag: group, time, seq.
const HEAD: usize = 4 + 8 + 8;
const NUM: u8 = 0;
const STR: u8 = 1;
const PART: u8 = 2;

impl Serialize for Rec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.val {
            // Numbers, nearly every record: on the stack.
            Val::Num(_) => {
                let mut out = [0u8; NUM_LEN];
                write_num(self, &mut out);
                s.serialize_bytes(&out)
            }
            Val::Str(_) | Val::Part(_) => {
                let mut out = Vec::with_capacity(encoded_len(self));
                encode_into(self, &mut out);
                s.serialize_bytes(&out)
            }
        }
    }
}

/// Bytes of a number's record: head, tag, `f64`.
const NUM_LEN: usize = HEAD + 1 + 8;

/// Bytes of `r`'s layout.
#[inline]
fn encoded_len(r: &Rec) -> usize {
    match &r.val {
        Val::Num(_) => NUM_LEN,
        Val::Str(text) => HEAD + 1 + text.len(),
        Val::Part(bytes) => HEAD + 1 + bytes.len(),
    }
}

/// The record's head (group, time, seq) into the first [`HEAD`] bytes of `out`.
#[inline]
fn write_head(r: &Rec, out: &mut [u8]) {
    out[..4].copy_from_slice(&r.group.to_le_bytes());
    out[4..12].copy_from_slice(&r.time.to_le_bytes());
    out[12..HEAD].copy_from_slice(&r.seq.to_le_bytes());
}

/// A number's record into `out` ([`NUM_LEN`] bytes); another value's head only.
#[inline]
fn write_num(r: &Rec, out: &mut [u8; NUM_LEN]) {
    write_head(r, out);
    out[HEAD] = NUM;
    if let Val::Num(x) = r.val {
        out[HEAD + 1..].copy_from_slice(&x.to_le_bytes());
    }
}

/// `r`'s layout appended to `out` ([`encoded_len`] bytes).
fn encode_into(r: &Rec, out: &mut Vec<u8>) {
    let (tag, tail): (u8, &[u8]) = match &r.val {
        Val::Num(_) => {
            let mut num = [0u8; NUM_LEN];
            write_num(r, &mut num);
            out.extend_from_slice(&num);
            return;
        }
        Val::Str(text) => (STR, text.as_bytes()),
        Val::Part(bytes) => (PART, bytes),
    };
    let mut head = [0u8; HEAD + 1];
    write_head(r, &mut head);
    head[HEAD] = tag;
    out.extend_from_slice(&head);
    out.extend_from_slice(tail);
}

/// A record from its bytes.
fn decode(bytes: &[u8]) -> Result<Rec, String> {
    if bytes.len() <= HEAD {
        return Err(format!("a routed value of {} bytes (at least {} expected)", bytes.len(), HEAD + 1));
    }
    let word = |at: usize| -> [u8; 8] { bytes[at..at + 8].try_into().unwrap_or([0; 8]) };
    let group = u32::from_le_bytes(bytes[..4].try_into().unwrap_or([0; 4]));
    let (time, seq) = (i64::from_le_bytes(word(4)), u64::from_le_bytes(word(12)));
    let tail = &bytes[HEAD + 1..];
    let val = match bytes[HEAD] {
        NUM if tail.len() == 8 => Val::Num(f64::from_le_bytes(word(HEAD + 1))),
        NUM => return Err(format!("a routed number of {} bytes", tail.len())),
        STR => match std::str::from_utf8(tail) {
            Ok(text) => Val::Str(text.into()),
            Err(e) => return Err(format!("a routed text that is not UTF-8: {e}")),
        },
        PART => Val::Part(tail.into()),
        tag => return Err(format!("a routed value of unknown kind {tag}")),
    };
    Ok(Rec { group, time, seq, val })
}

struct RecBytes;

impl<'de> Visitor<'de> for RecBytes {
    type Value = Rec;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a routed value's bytes")
    }

    fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Rec, E> {
        decode(bytes).map_err(E::custom)
    }

    /// Formats that write bytes as a sequence of numbers (JSON).
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Rec, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(HEAD + 9));
        while let Some(b) = seq.next_element::<u8>()? {
            bytes.push(b);
        }
        decode(&bytes).map_err(A::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Rec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rec, D::Error> {
        d.deserialize_bytes(RecBytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(r: &Rec) -> Rec {
        let bytes = bincode::serialize(r).expect("encode");
        bincode::deserialize(&bytes).expect("decode")
    }

    /// Every kind of value, and the extremes of the fields, come back as they were sent, in
    /// bincode (timely's format between processes) and in JSON.
    #[test]
    fn a_record_survives_the_wire_whatever_its_value() {
        let vals = [
            Val::Num(-0.0),
            Val::Num(f64::MAX),
            Val::Num(1.5e-300),
            Val::Str("".into()),
            Val::Str("Ünïcödé vessel 367 ✓".into()),
            Val::Part(vec![0, 1, 2, 255].into()),
            Val::Part(Vec::new().into()),
        ];
        for (i, val) in vals.into_iter().enumerate() {
            let r = Rec { group: u32::MAX - i as u32, time: i64::MIN + i as i64, seq: u64::MAX - 7, val };
            assert_eq!(round_trip(&r), r);
            let json = serde_json::to_string(&r).expect("json");
            assert_eq!(serde_json::from_str::<Rec>(&json).expect("from json"), r);
        }
        // A number costs its 29 bytes and bincode's length.
        let n = Rec { group: 3, time: 60_000, seq: 1 << 40, val: Val::Num(101.25) };
        assert_eq!(bincode::serialize(&n).expect("encode").len(), 8 + HEAD + 1 + 8);
        let batch = vec![n.clone(), Rec { val: Val::Str("x".into()), ..n }];
        assert_eq!(
            bincode::deserialize::<Vec<Rec>>(&bincode::serialize(&batch).expect("encode")).expect("decode"),
            batch
        );
    }

    /// Bytes that are no record are an error that says what is wrong, not a panic.
    #[test]
    fn bytes_that_are_no_record_are_clear_errors() {
        let mut good = bincode::serialize(&Rec { group: 1, time: 2, seq: 3, val: Val::Num(4.0) }).expect("encode");
        assert!(decode(&good[8..HEAD + 8]).unwrap_err().contains("at least 21"));
        good[8 + HEAD] = 9;
        assert!(decode(&good[8..]).unwrap_err().contains("unknown kind 9"));
        assert!(decode(&[0; HEAD + 3]).unwrap_err().contains("routed number of 2 bytes"));
        let mut text = vec![0; HEAD];
        text.extend([STR, 0xff, 0xfe]);
        assert!(decode(&text).unwrap_err().contains("not UTF-8"));
        assert!(bincode::deserialize::<Rec>(&good).is_err());
    }
}
