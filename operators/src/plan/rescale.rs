//! Rescaling: the job's synopses on its first N workers (`--active-workers N`, a live
//! `{"rescale": {"activeWorkers": N}}`). timely's membership is fixed at start (timely issue
//! #529), so a job is started with every worker it may use and a rescale changes which of them
//! hold bins: the bin map ([`Routing::bins`]) is redrawn onto the first N workers at a fence, a
//! window boundary every worker agreed on, and the values of every window from the fence on are
//! routed with it (those of earlier windows with the map they were routed with before).
//!
//! The new map moves as few bins as possible: shrinking, only the bins of the workers that leave
//! move; growing, the new workers take bins from the others until every worker holds as many as
//! the others (±1). Bins where a stream placed its update groups ([`Routing::owner_of_stream`])
//! are balanced by their groups, the unused ones by their number, so a rescale spreads the
//! streams, not just the key space. The state of the bins holding groups moves at the fence, or
//! a few bins a window from it on ([`batch_fences`]: Megaphone's fluid migration).

use std::collections::BTreeMap;

use saams::api::request::Request;
use serde_json::{Value as Json, json};

use super::data::{Mode, RescaleApplied};
use super::routing::{BINS, Routing, spread_hash};

/// Why a rescale was refused: `status` is the HTTP status that says so (400: a worker count the
/// job cannot have; 409: another rescale is still moving).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RescaleRefusal {
    /// 400 or 409.
    pub status: u16,
    /// The reason, for the `error` of the reply.
    pub message: String,
}

/// The bin map onto workers `0..active` closest to `bins`: bins already on those workers stay,
/// and `weight[b]` (the groups placed in bin `b`; 0 for an unused bin) is balanced, the used
/// bins by their groups and the unused ones by their number, each taking from the heaviest
/// worker and giving to the lightest (the lowest index among equals), so every worker computes
/// the same map.
///
/// ```
/// use saams_operators::plan::rescale::consistent_map;
/// let bins: Vec<u32> = (0..8).map(|b| b % 4).collect();
/// let weight = vec![0; 8];
/// // Shrinking 4 → 2: only the bins of workers 2 and 3 move.
/// let two = consistent_map(&bins, &weight, 2);
/// assert!(two.iter().all(|&w| w < 2));
/// assert!((0..8).filter(|&b| bins[b] < 2).all(|b| two[b] == bins[b]));
/// // Growing 2 → 4: the new workers take two bins each, the others keep theirs.
/// let four = consistent_map(&two, &weight, 4);
/// let held = |w: u32| four.iter().filter(|&&x| x == w).count();
/// assert_eq!((held(0), held(1), held(2), held(3)), (2, 2, 2, 2));
/// assert_eq!((0..8).filter(|&b| four[b] != two[b]).count(), 4);
/// ```
pub fn consistent_map(bins: &[u32], weight: &[u32], active: usize) -> Vec<u32> {
    let active = active.max(1);
    let mut map = bins.to_vec();
    for used in [true, false] {
        let class: Vec<usize> = (0..map.len()).filter(|&b| (weight.get(b).copied().unwrap_or(0) > 0) == used).collect();
        let w = |b: usize| if used { u64::from(weight[b]) } else { 1 };
        let mut load: Vec<u64> = vec![0; active];
        let mut held: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut homeless = Vec::new();
        for &b in &class {
            let worker = map[b] as usize;
            if worker < active {
                load[worker] += w(b);
                held.entry(worker).or_default().push(b);
            } else {
                homeless.push(b);
            }
        }
        // Heaviest first, so the lightest worker evens out: the greedy rule of LPT scheduling.
        homeless.sort_by_key(|&b| (std::cmp::Reverse(w(b)), b));
        for b in homeless {
            let lightest = (0..active).min_by_key(|&x| (load[x], x)).unwrap_or(0);
            map[b] = lightest as u32;
            load[lightest] += w(b);
            held.entry(lightest).or_default().push(b);
        }
        // Growing: a worker above the lightest by more than a bin's weight gives its lightest bin
        // (the last one of the lowest index among equals) to the lightest worker.
        loop {
            let heavy = (0..active).max_by_key(|&x| (load[x], std::cmp::Reverse(x))).unwrap_or(0);
            let light = (0..active).min_by_key(|&x| (load[x], x)).unwrap_or(0);
            let Some(bins_of_heavy) = held.get_mut(&heavy) else { break };
            let Some((i, &b)) = bins_of_heavy.iter().enumerate().rev().min_by_key(|&(_, &b)| w(b)) else { break };
            if load[heavy] < load[light] + 2 * w(b) {
                break;
            }
            bins_of_heavy.remove(i);
            map[b] = light as u32;
            load[heavy] -= w(b);
            load[light] += w(b);
            held.entry(light).or_default().push(b);
        }
    }
    map
}

