use super::*;

#[test]
fn zipf_counts_and_frequent_items_within_bounds() {
    for (eps, seed) in [(0.001, 1), (0.0005, 2), (0.01, 3)] {
        let items = zipf_values(300_000, 1_000_000, seed);
        let lc = build(eps, &items);
        let worst = check_guarantee(&lc, &exact(&items), items.len() as u64, eps);
        assert!(worst <= (eps * items.len() as f64) as u64);
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn real_data_counts_within_bounds() {
    let eps = 0.001;
    let mmsi: Vec<Value> = common::ais_mmsi().into_iter().map(Value::Str).collect();
    let volumes = nums(&common::spy_volumes());
    let prices = nums(&common::spy_prices());
    let speeds = nums(&common::ais_speed());
    for items in [mmsi, volumes, prices, speeds] {
        assert!(items.len() > 10_000);
        let lc = build(eps, &items);
        check_guarantee(&lc, &exact(&items), items.len() as u64, eps);
        // and after merging 4 partials
        let chunk = items.len().div_ceil(4);
        let mut parts = items.chunks(chunk).map(|c| build(eps, c));
        let mut acc = parts.next().unwrap();
        for p in parts {
            acc.merge(&p).unwrap();
        }
        check_guarantee(&acc, &exact(&items), items.len() as u64, eps);
    }
}
