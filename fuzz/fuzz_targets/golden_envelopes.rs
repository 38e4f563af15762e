//! The committed empty golden envelope of every kind, in `Kind::ALL` order (its seed and
//! parameters): shared by the fuzz targets that build or query one synopsis of each kind.

/// One envelope per kind, in `Kind::ALL` order.
pub const EMPTY: [&[u8]; 13] = [
    include_bytes!("../../tests/golden/count_min_v1_empty.bin"),
    include_bytes!("../../tests/golden/hyper_log_log_v1_empty.bin"),
    include_bytes!("../../tests/golden/bloom_filter_v1_empty.bin"),
    include_bytes!("../../tests/golden/dft_v1_empty.bin"),
    include_bytes!("../../tests/golden/lossy_counting_v1_empty.bin"),
    include_bytes!("../../tests/golden/sticky_sampling_v1_empty.bin"),
    include_bytes!("../../tests/golden/ams_v1_empty.bin"),
    include_bytes!("../../tests/golden/gk_quantiles_v1_empty.bin"),
    include_bytes!("../../tests/golden/lsh_v1_empty.bin"),
    include_bytes!("../../tests/golden/window_sketch_quantiles_v1_empty.bin"),
    include_bytes!("../../tests/golden/kll_v1_empty.bin"),
    include_bytes!("../../tests/golden/cpc_v1_empty.bin"),
    include_bytes!("../../tests/golden/frequent_items_v1_empty.bin"),
];