impl Routing {
    /// The workers holding bins in `window` (start, ms): the active workers of the last rescale
    /// whose fence is at or before it.
    #[inline]
    pub fn active_at(&self, window: u64) -> usize {
        self.rescales.iter().rev().find(|r| r.fence <= window).map_or(self.first_active, |r| r.active_workers)
    }

    /// Workers holding bins now (after every rescale applied).
    pub fn active_workers(&self) -> usize {
        self.rescales.last().map_or(self.first_active, |r| r.active_workers)
    }

    /// Every rescale applied so far, in fence order.
    pub fn rescales(&self) -> &[RescaleApplied] {
        &self.rescales
    }

    /// Start on the first `n` workers (`--active-workers`): the bins are drawn onto them before
    /// any stream places its groups.
    ///
    /// # Errors
    /// When `n` is 0 or more than the job's workers.
    pub fn start_active(&mut self, n: usize) -> Result<(), String> {
        check_count(n, self.peers).map_err(|r| format!("--active-workers: {}", r.message))?;
        self.bins = consistent_map(&self.bins, &self.bin_weights(), n);
        self.first_active = n;
        Ok(())
    }

    /// The groups placed in each bin (by their stream's key).
    fn bin_weights(&self) -> Vec<u32> {
        let mut weight = vec![0u32; BINS];
        for g in &self.groups {
            weight[(spread_hash(&[&g.dataset, &g.stream]) % BINS as u64) as usize] += 1;
        }
        weight
    }

    /// Redraw the bin map onto the first `n` workers from the window `fence` on, moving the
    /// owned state of at most `per_fence` bins a window (0: all at the fence; see
    /// [`batch_fences`]).
    ///
    /// # Errors
    /// `n` is 0 or more than the job's workers (400), or an earlier rescale's bins are still
    /// moving at `fence` (its last batch is at or after it: 409). Nothing changes then.
    pub fn rescale(&mut self, n: usize, fence: u64, per_fence: u32) -> Result<RescaleApplied, RescaleRefusal> {
        check_count(n, self.peers)?;
        if let Some(&RescaleApplied { until, active_workers: to, .. }) =
            self.rescales.last().filter(|r| r.until >= fence)
        {
            return Err(RescaleRefusal {
                status: 409,
                message: format!(
                    "another rescale (to {to} active workers) is still moving its bins until {until} ms; \
                     send this one again once it is done"
                ),
            });
        }
        let weight = self.bin_weights();
        let map = consistent_map(&self.bins, &weight, n);
        let moves = map.iter().zip(&self.bins).filter(|(a, b)| a != b).count();
        let at = batch_fences(&self.bins, &map, &weight, fence, self.window_ms.max(1) as u64, per_fence);
        let until = at.iter().copied().max().unwrap_or(fence);
        self.bins = map;
        self.move_owned_groups(&at, fence);
        let applied = RescaleApplied { active_workers: n, fence, moves, until };
        self.rescales.push(applied);
        Ok(applied)
    }
}

/// The fence each bin's owned state moves at (window start, ms): with `per_fence` B > 0, the
/// bins that change worker and hold update groups (`weight > 0`) go B a window, in bin order,
/// from `fence` on; every other bin at `fence` (an unused bin holds no state, and spread
/// partials are per window: they follow the active workers at `fence` with nothing to copy).
///
/// Why in batches: the new owner of a bin waits at its fence for the state (it closes no
/// window at or after it before the state is installed), and the old owner encodes it in one
/// activation. A batch a window bounds both by B bins' state, so no single window waits for
/// the whole state (Megaphone's fluid migration); the price is a migration of
/// ⌈moving bins / B⌉ windows, during which another rescale is refused.
///
/// ```
/// use saams_operators::plan::rescale::batch_fences;
/// let (from, to) = (vec![0, 0, 0, 0, 0], vec![0, 1, 1, 1, 1]);
/// let weight = vec![1, 1, 0, 2, 1]; // bin 2 holds no group
/// let at = batch_fences(&from, &to, &weight, 60_000, 1000, 2);
/// assert_eq!(at, vec![60_000, 60_000, 60_000, 60_000, 61_000]);
/// assert!(batch_fences(&from, &to, &weight, 60_000, 1000, 0).iter().all(|&f| f == 60_000));
/// ```
pub fn batch_fences(from: &[u32], to: &[u32], weight: &[u32], fence: u64, window_ms: u64, per_fence: u32) -> Vec<u64> {
    let mut at = vec![fence; to.len()];
    if per_fence == 0 {
        return at;
    }
    let moving = (0..to.len()).filter(|&b| from.get(b) != to.get(b) && weight.get(b).is_some_and(|&w| w > 0));
    for (i, b) in moving.enumerate() {
        at[b] = fence.saturating_add((i as u64 / u64::from(per_fence)).saturating_mul(window_ms));
    }
    at
}

