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
//! [`super::asks`], or the cloud refuses them, naming the device).
//!
//! A view is not always the cheaper form: at a few tuples per stream and window the raw values
//! cost less, and the cloud cannot feed raw values into a view. So each window a group ships
//! its view, its raw values or its whole state as a byte budget chooses ([`super::budget`]):
//! never more than raw, up to one window's growth of a state.
//!
//! Which groups: those kept whole ([`super::device`]: owned, one stream) whose synopses have no
//! sliding window (a sliding answer merges panes, which views cannot).

use saams::Synopsis;
use saams::api::request::QuerySpec;
use saams::api::window::WindowSpec;
use saams_operators::Plan;
use saams_operators::plan::Mode;
use saams_operators::query_view::QueryView;

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
