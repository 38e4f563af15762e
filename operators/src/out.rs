//! What the update, merge and fold operators emit, one stream of it: answer lines, partials on
//! their way through the tree merge, states for pair queries, and parts of answers asked now.

use serde::{Deserialize, Serialize};

use crate::ask::AskPart;
use crate::pair_ask::PairState;
use crate::record::{Partial, Snapshot};

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
    Ask(AskPart),
    /// One participant's state for an ad-hoc pair query answered now, on its way to the pair's
    /// home ([`crate::pair_ask`]).
    PairState(PairState),
}
