//! The compiled registry: request scripts applied in order, routing modes, targets, tree stages.

use std::sync::Arc;

use saams::api::request::parse_requests;
use saams_operators::merge_stages;
use saams_operators::plan::{Mode, Plan};

mod common;
use common::NoSnapshots;

fn plan(text: &str, peers: usize) -> Plan {
    Plan::build(&parse_requests(text), peers, 60_000, Arc::new(NoSnapshots))
}

const SCRIPT: &str = r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}
{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}
{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":[1,"price","Queryable","Continues"],"requestID":"q"}
{"streamID":"","synopsisID":2,"dataSetKey":"F","param":["HLL","price","NotQueryable",0.05],"noOfP":4}
{"streamID":"A","synopsisID":5,"dataSetKey":"F","param":["Lossy","price","NotQueryable",0.01],"noOfP":3}
{"streamID":"A","synopsisID":4,"dataSetKey":"F","param":["DFT","price","NotQueryable",1,4,8,2],"noOfP":2}
{"streamID":"B","synopsisID":3,"dataSetKey":"F","param":["Bloom","price","NotQueryable",100,0.01]}
{"streamID":"B","synopsisID":3,"dataSetKey":"F","param":["DELETE_REQUEST","price"]}
{"streamID":"B","synopsisID":3,"dataSetKey":"F","param":[1,"price","Queryable","Ad-hoc"]}
{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["SAVE_REQUEST","x.bin"]}"#;

#[test]
fn script_is_applied_in_order() {
    let p = plan(SCRIPT, 4);
    // The duplicate construct is ignored; the deleted Bloom filter feeds no group.
    assert_eq!(p.routing.synopses.len(), 5);
    assert_eq!(p.routing.synopses[4].group, u32::MAX);
    assert_eq!(p.routing.synopses[0].continuous.len(), 1);
    // Errors: a query on the deleted synopsis, a SAVE the store refuses.
    let errors: Vec<String> = p.script_answers().iter().map(|e| e.to_json_line()).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("unknown synopsis"));
    assert!(errors[1].contains("no snapshot x.bin"));
}

#[test]
fn routing_modes_follow_the_kind_and_parallelism() {
    let p = plan(SCRIPT, 4);
    assert_eq!(p.routing.synopses[0].mode, Mode::Owned);
    assert_eq!(p.routing.synopses[1].mode, Mode::Exact { spread: 0 }, "dataset-wide linear kind: partition-based");
    assert_eq!(p.routing.synopses[2].mode, Mode::Binned(3));
    assert_eq!(p.routing.synopses[3].mode, Mode::Windowed(2));
    // One worker: the dataset-wide HLL is owned, the bins and windows stay (they do not depend on W).
    let one = plan(SCRIPT, 1);
    assert_eq!(one.routing.synopses[1].mode, Mode::Owned);
    assert_eq!(one.routing.synopses[2].mode, Mode::Binned(3));
    assert!(saams::Kind::CountMin.merges_exactly() && !saams::Kind::Kll.merges_exactly());
}

#[test]
fn targets_are_workers_and_owned_groups_have_one_owner() {
    let p = plan(SCRIPT, 3);
    for g in 0..p.routing.groups.len() as u32 {
        for seq in 0..50u64 {
            for w in [0u64, 60_000, 120_000] {
                let t = p.routing.target(g, seq, w, 1);
                assert!(t < 3);
                match p.routing.groups[g as usize].mode {
                    Mode::Owned => assert_eq!(t as usize, p.routing.groups[g as usize].owner),
                    Mode::Exact { spread: 0 } => assert_eq!(t, 1, "partition-based stays on the reader"),
                    _ => {}
                }
            }
        }
    }
    // Window-based: all tuples of one window of the stream go to one worker.
    let dft = p.routing.synopses[3].group;
    let w0: Vec<u32> = (0..20).map(|s| p.routing.target(dft, s, 60_000, 0)).collect();
    assert!(w0.iter().all(|&t| t == w0[0]));
    assert_ne!(p.routing.target(dft, 0, 0, 0), p.routing.target(dft, 0, 60_000, 0));
}

#[test]
fn tree_stages_bring_every_worker_to_the_root() {
    for peers in 1..=9usize {
        let stages = merge_stages(peers);
        assert!(1usize << stages >= peers && (stages == 0 || 1usize << (stages - 1) < peers));
        for root in 0..peers {
            for start in 0..peers {
                let mut i = start;
                for k in 1..=stages {
                    let rel = (i + peers - root) % peers;
                    let next = (root + ((rel >> k) << k)) % peers;
                    // A stage never moves a partial away from the root.
                    assert!((next + peers - root) % peers <= rel);
                    i = next;
                }
                assert_eq!(i, root, "peers {peers} root {root} start {start}");
            }
        }
    }
}

