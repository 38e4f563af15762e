//! The kinds of synopsis, and what the engine may do with each: what is asked of a kind (how it
//! merges, in which order it must be updated, what values it takes) is answered here, next to
//! the kind, instead of in the operators that act on the answers.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The kinds of synopsis, numbered as the JSON API's `synopsisID`.
///
/// ```
/// use saams::Kind;
/// assert_eq!(Kind::from_id(1), Some(Kind::CountMin));
/// assert_eq!(Kind::CountMin.id(), 1);
/// assert_eq!(Kind::from_id(42), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Kind {
    /// Count-Min sketch: point frequencies, never underestimates.
    CountMin,
    /// HyperLogLog: distinct counts.
    HyperLogLog,
    /// Bloom filter: set membership with no false negatives.
    BloomFilter,
    /// Sliding-window DFT coefficients and correlation between streams.
    Dft,
    /// Lossy Counting (Manku–Motwani): frequencies and frequent items, deterministic.
    LossyCounting,
    /// Sticky Sampling (Manku–Motwani): frequent items, probabilistic.
    StickySampling,
    /// AMS (tug-of-war) sketch: F2, point counts, inner products.
    Ams,
    /// Greenwald–Khanna quantile summary.
    GkQuantiles,
    /// Random-hyperplane LSH signatures of a stream's recent window.
    Lsh,
    /// Quantiles over the last W items (Arasu–Manku block summaries).
    WindowSketchQuantiles,
    /// Apache DataSketches KLL quantiles.
    Kll,
    /// Apache DataSketches CPC distinct counting.
    Cpc,
    /// Apache DataSketches frequent items.
    FrequentItems,
}

impl Kind {
    /// Every kind, in id order.
    pub const ALL: [Kind; 13] = [
        Kind::CountMin,
        Kind::HyperLogLog,
        Kind::BloomFilter,
        Kind::Dft,
        Kind::LossyCounting,
        Kind::StickySampling,
        Kind::Ams,
        Kind::GkQuantiles,
        Kind::Lsh,
        Kind::WindowSketchQuantiles,
        Kind::Kll,
        Kind::Cpc,
        Kind::FrequentItems,
    ];

    /// The API's `synopsisID` of this kind.
    pub fn id(self) -> u16 {
        Kind::ALL.iter().position(|k| *k == self).map(|p| p as u16 + 1).unwrap_or(0)
    }

    /// The kind with the API's `synopsisID`, if any.
    pub fn from_id(id: u64) -> Option<Kind> {
        if id == 0 {
            return None;
        }
        Kind::ALL.get((id - 1) as usize).copied()
    }

