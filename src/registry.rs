//! From the API's `synopsisID` and parameter list to a constructed synopsis, and from bytes
//! back to a synopsis of whatever kind they hold.
//!
//! Dispatch is on the numeric id only: the name in `param[0]` of the reference requests is
//! informational (the reference files spell it "BloomFitler" in places).

use serde_json::Value as Json;

use crate::codec::decode_envelope;
use crate::params::Params;
use crate::{Kind, Synopsis, SynopsisError};

/// Construct a synopsis from the API's `synopsisID` and its construct parameters
/// (`param[3..]` of a reference request: everything after name, field and status).
///
/// # Errors
/// [`SynopsisError::UnknownKind`] for an id that names no kind; [`SynopsisError::BadParameter`]
/// for a wrong number of parameters, non-numeric values, or values out of range.
pub fn construct(synopsis_id: u64, params: &[Json]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let kind = Kind::from_id(synopsis_id).ok_or(SynopsisError::UnknownKind(synopsis_id))?;
    construct_kind(kind, params)
}

/// Construct a synopsis of `kind` from its construct parameters.
///
/// # Errors
/// As [`construct`].
pub fn construct_kind(kind: Kind, params: &[Json]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let p = Params::new(kind, params);
    let _ = &p;
    match kind {
        // kind 1
        Kind::CountMin => Ok(Box::new(crate::count_min::CountMin::from_params(&p)?)),
        // kind 2
        Kind::HyperLogLog => Ok(Box::new(crate::hyper_log_log::HyperLogLog::from_params(&p)?)),
        // kind 3
        Kind::BloomFilter => Ok(Box::new(crate::bloom_filter::BloomFilter::from_params(&p)?)),
        // kind 4
        Kind::Dft => Ok(Box::new(crate::dft::Dft::from_params(&p)?)),
        // kind 5
        Kind::LossyCounting => Ok(Box::new(crate::lossy_counting::LossyCounting::from_params(&p)?)),
        // kind 6
        Kind::StickySampling => Ok(Box::new(crate::sticky_sampling::StickySampling::from_params(&p)?)),
        // kind 7
        Kind::Ams => Ok(Box::new(crate::ams::Ams::from_params(&p)?)),
        // kind 8
        Kind::GkQuantiles => Ok(Box::new(crate::gk_quantiles::GkQuantiles::from_params(&p)?)),
        // kind 9
        Kind::Lsh => Ok(Box::new(crate::lsh::Lsh::from_params(&p)?)),
        // kind 10
        Kind::WindowSketchQuantiles => {
            Ok(Box::new(crate::window_sketch_quantiles::WindowSketchQuantiles::from_params(&p)?))
        }
        // kind 11
        Kind::Kll => Ok(Box::new(crate::kll::Kll::from_params(&p)?)),
        // kind 12
        Kind::Cpc => Ok(Box::new(crate::cpc::Cpc::from_params(&p)?)),
        // kind 13
        Kind::FrequentItems => Ok(Box::new(crate::frequent_items::FrequentItems::from_params(&p)?)),
        // end of kinds
    }
}

/// Decode bytes written by [`Synopsis::encode`], whatever kind they hold.
///
/// # Errors
/// [`SynopsisError::Codec`] for bytes that are truncated, corrupted, of another format version,
/// or whose payload does not match the kind's layout.
pub fn decode(bytes: &[u8]) -> Result<Box<dyn Synopsis>, SynopsisError> {
    let (header, payload) = decode_envelope(bytes)?;
    let _ = payload;
    match header.kind {
        // kind 1
        Kind::CountMin => crate::count_min::codec::decode(&header, payload),
        // kind 2
        Kind::HyperLogLog => crate::hyper_log_log::codec::decode(&header, payload),
        // kind 3
        Kind::BloomFilter => crate::bloom_filter::codec::decode(&header, payload),
        // kind 4
        Kind::Dft => crate::dft::decode(&header, payload),
        // kind 5
        Kind::LossyCounting => crate::lossy_counting::codec::decode(&header, payload),
        // kind 6
        Kind::StickySampling => crate::sticky_sampling::codec::decode(&header, payload),
        // kind 7
        Kind::Ams => crate::ams::codec::decode(&header, payload),
        // kind 8
        Kind::GkQuantiles => crate::gk_quantiles::codec::decode(&header, payload),
        // kind 9
        Kind::Lsh => crate::lsh::decode(&header, payload),
        // kind 10
        Kind::WindowSketchQuantiles => crate::window_sketch_quantiles::codec::decode(&header, payload),
        // kind 11
        Kind::Kll => crate::kll::decode(&header, payload),
        // kind 12
        Kind::Cpc => crate::cpc::decode(&header, payload),
        // kind 13
        Kind::FrequentItems => crate::frequent_items::decode(&header, payload),
        // end of kinds
    }
}
