//! What the tests of live requests that survive a crash or a hand-off check in an output: a
//! live Count-Min construct answered from its fence on, every window once, each answer counting
//! exactly the stream's values from the fence to the window's end — what a run without the
//! crash that applied the construct at that fence answers (`durable_requests.rs`,
//! `checkpoints.rs`, `request_topic_durable.rs`).

/// A live synopsis on a generated stream and the job's windows.
pub struct Live<'a> {
    /// The generator spec (`stocks:N:T`).
    pub generator: &'a str,
    /// The stream's index in it.
    pub stream: usize,
    /// The job's window (ms).
    pub window_ms: i64,
    /// The construct's `requestID`.
    pub construct: &'a str,
    /// Its continuous query's `requestID`.
    pub query: &'a str,
}

/// Asserts that `text` (the output's lines) holds, from `fence` on, every window's answer of
/// `live`'s query once, counting the stream's values from the fence to the window's end, and
/// none before; returns how many acknowledgements of the construct it holds.
pub fn answers_from(text: &str, live: &Live<'_>, fence: i64) -> usize {
    let spec = saams_datasets::GeneratorSpec::parse(live.generator).expect("spec");
    let mut g = saams_jobs::source::generated::Generated::open(&spec, live.stream);
    let mut values = [0.0; 6];
    let mut times = Vec::new();
    while let Some((_, t)) = g.next_values(&mut values) {
        if t >= fence {
            times.push(t);
        }
    }
    assert!(!times.is_empty(), "the construct came after the input's end");
    let (mut acks, mut windows) = (0, std::collections::BTreeMap::new());
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        if v["requestID"] == live.construct && v["accepted"].is_string() {
            acks += 1;
        }
        if v["requestID"] != live.query || v["accepted"].is_string() {
            continue;
        }
        let window = |k: &str| saams::api::time::parse_timestamp(v["window"][k].as_str().expect("window")).expect("t");
        let (start, end) = (window("start"), window("end"));
        // A landmark answer: from the construct's first window on, across a crash.
        assert_eq!(start, times[0] - times[0] % live.window_ms, "an answer from its first window: {line}");
        assert!(start >= fence, "an answer before the fence {fence}: {line}");
        let covered = times.iter().take_while(|&&t| t < end).count();
        assert_eq!(v["tuples"].as_u64(), Some(covered as u64), "{line}");
        // A landmark answer's window starts at its synopsis' first window and ends at the job
        // window whose close answered it: the job window is the one ending at `end`.
        *windows.entry(end - live.window_ms).or_insert(0) += 1;
    }
    let expected: std::collections::BTreeSet<i64> = times.iter().map(|t| t - t % live.window_ms).collect();
    assert_eq!(
        windows.keys().copied().collect::<std::collections::BTreeSet<_>>(),
        expected,
        "every window of {}",
        live.query
    );
    assert!(windows.values().all(|&n| n == 1), "each window of {} answered once: {windows:?}", live.query);
    acks
}
