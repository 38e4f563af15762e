//! Windows per synopsis against an exact oracle: tumbling, sliding and landmark synopses over a
//! tuple file the test writes, at `-w 1`, `-w 2` and `-n 2`. Every answer's `window` names the
//! span it covers and `tuples` counts exactly the tuples of that span (what Flink's `TUMBLE` and
//! `HOP` count over the same tuples); Count-Min and HyperLogLog estimates hold the exact value of
//! that span within their bounds; the windows answered are exactly those with tuples; and the
//! answers are the same whatever the number of workers or processes.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_saams");
const MINUTE: i64 = 60_000;

/// One tuple: stream, event time (ms), price.
type Tuple = (&'static str, i64, i64);

/// Streams A, B, C over ten minutes, with minutes in which a stream has no tuple (B in minute
/// 3, C in minutes 4 to 6), so windows end without values in their last job window.
fn tuples() -> Vec<Tuple> {
    let mut rng = saams::hash::SplitMix64::new(33);
    let mut out = Vec::new();
    for i in 0..3000i64 {
        let time = i * 200 + (rng.next_u64() % 150) as i64;
        let stream = ["A", "B", "C"][(rng.next_u64() % 3) as usize];
        let minute = time / MINUTE;
        if (stream == "B" && minute == 3) || (stream == "C" && (4..7).contains(&minute)) {
            continue;
        }
        out.push((stream, time, (rng.next_u64() % 40) as i64));
    }
    out
}

fn write_tuples(dir: &Path, tuples: &[Tuple]) -> String {
    let text: String = tuples
        .iter()
        .map(|(s, t, p)| {
            format!(
                "{{\"streamID\":\"{s}\",\"dataSetKey\":\"D\",\"timestamp\":\"{}\",\"price\":{p}}}\n",
                saams::api::time::format_timestamp(*t)
            )
        })
        .collect();
    let path = dir.join("tuples.jsonl");
    std::fs::write(&path, text).expect("tuples");
    path.display().to_string()
}

/// The synopses under test: (requestID of the query, stream ("" = dataset-wide), construct,
/// query `param` before the field, window).
const SYNOPSES: [(&str, &str, &str, &str, &str); 7] = [
    (
        "cm-tumbling-A",
        "A",
        r#""synopsisID":1,"param":["CountMin","price","NotQueryable",0.01,0.99,7],"window":{"type":"tumbling","size":"60s"}"#,
        "7",
        "tumbling:60s",
    ),
    (
        "hll-sliding-A",
        "A",
        r#""synopsisID":2,"param":["HLL","price","NotQueryable",0.02],"window":{"type":"sliding","size":"3m","slide":"1m"}"#,
        r#""distinct""#,
        "sliding:3m",
    ),
    (
        "cm-tumbling-B",
        "B",
        r#""synopsisID":1,"param":["CountMin","price","NotQueryable",0.01,0.99,7],"noOfP":2,"window":{"type":"tumbling","size":"2m"}"#,
        "7",
        "tumbling:2m",
    ),
    (
        "hll-landmark-B",
        "B",
        r#""synopsisID":2,"param":["HLL","price","NotQueryable",0.02]"#,
        r#""distinct""#,
        "landmark",
    ),
    (
        "dft-tumbling-C",
        "C",
        r#""synopsisID":4,"param":["DFT","price","NotQueryable",1,8,32,4],"noOfP":2,"window":{"type":"tumbling","size":"2m"}"#,
        r#""coefficients""#,
        "tumbling:2m",
    ),
    (
        "hll-sliding-C",
        "C",
        r#""synopsisID":2,"param":["HLL","price","NotQueryable",0.02],"noOfP":2,"window":{"type":"sliding","size":"2m","slide":"1m"}"#,
        r#""distinct""#,
        "sliding:2m",
    ),
    (
        "hll-tumbling-wide",
        "",
        r#""synopsisID":2,"param":["HLL","price","NotQueryable",0.02],"window":{"type":"tumbling","size":"3m"}"#,
        r#""distinct""#,
        "tumbling:3m",
    ),
];

fn requests() -> String {
    let mut text = String::new();
    for (id, stream, construct, query, _) in SYNOPSES {
        let kind_id = construct.split("\"synopsisID\":").nth(1).and_then(|r| r.split(',').next()).expect("kind");
        text.push_str(&format!("{{\"streamID\":\"{stream}\",\"dataSetKey\":\"D\",{construct}}}\n"));
        text.push_str(&format!(
            "{{\"streamID\":\"{stream}\",\"dataSetKey\":\"D\",\"synopsisID\":{kind_id},\"param\":[{query},\"price\",\"Queryable\",\"Continuous\"],\"requestID\":\"{id}\"}}\n"
        ));
    }
    text
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("saams-windows-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The job's sorted answer lines for `args` (one process), or two processes of two workers.
fn answers(dir: &Path, args: &[&str], two_processes: bool) -> Vec<String> {
    let mut lines = Vec::new();
    if two_processes {
        let hosts = dir.join("hosts");
        std::fs::write(&hosts, format!("127.0.0.1:{}\n127.0.0.1:{}\n", free_port(), free_port())).expect("hosts");
        let outs: Vec<PathBuf> = (0..2).map(|p| dir.join(format!("out{p}.jsonl"))).collect();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|p| {
                    let (hosts, out) = (hosts.display().to_string(), outs[p].display().to_string());
                    s.spawn(move || {
                        Command::new(BIN)
                            .args(args)
                            .args(["-w", "2", "-n", "2", "-p", &p.to_string(), "-h", &hosts, "--out", &out])
                            .args(["--progress", "0"])
                            .output()
                            .expect("saams")
                    })
                })
                .collect();
            for h in handles {
                let o = h.join().expect("process");
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            }
        });
        for out in outs {
            lines.extend(std::fs::read_to_string(out).expect("output").lines().map(str::to_string));
        }
    } else {
        let o = Command::new(BIN).args(args).args(["--progress", "0"]).output().expect("saams");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        lines.extend(String::from_utf8_lossy(&o.stdout).lines().map(str::to_string));
    }
    lines.sort();
    lines
}

