use super::*;

#[test]
fn zipf_ranks_within_eps_n() {
    for (eps, seed) in [(0.01, 1), (0.001, 2), (0.05, 3)] {
        let xs = zipf(500_000, seed);
        let gk = build(eps, &xs);
        check_ranks(&gk, &xs, eps * xs.len() as f64);
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn real_data_ranks_within_eps_n() {
    for xs in [common::spy_prices(), common::spy_volumes(), common::ais_speed()] {
        assert!(xs.len() > 10_000);
        for eps in [0.01, 0.002] {
            let gk = build(eps, &xs);
            check_ranks(&gk, &xs, eps * xs.len() as f64);
        }
    }
}

#[test]
fn sorted_and_reversed_streams_within_eps_n() {
    let up: Vec<f64> = (0..200_000).map(f64::from).collect();
    let down: Vec<f64> = up.iter().rev().copied().collect();
    for xs in [up, down] {
        check_ranks(&build(0.005, &xs), &xs, 0.005 * xs.len() as f64);
    }
}
