//! Communication-efficient monitoring of k distributed streams over a time-based sliding
//! window (Chan, Lam, Lee, Ting, STACS 2010), plus the forward/backward protocol of Cormode &
//! Yi (PODC 2011) for counts and frequent items. No timely, no I/O: the state machines here are
//! driven by [`sim`] in tests and by `monitor-sim`, by the job's operators through [`live`]
//! (`synopsisID` 14), and later by edge processes over Kafka.
//!
//! The sites can also fall back to forwarding their items whenever that costs fewer words than
//! the protocol ([`fallback`]: per site, with hysteresis, the guarantees kept across a switch).
//!
//! # Model
//! Time is an `i64` (any unit). The window at time `t` holds the items that have **arrived by
//! `t`** and are stamped in `(t − W, t]`. With tardiness `τ < W`, an item stamped `s` arrives at
//! some time in `[s, s + τ]`. Each site sees only its own stream; messages go one way, site →
//! root, and are delivered instantly (the simulator applies them before the next query).
//!
//! # Guarantees (deterministic, at every time `t`; `c` = window count over all sites)
//! * Basic counting ([`Root::count`]): `|ĉ − c| ≤ ε·c`.
//! * Approximate counting ([`Root::item_count`]): `|ĉ_j − c_j| ≤ ε·c` for every item.
//! * Frequent items ([`Root::frequent`]): every `j` with `c_j ≥ φc`, none with `c_j < (φ − ε)c`.
//! * Quantiles ([`Root::quantile`]): an item whose rank interval `[#< v, #≤ v]` meets
//!   `[(φ − ε)c, (φ + ε)c]`.
//!
//! # Error budget (all per site, summed over sites)
//! Local statistics ([`LocalStats`]): the site's window count with relative error
//! `δ_t = min(ε/72, ε_c/3)` ([`SlidingCounter`]); item counts (counting, frequent items,
//! forward/backward) with error `δ_i·S(s)` at every cut `s` inside the window, where `S(s)` is
//! the SITE's count of items stamped after `s` and `δ_i = min(ε/16, ε_a/4)` (`ε_a` the
//! frequent-items item target) — at the window edge that is `δ_i·c_σ`, and for a cut `s` used
//! later at time `t'` it is at most `δ_i·c_σ(t')`; and, for quantiles only, a rank structure
//! ([`QuantileWindow`]) whose estimate of the site's window items `≤ x` (and `< x`) is within
//! `δ_q·c_σ` at every `x` (`δ_q = 0.15ε`, additive, independent of item counts). A count
//! tracker at target `ε'` sends when its estimate moved
//! by more than `θ = ε'/2` times the current estimate: error `θ(1 + δ_t) + δ_t ≤ ε'` as
//! `δ_t ≤ ε'/3` (`ε'/2 + ε'²/6 + ε'/3 ≤ ε'`). An item tracker at target `ε'` (threshold `θ = ε'/2` times the site's estimated
//! total; items at or below it are turned off): error `θ(1 + δ_t) + δ_i ≤ ε'` as `δ_i ≤ ε'/4`
//! (the item error is additive, `δ_i·c_σ`, exactly the form the proof uses). Frequent items use
//! a count tracker at `ε_c` and an item tracker at `ε_a = ε/2 − ε_c` with the seed's rule
//! `Σ r_j ≥ (φ − ε/2)·Σ r_σ`: the seed uses `ε_c = ε/24`; forward/backward uses `ε/5` (see
//! [`Config::frequent_count_epsilon`]).
//! Quantiles: the root holds per site groups of consecutive values (a boundary value and a
//! weight, in half items); the site's current weight of a group is the difference of its rank
//! estimate `R̂` at the group's boundaries, so the root's cumulative weight at a boundary `b` is
//! `R̂(b)` up to the prefix discrepancy `P`, the largest partial sum (in value order) of the
//! differences between the root's and the site's current weights (over all groups, with the
//! tail above the last boundary subtracted, it is the root's total against `R̂(∞)`): the local
//! error enters once per site, not once per group. `P ≤ θ_q·c_σ` (`θ_q = 0.22ε`; when it is
//! exceeded the differences of the peak's sign up to the peak are sent) and a group's *interior* (its weight apart from its boundary value) is
//! at most `g·c_σ` (`g = 0.25ε`; split when heavier). For every `x`, site `σ`'s items `≤ x` are
//! at least the root's weight `≤ x` minus `a_σ = (θ_q + δ_q)·c_σ`, and its items `< x` at most
//! the root's weight `< x` plus `b_σ = a_σ + g·c_σ` (the interior of the group holding `x`);
//! the root's total is within `Σ a_σ` of `c`. The root answers the first value `v` whose
//! cumulative weight reaches `φ·Σw`, so `#≤v ≥ φc − (1 + φ)·Σa_σ` and
//! `#<v ≤ φc + φ·Σa_σ + Σb_σ`: within `ε·c` as `2(θ_q + δ_q) + g = 0.99ε ≤ ε` (`φ ≤ 1`).
//!
//! # Site memory
//! Reported by [`Site::memory`] in parts ([`SiteMemory`]); `monitor-sim` prints the peaks.
//! * Counting part (total counter, item records, their schedule, the count/item senders):
//!   `O((1/ε)·log n)` words for in-order input. The total counter merges buckets relative to its
//!   own count; item records merge relative to the site's count and rare records are deleted by
//!   a Lossy-Counting rule moved to time (details and proof in [`LocalStats`]), so a rare item
//!   costs nothing once about `2/δ_i` of the site's items are newer than its copies. With
//!   tardiness, a record created at `t₀` waits until `2/δ_i` items stamped after `t₀` arrived,
//!   so the memory grows by the distinct items of about the last `τ`. Counters compact when
//!   they grew by a quarter, so memory peaks at 1.25× the compacted size.
//!   [`sim::counting_memory_bound`] states the bound the tests check.
//! * Quantile part: the [`QuantileWindow`] and the sender's groups (`O(1/g)`). The structure
//!   holds `O((1/δ_q)·log n)` blocks over time (exponential-histogram merging, relative to the
//!   newer items), each with a value summary of at most its distinct values, compressed to
//!   `O(1/η)` entries once its own error budget `η·n_b` allows (`η = 0.03δ_q`), and packed
//!   (varint header, value gaps and counts) at every compaction, which costs a constant factor
//!   less (at most 11 bytes an entry, on ids and prices in cents about 3 bytes);
//!   [`sim::quantile_memory_bound`] states the bound the tests check (with the plain cost), for
//!   streams whose values come from a domain of `d` values: `O((d/ε)·log n)`, not `O(n)`. It is
//!   NOT `O((1/ε)·polylog n)` for arbitrary values: a block compresses only once `2γL > 2/η`
//!   (`L > 1/(γη) ≥ 4/δ_q²`, about 1.8·10⁴ newer items at ε = 0.1, 1.8·10⁶ at ε = 0.01), and any
//!   re-split of `δ_q` between the straddle and the compression multiplies the blocks, so
//!   per-block compression is `O((1/δ_q²)·log n)` — above these site windows (measured: the
//!   splits `0.7/0.2` and `0.84/0.1` cost 5–20% more than `0.95/0.03`). Arasu–Manku's dyadic
//!   levels would bring `O((1/δ_q)·log²(1/δ_q)·log n)`, about `L²/η ≈ 5·10³` entries at
//!   ε = 0.1, also near these windows. Measured peaks per site (k = 4, `monitor-sim`, W = 1h
//!   stocks / 10m AIS): stocks ε = 0.1: 4.5k words in order and 5.8k at τ = W/2 (site windows
//!   up to 38k items; 20k and 22k before packing); ε = 0.01: 19k and 24k (51k, 58k; at this ε
//!   the 3k blocks' headers weigh most). AIS ε = 0.1: 6.8k and 6.6k, below the site windows of
//!   12k and 9k items (26k and 20k before); ε = 0.01: 12.5k and 11.6k (31k, 25k).
//!
//! Forward/backward (target `ε'`, `θ = (ε' − δ)/2` with `δ` the local counters' error,
//! [`Config::fb_theta`]): phases of length `L = W − τ`; in phase `i` (times
//! `[iL + τ, (i+1)L + τ)`) the window splits at `p_i = iL` into a backward part (stamps
//! `(t − W, p_i]`, all arrived, only shrinking) and a forward part (stamps `> p_i`, cannot expire
//! within the phase, only growing; the site's forward total is counted exactly, an item's
//! forward count is its record's suffix at `p_i`, exact up to what the record lost, since records
//! never merge buckets across a split). Granularities are relative to a reference
//! `R` = the site's total (lower estimate) when they were chosen: backward level spacing `G` and
//! forward step `T` with `G/2 + T/2 ≤ 2θ·ρ·R` (`ρ = 3/4`). The backward part is sent once as
//! *level crossings*: for the levels `(m − ½)G` the first cut where the count falls below each;
//! the root's estimate `G × #levels not yet crossed` is within `G/2`. The forward part is sent
//! in steps of `T` (rounded to the nearest multiple: within `T/2`); an item's step costs one word.
//! Items whose backward count is below `G/2` are not listed, and items whose forward count is
//! below `T/2` are never sent, so a summary costs `O(1/θ)` words whatever the item counts (an
//! item whose record is deleted is sent down to its new forward count). The per-site error is
//! `δ·c + (G + T)/2 ≤ δ·c + 2θρR ≤ ε'·c` while `c ≥ ρR`: for an item, the backward value sent at
//! `t₀` is `ê(s) − ê(p)` and the forward value `ê'(p)` at the query time `t'` (`ê` the record's
//! estimates), so the bucket error enters once, at the cut `s` (`≤ (δ_i/2)·c`), and the copies
//! lost before `t₀` in `(s, p]` plus those lost by `t'` after `p` are at most the loss after `s`
//! at `t'` (`≤ (δ_i/2)·c`, [`LocalStats`]); when the site's total
//! drops below `ρR` (or grows past `2R`, only to save words) it resends the backward part for
//! the rest of the phase with the new `R` and re-bases the forward values the new step does not
//! cover. Frequent items split `ε/5` (total) + `3ε/10` (items).
//!
//! # Where this departs from the papers
//! * The seed's text gives AC's turn-off rule only in outline; here an item is turned off when
//!   it must be sent and its estimate is at most the send threshold `θ·e_σ` itself, so an off
//!   item's error is bounded exactly like an on item's.
//! * Out-of-order input: the local counters also merge buckets that may still receive late items,
//!   but only to half their cap; a late item joins the bucket whose stamp range covers it while
//!   the bucket has room, else it is kept in an exact per-stamp overlay until a compaction finds
//!   room (see [`SlidingCounter`]). An item record created at `t₀` is only deleted once the
//!   site holds enough items stamped after `t₀` ([`LocalStats`]), so with tardiness the records
//!   of about the last `τ` are kept.
//! * Forward/backward is reconstructed from the idea (phases of `W − τ`, backward level crossings
//!   sent once per phase, forward counted and sent in steps), not from Cormode & Yi's
//!   text, which was not available here; granularities follow the site's total (a resend when
//!   it falls below `3R/4`) rather than a fixed per-phase schedule; its frequent-items split is
//!   `ε/5 + 3ε/10`.
//! * Quantiles are sent as patches of a mirrored group summary (module docs above), not as
//!   fresh summaries each time, with weights in half items (the root's rule is scale-free), and
//!   the local structure is a flat exponential histogram of value summaries rather than
//!   Arasu–Manku's levels.
//! * Words exclude the site id and send time (transport envelope); bytes are the payload's
//!   [`Message::encode`] length.
#![deny(missing_docs)]

mod config;
mod counter;
mod error;
pub mod fallback;
pub mod live;
mod local;
mod message;
mod quantile;
mod root;
pub mod sim;
mod site;

pub use config::{Config, Protocol};
pub use counter::{SlidingCounter, SuffixTable};
pub use error::MonitorError;
pub use local::{LocalMemory, LocalStats};
pub use message::{Channel, Message};
pub use quantile::QuantileWindow;
pub use root::Root;
pub use site::{Site, SiteMemory};
