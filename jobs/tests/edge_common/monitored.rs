//! The monitored stream of the tests of monitoring sites on devices (`edge_monitor.rs`,
//! `edge_monitor_state.rs`): its tuples, its monitor and a Count-Min beside it. A test file
//! declares it with `#[path = "edge_common/monitored.rs"] mod monitored;`.
#![allow(dead_code)] // Not every test that includes this module calls every helper.

use std::path::Path;

pub const WINDOW: &str = "60s";
pub const START_MS: i64 = 1_600_000_000_000;
pub const TUPLES: i64 = 120_000;
/// Event-time ms between two tuples.
pub const STEP: i64 = 10;
/// One tuple in this many has a price that is no number.
pub const REFUSED_EVERY: i64 = 997;

/// A hundred tuples a second of stream `S` (before `renamed_before`: of stream `X`, so a monitor of
/// `S` in a request file starts there), prices from a small skewed set, one in
/// [`REFUSED_EVERY`] no number.
pub fn write_data(path: &Path, renamed_before: i64) {
    let mut text = String::new();
    let mut x: u64 = 11;
    for i in 0..TUPLES {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let t = START_MS + i * STEP;
        let price = [10, 10, 10, 10, 11, 12, 13, 14, 20, 25][(x >> 33) as usize % 10] + (x >> 20) % 3;
        let stream = if t < renamed_before { "X" } else { "S" };
        let ts = saams::api::time::format_timestamp(t);
        // Now and then a price no site takes: refused, counted at its time.
        let price = if i % REFUSED_EVERY == REFUSED_EVERY - 1 { "\"n/a\"".to_string() } else { price.to_string() };
        text.push_str(&format!(
            "{{\"streamID\":\"{stream}\",\"dataSetKey\":\"D\",\"timestamp\":\"{ts}\",\"price\":{price}}}\n"
        ));
    }
    std::fs::write(path, text).expect("write the tuples");
}

/// A Count-Min of `S` and its query: the devices ship its partials beside the sites' messages.
pub const COUNT_MIN: [&str; 2] = [
    r#"{"dataSetKey":"D","streamID":"S","synopsisID":1,"param":["CountMin","price","NotQueryable",0.01,0.9,7],"requestID":"cm"}"#,
    r#"{"dataSetKey":"D","streamID":"S","synopsisID":1,"param":[10,"price","Queryable","Continues"],"requestID":"cmq"}"#,
];

/// The monitor of `S` over `sites` sites (W 1 min, ε 0.3, φ 0.5: at this rate its sites run the
/// protocol, not only forwarding) and its queries.
pub fn monitor(sites: usize) -> Vec<String> {
    let construct = format!(
        r#"{{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["SlidingWindowMonitor","price","NotQueryable","1m",0.3,0.5,{sites}],"requestID":"m"}}"#
    );
    let query = |args: &str, id: &str| {
        format!(
            r#"{{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":[{args},"price","Queryable","Continuous"],"requestID":"{id}"}}"#
        )
    };
    vec![construct, query(r#""count""#, "q1"), query(r#""frequentItems""#, "q2"), query(r#""quantile",0.5"#, "q3")]
}

pub fn write_requests(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write the requests");
}