fn ms_of(v: &Value) -> i64 {
    saams::api::time::parse_timestamp(v.as_str().expect("timestamp")).expect("ISO timestamp")
}

/// The prices of `stream` ("" = every stream) in `[start, end)`.
fn prices(tuples: &[Tuple], stream: &str, (start, end): (i64, i64)) -> Vec<i64> {
    tuples
        .iter()
        .filter(|(s, t, _)| (stream.is_empty() || *s == stream) && (start..end).contains(t))
        .map(|t| t.2)
        .collect()
}

/// The spans an exact windowing of the tuples answers (windows with at least one tuple), as
/// Flink's `TUMBLE` / `HOP` would, and the landmark spans (one per job window with tuples).
fn oracle_spans(tuples: &[Tuple], stream: &str, window: &str) -> BTreeSet<(i64, i64)> {
    let times: Vec<i64> =
        tuples.iter().filter(|(s, ..)| stream.is_empty() || *s == stream).map(|(_, t, _)| *t).collect();
    let first = times.iter().min().copied().unwrap_or(0) / MINUTE * MINUTE;
    let mut spans = BTreeSet::new();
    for t in times {
        match window {
            "tumbling:60s" => spans.insert((t / MINUTE * MINUTE, t / MINUTE * MINUTE + MINUTE)),
            "tumbling:2m" => spans.insert((t / (2 * MINUTE) * 2 * MINUTE, (t / (2 * MINUTE) + 1) * 2 * MINUTE)),
            "tumbling:3m" => spans.insert((t / (3 * MINUTE) * 3 * MINUTE, (t / (3 * MINUTE) + 1) * 3 * MINUTE)),
            "landmark" => spans.insert((first, t / MINUTE * MINUTE + MINUTE)),
            sliding => {
                let size: i64 = if sliding == "sliding:3m" { 3 } else { 2 };
                for k in 1..=size {
                    let end = (t / MINUTE + k) * MINUTE;
                    spans.insert(((end - size * MINUTE).max(0), end));
                }
                true
            }
        };
    }
    spans
}

