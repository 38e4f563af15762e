//! Groups *resident* on their device (`saams-edge --resident`): the device is the only reader of
//! the stream and the owner of its synopses' states, which never leave it; per window it ships
//! each synopsis' query view ([`saams_operators::query_view`]) — what the registered continuous
//! queries read: DFT's coefficients, a Count-Min estimate per queried value, a distinct count —
//! and the cloud answers the continuous queries (pair correlations included) from the views
//! exactly as from the states.
//!
//! Why: for the paper workload a whole state costs ~20 KB per stream and period against ~93 KB
//! of raw values (4.6×); its view costs a few hundred bytes. What it gives up: the cloud cannot
//! answer an ad-hoc query or a SAVE of a resident synopsis itself (the device answers them,
//! [`super::asks`], or the cloud refuses them, naming the device), and a view is never compared with the raw values (the cloud could not feed raw
//! values into a view): a resident group ships its view every window it has values, however
//! few, so at a few tuples per stream and window it can cost more than raw.
//!
//! Which groups: those kept whole ([`super::device`]: owned, one stream) whose synopses have no
//! sliding window (a sliding answer merges panes, which views cannot).

use saams::Synopsis;
use saams::api::request::QuerySpec;
use saams::api::window::WindowSpec;
use saams_operators::Plan;
use saams_operators::plan::Mode;
use saams_operators::query_view::QueryView;

use super::shipment::{Body, GroupShip, Shipment};

/// Groups of views per shipment: a view takes a few hundred bytes, so a record stays far under
/// [`super::device::MAX_RECORD_BYTES`].
const VIEW_GROUPS_PER_SHIPMENT: usize = 1000;

/// True when update group `g` can be resident on the device reading its stream.
pub fn resident_group(plan: &Plan, g: u32) -> bool {
    let group = &plan.routing.groups[g as usize];
    group.mode == Mode::Owned
        && !group.stream.is_empty()
        && group
            .synopses
            .iter()
            .map(|&s| &plan.routing.synopses[s as usize])
            .all(|s| s.is_deleted() || !matches!(s.window, WindowSpec::Sliding { .. }))
}

/// The query view of synopsis `s` from its state: its continuous queries (and the continuous
/// set-valued ones answered at a pair home), each answered now; a DFT's spectrum.
pub fn view_bytes(plan: &Plan, s: u32, state: &dyn Synopsis) -> Vec<u8> {
    let spec = &plan.routing.synopses[s as usize];
    let single = |q: &QuerySpec| match q {
        QuerySpec::Single(q) => Some(q.clone()),
        _ => None,
    };
    let queries: Vec<saams::Query> = spec
        .continuous
        .iter()
        .filter_map(|q| single(&q.spec))
        .chain(
            plan.routing.pair_queries.iter().filter(|p| p.syn == s && p.continuous).filter_map(|p| single(&p.reg.spec)),
        )
        .collect();
    QueryView::of(state, &queries).encode_compact()
}

/// The shipments of `groups`' views in `window` from `device`, numbered from `*seq` on, each
/// stating `raw_bytes` as its share of what the same values cost raw.
pub fn view_shipments(
    device: &str,
    seq: &mut u64,
    window: u64,
    groups: Vec<GroupShip>,
    raw_bytes: u64,
) -> Vec<Shipment> {
    let chunks = groups.len().div_ceil(VIEW_GROUPS_PER_SHIPMENT).max(1) as u64;
    let mut out = Vec::new();
    let mut groups = groups.into_iter().peekable();
    let mut i = 0;
    while groups.peek().is_some() {
        let chunk: Vec<GroupShip> = groups.by_ref().take(VIEW_GROUPS_PER_SHIPMENT).collect();
        // The raw cost split over the chunks, the last taking the remainder.
        let share = if i + 1 == chunks { raw_bytes - raw_bytes / chunks * (chunks - 1) } else { raw_bytes / chunks };
        out.push(Shipment {
            device: device.to_string(),
            seq: *seq,
            body: Body::Data { window, raw_bytes: share, groups: chunk },
        });
        *seq += 1;
        i += 1;
    }
    out
}