/// The tree merge as designed, for every root of several process layouts: every partial reaches
/// the root in `merge_stages` stages, the within-process stages send nothing between processes and
/// leave one partial per process, and a merge sends n − 1 partials between n processes (the
/// fewest possible).
#[test]
fn tree_merge_stays_in_processes_first_and_crosses_them_n_minus_1_times_for_every_root() {
    for (processes, per_process) in [(1, 1), (1, 4), (2, 1), (2, 2), (2, 4), (4, 2), (3, 3), (2, 3), (3, 2)] {
        let peers = processes * per_process;
        let mut p = plan("", peers);
        p.routing_mut().workers_per_process = per_process;
        let stages = p.merge_stages();
        assert_eq!(stages, merge_stages(per_process) + merge_stages(processes));
        for root in 0..peers {
            // One partial per worker, each a set of the workers it summarizes.
            let mut held: Vec<Vec<usize>> = (0..peers).map(|w| vec![w]).collect();
            let mut crossings = 0;
            for stage in 1..=stages {
                let mut next: Vec<Vec<usize>> = vec![Vec::new(); peers];
                for (me, part) in held.iter().enumerate().filter(|(_, part)| !part.is_empty()) {
                    let to = p.routing.merge_target(root, me, stage);
                    assert!(to < peers, "{processes}x{per_process} root {root}: stage {stage} sends to {to}");
                    if to / per_process != me / per_process {
                        crossings += 1;
                        assert!(
                            stage > merge_stages(per_process),
                            "{processes}x{per_process} root {root}: stage {stage} crosses processes before the local stages end"
                        );
                    }
                    next[to].extend(part);
                }
                held = next;
                if stage == merge_stages(per_process) || stages == 0 {
                    // After the local stages: one partial per process, at the root's local index.
                    let holders: Vec<usize> = (0..peers).filter(|&w| !held[w].is_empty()).collect();
                    let expected: Vec<usize> = (0..processes).map(|q| q * per_process + root % per_process).collect();
                    assert_eq!(holders, expected, "{processes}x{per_process} root {root}");
                }
            }
            let mut at_root = held[root].clone();
            at_root.sort_unstable();
            assert_eq!(at_root, (0..peers).collect::<Vec<_>>(), "{processes}x{per_process} root {root}");
            assert_eq!(crossings, processes - 1, "{processes}x{per_process} root {root}");
        }
    }
}

/// Streams' owners are balanced, not left to their hashes: a hundred streams (three synopses
/// each, one update group) split 50 / 50 on two workers, 34 / 33 / 33 on three, 25 each on four
/// (hashed they split 56 / 44 and 35 / 25 / 21 / 19), the same way on every build, and a stream
/// added while the job runs goes to a worker owning the fewest groups.
#[test]
fn stream_owners_are_balanced_over_the_workers_and_the_same_on_every_build() {
    let script: String = (0..100)
        .flat_map(|k| {
            [
                format!(r#"{{"streamID":"S{k}","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}}"#),
                format!(r#"{{"streamID":"S{k}","synopsisID":2,"dataSetKey":"F","param":["HLL","price","NotQueryable",0.05]}}"#),
                format!(r#"{{"streamID":"S{k}","synopsisID":4,"dataSetKey":"F","param":["DFT","price","NotQueryable",1,4,8,2]}}"#),
            ]
        })
        .collect::<Vec<_>>()
        .join("\n");
    for peers in [2usize, 3, 4] {
        let p = plan(&script, peers);
        assert_eq!(p.routing.groups.len(), 100);
        let mut owned = vec![0usize; peers];
        for g in &p.routing.groups {
            owned[g.owner] += 1;
            for &s in &g.synopses {
                assert_eq!(p.routing.synopses[s as usize].home, g.owner, "an owned synopsis lives with its group");
            }
        }
        let (least, most) = (owned.iter().min().copied(), owned.iter().max().copied());
        assert!(most.zip(least).is_some_and(|(m, l)| m - l <= 1), "{peers} workers own {owned:?}");
        let again = plan(&script, peers);
        assert!(
            p.routing.groups.iter().zip(&again.routing.groups).all(|(a, b)| a.owner == b.owner),
            "every worker builds the same owners"
        );
        let mut live = plan(&script, peers);
        let added = parse_requests(
            r#"{"streamID":"late","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}"#,
        );
        live.extend(&added, 120_000, None);
        let late = live.routing.groups.last().expect("the added stream's group");
        assert_eq!(late.stream, "late");
        assert_eq!(owned[late.owner], *owned.iter().min().expect("workers"), "{peers} workers own {owned:?}");
    }
}
