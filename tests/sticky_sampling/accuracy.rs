use super::*;

#[test]
fn zipf_frequent_items_and_counts_reference_parameters() {
    let p = (0.001, 1e-4, 0.001);
    let items = zipf_values(1_000_000, 1_000_000, 1);
    let ss = build(p, 42, &items);
    assert!(ss.sampling_divisor() >= 4);
    check_guarantee(&ss, &exact(&items), items.len() as u64, p);
    let e = ss.estimate(&Query::FrequentItems { support: p.0 }).unwrap();
    assert!(e.confidence >= 1.0 - p.2, "confidence {}", e.confidence);
}

#[test]
fn many_seeds_none_fails_with_coarse_parameters() {
    // Coarse ε makes sampling bite hard (rate down to 1/32); δ = 0.01 per run.
    let p = (0.01, 0.001, 0.01);
    let items = zipf_values(500_000, 100_000, 2);
    let truth = exact(&items);
    for seed in 0..10 {
        let ss = build(p, seed, &items);
        assert!(ss.sampling_divisor() >= 16);
        check_guarantee(&ss, &truth, items.len() as u64, p);
    }
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn real_data_frequent_items() {
    let p = (0.005, 0.0005, 0.01);
    let mmsi: Vec<Value> = common::ais_mmsi().into_iter().map(Value::Str).collect();
    let vol: Vec<Value> = common::spy_volumes().into_iter().map(Value::Num).collect();
    let prices: Vec<Value> = common::spy_prices().into_iter().map(Value::Num).collect();
    let speed: Vec<Value> = common::ais_speed().into_iter().map(Value::Num).collect();
    for items in [mmsi, vol, prices, speed] {
        let ss = build(p, 11, &items);
        check_guarantee(&ss, &exact(&items), items.len() as u64, p);
    }
}
