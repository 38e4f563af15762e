use proptest::prelude::*;
use saams::{Kind, SynopsisError};

use super::*;

fn merged_in_order(eps: f64, w: u64, xs: &[f64], cuts: &[usize], tree: bool) -> WindowSketchQuantiles {
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(xs.len());
    let mut ps: Vec<WindowSketchQuantiles> = bounds.windows(2).map(|c| build(eps, w, &xs[c[0]..c[1]])).collect();
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
fn merges_of_2_4_8_consecutive_partials() {
    let (eps, w) = (0.01, 20_000u64);
    let xs = zipf(60_000, 4);
    let prices = common::spy_prices();
    for data in [&xs[..], &prices[..60_000]] {
        for parts in [2usize, 4, 8] {
            // Uneven cuts, ending close to the window size so several partials share the window.
            let cuts: Vec<usize> = (1..parts).map(|i| data.len() - (parts - i) * 3_001 - i * 7).collect();
            for tree in [false, true] {
                let m = merged_in_order(eps, w, data, &cuts, tree);
                check_window(&m, &data[data.len() - w as usize..], eps * w as f64);
            }
        }
    }
}

#[test]
fn a_long_later_part_replaces_the_earlier_one() {
    let (eps, w) = (0.02, 1000u64);
    let xs = zipf(5000, 5);
    let mut a = build(eps, w, &xs[..2000]);
    let b = build(eps, w, &xs[2000..]);
    a.merge(&b).unwrap();
    check_window(&a, &xs[4000..], eps * w as f64);
    assert_eq!(a.stored_values(), b.stored_values());
    for q in [0.0, 0.1, 0.5, 0.9, 1.0] {
        assert_eq!(a.estimate(&Query::Quantile(q)).unwrap(), b.estimate(&Query::Quantile(q)).unwrap());
    }
}

#[test]
fn incompatible_merges_are_errors() {
    let mut a = WindowSketchQuantiles::with_accuracy(0.01, 1000).unwrap();
    for b in [
        WindowSketchQuantiles::with_accuracy(0.02, 1000).unwrap(),
        WindowSketchQuantiles::with_accuracy(0.01, 999).unwrap(),
    ] {
        assert!(matches!(a.merge(&b), Err(SynopsisError::Incompatible { kind: Kind::WindowSketchQuantiles, .. })));
    }
    let gk = saams::gk_quantiles::GkQuantiles::with_epsilon(0.01).unwrap();
    assert!(matches!(a.merge(&gk), Err(SynopsisError::Incompatible { .. })));
}

proptest! {
    #![proptest_config(crate::proptest_config(64))]

    #[test]
    fn any_time_ordered_split_answers_for_the_last_w(
        xs in proptest::collection::vec(-500i32..500, 1..3000),
        cuts in proptest::collection::vec(0usize..3000, 0..6),
        w in 1u64..1500,
        tree in any::<bool>(),
    ) {
        let eps = 0.05;
        let xs: Vec<f64> = xs.into_iter().map(f64::from).collect();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(xs.len())).collect();
        cuts.sort_unstable();
        let m = merged_in_order(eps, w, &xs, &cuts, tree);
        let start = xs.len().saturating_sub(w as usize);
        check_window(&m, &xs[start..], eps * w as f64);
        let back = saams::registry::decode(&m.encode());
        prop_assert!(back.is_ok(), "{:?}", back.err());
    }
}
