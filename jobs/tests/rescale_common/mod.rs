//! Shared by the rescale tests: the request script over the generator's streams, HTTP calls
//! to a running job (rescale, status, metrics), starting `saams`, and the sorted answers.
#![allow(dead_code)] // Not every test that includes this module calls every helper.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const GENERATOR: &str = "stocks:6:4000";
/// Tuples a second of the rescaled jobs: slow enough that the input (24 k tuples, 16 s) outlasts
/// the rescales on a loaded machine, whose fences and moves take a few 1 s windows.
pub const PACE: &str = "1500";

/// A POST: its status and body.
pub fn post(addr: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(s, "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}", body.len())
        .expect("write");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("read");
    let status = reply.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, reply.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
}

pub fn get_json(addr: &str, path: &str) -> Value {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("write");
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("read");
    serde_json::from_str(reply.split("\r\n\r\n").nth(1).unwrap_or("")).expect("JSON body")
}

/// The request script: every kind the brief names, over the generator's streams.
pub fn script(dir: &Path) -> PathBuf {
    let spec = saams_datasets::GeneratorSpec::parse(GENERATOR).expect("spec");
    let ds = |i: usize| spec.dataset_key(i).to_string();
    let mut lines = Vec::new();
    let mut add = |stream: String, dataset: String, id: u64, param: &str, p: u32| {
        let n = lines.len() + 1;
        lines.push(format!(
            r#"{{"streamID":"{stream}","synopsisID":{id},"dataSetKey":"{dataset}","param":{param},"noOfP":{p},"requestID":{n}}}"#
        ));
    };
    // Owned order-dependent kinds, and window-based ones (noOfP 2).
    for (i, p) in [(0, 1), (1, 2)] {
        add(spec.stream_id(i), ds(i), 4, r#"["DFT","price","NotQueryable",1,5,20,4]"#, p);
        add(spec.stream_id(i), ds(i), 4, r#"["coefficients","price","Queryable","Continues"]"#, 1);
        add(spec.stream_id(i), ds(i), 10, r#"["WindowSketchQuantiles","price","NotQueryable",0.01,400]"#, p);
        add(spec.stream_id(i), ds(i), 10, r#"[0.9,"price","Queryable","Continues"]"#, 1);
    }
    for (i, p) in [(2, 1), (3, 3)] {
        add(spec.stream_id(i), ds(i), 8, r#"["GKQuantiles","price","NotQueryable",0.01]"#, p);
        add(spec.stream_id(i), ds(i), 8, r#"[0.5,"price","Queryable","Continues"]"#, 1);
        add(spec.stream_id(i), ds(i), 5, r#"["LossyCounting","volume","NotQueryable",0.001]"#, p);
        add(spec.stream_id(i), ds(i), 5, r#"[0.05,"FrequentItems","volume","Queryable","Continues"]"#, 1);
    }
    // Spread kinds: per stream over 4 workers, and dataset-wide (partition-based).
    add(spec.stream_id(4), ds(4), 1, r#"["CountMin","price","NotQueryable",0.01,0.99,7]"#, 4);
    add(spec.stream_id(4), ds(4), 1, r#"[1.5,"price","Queryable","Continues"]"#, 1);
    add(String::new(), ds(5), 2, r#"["HyperLogLog","price","NotQueryable",0.02]"#, 4);
    add(String::new(), ds(5), 2, r#"["distinct","price","Queryable","Continues"]"#, 1);
    let path = dir.join("requests.json");
    std::fs::write(&path, lines.join("\n")).expect("requests");
    path
}

/// The answers of the script's synopses in an output, sorted (acknowledgements, rescale replies
/// and the live construct's answers left out).
pub fn answers(outs: &[PathBuf]) -> Vec<String> {
    let mut lines: Vec<String> = outs
        .iter()
        .flat_map(|o| std::fs::read_to_string(o).expect("output").lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|l| {
            let v: Value = serde_json::from_str(l).expect("JSON line");
            v["requestID"].is_number() && v.get("accepted").is_none()
        })
        .collect();
    lines.sort();
    lines
}

pub fn saams(args: &[&str], out: &Path, http: bool) -> Child {
    saams_in(None, args, out, http)
}

/// [`saams`] run in the directory `cwd` (relative `--data` paths are read there).
pub fn saams_in(cwd: Option<&Path>, args: &[&str], out: &Path, http: bool) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_saams"));
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    cmd.args(args).args(["--progress", "0", "--out", &out.display().to_string()]);
    if http {
        cmd.args(["--http", "127.0.0.1:0"]);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(if http { Stdio::piped() } else { Stdio::inherit() });
    cmd.spawn().expect("saams")
}

/// Wait until no rescale moves (`GET /status`) and the job takes requests, then rescale to
/// `n`: the acknowledgement.
pub fn rescale(addr: &str, n: usize) -> Value {
    rescale_batched(addr, n, None)
}

/// [`rescale`], its owned state moving `bins_per_fence` bins a window (`POST /rescale`'s
/// `binsPerFence`) when given.
pub fn rescale_batched(addr: &str, n: usize, bins_per_fence: Option<u32>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    let body = match bins_per_fence {
        Some(b) => format!(r#"{{"activeWorkers":{n},"binsPerFence":{b}}}"#),
        None => format!(r#"{{"activeWorkers":{n}}}"#),
    };
    loop {
        let (status, body) = post(addr, "/rescale", &body);
        if status == 200 {
            let ack: Value = serde_json::from_str(&body).expect("ack");
            assert_eq!(
                (ack["accepted"].as_bool(), ack["activeWorkers"].as_u64()),
                (Some(true), Some(n as u64)),
                "{ack}"
            );
            return ack;
        }
        // 409: another is moving; 503: the job does not take requests yet (it is starting).
        assert!((status == 409 || status == 503) && Instant::now() < deadline, "{status}: {body}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("saams-rescale-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port()
}

/// The job's `/metrics` text.
pub fn metrics(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("write");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    text
}
