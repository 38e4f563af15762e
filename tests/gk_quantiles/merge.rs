use proptest::prelude::*;
use saams::{Kind, SynopsisError};

use super::*;

fn merged(eps: f64, xs: &[f64], parts: usize, interleave: bool, tree: bool) -> GkQuantiles {
    let mut ps: Vec<GkQuantiles> = if interleave {
        (0..parts).map(|r| build(eps, &xs.iter().skip(r).step_by(parts).copied().collect::<Vec<_>>())).collect()
    } else {
        xs.chunks(xs.len().div_ceil(parts)).map(|c| build(eps, c)).collect()
    };
    if tree {
        while ps.len() > 1 {
            let mut next = Vec::new();
            for pair in ps.chunks(2) {
                let mut a = pair[0].clone();
                if let Some(b) = pair.get(1) {
                    a.merge(b).unwrap();
                }
                next.push(a);
            }
            ps = next;
        }
        ps.pop().unwrap()
    } else {
        let mut acc = ps.remove(0);
        for p in &ps {
            acc.merge(p).unwrap();
        }
        acc
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn merges_of_2_4_8_partials_keep_eps() {
    let eps = 0.01;
    let xs = zipf(400_000, 9);
    let prices = common::spy_prices();
    for data in [&xs, &prices] {
        for parts in [2, 4, 8] {
            for (interleave, tree) in [(false, false), (true, true), (false, true), (true, false)] {
                let m = merged(eps, data, parts, interleave, tree);
                check_ranks(&m, data, eps * data.len() as f64);
            }
        }
    }
}

#[test]
fn many_merges_keep_eps_and_size() {
    let eps = 0.01;
    let xs = zipf(300_000, 10);
    let m = merged(eps, &xs, 64, true, false);
    check_ranks(&m, &xs, eps * xs.len() as f64);
    assert!(m.tuples() < 1000, "{} tuples", m.tuples());
}

#[test]
fn incompatible_merges_are_errors() {
    let mut a = GkQuantiles::with_epsilon(0.01).unwrap();
    let b = GkQuantiles::with_epsilon(0.02).unwrap();
    assert!(matches!(a.merge(&b), Err(SynopsisError::Incompatible { kind: Kind::GkQuantiles, .. })));
    let lc = saams::lossy_counting::LossyCounting::with_epsilon(0.01).unwrap();
    assert!(matches!(a.merge(&lc), Err(SynopsisError::Incompatible { .. })));
}

proptest! {
    #![proptest_config(crate::proptest_config(64))]

    #[test]
    fn any_split_and_order_keeps_eps(
        xs in proptest::collection::vec(-1000i32..1000, 1..2000),
        cuts in proptest::collection::vec(0usize..2000, 0..6),
        reverse in any::<bool>(),
    ) {
        let eps = 0.02;
        let xs: Vec<f64> = xs.into_iter().map(f64::from).collect();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(xs.len())).collect();
        cuts.push(0);
        cuts.push(xs.len());
        cuts.sort_unstable();
        let mut parts: Vec<GkQuantiles> = cuts.windows(2).map(|w| build(eps, &xs[w[0]..w[1]])).collect();
        if reverse {
            parts.reverse();
        }
        let mut acc = parts.remove(0);
        for p in &parts {
            acc.merge(p).unwrap();
        }
        check_ranks(&acc, &xs, eps * xs.len() as f64);
        // The merged state satisfies the invariants decoding checks (gap condition, exact ends).
        let back = saams::registry::decode(&acc.encode());
        prop_assert!(back.is_ok(), "{:?}", back.err());
    }
}