    /// The kind's name as it appears in estimations.
    pub fn name(self) -> &'static str {
        match self {
            Kind::CountMin => "CountMin",
            Kind::HyperLogLog => "HyperLogLog",
            Kind::BloomFilter => "BloomFilter",
            Kind::Dft => "DFT",
            Kind::LossyCounting => "LossyCounting",
            Kind::StickySampling => "StickySampling",
            Kind::Ams => "AMS",
            Kind::GkQuantiles => "GKQuantiles",
            Kind::Lsh => "LSH",
            Kind::WindowSketchQuantiles => "WindowSketchQuantiles",
            Kind::Kll => "KLL",
            Kind::Cpc => "CPC",
            Kind::FrequentItems => "FrequentItems",
        }
    }

    /// True for kinds whose answer depends on the order of the items (they must see each
    /// stream in event-time order, whatever the parallelism).
    ///
    /// DFT and LSH summarize the stream's most recent window of values, and window quantiles
    /// the last W items: which values those are is a matter of order. Their partials are built
    /// one window per worker and merged in time order ([`crate::Synopsis::merge`] takes `other`
    /// to follow `self`).
    ///
    /// ```
    /// use saams::Kind;
    /// let sensitive: Vec<Kind> = Kind::ALL.into_iter().filter(|k| k.is_order_sensitive()).collect();
    /// assert_eq!(sensitive, [Kind::Dft, Kind::Lsh, Kind::WindowSketchQuantiles]);
    /// ```
    pub fn is_order_sensitive(self) -> bool {
        matches!(self, Kind::Dft | Kind::Lsh | Kind::WindowSketchQuantiles)
    }

    /// True for kinds whose merge gives bit-identical state whatever the merge tree and the
    /// update order: their partials may be built by any worker, in any order, and spread over
    /// workers (partition-based and sub-partitioned per stream).
    ///
    /// Count-Min and AMS are linear (counters add), HyperLogLog takes the maximum of each
    /// register, a Bloom filter ORs its bits: the state is a function of the multiset of items.
    /// Every other kind's merge depends on which partials meet first (Lossy Counting's deltas
    /// and prunes, Sticky Sampling's coin tosses, GK's compressions, Frequent Items' purges, the
    /// libraries' compactions of KLL and CPC's state bytes) or on time order.
    ///
    /// ```
    /// use saams::Kind;
    /// let exact: Vec<Kind> = Kind::ALL.into_iter().filter(|k| k.merges_exactly()).collect();
    /// assert_eq!(exact, [Kind::CountMin, Kind::HyperLogLog, Kind::BloomFilter, Kind::Ams]);
    /// ```
    pub fn merges_exactly(self) -> bool {
        matches!(self, Kind::CountMin | Kind::HyperLogLog | Kind::BloomFilter | Kind::Ams)
    }

    /// True for kinds whose state after a set of updates is the same in any update order, so
    /// values can be applied as they arrive; the others are fed each window's values in event-time
    /// order (then arrival sequence), so that their state, and so their answers, do not depend
    /// on the number of workers or on how the input was split.
    ///
    /// These are the kinds that [merge exactly](Kind::merges_exactly), for the same reason: an
    /// update is a merge of a one-item synopsis. Lossy Counting answers alike in any order, but
    /// which counts its bucket boundaries prune does depend on it.
    ///
    /// ```
    /// use saams::Kind;
    /// assert!(Kind::CountMin.updates_on_arrival() && Kind::BloomFilter.updates_on_arrival());
    /// assert!(!Kind::LossyCounting.updates_on_arrival() && !Kind::Dft.updates_on_arrival());
    /// assert!(Kind::ALL.iter().all(|k| k.updates_on_arrival() == k.merges_exactly()));
    /// ```
    pub fn updates_on_arrival(self) -> bool {
        self.merges_exactly()
    }

    /// True for kinds whose partials may be merged wherever they meet in the merge tree, at
    /// every stage, and travel on as one partial; the others' partials travel as a list and are
    /// merged at the synopsis' home in bin order, so that their answers do not depend on the
    /// number of workers.
    ///
    /// The kinds that [merge exactly](Kind::merges_exactly), and two more: CPC, whose merged
    /// sketch answers from its number of coupons and lgK alone (the union of the parts' coupons,
    /// whatever the tree, though the bytes of its state may differ), and KLL, mergeable with the
    /// same rank-error guarantee over any tree and drawing unseeded random bits in its
    /// compactions anyway, so reducing at each stage changes nothing a caller can rely on.
    ///
    /// ```
    /// use saams::Kind;
    /// assert!(Kind::CountMin.reduces_at_every_merge_stage() && Kind::Cpc.reduces_at_every_merge_stage());
    /// assert!(Kind::Kll.reduces_at_every_merge_stage());
    /// assert!(!Kind::LossyCounting.reduces_at_every_merge_stage() && !Kind::GkQuantiles.reduces_at_every_merge_stage());
    /// assert!(Kind::ALL.iter().all(|k| !k.merges_exactly() || k.reduces_at_every_merge_stage()));
    /// ```
    pub fn reduces_at_every_merge_stage(self) -> bool {
        self.merges_exactly() || matches!(self, Kind::Cpc | Kind::Kll)
    }

    /// True for kinds that summarize numbers only: a non-numeric value is bad input for them
    /// (the job sends a line whose field is not a number to the dead-letter sink instead of
    /// feeding it).
    ///
    /// DFT and LSH take a numeric series, GK, window quantiles and KLL order numbers; the
    /// counting, distinct and membership kinds hash any value, number or string.
    ///
    /// ```
    /// use saams::Kind;
    /// let numeric: Vec<Kind> = Kind::ALL.into_iter().filter(|k| k.takes_numbers_only()).collect();
    /// assert_eq!(numeric, [Kind::Dft, Kind::GkQuantiles, Kind::Lsh, Kind::WindowSketchQuantiles, Kind::Kll]);
    /// ```
    pub fn takes_numbers_only(self) -> bool {
        matches!(self, Kind::Dft | Kind::GkQuantiles | Kind::Lsh | Kind::WindowSketchQuantiles | Kind::Kll)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
