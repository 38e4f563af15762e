//! `GET /synopses` and `GET /synopses/{id}`: each live synopsis' registry row with the figures
//! the workers last published for it ([`saams_operators::introspection`]): `tuples` (the values
//! its merged state summarizes, from the window it counts from to the end of `lastWindow`),
//! `bytes` (its merged state's size), `lastWindow` (the last window it closed and answered) and
//! `worker` (the worker holding its merged state). A synopsis that has closed no window yet has
//! `tuples` 0 and no `lastWindow`. The figures are those of the process serving the request: a
//! synopsis held by a worker of another process shows its registry row only.

use saams::api::registry::LiveSynopsis;
use saams::api::time::format_timestamp;
use saams_operators::introspection::Published;
use serde_json::{Value, json};

/// One synopsis' row with its figures.
///
/// ```
/// use saams_jobs::control::introspection::row_with_figures;
/// use saams_operators::introspection::{Published, SynopsisFigures};
/// struct NoFiles;
/// impl saams_operators::SnapshotStore for NoFiles {
///     fn load(&self, f: &str) -> Result<Vec<u8>, String> { Err(f.into()) }
///     fn save(&self, f: &str, _: &[u8]) -> Result<(), String> { Err(f.into()) }
///     fn check(&self, f: &str) -> Result<(), String> { Err(f.into()) }
/// }
/// let store = std::sync::Arc::new(NoFiles);
/// let script = saams::api::request::parse_requests(
///     r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.99,1]}"#);
/// let rows = saams_operators::Plan::build(&script, 1, 60_000, store).live_synopses();
/// let table = Published::default();
/// assert_eq!(row_with_figures(&rows[0], &table)["tuples"], 0);
/// table.publish(0, SynopsisFigures { tuples: 5, bytes: 99, last_window: 60_000, window_end: 120_000, worker: 0 });
/// let row = row_with_figures(&rows[0], &table);
/// assert_eq!((row["tuples"].as_u64(), row["bytes"].as_u64()), (Some(5), Some(99)));
/// assert_eq!(row["lastWindow"]["start"], "1970-01-01T00:01:00Z");
/// ```
pub fn row_with_figures(row: &LiveSynopsis, published: &Published) -> Value {
    let mut json = row.to_json();
    let figures = published.get(row.id);
    json["tuples"] = json!(figures.map_or(0, |f| f.tuples));
    json["bytes"] = json!(figures.map_or(row.empty_bytes, |f| f.bytes));
    json["worker"] = json!(figures.map_or(row.home, |f| f.worker));
    if let Some(f) = figures {
        let start = f.last_window.min(i64::MAX as u64) as i64;
        let end = f.window_end.min(i64::MAX as u64) as i64;
        json["lastWindow"] = json!({ "start": format_timestamp(start), "end": format_timestamp(end) });
    }
    json
}

/// The rows of every live synopsis.
pub fn rows(rows: &[LiveSynopsis], published: &Published) -> Value {
    Value::Array(rows.iter().map(|r| row_with_figures(r, published)).collect())
}

/// The row of live synopsis `id` (`None`: no live synopsis has that id, or it is not a number).
pub fn row(rows: &[LiveSynopsis], published: &Published, id: &str) -> Option<Value> {
    let id: u32 = id.parse().ok()?;
    rows.iter().find(|r| r.id == id).map(|r| row_with_figures(r, published))
}
