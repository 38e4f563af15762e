//! The records' byte layout, shared by the kinds that keep a counting table.

use super::identity::string_identity;
use super::record::Record;
use super::table::Table;
use crate::SynopsisError;
use crate::codec::{Reader, Writer};
use crate::hash::canonical_bits;

/// Write the records in canonical order: `count` varint, then per record `id` u64, `count`
/// varint, (`delta` varint if [`Record::WITH_DELTA`]), tag u8 (0 number, 1 string +
/// varint-length text). Sticky Sampling's records (no delta) write what version 1 of that kind
/// stores.
pub(crate) fn write_slots<R: Record>(w: &mut Writer, table: &Table<R>) {
    let slots = table.sorted();
    w.varint(slots.len() as u64);
    for s in &slots {
        w.u64(s.id());
        w.varint(s.count());
        if R::WITH_DELTA {
            w.varint(s.delta());
        }
        match table.text(s.id()) {
            Some(t) => {
                w.u8(1);
                w.len_bytes(t.as_bytes());
            }
            None => w.u8(0),
        }
    }
}

/// Read records written by [`write_slots`], checking that ids are strictly increasing, counts are
/// positive, numbers are canonical and every string's text hashes to its id.
///
/// `empty` makes the table to fill from the number of records (each kind sizes it as it always
/// has, so a decoded table has the capacity, and the size, of the one that was encoded).
pub(crate) fn read_slots<R: Record>(
    r: &mut Reader<'_>,
    empty: impl FnOnce(usize) -> Table<R>,
) -> Result<Table<R>, SynopsisError> {
    let err = |m: &str| SynopsisError::Codec(m.to_string());
    let n = r.count(if R::WITH_DELTA { 11 } else { 10 })?;
    let mut table = empty(n);
    let mut last: Option<u64> = None;
    for _ in 0..n {
        let id = r.u64()?;
        if last.is_some_and(|l| id <= l) {
            return Err(err("item ids are not strictly increasing"));
        }
        last = Some(id);
        let count = r.varint()?;
        if count == 0 {
            return Err(err("an item has count 0"));
        }
        let delta = if R::WITH_DELTA { r.varint()? } else { 0 };
        let text = match r.u8()? {
            0 => {
                if canonical_bits(f64::from_bits(id)) != id {
                    return Err(err("a numeric item is not in canonical form"));
                }
                None
            }
            1 => {
                let b = r.len_bytes()?;
                let s = std::str::from_utf8(b).map_err(|_| err("string item is not UTF-8"))?;
                if string_identity(s) != id {
                    return Err(err("a string item does not match its id"));
                }
                Some(s)
            }
            _ => return Err(err("unknown item tag")),
        };
        table.insert_new(R::from_parts(id, count, delta), text);
    }
    Ok(table)
}
