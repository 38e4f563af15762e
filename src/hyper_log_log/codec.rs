//! Byte layout of a HyperLogLog payload (inside the envelope of [`crate::codec`]).
//!
//! The envelope's parameters are `[rsd]`, which fixes the precision `p`; its seed is the
//! hash seed. The payload is the registers themselves:
//!
//! | field | encoding | meaning |
//! |---|---|---|
//! | registers | `2^p` bytes | register `i` (0 = empty, at most `65 − p`) |
//!
//! Decoding refuses a payload of another length or a register above `65 − p`.

use crate::codec::{Header, ToBytes, encode_envelope};
use crate::{Kind, Synopsis, SynopsisError};

use super::sketch::HyperLogLog;

impl ToBytes for HyperLogLog {
    fn to_bytes(&self) -> Vec<u8> {
        encode_envelope(Kind::HyperLogLog, self.seed(), &[self.rsd()], self.registers())
    }
}

fn err(reason: impl Into<String>) -> SynopsisError {
    SynopsisError::Codec(reason.into())
}

/// Rebuild a HyperLogLog from its envelope header and payload.
///
/// # Errors
/// [`SynopsisError::Codec`] when the parameters are invalid, the payload has the wrong length,
/// or a register is out of range.
pub(crate) fn decode(header: &Header, payload: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    Ok(Box::new(decode_payload(header, payload)?))
}

/// Rebuild a HyperLogLog, concretely typed.
///
/// # Errors
/// As [`decode`].
pub(crate) fn decode_payload(header: &Header, payload: &[u8]) -> Result<HyperLogLog, SynopsisError> {
    let [rsd] = header.params[..] else {
        return Err(err(format!("HyperLogLog needs 1 parameter, the header has {}", header.params.len())));
    };
    let mut hll = HyperLogLog::with_rsd_seed(rsd, header.seed).map_err(|e| err(e.to_string()))?;
    if payload.len() != hll.registers().len() {
        return Err(err(format!("{} register bytes, expected {}", payload.len(), hll.registers().len())));
    }
    let max = hll.max_register();
    if let Some(bad) = payload.iter().find(|r| **r > max) {
        return Err(err(format!("register value {bad} exceeds {max}")));
    }
    hll.set_registers(payload.to_vec());
    Ok(hll)
}
