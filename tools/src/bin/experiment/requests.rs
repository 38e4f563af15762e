//! Request scripts written for the vertical and federated experiments.

use std::fmt::Write as _;

use saams_datasets::GeneratorSpec;

/// The paper's per-stream workload for the generator's first `n` streams (as
/// `datasets/requests/paper-workload.json` does for 100).
pub fn per_stream_requests(n: usize) -> String {
    let spec = GeneratorSpec::parse(&format!("stocks:{n}:1"));
    let mut text = String::new();
    let mut id = 1;
    for i in 0..n {
        let (stream, ds) = match &spec {
            Ok(s) => (s.stream_id(i), s.dataset_key(i)),
            Err(_) => (format!("S{i}"), "Forex"),
        };
        let params = [
            (1, r#"["CountMin","price","NotQueryable",0.002,0.99,12345]"#),
            (2, r#"["HyperLogLog","price","NotQueryable",0.02]"#),
            (4, r#"["DFT","price","NotQueryable",1,500,2000,8]"#),
            (1, r#"[3.2478,"price","Queryable","Continues"]"#),
            (2, r#"["distinct","price","Queryable","Continues"]"#),
            (4, r#"["coefficients","price","Queryable","Continues"]"#),
        ];
        for (syn, p) in params {
            let _ = writeln!(
                text,
                r#"{{"dataSetKey":"{ds}","noOfP":1,"param":{p},"requestID":{id},"streamID":"{stream}","synopsisID":{syn}}}"#
            );
            id += 1;
        }
    }
    text
}

/// CountMin + HyperLogLog (+ a continuous distinct count) on `price`. Dataset-wide (`streams` =
/// 0): the engine makes exact-merge synopses partition-based, each worker summarizes what it
/// reads and ships a partial per window to the tree merge. Per stream (`streams` > 0, `noOfP` 1):
/// each stream's synopses have one owner and the raw tuples go there.
pub fn federated_requests(streams: usize) -> String {
    let targets: Vec<(String, String)> = if streams == 0 {
        ["Forex", "Equity", "Crypto"].iter().map(|d| (d.to_string(), String::new())).collect()
    } else {
        match GeneratorSpec::parse(&format!("stocks:{streams}:1")) {
            Ok(s) => (0..streams).map(|i| (s.dataset_key(i).to_string(), s.stream_id(i))).collect(),
            Err(_) => Vec::new(),
        }
    };
    let mut text = String::new();
    let mut id = 1;
    for (ds, stream) in targets {
        for (syn, p) in [
            (1, r#"["CountMin","price","NotQueryable",0.002,0.99,12345]"#),
            (2, r#"["HyperLogLog","price","NotQueryable",0.02]"#),
            (2, r#"["distinct","price","Queryable","Continues"]"#),
        ] {
            let _ = writeln!(
                text,
                r#"{{"dataSetKey":"{ds}","noOfP":1,"param":{p},"requestID":{id},"streamID":"{stream}","synopsisID":{syn}}}"#
            );
            id += 1;
        }
    }
    text
}
