//! Line-parser throughput on the real shared files (lines already in memory): stock CSV, NOAA AIS
//! CSV, and the same stock rows as reference JSON lines; and the same bytes through the block
//! line reader the file source uses (`read_*`: splitting, UTF-8 validation and parsing, the
//! whole per-core ingest cost before routing).
//!
//! `json_parsers` puts the JSON-lines parser beside the crates it was chosen over, on the same
//! lines: serde_json, sonic-rs and simd-json deserializing each line into a struct that borrows
//! its strings (their fastest route to the values; the time of day is left as text), against
//! ours, which also converts the date and time and writes a reusable [`saams::api::Tuple`].

use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use saams_datasets::jsonl::write_reference_json;
use saams_datasets::lines::{Line, LineReader};
use saams_datasets::{Format, LineContext};

/// Tuples parsed from `bytes` read through a [`LineReader`], as the file source reads a file.
fn read_all(ctx: &LineContext, bytes: &[u8]) -> usize {
    let mut lines = LineReader::new(bytes);
    let (mut n, mut line_no) = (0, 0);
    while let Ok(Some((line, _))) = lines.next_line() {
        line_no += 1;
        if let Line::Text(l) = line
            && let Ok(Some(_)) = ctx.parse_line(line_no, l)
        {
            n += 1;
        }
    }
    n
}

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
    let json_bytes: Vec<u8> = json.iter().flat_map(|l| l.bytes().chain(std::iter::once(b'\n'))).collect();
    g.throughput(Throughput::Elements(json.len() as u64));
    g.bench_function("read_json_lines", |b| b.iter(|| read_all(&jctx, &json_bytes)));
    let ais_bytes: Vec<u8> = ais_lines.iter().flat_map(|l| l.bytes().chain(std::iter::once(b'\n'))).collect();
    g.throughput(Throughput::Elements(ais_lines.len() as u64));
    g.bench_function("read_ais_csv", |b| b.iter(|| read_all(&actx, &ais_bytes)));
    g.finish();
    json_parsers(c, &json);
}

/// A reference JSON line of a stock tick, its strings borrowed (the serde route of the crates).
#[derive(serde::Deserialize)]
struct BorrowedTick<'a> {
    #[serde(rename = "streamID", borrow)]
    stream_id: &'a str,
    #[serde(rename = "objectID", borrow)]
    object_id: Option<&'a str>,
    #[serde(rename = "dataSetKey", borrow)]
    dataset_key: &'a str,
    #[serde(borrow)]
    date: &'a str,
    #[serde(borrow)]
    time: &'a str,
    price: f64,
    volume: f64,
}

impl BorrowedTick<'_> {
    /// Something of every field, so no parse is optimized away.
    fn weight(&self) -> usize {
        let text = self.stream_id.len() + self.object_id.map_or(0, str::len) + self.dataset_key.len();
        text + self.date.len() + self.time.len() + usize::from(self.price > 0.0) + usize::from(self.volume > 0.0)
    }
}

/// The same reference lines through each parser.
fn json_parsers(c: &mut Criterion, json: &[String]) {
    let mut g = c.benchmark_group("json_parsers");
    g.throughput(Throughput::Elements(json.len() as u64));
    let mut tuple = saams_datasets::jsonl::parse_json_tuple(&json[0]).expect("a reference line");
    g.bench_function("saams_into_tuple", |b| {
        b.iter(|| {
            json.iter()
                .map(|l| {
                    saams_datasets::jsonl::parse_json_tuple_into(l, &mut tuple).expect("a reference line");
                    tuple.fields.len() + usize::from(tuple.time_ms.is_some())
                })
                .sum::<usize>()
        })
    });
    g.bench_function("serde_json_borrowed", |b| {
        b.iter(|| json.iter().map(|l| serde_json::from_str::<BorrowedTick>(l).expect("a tick").weight()).sum::<usize>())
    });
    g.bench_function("sonic_rs_borrowed", |b| {
        b.iter(|| json.iter().map(|l| sonic_rs::from_str::<BorrowedTick>(l).expect("a tick").weight()).sum::<usize>())
    });
    // simd-json parses in place: each line is copied into a buffer first, as a reader would.
    let mut buffer = Vec::new();
    g.bench_function("simd_json_borrowed", |b| {
        b.iter(|| {
            let mut total = 0;
            for l in json {
                buffer.clear();
                buffer.extend_from_slice(l.as_bytes());
                total += simd_json::serde::from_slice::<BorrowedTick>(&mut buffer).expect("a tick").weight();
            }
            total
        })
    });
    g.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
