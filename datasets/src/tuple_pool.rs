//! The tuple pool: one spare tuple per thread whose allocations the line parsers reuse.
//!
//! Every parser (JSON lines, stock rows, AIS rows) takes its tuple from here and gives back the
//! ones it does not return, so the pool sits below all of them and depends on none.

use std::cell::Cell;

use saams::api::Tuple;

thread_local! {
    /// A tuple whose allocations the next line parsed on this thread reuses.
    static SPARE: Cell<Option<Tuple>> = const { Cell::new(None) };
}

/// The tuple [`recycle`] gave back on this thread, or an empty one: the line parsers overwrite
/// its strings and fields in place.
pub(crate) fn take_spare() -> Tuple {
    SPARE.take().unwrap_or_else(|| Tuple {
        stream_id: String::new(),
        dataset_key: String::new(),
        time_ms: None,
        fields: Vec::new(),
    })
}

/// Give a tuple that is no longer needed back to the line parsers on this thread (JSON lines,
/// stock and AIS rows): the next line in the reference form reuses its strings and field vector instead of allocating five times (stream,
/// dataset, the field vector, two field names).
///
/// Why: a JSON-lines file is parsed and routed tuple by tuple on one worker thread, and a tuple
/// lives only until it is routed; its five allocations and frees were ~14 % of
/// `--no-synopses` ingest. Holds one tuple per thread (a recycled tuple replaces the previous
/// one); recycling on a thread that parses nothing costs that one tuple's memory.
///
/// ```
/// use saams_datasets::jsonl::{parse_json_tuple, recycle};
/// let a = parse_json_tuple(r#"{"streamID":"EURTRY","objectID":null,"dataSetKey":"Forex","date":"01/02/2019","time":"00:00:01","price":6.0654,"volume":1}"#).unwrap();
/// let first = a.stream_id.as_ptr();
/// recycle(a);
/// let b = parse_json_tuple(r#"{"streamID":"BTCUSD","objectID":null,"dataSetKey":"Crypto","date":"01/02/2019","time":"00:00:02","price":3.5}"#).unwrap();
/// assert_eq!((b.stream_id.as_str(), b.dataset_key.as_str(), b.fields.len()), ("BTCUSD", "Crypto", 1));
/// assert_eq!(b.stream_id.as_ptr(), first); // the same buffer, no allocation
/// ```
pub fn recycle(t: Tuple) {
    SPARE.set(Some(t));
}
