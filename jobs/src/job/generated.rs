//! Generated streams (`--generate`): which worker reads each, and the groups each feeds.

use saams_datasets::GeneratorSpec;
use saams_operators::Plan;

use crate::source::generated::Generated;

/// Pseudo field indices of generated streams: synopses over `streamID` / `dataSetKey` (e.g. the
/// distinct vessels of a sea area).
pub(super) const STREAM_ID_FIELD: usize = usize::MAX;
pub(super) const DATASET_KEY_FIELD: usize = usize::MAX - 1;

/// The groups a generated stream feeds, with the index of the value each takes.
pub(super) fn generated_routes(plan: &Plan, g: &Generated) -> Vec<(u32, usize)> {
    let (per_stream, wide) = plan.routes(&g.dataset_key, &g.stream_id);
    per_stream
        .iter()
        .chain(wide)
        .filter_map(|&grp| {
            let field = &plan.routing.groups[grp as usize].field;
            match field.as_str() {
                "streamID" => Some((grp, STREAM_ID_FIELD)),
                "dataSetKey" => Some((grp, DATASET_KEY_FIELD)),
                _ => g.fields.iter().position(|f| f == field).map(|k| (grp, k)),
            }
        })
        .collect()
}

/// Work a worker does for each tuple of a synopsis it owns, relative to generating and routing
/// the tuple. Fitted on the paper workload at `-w 2` (per-thread instruction counts under
/// callgrind for two reading splits): a stream costs its reader ~8.6 and the owner of its three
/// synopses ~4.1 (M instructions per 10,000 tuples).
const SYNOPSIS_UPDATE_COST: f64 = 0.16;

/// The generated streams worker `me` of `peers` reads.
///
/// A stream whose synopses all have one owner is read by that owner when this keeps the
/// workers' loads (reading plus owned update work) balanced, so its records never cross
/// workers; the other streams go to the least loaded worker. Every worker computes the same
/// assignment (it depends on the plan and the spec only), and what a stream produces does not
/// depend on who reads it (its unit and arrival sequence are the stream's index and position).
/// With owners hashed, the plain `i mod peers` split made ~half the records cross workers and
/// left the update work unbalanced (56/44 for the paper workload's 100 streams at `-w 2`).
pub(super) fn generated_streams_for_worker(plan: &Plan, spec: &GeneratorSpec, me: usize, peers: usize) -> Vec<usize> {
    let reader = generated_stream_readers(plan, spec, peers);
    (0..reader.len()).filter(|&i| reader[i] == me).collect()
}

/// The worker of `peers` that reads each generated stream ([`generated_streams_for_worker`]).
pub(super) fn generated_stream_readers(plan: &Plan, spec: &GeneratorSpec, peers: usize) -> Vec<usize> {
    use saams_operators::plan::Mode;
    let peers = peers.max(1);
    let owner_and_work: Vec<(Option<usize>, f64)> = (0..spec.streams)
        .map(|i| {
            let (per_stream, wide) = plan.routes(spec.dataset_key(i), &spec.stream_id(i));
            let groups: Vec<_> = per_stream.iter().chain(wide).map(|&g| &plan.routing.groups[g as usize]).collect();
            let owned = groups.iter().all(|g| g.mode == Mode::Owned);
            let owner = match groups.first() {
                Some(g) if owned && groups.iter().all(|o| o.owner == g.owner) => Some(g.owner % peers),
                _ => None,
            };
            let synopses: usize = groups.iter().filter(|g| g.mode == Mode::Owned).map(|g| g.synopses.len()).sum();
            let work = if plan.update { synopses as f64 * SYNOPSIS_UPDATE_COST } else { 0.0 };
            (owner, work)
        })
        .collect();
    let mut load = vec![0.0; peers];
    for &(owner, work) in &owner_and_work {
        if let Some(o) = owner {
            load[o] += work;
        }
    }
    let total: f64 = owner_and_work.iter().map(|&(owner, work)| 1.0 + if owner.is_some() { 0.0 } else { work }).sum();
    let target = (total + load.iter().sum::<f64>()) / peers as f64;
    let mut reader = vec![usize::MAX; owner_and_work.len()];
    for (i, &(owner, _)) in owner_and_work.iter().enumerate() {
        if let Some(o) = owner
            && load[o] + 1.0 <= target + 0.5
        {
            load[o] += 1.0;
            reader[i] = o;
        }
    }
    for (i, &(owner, work)) in owner_and_work.iter().enumerate() {
        if reader[i] == usize::MAX {
            let least = (0..peers).min_by(|&a, &b| load[a].total_cmp(&load[b])).unwrap_or(0);
            load[least] += 1.0 + if owner.is_some() { 0.0 } else { work };
            reader[i] = least;
        }
    }
    // Every worker reads something while there are streams enough: a worker whose input ends
    // stops taking requests for its process, and with the synopses on a few workers
    // (`--active-workers`) the owners' update work can leave a worker none.
    for idle in 0..peers.min(reader.len()) {
        if reader.contains(&idle) {
            continue;
        }
        let count = |w: usize| reader.iter().filter(|&&r| r == w).count();
        let busiest = (0..peers).max_by_key(|&w| (count(w), std::cmp::Reverse(w))).unwrap_or(0);
        if let Some(i) = reader.iter().rposition(|&r| r == busiest) {
            reader[i] = idle;
        }
    }
    reader
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use saams::api::request::parse_requests;

    use super::*;
    use crate::sink::file::SnapshotDir;

    fn plan(requests: &str, peers: usize, update: bool) -> Plan {
        let store = Arc::new(SnapshotDir::new(None));
        let mut plan = Plan::build(&parse_requests(requests), peers, 60_000, store);
        plan.update = update;
        plan
    }

    #[test]
    fn every_generated_stream_is_read_once_and_the_loads_balance() {
        let paper = include_str!("../../../datasets/requests/paper-workload.json");
        let spec = GeneratorSpec::parse("stocks:100:10").expect("spec");
        for peers in 1..=5 {
            for update in [true, false] {
                let plan = plan(paper, peers, update);
                let split: Vec<Vec<usize>> =
                    (0..peers).map(|me| generated_streams_for_worker(&plan, &spec, me, peers)).collect();
                let mut all: Vec<usize> = split.iter().flatten().copied().collect();
                all.sort_unstable();
                assert_eq!(all, (0..100).collect::<Vec<_>>(), "{peers} workers");
                // Reading (1 per stream) plus owned update work (0.48 per stream) per worker.
                let work = if update { 3.0 * SYNOPSIS_UPDATE_COST } else { 0.0 };
                let mut load = vec![0.0; peers];
                let mut local = 0;
                for (me, streams) in split.iter().enumerate() {
                    load[me] += streams.len() as f64;
                    for &i in streams {
                        let (groups, _) = plan.routes(spec.dataset_key(i), &spec.stream_id(i));
                        let owner = plan.routing.groups[groups[0] as usize].owner;
                        load[owner] += work;
                        local += usize::from(owner == me);
                    }
                }
                let (lo, hi) = load.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &l| (lo.min(l), hi.max(l)));
                assert!(hi - lo <= 1.0 + work, "{peers} workers, update {update}: loads {load:?}");
                assert!(local >= 80, "{peers} workers, update {update}: only {local} streams read by their owner");
            }
        }
        let other = plan("", 2, true);
        assert_eq!(generated_streams_for_worker(&other, &spec, 0, 2).len(), 50, "no synopses: an even split");
    }
}