impl Routing {
    /// Owned groups follow their stream's bin from the fence of its batch (`at[bin]`; `fence`
    /// for a group whose owner differs from its bin's worker for another reason): the owner
    /// and its synopses' home change, the windows before keep theirs
    /// ([`crate::plan::Group::owner_at`]), and the update operator moves the merged states at
    /// that fence. A synopsis in a query over pairs moves as any other: its snapshots go from
    /// its new home to the query's, which stays where the query was registered (it holds the
    /// latest state of every participant, of many bins, so it belongs to none of them).
    fn move_owned_groups(&mut self, at: &[u64], fence: u64) {
        for g in 0..self.groups.len() {
            let group = &self.groups[g];
            if group.mode != Mode::Owned {
                continue;
            }
            let bin = (spread_hash(&[&group.dataset, &group.stream]) % BINS as u64) as usize;
            let to = self.bins[bin] as usize % self.peers;
            let from = group.owner;
            if to == from {
                continue;
            }
            let fence = at.get(bin).copied().unwrap_or(fence);
            self.groups_owned[from] = self.groups_owned[from].saturating_sub(1);
            self.groups_owned[to] += 1;
            let group = &mut self.groups[g];
            group.moved.push((fence, from));
            group.owner = to;
            for &s in &group.synopses.clone() {
                let spec = &mut self.synopses[s as usize];
                spec.moved.push((fence, spec.home));
                spec.home = to;
            }
        }
    }
}

/// The reply to a live rescale request with id `id`:
/// `{"accepted":true,"activeWorkers":N,"effectiveFrom":<fence ms>,"moves":<bins moved>,
/// "movedBy":<the last batch's fence ms>}`, or
/// `{"error":…,"status":400|409}`; either with the request's `requestID` and `uid` when given.
///
/// ```
/// use saams::api::request::Request;
/// use saams_operators::plan::{RescaleApplied, rescale::reply};
/// let applied = RescaleApplied { active_workers: 2, fence: 120_000, moves: 2048, until: 180_000 };
/// let line = reply(&Request::rescale(2), serde_json::json!("req-3"), Ok(applied));
/// assert_eq!(
///     line,
///     r#"{"accepted":true,"activeWorkers":2,"effectiveFrom":120000,"movedBy":180000,"moves":2048,"requestID":"req-3"}"#
/// );
/// ```
pub fn reply(req: &Request, id: Json, result: Result<RescaleApplied, RescaleRefusal>) -> String {
    let mut line = match result {
        Ok(a) => {
            json!({"accepted": true, "activeWorkers": a.active_workers, "effectiveFrom": a.fence, "moves": a.moves, "movedBy": a.until})
        }
        Err(r) => json!({"error": r.message, "status": r.status}),
    };
    line["requestID"] = id;
    if let Some(uid) = &req.uid {
        line["uid"] = uid.clone();
    }
    line.to_string()
}

