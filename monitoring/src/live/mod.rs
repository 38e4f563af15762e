//! The protocols driven by a stream processor instead of the simulator: sites fed the items
//! of a stream as its watermark passes them, and a coordinator fed the sites' encoded
//! envelopes, answering at the times it is asked.
//!
//! # Same words as the simulator
//! A site's messages depend only on the times it is advanced at. [`crate::sim::simulate`]
//! advances a site at every arrival time of one of its items (after inserting all of them) and
//! at every time the site asked for ([`crate::fallback::FallbackSite::next_due`]), nothing
//! else. [`LiveSite::advance_to`] does exactly that for the events before a watermark, in time
//! order, and [`LiveSite::finish`] for the rest at the end of the input, so a live run sends the
//! words and bytes the simulator counts on the same input order: items in (event time, arrival
//! sequence) order, each at the site [`site_of`] its sequence, stamped and arriving at its
//! event time (the stream processor releases items in event-time order: tardiness 0).
//!
//! # Bad input
//! A site refuses (and counts) an item stamped before a time it has already processed: it
//! arrived later than the watermark allowed, so it would be older than the window plus the
//! tardiness. The coordinator refuses (and counts) bytes that are no envelope and every
//! envelope the fallback coordinator refuses (unknown site, replay, reordering, a stale item,
//! a message out of mode; [`crate::fallback::Coordinator::receive`]); a lost message makes it
//! refuse to answer. Nothing refused changes an answer.

mod coordinator;
mod site;

pub use coordinator::{LiveCoordinator, Received};
pub use site::LiveSite;

/// The site an item of arrival sequence `seq` goes to among `sites`: `seq mod k`, so which site
/// sees which item, and so the words sent, do not depend on how many workers read the stream.
///
/// ```
/// assert_eq!(saams_monitoring::live::site_of(10, 4), 2);
/// ```
pub fn site_of(seq: u64, sites: usize) -> usize {
    (seq % sites.max(1) as u64) as usize
}
