//! Parsers on the real shared rows and on broken rows: counts, values, sentinels, file:line errors,
//! and the CSV → JSON-lines round trip.

use std::collections::{HashMap, HashSet};
use std::io::BufReader;
use std::path::{Path, PathBuf};

use saams::Datum;
use saams::api::Tuple;
use saams_datasets::jsonl::convert_to_json_lines;
use saams_datasets::{Format, LineContext, ParseError, TupleReader, read_path};

fn datasets() -> PathBuf {
    PathBuf::from(env!("SAAMS_DATASETS_DIR"))
}

const NOAA: &str = "ais/noaa_marinecadastre_AIS_2022-01-03_sample.csv";
const SPY: &str = "stocks/tick/equity_usa_SPY_tick_trade.csv";

/// A fresh scratch directory for this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("saams-datasets-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

fn num(t: &Tuple, f: &str) -> Option<f64> {
    t.field(f).and_then(|d| d.as_f64())
}

/// Field order is not kept by JSON objects: compare tuples with sorted fields.
fn normalized(mut t: Tuple) -> Tuple {
    t.fields.sort_by(|a, b| a.0.cmp(&b.0));
    t
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn formats_are_detected_from_the_real_files() {
    let d = datasets();
    assert_eq!(Format::detect(&d.join(SPY)).unwrap(), Format::StockCsv);
    assert_eq!(
        Format::detect(&d.join("stocks/minute/future_cme_ES_201312_minute_trade.csv")).unwrap(),
        Format::StockCsv
    );
    assert_eq!(Format::detect(&d.join(NOAA)).unwrap(), Format::AisCsv);
    let e = Format::detect(&d.join("README.md")).unwrap_err();
    assert!(e.to_string().contains("unknown format"), "{e}");
    assert!(Format::detect(Path::new("/no/such.csv")).is_err());
    for f in Format::ALL {
        assert_eq!(f.name().parse::<Format>().unwrap(), f);
    }
    assert!("xml".parse::<Format>().is_err());
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn spy_ticks_parse_completely() {
    let mut r = read_path(&datasets().join(SPY), None).unwrap();
    let tuples: Vec<Tuple> = r.by_ref().map(|t| t.unwrap()).collect();
    assert_eq!(tuples.len(), 250_601);
    assert_eq!((r.malformed(), r.lines()), (0, 250_602));
    let first = &tuples[0];
    assert_eq!((first.stream_id.as_str(), first.dataset_key.as_str()), ("SPY", "equity_usa"));
    assert_eq!(first.time_ms, saams::api::time::parse_timestamp("2013-10-07T04:00:00.464"));
    assert_eq!((num(first, "price"), num(first, "volume")), (Some(167.41), Some(100.0)));
    // Rows are sorted by time; prices are plausible for SPY on that day.
    assert!(tuples.windows(2).all(|w| w[0].time_ms <= w[1].time_ms));
    assert!(tuples.iter().all(|t| (150.0..200.0).contains(&num(t, "price").unwrap())));
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn the_stock_directory_gives_sixteen_streams() {
    let mut r = read_path(&datasets().join("stocks"), None).unwrap();
    assert_eq!(r.files().len(), 16);
    let files: Vec<_> = r.files().to_vec();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    let mut per_stream: HashMap<(String, String), u64> = HashMap::new();
    for t in r.by_ref() {
        let t = t.unwrap();
        *per_stream.entry((t.dataset_key, t.stream_id)).or_default() += 1;
    }
    assert_eq!(r.malformed(), 0);
    assert_eq!(r.tuples(), 806_255 + 14_936);
    assert_eq!(per_stream.len(), 16);
    assert_eq!(per_stream[&("forex_fxcm".into(), "EURUSD".into())], 51_053);
    assert_eq!(per_stream[&("forex_oanda".into(), "EURUSD".into())], 24_179);
    assert_eq!(per_stream[&("future_cme".into(), "ES_201403".into())], 1_044);
    assert_eq!(per_stream[&("crypto_coinbase".into(), "BTCEUR".into())], 2_344);
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn noaa_ais_parses_with_sentinels_missing() {
    let path = datasets().join(NOAA);
    let mut r = read_path(&path, None).unwrap();
    let tuples: Vec<Tuple> = r.by_ref().map(|t| t.unwrap()).collect();
    assert_eq!((tuples.len(), r.malformed()), (80_107, 0));
    let vessels: HashSet<&str> = tuples.iter().map(|t| t.stream_id.as_str()).collect();
    assert_eq!(vessels.len(), 8_469);
    assert!(tuples.iter().all(|t| t.dataset_key == "US"));

    // An independent reading with the csv crate: which cells are sentinels or empty.
    let mut csv = csv::Reader::from_path(&path).unwrap();
    let headers = csv.headers().unwrap().clone();
    let col = |n: &str| headers.iter().position(|h| h == n).unwrap();
    let (sog, cog, hdg, vt, lat) = (col("SOG"), col("COG"), col("Heading"), col("VesselType"), col("LAT"));
    let mut expected_missing = [0usize; 4];
    for (row, t) in csv.records().zip(&tuples) {
        let row = row.unwrap();
        assert_eq!(t.stream_id, &row[0]);
        assert_eq!(num(t, "lat"), row[lat].parse::<f64>().ok());
        let cell = |i: usize| row[i].parse::<f64>().ok();
        expected_missing[0] += usize::from(cell(sog).is_none_or(|v| v >= 102.3));
        expected_missing[1] += usize::from(cell(cog).is_none_or(|v| v >= 360.0));
        expected_missing[2] += usize::from(cell(hdg).is_none_or(|v| v >= 360.0));
        expected_missing[3] += usize::from(cell(vt).is_none());
        assert_eq!(num(t, "shiptype"), cell(vt));
    }
    let missing = |f: &str| tuples.iter().filter(|t| t.field(f).is_none()).count();
    let got = [missing("speed"), missing("course"), missing("heading"), missing("shiptype")];
    assert_eq!(got, expected_missing);
    assert!(got.iter().all(|&m| m > 0), "the sample has sentinels in every column: {got:?}");
    assert!(tuples.iter().all(|t| num(t, "speed").is_none_or(|s| s < 102.3)
        && num(t, "course").is_none_or(|c| c < 360.0)
        && num(t, "heading").is_none_or(|h| h < 360.0)));
    // The quoted vessel names with doubled quotes do not shift the columns.
    let chief: Vec<&Tuple> = tuples.iter().filter(|t| t.stream_id == "367704390").collect();
    assert!(!chief.is_empty() && chief.iter().all(|t| num(t, "shiptype") == Some(31.0)));
}

#[test]
fn reference_text_files_and_broken_rows() {
    let dir = scratch("txt");
    let path = dir.join("Forex\u{b7}EURTRY\u{b7}NoExpiry.txt");
    let text = "01/02/2019,00:00:00,6.0654,1\n\
                01/02/2019,00:00:01,6.0656,1\r\n\
                01/02/2019,00:00:01,6.0655\n\
                13/02/2019,00:00:02,6.0655,1\n\
                \n\
                01/02/2019,00:00:03,abc,1\n\
                01/02/2019,25:00:00,6.0,1\n\
                01/02/2019,00:00:04,6.0657,2\n";
    std::fs::write(&path, text).unwrap();
    let mut r = read_path(&path, None).unwrap();
    let items: Vec<Result<Tuple, ParseError>> = r.by_ref().collect();
    let ok: Vec<&Tuple> = items.iter().filter_map(|i| i.as_ref().ok()).collect();
    let errors: Vec<(u64, String)> =
        items.iter().filter_map(|i| i.as_ref().err()).map(|e| (e.line, e.message.clone())).collect();
    assert_eq!(ok.len(), 3);
    assert!(ok.iter().all(|t| t.stream_id == "EURTRY" && t.dataset_key == "Forex"));
    assert_eq!(ok[2].time_ms, Some(1_546_387_204_000));
    assert_eq!(num(ok[2], "volume"), Some(2.0));
    let lines: Vec<u64> = errors.iter().map(|e| e.0).collect();
    assert_eq!(lines, [3, 4, 6, 7]);
    assert!(errors[0].1.contains("3 column"), "{errors:?}");
    assert!(errors[1].1.contains("Date"), "{errors:?}");
    assert!(errors[2].1.contains("Price"), "{errors:?}");
    assert!(errors[3].1.contains("Time"), "{errors:?}");
    assert_eq!(r.malformed(), 4);
    let e = items[2].as_ref().unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}:3: ", path.display())), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn broken_csv_rows_are_reported_and_skipped() {
    let dir = scratch("csv");
    let path = dir.join("equity_usa_IBM_tick_trade.csv");
    let mut bytes = b"Date,Time,Price,Volume,Exchange,SaleCondition,Suspicious\n\
        2013-10-07,04:00:30.270,181.52,283,P,20002020,0\n\
        2013-10-07,04:00:50.472,-181.8,500,P,2000,0\n\
        2013-10-07,04:00:51,181.8,\"5,00,P\n"
        .to_vec();
    bytes.extend_from_slice(b"2013-10-07,04:00:52.000,181.9,\xff\xfe,P,2000,0\n");
    bytes.extend_from_slice(b"2013-10-07,04:00:53.000,181.9,100,P,2000,0\n2013-10-07,04:00:54.000,182,NaN\n");
    std::fs::write(&path, &bytes).unwrap();
    let mut r = read_path(&path, None).unwrap();
    let items: Vec<_> = r.by_ref().collect();
    let err_lines: Vec<u64> = items.iter().filter_map(|i| i.as_ref().err()).map(|e| e.line).collect();
    assert_eq!(err_lines, [3, 4, 5, 7]);
    assert_eq!((r.tuples(), r.malformed(), r.lines()), (2, 4, 7));
    let msgs: Vec<String> = items.iter().filter_map(|i| i.as_ref().err()).map(|e| e.message.clone()).collect();
    assert!(msgs[0].contains("positive") && msgs[1].contains("quote") && msgs[2].contains("UTF-8"), "{msgs:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn piraeus_style_ais_and_its_broken_rows() {
    let csv = "t,shipid,lon,lat,heading,course,speed,shiptype,destination\n\
               1554076800000,a1b2c3,23.6412,37.9420,511,95.4,12.3,70,PIRAEUS\n\
               1554076810000,a1b2c3,23.6420,37.9419,95,360,102.3,70,\n\
               1554076820000,,23.6420,37.9419,95,95,1,70,X\n\
               1554076830000,d4e5f6,181,91,10,10,1,60,\"SYROS, GR\"\n\
               2019-04-01T00:00:40Z,d4e5f6,23.5,37.8,10,x,1,60,SYROS\n\
               1554076850000,d4e5f6,23.5,37.8\n";
    let mut r = TupleReader::from_reader("piraeus.csv", Box::new(BufReader::new(csv.as_bytes())), None);
    let items: Vec<_> = r.by_ref().collect();
    assert_eq!(items.len(), 6);
    let t0 = items[0].as_ref().unwrap();
    assert_eq!(
        (t0.stream_id.as_str(), t0.dataset_key.as_str(), t0.time_ms),
        ("a1b2c3", "SaronicGulf", Some(1_554_076_800_000))
    );
    assert_eq!((num(t0, "lon"), num(t0, "lat"), num(t0, "heading")), (Some(23.6412), Some(37.942), None));
    assert_eq!(t0.field("destination"), Some(Datum::Str("PIRAEUS")));
    let t1 = items[1].as_ref().unwrap();
    assert_eq!((num(t1, "course"), num(t1, "speed"), num(t1, "heading")), (None, None, Some(95.0)));
    assert!(t1.field("destination").is_none());
    let e2 = items[2].as_ref().unwrap_err();
    assert_eq!((e2.line, e2.message.as_str()), (4, "vessel id is empty"));
    let t3 = items[3].as_ref().unwrap();
    assert_eq!((num(t3, "lat"), num(t3, "lon")), (None, None));
    assert_eq!(t3.field("destination"), Some(Datum::Str("SYROS, GR")));
    let e4 = items[4].as_ref().unwrap_err();
    assert!(e4.line == 6 && e4.message.contains("course"), "{e4}");
    // A row cut short keeps its required columns; the optional ones are missing.
    let t5 = items[5].as_ref().unwrap();
    assert_eq!(t5.fields.len(), 2);
    assert_eq!(r.malformed(), 2);
}

#[test]
fn json_lines_with_broken_lines() {
    let text = r#"{"streamID":"EURTRY","dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654,"volume":1}
{"streamID":"EURTRY","dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654
[1,2]

{"streamID":"XAUUSD","dataSetKey":"Forex","timestamp":"2019-01-02T00:00:02Z","values":{"price":1284.5}}
"#;
    let mut r = TupleReader::from_reader("in.jsonl", Box::new(text.as_bytes()), None);
    let items: Vec<_> = r.by_ref().collect();
    let lines: Vec<u64> = items.iter().filter_map(|i| i.as_ref().err()).map(|e| e.line).collect();
    assert_eq!(lines, [2, 3]);
    assert_eq!(r.tuples(), 2);
    let last = items[3].as_ref().unwrap();
    assert_eq!((last.stream_id.as_str(), num(last, "price")), ("XAUUSD", Some(1284.5)));
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn a_worker_parses_only_its_share_of_lines() {
    let path = datasets().join("stocks/minute/crypto_coinbase_ETHUSD_minute_trade.csv");
    let ctx = LineContext::open(&path, None).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let peers = 3;
    let mut per_worker = vec![0u64; peers];
    let mut volume = 0.0;
    for (i, line) in text.lines().enumerate() {
        let w = i % peers;
        if let Some(t) = saams_datasets::parse_line(&ctx, i as u64 + 1, line).unwrap() {
            per_worker[w] += 1;
            volume += num(&t, "volume").unwrap();
        }
    }
    assert_eq!(per_worker.iter().sum::<u64>(), 2_449);
    assert!(per_worker.iter().all(|&n| n >= 816));
    let all: f64 = read_path(&path, None).unwrap().map(|t| num(&t.unwrap(), "volume").unwrap()).sum();
    assert_eq!(volume, all);
}

fn round_trip(relative: &str, limit: usize) {
    let path = datasets().join(relative);
    let original: Vec<Tuple> = read_path(&path, None).unwrap().take(limit).map(|t| t.unwrap()).collect();
    // Convert only the first `limit` rows: copy them (with the header) to a scratch file.
    let text = std::fs::read_to_string(&path).unwrap();
    let dir = scratch(&format!("rt-{}", original.len()));
    let sample = dir.join(path.file_name().unwrap());
    std::fs::write(&sample, text.lines().take(limit + 1).collect::<Vec<_>>().join("\n")).unwrap();
    let mut json = Vec::new();
    let summary = convert_to_json_lines(read_path(&sample, None).unwrap(), &mut json, |e| panic!("{e}")).unwrap();
    assert_eq!(summary.tuples as usize, original.len());
    assert_eq!(summary.bytes as usize, json.len());
    let back: Vec<Tuple> =
        TupleReader::from_reader("converted.jsonl", Box::new(std::io::Cursor::new(json)), Some(Format::JsonLines))
            .map(|t| normalized(t.unwrap()))
            .collect();
    let original: Vec<Tuple> = original.into_iter().map(normalized).collect();
    assert_eq!(back, original);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn converter_output_reads_back_to_the_same_tuples() {
    round_trip(SPY, 3_000);
    round_trip("stocks/minute/crypto_coinbase_BTCUSD_minute_trade.csv", 3_000);
    round_trip("stocks/tick/forex_fxcm_EURUSD_tick_quote.csv", 3_000);
    round_trip(NOAA, 5_000);
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn worker_shares_partition_the_lines_and_keep_line_numbers() {
    // Real files: the shares together hold exactly the tuples of the whole reading.
    for (rel, peers_list) in
        [(NOAA, &[3][..]), ("stocks/minute", &[2, 7][..]), ("stocks/tick/forex_oanda_EURUSD_tick_quote.csv", &[5][..])]
    {
        let path = datasets().join(rel);
        let whole: Vec<Tuple> = read_path(&path, None).unwrap().map(|t| t.unwrap()).collect();
        for &peers in peers_list {
            let mut joined: Vec<Tuple> = (0..peers)
                .flat_map(|w| saams_datasets::read_share(&path, None, w, peers).unwrap().map(|t| t.unwrap()))
                .collect();
            assert_eq!(joined.len(), whole.len(), "{rel} with {peers} workers");
            // With several files, each worker's share visits every file: compare in a canonical order.
            let mut whole = whole.clone();
            let order = |a: &Tuple, b: &Tuple| {
                (&a.dataset_key, &a.stream_id, a.time_ms).cmp(&(&b.dataset_key, &b.stream_id, b.time_ms))
            };
            joined.sort_by(order);
            whole.sort_by(order);
            // Stable sorts keep equal-key rows in file order in both, so the sequences match exactly.
            assert!(joined == whole, "{rel} with {peers} workers");
        }
    }
    // Broken rows: every worker reports the true line numbers.
    let dir = scratch("shares");
    let path = dir.join("equity_usa_XYZ_tick_trade.csv");
    let mut text = String::from("Date,Time,Price,Volume\n");
    for i in 0..300 {
        if i % 37 == 5 {
            text.push_str("2013-10-07,broken,1,1\n");
        } else {
            text.push_str(&format!("2013-10-07,04:{:02}:{:02}.000,{}.5,{}\n", i / 60, i % 60, 100 + i, i + 1));
        }
    }
    std::fs::write(&path, &text).unwrap();
    let whole_errors: Vec<u64> = read_path(&path, None).unwrap().filter_map(|t| t.err()).map(|e| e.line).collect();
    assert_eq!(whole_errors, [7, 44, 81, 118, 155, 192, 229, 266]);
    for peers in [2, 4, 5] {
        let mut errors: Vec<u64> = (0..peers)
            .flat_map(|w| {
                saams_datasets::read_share(&path, None, w, peers).unwrap().filter_map(|t| t.err()).map(|e| e.line)
            })
            .collect();
        errors.sort_unstable();
        assert_eq!(errors, whole_errors, "{peers} workers");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn merged_reading_interleaves_files_by_time_and_passes_errors() {
    let dir = scratch("merge");
    std::fs::write(
        dir.join("Forex\u{b7}AAA\u{b7}NoExpiry.txt"),
        "01/02/2019,00:00:01,1.5,1\n01/02/2019,00:00:03,1.6,1\nbroken\n01/02/2019,00:00:05,1.7,1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("Forex\u{b7}BBB\u{b7}NoExpiry.txt"),
        "01/02/2019,00:00:02,9.5,1\n01/02/2019,00:00:04,9.6,1\n",
    )
    .unwrap();
    let mut r = saams_datasets::read_path_merged(&dir, None).unwrap();
    let items: Vec<Result<Tuple, ParseError>> = r.by_ref().collect();
    let ids: Vec<&str> = items.iter().filter_map(|i| i.as_ref().ok()).map(|t| t.stream_id.as_str()).collect();
    assert_eq!(ids, ["AAA", "BBB", "AAA", "BBB", "AAA"]);
    let errors: Vec<u64> = items.iter().filter_map(|i| i.as_ref().err()).map(|e| e.line).collect();
    assert_eq!(errors, [3]);
    assert_eq!(r.malformed(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