/// 1 up to `peers` workers.
fn check_count(n: usize, peers: usize) -> Result<(), RescaleRefusal> {
    if n == 0 || n > peers {
        return Err(RescaleRefusal {
            status: 400,
            message: format!("activeWorkers must be between 1 and {peers} (the job's workers, -w × -n), got {n}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(map: &[u32], w: u32) -> usize {
        map.iter().filter(|&&x| x == w).count()
    }

    #[test]
    fn one_two_four_one_moves_only_what_it_must_and_stays_balanced() {
        let start: Vec<u32> = vec![0; BINS];
        let weight = vec![0u32; BINS];
        let two = consistent_map(&start, &weight, 2);
        assert_eq!((held(&two, 0), held(&two, 1)), (BINS / 2, BINS / 2));
        let four = consistent_map(&two, &weight, 4);
        assert!((0..4).all(|w| held(&four, w) == BINS / 4));
        assert_eq!(four.iter().zip(&two).filter(|(a, b)| a != b).count(), BINS / 2);
        let three = consistent_map(&four, &weight, 3);
        assert_eq!(three.iter().zip(&four).filter(|(a, b)| a != b).count(), BINS / 4, "only worker 3's bins");
        assert!((0..3).all(|w| held(&three, w).abs_diff(BINS / 3) <= 1));
        assert!(consistent_map(&three, &weight, 1).iter().all(|&w| w == 0));
    }

    #[test]
    fn used_bins_are_balanced_by_their_groups() {
        let mut weight = vec![0u32; BINS];
        for b in 0..6 {
            weight[b * 100] = 1;
        }
        let two = consistent_map(&vec![0; BINS], &weight, 2);
        let groups = |w: u32| (0..BINS).filter(|&b| weight[b] > 0 && two[b] == w).count();
        assert_eq!((groups(0), groups(1)), (3, 3));
    }

    #[test]
    fn a_count_the_job_cannot_have_or_a_second_rescale_at_one_fence_is_refused() {
        let mut routing = Routing::new(4, 1000);
        assert_eq!(routing.rescale(0, 5000, 0).unwrap_err().status, 400);
        assert_eq!(routing.rescale(5, 5000, 0).unwrap_err().status, 400);
        let applied = routing.rescale(2, 5000, 0).unwrap();
        assert_eq!((applied.active_workers, applied.moves), (2, BINS / 2));
        assert_eq!(routing.rescale(3, 5000, 0).unwrap_err().status, 409);
        assert_eq!((routing.active_at(4000), routing.active_at(5000), routing.active_workers()), (4, 2, 2));
        assert!(routing.bins.iter().all(|&w| w < 2));
    }

    #[test]
    fn batched_moves_go_a_few_bins_a_window_and_refuse_a_rescale_until_the_last() {
        use crate::plan::{NoFiles, Plan};
        use saams::api::request::parse_requests;
        use saams::api::window::WindowSpec;
        let script: String = (0..10)
            .map(|k| {
                format!(
                    r#"{{"dataSetKey":"F","noOfP":1,"param":["DFT","price","NotQueryable",1,500,2000,8],"requestID":{k},"streamID":"S{k}","synopsisID":4}}
"#
                )
            })
            .collect::<String>()
            + r#"{"dataSetKey":"F","noOfP":1,"param":[0.5,"correlation","price","Queryable","Continues"],"requestID":10,"streamID":"S0","synopsisID":4}"#;
        let requests = parse_requests(&script);
        let store = std::sync::Arc::new(NoFiles);
        let plan = Plan::build_active(&requests, (4, 1), (1000, WindowSpec::Landmark), store).unwrap();
        let mut routing = (*plan.routing).clone();
        let applied = routing.rescale(4, 5000, 3).unwrap();
        // Seven or eight of the ten streams leave worker 0, three a window from the fence on.
        let fences: Vec<u64> = routing.groups.iter().filter_map(|g| g.moved.first().map(|m| m.0)).collect();
        assert!(fences.len() >= 6, "growing 1 → 4 moves most streams: {fences:?}");
        assert_eq!(applied.until, 5000 + (fences.len() as u64 - 1) / 3 * 1000);
        for k in 0..=(applied.until - 5000) / 1000 {
            let n = fences.iter().filter(|&&f| f == 5000 + k * 1000).count();
            assert!((1..=3).contains(&n), "at most three bins a window: {fences:?}");
        }
        assert_eq!(routing.active_at(5000), 4, "spread partials follow at the fence");
        // The correlation query's participants moved too, onto several workers; its state
        // (every participant's latest snapshot) stays where it is answered.
        let query = &routing.pair_queries[0];
        assert_eq!((query.participants.len(), query.home), (10, 0));
        let homes: std::collections::BTreeSet<usize> =
            query.participants.iter().map(|&p| routing.synopses[p as usize].home).collect();
        assert_eq!(homes.len(), 4, "{homes:?}");
        assert_eq!(routing.rescale(2, applied.until, 3).unwrap_err().status, 409, "still moving at the last batch");
        assert!(routing.rescale(2, applied.until + 1000, 3).is_ok(), "done after it");
    }
}
