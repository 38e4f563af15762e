//! What the operators need to know about a synopsis kind, asked in one place.
//!
//! Routing (which workers may build a synopsis' partials), the update operator (which values a
//! kind takes, in which order) and the tree merge (where partials may be merged) all decide by
//! kind. They ask these functions, never `Kind` variants themselves, so the answers live here
//! only — and can be handed over to the kinds' own methods with one edit.

use saams::Kind;

/// True for kinds whose merge gives bit-identical state whatever the merge tree and the update
/// order (linear or idempotent sketches): their partials may be built by any worker in any order.
///
/// ```
/// use saams::Kind;
/// use saams_operators::capabilities::merge_is_exact;
/// assert!(merge_is_exact(Kind::CountMin) && merge_is_exact(Kind::HyperLogLog));
/// assert!(!merge_is_exact(Kind::Kll) && !merge_is_exact(Kind::Dft));
/// ```
pub fn merge_is_exact(kind: Kind) -> bool {
    matches!(kind, Kind::CountMin | Kind::HyperLogLog | Kind::BloomFilter | Kind::Ams)
}

/// True for kinds that summarize numbers only (a non-numeric value is bad input for them).
///
/// ```
/// use saams::Kind;
/// use saams_operators::capabilities::needs_numbers;
/// assert!(needs_numbers(Kind::Dft) && needs_numbers(Kind::Kll));
/// assert!(!needs_numbers(Kind::CountMin) && !needs_numbers(Kind::HyperLogLog));
/// ```
pub fn needs_numbers(kind: Kind) -> bool {
    matches!(kind, Kind::Dft | Kind::GkQuantiles | Kind::Lsh | Kind::WindowSketchQuantiles | Kind::Kll)
}

/// True for kinds whose partials are merged wherever they meet in the tree, at every stage
/// (see [`crate::merge_tree`] for why each kind is or is not): the result of the merge does not
/// depend on the tree, or (KLL) depends on it no more than on the library's own random compactions.
///
/// ```
/// use saams::Kind;
/// use saams_operators::capabilities::reduces_at_every_stage;
/// assert!(reduces_at_every_stage(Kind::CountMin) && reduces_at_every_stage(Kind::Cpc));
/// assert!(!reduces_at_every_stage(Kind::LossyCounting) && !reduces_at_every_stage(Kind::GkQuantiles));
/// ```
pub fn reduces_at_every_stage(kind: Kind) -> bool {
    merge_is_exact(kind) || matches!(kind, Kind::Cpc | Kind::Kll)
}
