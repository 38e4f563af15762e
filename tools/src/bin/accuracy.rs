//! `accuracy`: the accuracy dashboard. Runs every synopsis kind, built from the reference
//! request parameters through the registry, on the real sample data and prints, per kind and
//! query type, how often the true answer fell inside the promised `[lower, upper]` interval
//! (against the promised confidence) and how large the measured error was.
//!
//! ```text
//! cargo run --release -p saams-tools --bin accuracy -- [--datasets DIR] [--tsv FILE]
//! ```
//!
//! Everything goes through `saams::registry::construct` and the `Synopsis` trait, so the report
//! measures exactly what the engine serves.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use saams::{Datum, EstimateValue, PairQuery, Query, Synopsis, Value};
use saams_datasets::oracle::{ExactCounts, ExactQuantiles, pearson};
use serde_json::json;

/// Measured error vs promised bound, per synopsis kind, on the shared real data.
#[derive(Parser, Debug)]
#[command(name = "accuracy", version)]
struct Args {
    /// Folder with the shared sample data (`stocks/`, `ais/`); by default the one the tests read,
    /// as the build found it (`build/test_env.rs`); `$SAAMS_DATASETS` at run time overrides it.
    #[arg(long, env = "SAAMS_DATASETS", default_value = env!("SAAMS_DATASETS_DIR"))]
    datasets: PathBuf,
    /// Also write the table as TSV to this file.
    #[arg(long)]
    tsv: Option<PathBuf>,
}

/// One line of the report.
struct Row {
    kind: &'static str,
    params: String,
    data: &'static str,
    query: &'static str,
    queries: usize,
    covered: usize,
    confidence: f64,
    error: String,
    bound: String,
}

impl Row {
    fn coverage(&self) -> f64 {
        if self.queries == 0 { 0.0 } else { self.covered as f64 / self.queries as f64 }
    }
    fn verdict(&self) -> &'static str {
        // A deterministic bound must hold every time; a probabilistic one at its confidence
        // (with a little slack for the finite number of queries).
        let slack = if self.confidence >= 1.0 {
            0.0
        } else {
            3.0 * (self.confidence * (1.0 - self.confidence) / self.queries.max(1) as f64).sqrt()
        };
        if self.coverage() + slack >= self.confidence { "ok" } else { "MISSED" }
    }
}

/// The real columns the report runs on.
struct Data {
    mmsi: Vec<String>,
    spy_price: Vec<f64>,
    spy_volume: Vec<f64>,
    eurusd_fxcm: Vec<f64>,
    eurusd_oanda: Vec<f64>,
}

fn load(dir: &Path) -> Result<Data, String> {
    if !dir.is_dir() {
        return Err(format!(
            "no sample data at {}: point SAAMS_DATASETS (or --datasets) at the shared datasets folder",
            dir.display()
        ));
    }
    let read = |rel: &str| -> Result<Vec<saams::api::Tuple>, String> {
        let path = dir.join(rel);
        let reader = saams_datasets::read_path(&path, None).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(reader.filter_map(Result::ok).collect())
    };
    let num = |tuples: &[saams::api::Tuple], field: &str| -> Vec<f64> {
        tuples.iter().filter_map(|t| t.field(field).and_then(|d| d.as_f64())).collect()
    };
    let ais = read("ais/noaa_marinecadastre_AIS_2022-01-03_sample.csv")?;
    let spy = read("stocks/tick/equity_usa_SPY_tick_trade.csv")?;
    let fxcm = read("stocks/tick/forex_fxcm_EURUSD_tick_quote.csv")?;
    let oanda = read("stocks/tick/forex_oanda_EURUSD_tick_quote.csv")?;
    Ok(Data {
        mmsi: ais.iter().map(|t| t.stream_id.clone()).collect(),
        spy_price: num(&spy, "price"),
        spy_volume: num(&spy, "volume"),
        eurusd_fxcm: num(&fxcm, "price"),
        eurusd_oanda: num(&oanda, "price"),
    })
}

fn build(id: u64, params: &serde_json::Value) -> Result<Box<dyn Synopsis>, String> {
    let p = params.as_array().cloned().unwrap_or_default();
    saams::registry::construct(id, &p).map_err(|e| format!("synopsisID {id}: {e}"))
}

