//! Timely operators that maintain saams synopses, one operator per file:
//!
//! - [`update::UpdateSynopses::update_synopses`]: routing pacts (key-, partition- and
//!   window-based), per-window buffering in event-time order, synopsis updates;
//! - [`merge_tree::MergeTree::merge_stage`]: one stage of the log2(W) tree merge of partials;
//! - [`fold::FoldPartials::fold_partials`]: merged state and answers at each synopsis' home.
//!
//! [`plan::Plan`] is the registry every worker compiles from the broadcast request script.
#![deny(missing_docs)]

pub mod answer;
pub mod fold;
pub mod merge_tree;
pub mod plan;
pub mod record;
pub mod update;

pub use fold::FoldPartials;
pub use merge_tree::MergeTree;
pub use plan::{Plan, SnapshotStore};
pub use record::{Out, Partial, Rec, SynBox, Val};
pub use update::UpdateSynopses;

/// Number of tree-merge stages for `peers` workers: ceil(log2 peers).
///
/// ```
/// assert_eq!(saams_operators::merge_stages(1), 0);
/// assert_eq!(saams_operators::merge_stages(2), 1);
/// assert_eq!(saams_operators::merge_stages(3), 2);
/// assert_eq!(saams_operators::merge_stages(8), 3);
/// ```
pub fn merge_stages(peers: usize) -> u32 {
    if peers <= 1 { 0 } else { usize::BITS - (peers - 1).leading_zeros() }
}
