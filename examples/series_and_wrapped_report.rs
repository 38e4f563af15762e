//! Prints bytes, memory and measured error of DFT, LSH, KLL, CPC and FrequentItems against
//! exact answers (the speed figures are in `benches/series_and_wrapped.rs`).
//!
//! `cargo run --release --example series_and_wrapped_report`

use std::collections::{HashMap, HashSet};

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Zipf};
use saams::hash::SplitMix64;
use saams::{Cpc, Datum, Dft, FrequentItems, Kll, Lsh, PairQuery, Query, Synopsis, Value};

fn zipf(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let z = Zipf::<f64>::new(1_000_000.0, 1.1).expect("valid Zipf");
    (0..n).map(|_| z.sample(&mut rng).floor()).collect()
}

fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    sxy / (sxx * syy).sqrt()
}

fn quotes(file: &str, offset_h: i64) -> Vec<(i64, f64)> {
    let path = std::path::PathBuf::from(env!("SAAMS_DATASETS_DIR")).join("stocks/tick").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let t = saams::api::time::parse_date(f[0])? + saams::api::time::parse_time_of_day(f[1])?;
            Some((t + offset_h * 3_600_000, f[2].parse().ok()?))
        })
        .collect()
}

fn main() {
    let data = zipf(1_000_000, 42);
    let mut sorted = data.clone();
    sorted.sort_by(f64::total_cmp);

    let mut kll = Kll::new(200).unwrap();
    data.iter().for_each(|x| kll.update(Datum::Num(*x)));
    let mut worst = 0.0f64;
    for i in 1..100 {
        let v = kll.estimate(&Query::Quantile(f64::from(i) / 100.0)).unwrap().as_f64().unwrap();
        let lo = sorted.partition_point(|x| *x < v) as f64 / sorted.len() as f64;
        let hi = sorted.partition_point(|x| *x <= v) as f64 / sorted.len() as f64;
        let q = f64::from(i) / 100.0;
        worst = worst.max(if q < lo {
            lo - q
        } else if q > hi {
            q - hi
        } else {
            0.0
        });
    }
    println!(
        "KLL k=200, 1M Zipf(1.1): {} bytes encoded, {} bytes in memory, max rank error {:.5} (ε = {:.5})",
        kll.encode().len(),
        kll.size_bytes(),
        worst,
        kll.normalized_rank_error()
    );

    let truth = data.iter().map(|x| x.to_bits()).collect::<HashSet<_>>().len() as f64;
    let mut cpc = Cpc::new(11).unwrap();
    data.iter().for_each(|x| cpc.update(Datum::Num(*x)));
    let e = cpc.estimate(&Query::Distinct).unwrap();
    println!(
        "CPC lgK=11, 1M Zipf(1.1): {} bytes encoded, {} bytes in memory, distinct {:.0} vs exact {truth} \
         (relative error {:+.4}, 2σ bounds [{:.0}, {:.0}])",
        cpc.encode().len(),
        cpc.size_bytes(),
        e.as_f64().unwrap(),
        e.as_f64().unwrap() / truth - 1.0,
        e.lower,
        e.upper
    );

    let mut exact: HashMap<u64, u64> = HashMap::new();
    data.iter().for_each(|x| *exact.entry(x.to_bits()).or_default() += 1);
    let mut fi = FrequentItems::new(10).unwrap();
    data.iter().for_each(|x| fi.update(Datum::Num(*x)));
    let worst = exact
        .iter()
        .map(|(k, c)| {
            let e = fi.estimate(&Query::Count(Value::Num(f64::from_bits(*k)))).unwrap();
            (e.as_f64().unwrap() - *c as f64).abs()
        })
        .fold(0.0, f64::max);
    println!(
        "FrequentItems lgMaxMapSize=10, 1M Zipf(1.1): {} bytes encoded, {} bytes in memory, max |count error| {worst} \
         = {:.5}·N (guarantee ε = {:.5}, current max error {})",
        fi.encode().len(),
        fi.size_bytes(),
        worst / 1e6,
        fi.epsilon(),
        fi.maximum_error()
    );

    let fxcm = quotes("forex_fxcm_EURUSD_tick_quote.csv", 5);
    let oanda = quotes("forex_oanda_EURUSD_tick_quote.csv", 0);
    let (mut a, mut b) = (Dft::new(1.0, 500, 2000, 8).unwrap(), Dft::new(1.0, 500, 2000, 8).unwrap());
    let start = fxcm[0].0.max(oanda[0].0);
    let end = fxcm.last().unwrap().0.min(oanda.last().unwrap().0);
    let (mut i, mut j, mut last) = (0, 0, i64::MIN / 2);
    let (mut n, mut sum_err, mut max_err, mut width) = (0, 0.0, 0.0f64, 0.0);
    for sec in (start / 1000)..=(end / 1000) {
        while i < fxcm.len() && fxcm[i].0 < (sec + 1) * 1000 {
            if fxcm[i].0 >= start {
                a.update_at(Datum::Num(fxcm[i].1), fxcm[i].0);
            }
            i += 1;
        }
        while j < oanda.len() && oanda[j].0 < (sec + 1) * 1000 {
            if oanda[j].0 >= start {
                b.update_at(Datum::Num(oanda[j].1), oanda[j].0);
            }
            j += 1;
        }
        if sec - last >= 300 && a.window_len() == 2000 && a.points() == b.points() {
            last = sec;
            let e = a.estimate_pair(&b, &PairQuery::Correlation).unwrap();
            let err = (e.as_f64().unwrap() - pearson(&a.window_points(), &b.window_points())).abs();
            n += 1;
            sum_err += err;
            max_err = max_err.max(err);
            width += e.upper - e.lower;
        }
    }
    println!(
        "DFT [1,500,2000,8], EURUSD FXCM vs OANDA per second: {} bytes encoded, {} bytes in memory, {n} windows, \
         |corr error| mean {:.4} max {:.4}, mean bound width {:.4}",
        a.encode().len(),
        a.size_bytes(),
        sum_err / f64::from(n),
        max_err,
        width / f64::from(n)
    );

    let mut r = SplitMix64::new(5);
    let (mut inside, mut sum_err, pairs) = (0, 0.0, 1000);
    let mut lsh_bytes = 0;
    for _ in 0..pairs {
        let c = 2.0 * r.next_f64() - 1.0;
        let x: Vec<f64> = (0..100).map(|_| r.next_gaussian()).collect();
        let y: Vec<f64> = x.iter().map(|v| c * v + (1.0 - c * c).sqrt() * r.next_gaussian()).collect();
        let (mut a, mut b) = (Lsh::new(100, 500, 20, 12345).unwrap(), Lsh::new(100, 500, 20, 12345).unwrap());
        x.iter().for_each(|v| a.update(Datum::Num(*v)));
        y.iter().for_each(|v| b.update(Datum::Num(*v)));
        let e = a.estimate_pair(&b, &PairQuery::Similarity).unwrap();
        let truth = pearson(&x, &y);
        sum_err += (e.as_f64().unwrap() - truth).abs();
        inside += u32::from(e.lower <= truth && truth <= e.upper);
        lsh_bytes = a.encode().len();
    }
    println!(
        "LSH [100,500,20], {pairs} random window pairs: {lsh_bytes} bytes encoded (signature {} bytes), \
         mean |similarity error| {:.4}, {:.1}% inside the 95% bound",
        500usize.div_ceil(8),
        sum_err / f64::from(pairs),
        100.0 * f64::from(inside) / f64::from(pairs)
    );
}