fn params_text(params: &serde_json::Value) -> String {
    params.to_string()
}

/// Point counts of every distinct item: CountMin, Lossy Counting, Sticky Sampling, AMS,
/// FrequentItems.
fn point_counts(
    kind: &'static str,
    id: u64,
    params: serde_json::Value,
    data: &'static str,
    items: &[Datum<'_>],
) -> Result<Row, String> {
    let mut s = build(id, &params)?;
    let mut exact = ExactCounts::default();
    for d in items {
        s.update(*d);
        exact.add(*d);
    }
    let n = exact.total() as f64;
    let (mut covered, mut queries, mut max_err, mut sum_width, mut confidence) = (0, 0, 0.0f64, 0.0, 1.0);
    for (value, truth) in exact.top_k(usize::MAX) {
        let e = s.estimate(&Query::Count(value)).map_err(|e| e.to_string())?;
        let est = e.as_f64().unwrap_or(f64::NAN);
        let truth = truth as f64;
        queries += 1;
        if e.lower <= truth && truth <= e.upper {
            covered += 1;
        }
        max_err = max_err.max((est - truth).abs());
        sum_width += e.upper - e.lower;
        confidence = e.confidence;
    }
    Ok(Row {
        kind,
        params: params_text(&params),
        data,
        query: "count(v), every item",
        queries,
        covered,
        confidence,
        error: format!("max|err|/N={:.2e}", max_err / n),
        bound: format!("mean width/N={:.2e}", sum_width / queries.max(1) as f64 / n),
    })
}

/// Frequent items at a support: recall against the exact answer must be 1 (no false negatives).
fn frequent(
    kind: &'static str,
    id: u64,
    params: serde_json::Value,
    data: &'static str,
    items: &[Datum<'_>],
    support: f64,
) -> Result<Row, String> {
    let mut s = build(id, &params)?;
    let mut exact = ExactCounts::default();
    for d in items {
        s.update(*d);
        exact.add(*d);
    }
    let truth = exact.frequent(support);
    let e = s.estimate(&Query::FrequentItems { support }).map_err(|e| e.to_string())?;
    let reported: Vec<Value> = match e.value {
        EstimateValue::Items(items) => items.into_iter().map(|(v, _)| v).collect(),
        _ => Vec::new(),
    };
    let found = truth.iter().filter(|(v, _)| reported.contains(v)).count();
    let false_pos = reported.len() - reported.iter().filter(|v| truth.iter().any(|(t, _)| t == *v)).count();
    Ok(Row {
        kind,
        params: params_text(&params),
        data,
        query: "frequent items",
        queries: truth.len(),
        covered: found,
        confidence: e.confidence,
        error: format!("recall={}/{} extra={false_pos}", found, truth.len()),
        bound: format!("support={support}"),
    })
}

/// Distinct counts: HyperLogLog, CPC. One query per seed-free run; the data sets vary.
fn distinct(
    kind: &'static str,
    id: u64,
    params: serde_json::Value,
    sets: &[(&'static str, Vec<Datum<'_>>)],
) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (data, items) in sets {
        let mut s = build(id, &params)?;
        let mut exact = ExactCounts::default();
        for d in items {
            s.update(*d);
            exact.add(*d);
        }
        let truth = exact.distinct() as f64;
        let e = s.estimate(&Query::Distinct).map_err(|e| e.to_string())?;
        let est = e.as_f64().unwrap_or(f64::NAN);
        rows.push(Row {
            kind,
            params: params_text(&params),
            data,
            query: "distinct",
            queries: 1,
            covered: usize::from(e.lower <= truth && truth <= e.upper),
            confidence: e.confidence,
            error: format!("rel err={:+.4} (n={truth})", (est - truth) / truth),
            bound: format!("±{:.4}", (e.upper - e.lower) / 2.0 / est.max(1.0)),
        });
    }
    Ok(rows)
}

/// Bloom filter: no false negatives on members, false-positive rate on non-members at the design
/// capacity.
fn bloom(params: serde_json::Value) -> Result<Vec<Row>, String> {
    let mut s = build(3, &params)?;
    let n = params.get(0).and_then(|v| v.as_f64()).unwrap_or(150_000.0) as u64;
    let fpp = params.get(1).and_then(|v| v.as_f64()).unwrap_or(0.01);
    for i in 0..n {
        s.update(Datum::Num(i as f64));
    }
    let mut members = 0;
    for i in 0..n {
        if matches!(s.estimate(&Query::Contains(Value::Num(i as f64))).map(|e| e.value), Ok(EstimateValue::Bool(true)))
        {
            members += 1;
        }
    }
    let probes = 200_000u64;
    let mut fp = 0;
    for i in 0..probes {
        if matches!(
            s.estimate(&Query::Contains(Value::Num((n + 10 + i) as f64))).map(|e| e.value),
            Ok(EstimateValue::Bool(true))
        ) {
            fp += 1;
        }
    }
    let rate = fp as f64 / probes as f64;
    Ok(vec![
        Row {
            kind: "BloomFilter",
            params: params_text(&params),
            data: "integers 0..n",
            query: "contains(member)",
            queries: n as usize,
            covered: members,
            confidence: 1.0,
            error: format!("false negatives={}", n as usize - members),
            bound: "none".into(),
        },
        Row {
            kind: "BloomFilter",
            params: params_text(&params),
            data: "integers n..",
            query: "contains(non-member)",
            queries: 1,
            covered: usize::from((rate - fpp).abs() <= 0.25 * fpp),
            confidence: 1.0,
            error: format!("fpr={rate:.5}"),
            bound: format!("target {fpp} ±25%"),
        },
    ])
}

/// Quantiles over the whole stream: GK, KLL. Rank error of the returned value at q = 0.01..0.99.
fn quantiles(
    kind: &'static str,
    id: u64,
    params: serde_json::Value,
    eps: f64,
    data: &'static str,
    values: &[f64],
) -> Result<Row, String> {
    let mut s = build(id, &params)?;
    for x in values {
        s.update(Datum::Num(*x));
    }
    let exact = ExactQuantiles::new(values.to_vec());
    rank_errors(kind, params, eps, data, s.as_ref(), &exact)
}

fn rank_errors(
    kind: &'static str,
    params: serde_json::Value,
    eps: f64,
    data: &'static str,
    s: &dyn Synopsis,
    exact: &ExactQuantiles,
) -> Result<Row, String> {
    let (mut covered, mut queries, mut max_err, mut confidence) = (0, 0, 0.0f64, 1.0);
    for i in 1..100 {
        let q = i as f64 / 100.0;
        let e = s.estimate(&Query::Quantile(q)).map_err(|e| e.to_string())?;
        let v = e.as_f64().unwrap_or(f64::NAN);
        queries += 1;
        if exact.is_within(v, q, eps) {
            covered += 1;
        }
        // Distance in rank from q to the nearest rank the returned value occupies.
        let (lo, hi) = exact.rank_range(v);
        let n = exact.len() as f64;
        let target = q * n;
        let err = if target < lo as f64 {
            lo as f64 - target
        } else if target > hi as f64 {
            target - hi as f64
        } else {
            0.0
        };
        max_err = max_err.max(err / n);
        confidence = e.confidence;
    }
    Ok(Row {
        kind,
        params: params_text(&params),
        data,
        query: "quantile q=.01..0.99",
        queries,
        covered,
        confidence,
        error: format!("max rank err={max_err:.5}"),
        bound: format!("eps={eps}"),
    })
}

/// Sliding-window quantiles: the exact answer is over the last W items.
fn window_quantiles(params: serde_json::Value, data: &'static str, values: &[f64]) -> Result<Row, String> {
    let eps = params.get(0).and_then(|v| v.as_f64()).unwrap_or(0.01);
    let w = params.get(1).and_then(|v| v.as_f64()).unwrap_or(40_000.0) as usize;
    let mut s = build(10, &params)?;
    for x in values {
        s.update(Datum::Num(*x));
    }
    let last = &values[values.len().saturating_sub(w)..];
    let exact = ExactQuantiles::new(last.to_vec());
    rank_errors("WindowSketchQuantiles", params, eps, data, s.as_ref(), &exact)
}

/// AMS F2 and inner product against the exact values.
fn ams(params: serde_json::Value, items: &[Datum<'_>]) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let half = items.len() / 2;
    let (mut a, mut b) = (build(7, &params)?, build(7, &params)?);
    let (mut ea, mut eb) = (ExactCounts::default(), ExactCounts::default());
    for d in &items[..half] {
        a.update(*d);
        ea.add(*d);
    }
    for d in &items[half..] {
        b.update(*d);
        eb.add(*d);
    }
    let f2 = ea.f2() as f64;
    let e = a.estimate(&Query::F2).map_err(|e| e.to_string())?;
    rows.push(Row {
        kind: "AMS",
        params: params_text(&params),
        data: "AIS MMSI (1st half)",
        query: "F2",
        queries: 1,
        covered: usize::from(e.lower <= f2 && f2 <= e.upper),
        confidence: e.confidence,
        error: format!("rel err={:+.4}", (e.as_f64().unwrap_or(f64::NAN) - f2) / f2),
        bound: format!("±{:.4}", (e.upper - e.lower) / 2.0 / f2),
    });
    let ip = ea.inner_product(&eb) as f64;
    let e = a.estimate_pair(b.as_ref(), &PairQuery::InnerProduct).map_err(|e| e.to_string())?;
    rows.push(Row {
        kind: "AMS",
        params: params_text(&params),
        data: "AIS MMSI halves",
        query: "inner product",
        queries: 1,
        covered: usize::from(e.lower <= ip && ip <= e.upper),
        confidence: e.confidence,
        error: format!(
            "err/sqrt(F2a F2b)={:+.4}",
            (e.as_f64().unwrap_or(f64::NAN) - ip) / (f2 * eb.f2() as f64).sqrt()
        ),
        bound: format!("width/2={:.3e}", (e.upper - e.lower) / 2.0),
    });
    Ok(rows)
}

/// A pair query of two synopses fed two real series point by point, asked every `every`
/// points once `window` points were seen, against the exact Pearson correlation of the last
/// `window` points (DFT correlation; LSH similarity of mean-centred windows is the same
/// quantity).
#[allow(clippy::too_many_arguments)]
fn pair_series(
    kind: &'static str,
    id: u64,
    params: serde_json::Value,
    query: (&'static str, PairQuery),
    bound: &str,
    (window, every): (usize, usize),
    x: &[f64],
    y: &[f64],
) -> Result<Row, String> {
    let n = x.len().min(y.len());
    let (mut a, mut b) = (build(id, &params)?, build(id, &params)?);
    let (mut covered, mut queries, mut max_err, mut confidence) = (0, 0, 0.0f64, 1.0);
    for i in 0..n {
        a.update(Datum::Num(x[i]));
        b.update(Datum::Num(y[i]));
        let seen = i + 1;
        if seen >= window && seen % every == 0 {
            let Some(truth) = pearson(&x[seen - window..seen], &y[seen - window..seen]) else { continue };
            let e = a.estimate_pair(b.as_ref(), &query.1).map_err(|e| e.to_string())?;
            queries += 1;
            if e.lower - 1e-9 <= truth && truth <= e.upper + 1e-9 {
                covered += 1;
            }
            max_err = max_err.max((e.as_f64().unwrap_or(f64::NAN) - truth).abs());
            confidence = e.confidence;
        }
    }
    Ok(Row {
        kind,
        params: params_text(&params),
        data: "EURUSD fxcm vs oanda",
        query: query.0,
        queries,
        covered,
        confidence,
        error: format!("max|err|={max_err:.4}"),
        bound: bound.into(),
    })
}

/// DFT correlation over the sliding window, queried every basic window.
fn dft(params: serde_json::Value, x: &[f64], y: &[f64]) -> Result<Row, String> {
    let window = params.get(2).and_then(|v| v.as_f64()).unwrap_or(2000.0) as usize;
    let basic = params.get(1).and_then(|v| v.as_f64()).unwrap_or(500.0) as usize;
    let query = ("correlation", PairQuery::Correlation);
    pair_series("DFT", 4, params, query, "dropped-coefficient energy", (window, basic), x, y)
}

/// LSH similarity of the last `window` values, queried every window.
fn lsh(params: serde_json::Value, x: &[f64], y: &[f64]) -> Result<Row, String> {
    let window = params.get(0).and_then(|v| v.as_f64()).unwrap_or(100.0) as usize;
    let query = ("similarity", PairQuery::Similarity);
    pair_series("LSH", 9, params, query, "Hoeffding on the Hamming distance", (window, window), x, y)
}

/// Every evaluation of the report; an evaluation that fails (a kind that cannot be built or
/// asked) is reported as an error line and the others still run.
fn run(args: &Args) -> Result<(Vec<Row>, Vec<String>), String> {
    let data = load(&args.datasets)?;
    let mmsi: Vec<Datum<'_>> = data.mmsi.iter().map(|s| Datum::Str(s)).collect();
    let volumes: Vec<Datum<'_>> = data.spy_volume.iter().map(|x| Datum::Num(*x)).collect();
    let prices: Vec<Datum<'_>> = data.spy_price.iter().map(|x| Datum::Num(*x)).collect();
    let sets = vec![("AIS MMSI", mmsi.clone()), ("SPY price", prices.clone()), ("SPY volume", volumes.clone())];
    let one = |r: Result<Row, String>| r.map(|row| vec![row]);
    let evaluations: Vec<Result<Vec<Row>, String>> = vec![
        one(point_counts("CountMin", 1, json!([0.002, 0.99, 12345]), "AIS MMSI", &mmsi)),
        one(point_counts("CountMin", 1, json!([0.002, 0.99, 12345]), "SPY volume", &volumes)),
        distinct("HyperLogLog", 2, json!([0.02]), &sets),
        bloom(json!([150000, 0.01])),
        one(dft(json!([1, 500, 2000, 8]), &data.eurusd_fxcm, &data.eurusd_oanda)),
        one(point_counts("LossyCounting", 5, json!([0.001]), "AIS MMSI", &mmsi)),
        one(frequent("LossyCounting", 5, json!([0.001]), "SPY volume", &volumes, 0.01)),
        one(point_counts("StickySampling", 6, json!([0.001, 1e-4, 0.001]), "AIS MMSI", &mmsi)),
        one(frequent("StickySampling", 6, json!([0.001, 1e-4, 0.001]), "SPY volume", &volumes, 0.01)),
        one(point_counts("AMS", 7, json!([10, 10000]), "AIS MMSI", &mmsi)),
        ams(json!([10, 10000]), &mmsi),
        one(quantiles("GKQuantiles", 8, json!([0.01]), 0.01, "SPY price", &data.spy_price)),
        one(window_quantiles(json!([0.01, 40000]), "SPY price", &data.spy_price)),
        one(lsh(json!([100, 500, 20]), &data.eurusd_fxcm, &data.eurusd_oanda)),
        one(quantiles("KLL", 11, json!([200]), 0.0133, "SPY price", &data.spy_price)),
        distinct("CPC", 12, json!([11]), &sets),
        one(point_counts("FrequentItems", 13, json!([10]), "SPY volume", &volumes)),
        one(frequent("FrequentItems", 13, json!([10]), "SPY volume", &volumes, 0.01)),
    ];
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for e in evaluations {
        match e {
            Ok(r) => rows.extend(r),
            Err(e) => errors.push(e),
        }
    }
    Ok((rows, errors))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let (rows, errors) = match run(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("accuracy: {e}");
            return ExitCode::FAILURE;
        }
    };
    let header =
        ["kind", "params", "data", "query", "queries", "coverage", "promised", "measured error", "bound", "verdict"];
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in &rows {
        table.push(vec![
            r.kind.into(),
            r.params.clone(),
            r.data.into(),
            r.query.into(),
            r.queries.to_string(),
            format!("{:.4}", r.coverage()),
            format!("{:.4}", r.confidence),
            r.error.clone(),
            r.bound.clone(),
            r.verdict().into(),
        ]);
    }
    let widths: Vec<usize> =
        (0..header.len()).map(|c| table.iter().map(|row| row[c].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &table {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    print!("{out}");
    if let Some(path) = &args.tsv {
        let tsv: String = table.iter().map(|row| row.join("\t") + "\n").collect();
        if let Err(e) = std::fs::write(path, tsv) {
            eprintln!("accuracy: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    for e in &errors {
        println!("error: {e}");
    }
    let missed = rows.iter().filter(|r| r.verdict() != "ok").count();
    let kinds: HashMap<&str, ()> = rows.iter().map(|r| (r.kind, ())).collect();
    eprintln!("accuracy summary kinds={} rows={} missed={missed} errors={}", kinds.len(), rows.len(), errors.len());
    ExitCode::SUCCESS
}