/// Check every answer against the tuples; the spans answered per query.
fn check(tuples: &[Tuple], lines: &[String]) -> BTreeMap<String, BTreeSet<(i64, i64)>> {
    let mut answered: BTreeMap<String, BTreeSet<(i64, i64)>> = BTreeMap::new();
    for line in lines {
        let v: Value = serde_json::from_str(line).expect("JSON line");
        assert!(v.get("error").is_none(), "{line}");
        let id = v["requestID"].as_str().expect("an answer to a query").to_string();
        let (_, stream, ..) = SYNOPSES.iter().find(|s| s.0 == id).expect("a query of the test");
        let kind = id.split('-').nth(1).expect("window type");
        assert_eq!(v["window"]["type"], kind, "{line}");
        let span = (ms_of(&v["window"]["start"]), ms_of(&v["window"]["end"]));
        let exact = prices(tuples, stream, span);
        assert_eq!(v["tuples"].as_u64(), Some(exact.len() as u64), "tuples of {span:?}: {line}");
        let (lower, upper) = (v["lower"].as_f64().unwrap_or(f64::NAN), v["upper"].as_f64().unwrap_or(f64::NAN));
        if id.starts_with("cm-") {
            let count = exact.iter().filter(|&&p| p == 7).count() as f64;
            assert!(lower <= count && count <= upper, "count of 7 is {count}: {line}");
        } else if id.starts_with("hll-") {
            let distinct = exact.iter().collect::<BTreeSet<_>>().len() as f64;
            assert!(lower <= distinct && distinct <= upper, "{distinct} distinct: {line}");
        }
        assert!(answered.entry(id).or_default().insert(span), "one answer per span: {line}");
    }
    answered
}

#[test]
fn each_window_type_answers_exactly_its_tuples_for_any_workers_and_processes() {
    let dir = tmp("oracle");
    let tuples = tuples();
    let data = write_tuples(&dir, &tuples);
    let req = dir.join("requests.json");
    std::fs::write(&req, requests()).expect("requests");
    let req = req.display().to_string();
    let args = ["--requests", req.as_str(), "--data", data.as_str()];
    let one = answers(&dir, &[&args[..], &["-w", "1"]].concat(), false);
    let answered = check(&tuples, &one);
    for (id, stream, _, _, window) in SYNOPSES {
        let expect = oracle_spans(&tuples, stream, window);
        assert_eq!(answered.get(id), Some(&expect), "{id}: the windows with tuples, each answered once");
    }
    assert_eq!(answers(&dir, &[&args[..], &["-w", "2"]].concat(), false), one, "-w 2");
    assert_eq!(answers(&dir, &args, true), one, "-n 2 -w 2");
}

#[test]
fn a_refused_window_is_an_error_answer_naming_it() {
    let dir = tmp("refused");
    let req = dir.join("requests.json");
    std::fs::write(
        &req,
        r#"{"streamID":"A","dataSetKey":"D","synopsisID":4,"param":["DFT","price","NotQueryable",1,8,32,4],"window":{"type":"sliding","size":"2m","slide":"1m"},"requestID":"dft"}
{"streamID":"A","dataSetKey":"D","synopsisID":1,"param":["CountMin","price","NotQueryable",0.01,0.99,7],"window":{"type":"tumbling","size":"90s"},"requestID":"cm"}
{"streamID":"A","dataSetKey":"D","synopsisID":2,"param":["HLL","price","NotQueryable",0.02],"window":{"type":"hopping","size":"2m"},"requestID":"hll"}"#,
    )
    .expect("requests");
    let lines = answers(&dir, &["--requests", &req.display().to_string(), "--generate", "stocks:1:10"], false);
    let error = |id: &str| {
        lines
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
            .find(|v| v["requestID"] == id)
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("no error answer for {id}: {lines:?}"))
    };
    assert!(error("dft").contains("DFT cannot have a sliding window"), "{}", error("dft"));
    assert!(error("cm").contains("multiple of the job's --window (1m)"), "{}", error("cm"));
    // A request that does not parse keeps no requestID: its answer has the generated one.
    assert!(error("req-3").contains("unknown window type \"hopping\""), "{}", error("req-3"));
}
