use super::*;

#[test]
fn reference_parameters_on_zipf() {
    let (eps, w) = (0.01, 40_000u64);
    let xs = zipf(200_000, 3);
    let mut s = WindowSketchQuantiles::with_accuracy(eps, w).unwrap();
    for (i, x) in xs.iter().enumerate() {
        s.insert(*x);
        let n = i + 1;
        if n % 37_777 == 0 || n == xs.len() {
            check_window(&s, &xs[n.saturating_sub(w as usize)..n], eps * w as f64);
        }
    }
    assert!(s.size_bytes() < 40_000 * 8 / 4, "{} bytes", s.size_bytes());
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn real_data_windows() {
    for xs in [common::spy_prices(), common::spy_volumes(), common::ais_speed()] {
        for (eps, w) in [(0.01, 40_000usize), (0.005, 10_000)] {
            let mut s = WindowSketchQuantiles::with_accuracy(eps, w as u64).unwrap();
            for (i, x) in xs.iter().enumerate() {
                s.insert(*x);
                let n = i + 1;
                if n % 29_989 == 0 || n == xs.len() {
                    check_window(&s, &xs[n.saturating_sub(w)..n], eps * w as f64);
                }
            }
        }
    }
}
