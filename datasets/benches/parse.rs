//! Line-parser throughput on the real shared files (lines already in memory): stock CSV, NOAA AIS
//! CSV, and the same stock rows as reference JSON lines.

use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use saams_datasets::jsonl::write_reference_json;
use saams_datasets::{Format, LineContext};

fn lines(relative: &str, n: usize) -> (PathBuf, Vec<String>) {
    let path = PathBuf::from(env!("SAAMS_DATASETS_DIR")).join(relative);
    let text = std::fs::read_to_string(&path).expect("shared dataset present");
    (path, text.lines().take(n).map(str::to_string).collect())
}

fn parse(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_line");
    let (spy, spy_lines) = lines("stocks/tick/equity_usa_SPY_tick_trade.csv", 50_000);
    let ctx = LineContext::open(&spy, None).expect("stock csv");
    g.throughput(Throughput::Elements(spy_lines.len() as u64));
    g.bench_function("stock_csv", |b| {
        b.iter(|| {
            spy_lines.iter().enumerate().filter_map(|(i, l)| ctx.parse_line(i as u64 + 1, l).ok().flatten()).count()
        })
    });
    let json: Vec<String> = spy_lines
        .iter()
        .filter_map(|l| ctx.parse_line(0, l).ok().flatten())
        .map(|t| {
            let mut s = String::new();
            write_reference_json(&t, &mut s);
            s
        })
        .collect();
    let jctx = LineContext::new(Format::JsonLines, "bench.jsonl", None).expect("json lines");
    g.throughput(Throughput::Elements(json.len() as u64));
    g.bench_function("json_lines", |b| {
        b.iter(|| json.iter().enumerate().filter_map(|(i, l)| jctx.parse_line(i as u64 + 1, l).ok().flatten()).count())
    });
    let (ais, ais_lines) = lines("ais/noaa_marinecadastre_AIS_2022-01-03_sample.csv", 50_000);
    let actx = LineContext::open(&ais, None).expect("ais csv");
    g.throughput(Throughput::Elements(ais_lines.len() as u64));
    g.bench_function("ais_csv", |b| {
        b.iter(|| {
            ais_lines.iter().enumerate().filter_map(|(i, l)| actx.parse_line(i as u64 + 1, l).ok().flatten()).count()
        })
    });
    g.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
