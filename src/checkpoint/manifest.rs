//! One process' manifest of a checkpoint: JSON, so a person can read what a checkpoint holds.

use serde::{Deserialize, Serialize};

use super::CheckpointError;

/// The manifest format this build writes and reads.
pub const MANIFEST_FORMAT: u32 = 1;

/// One part file of the checkpoint, as written: a restore checks the file against it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartEntry {
    /// The file name inside the checkpoint's folder (a plain name, no directories).
    pub file: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// The CRC-32 (IEEE) of the whole file.
    pub crc32: u32,
}

/// The length of an output file at the checkpoint's boundary: a restart cuts the file back to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputMark {
    /// The output file.
    pub path: String,
    /// Its length at the boundary.
    pub bytes: u64,
}

/// Where an output topic stood after a checkpoint's answers were delivered: a restart reads the
/// topic from these offsets to its end and does not produce again the answers it finds there
/// (the Kafka sink's deduplication, which needs no broker transactions).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopicOffsets {
    /// The topic.
    pub topic: String,
    /// Per partition, the offset the next record gets (the partition's end offset then).
    pub offsets: Vec<PartitionOffset>,
}

/// One partition's offset in [`TopicOffsets`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartitionOffset {
    /// The partition.
    pub partition: i32,
    /// The offset.
    pub offset: i64,
}

/// A request the job had received, replayed on restore at the same fence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoggedRequest {
    /// The fence (event time, ms) it took effect at.
    pub fence_ms: u64,
    /// The request as it was received.
    pub text: String,
    /// The request log's id for it (the ticket its process' hub gave it; `None`: written by a
    /// build without a request log). A restart applies every request of the request log whose
    /// id the checkpoint's log does not hold, so none is applied twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
}

/// What one process contributed to checkpoint `id`; written after its parts, it makes that
/// share complete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest format ([`MANIFEST_FORMAT`]).
    pub format: u32,
    /// The checkpoint.
    pub id: u64,
    /// The window boundary (event time, ms) it was taken at.
    pub boundary_ms: u64,
    /// The process that wrote this manifest.
    pub process: u32,
    /// Processes of the job.
    pub processes: u32,
    /// Workers of the job.
    pub workers: u32,
    /// The job's window length.
    pub window_ms: u64,
    /// Wall-clock time the manifest was written (Unix ms), for people and pruning logs.
    pub created_unix_ms: u64,
    /// This process' parts.
    pub parts: Vec<PartEntry>,
    /// The answer output file at the boundary, when the job writes one.
    pub output: Option<OutputMark>,
    /// The dead-letter file at the boundary, when the job writes one.
    pub dead_letters: Option<OutputMark>,
    /// The job's request script (its `--requests` file or text), as started.
    pub script: String,
    /// Requests received live, in order, with the fences they took effect at.
    pub requests: Vec<LoggedRequest>,
    /// What the job read (its input files and byte ranges, or the generator spec): a restart
    /// must read the same.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// The answer topic's end offsets after this checkpoint's answers were delivered, when the
    /// job writes its answers to Kafka (absent in manifests of older builds: none).
    #[serde(default)]
    pub output_offsets: Option<TopicOffsets>,
}

impl Manifest {
    /// The manifest as pretty-printed JSON.
    ///
    /// ```
    /// use saams::checkpoint::{Manifest, MANIFEST_FORMAT, PartEntry};
    /// let m = Manifest {
    ///     format: MANIFEST_FORMAT, id: 4, boundary_ms: 40_000, process: 0, processes: 1, workers: 2,
    ///     window_ms: 10_000, created_unix_ms: 1_700_000_000_000,
    ///     parts: vec![PartEntry { file: "part-p0-w0.bin".into(), bytes: 62, crc32: 7 }],
    ///     output: None, dead_letters: None, script: String::new(), requests: vec![], inputs: vec![],
    ///     output_offsets: None,
    /// };
    /// let text = m.to_json();
    /// assert!(text.contains("\"boundary_ms\": 40000"));
    /// assert_eq!(Manifest::from_json(&text).unwrap(), m);
    /// assert!(Manifest::from_json(&text.replace("\"format\": 1", "\"format\": 2")).is_err());
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a manifest has only strings and integers, which always serialize")
    }

    /// Parse and check a manifest.
    ///
    /// # Errors
    /// [`CheckpointError`] when the text is not JSON, has no `format` or an unknown one, lacks a
    /// field, or is inconsistent: `process` not below `processes`, no processes or workers, a
    /// part file name that is not a plain file name (it must not leave the checkpoint's
    /// folder), or one part file listed twice.
    pub fn from_json(text: &str) -> Result<Manifest, CheckpointError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| json_err(&e, text))?;
        match value.get("format").and_then(serde_json::Value::as_u64) {
            Some(f) if f == u64::from(MANIFEST_FORMAT) => {}
            Some(f) => {
                return Err(CheckpointError::whole(format!(
                    "manifest format {f} is not supported (this build reads {MANIFEST_FORMAT})"
                )));
            }
            None => return Err(CheckpointError::whole("manifest has no numeric \"format\" field")),
        }
        let m: Manifest =
            serde_json::from_value(value).map_err(|e| CheckpointError::whole(format!("manifest: {e}")))?;
        if m.processes == 0 || m.workers == 0 {
            return Err(CheckpointError::whole(format!(
                "manifest says {} processes and {} workers: a job has at least one of each",
                m.processes, m.workers
            )));
        }
        if m.process >= m.processes {
            return Err(CheckpointError::whole(format!(
                "manifest of process {} in a job of {} processes",
                m.process, m.processes
            )));
        }
        for (i, p) in m.parts.iter().enumerate() {
            let plain = !p.file.is_empty()
                && p.file != "."
                && p.file != ".."
                && !p.file.contains(['/', '\\', '\0'])
                && !p.file.starts_with('.');
            if !plain {
                return Err(CheckpointError::whole(format!(
                    "manifest part {i} names {:?}, not a plain file name in the checkpoint's folder",
                    p.file
                )));
            }
            if m.parts[..i].iter().any(|q| q.file == p.file) {
                return Err(CheckpointError::whole(format!("manifest lists part {:?} twice", p.file)));
            }
        }
        Ok(m)
    }
}

/// A JSON syntax error with its byte offset (serde_json reports line and column).
fn json_err(e: &serde_json::Error, text: &str) -> CheckpointError {
    let offset = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        .saturating_add(e.column().saturating_sub(1));
    CheckpointError::at(offset as u64, format!("manifest is not valid JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT,
            id: 7,
            boundary_ms: 70_000,
            process: 1,
            processes: 2,
            workers: 4,
            window_ms: 10_000,
            created_unix_ms: u64::MAX,
            parts: vec![
                PartEntry { file: "part-p1-w2.bin".into(), bytes: 100, crc32: u32::MAX },
                PartEntry { file: "part-p1-w3.bin".into(), bytes: 62, crc32: 0 },
            ],
            output: Some(OutputMark { path: "/tmp/out \"q\".jsonl".into(), bytes: 12_345 }),
            dead_letters: None,
            script: "[{\"streamID\":\"A\"}]\n".into(),
            requests: vec![LoggedRequest { fence_ms: 60_000, text: "{\"uid\":3}".into(), id: Some(7) }],
            inputs: vec!["file:/data/ticks.jsonl".into(), "generate:stocks:3:10".into()],
            output_offsets: Some(TopicOffsets {
                topic: "estimations".into(),
                offsets: vec![
                    PartitionOffset { partition: 0, offset: 17 },
                    PartitionOffset { partition: 3, offset: i64::MAX },
                ],
            }),
        }
    }

    #[test]
    fn round_trips_exactly_with_large_integers() {
        let m = sample();
        assert_eq!(Manifest::from_json(&m.to_json()).unwrap(), m);
    }

    #[test]
    fn a_manifest_of_an_older_build_has_no_output_offsets() {
        let mut m = sample();
        let mut value: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
        value.as_object_mut().unwrap().remove("output_offsets").expect("written");
        m.output_offsets = None;
        assert_eq!(Manifest::from_json(&value.to_string()).unwrap(), m);
    }

    #[test]
    fn refuses_unknown_or_missing_format() {
        let text = sample().to_json();
        let e = Manifest::from_json(&text.replace("\"format\": 1", "\"format\": 2")).unwrap_err();
        assert!(e.what.contains("format 2 is not supported"), "{e}");
        let e = Manifest::from_json(&text.replace("\"format\": 1", "\"format\": \"1\"")).unwrap_err();
        assert!(e.what.contains("no numeric \"format\""), "{e}");
        assert!(Manifest::from_json("[1]").unwrap_err().what.contains("format"));
    }

    #[test]
    fn syntax_errors_give_the_offset() {
        let text = "{\n  \"format\": 1,\n  x}";
        let e = Manifest::from_json(text).unwrap_err();
        assert!(e.what.contains("not valid JSON"), "{e}");
        assert_eq!(text.as_bytes()[e.offset.unwrap() as usize], b'x', "{e}");
        let e = Manifest::from_json("").unwrap_err();
        assert_eq!(e.offset, Some(0));
    }

    #[test]
    fn missing_field_is_named() {
        let text = sample().to_json().replace("\"window_ms\": 10000,", "");
        let e = Manifest::from_json(&text).unwrap_err();
        assert!(e.what.contains("window_ms"), "{e}");
    }

    #[test]
    fn inconsistent_manifests_are_refused() {
        let mut m = sample();
        m.process = 2;
        assert!(Manifest::from_json(&m.to_json()).unwrap_err().what.contains("process 2 in a job of 2"));
        let mut m = sample();
        m.workers = 0;
        assert!(Manifest::from_json(&m.to_json()).unwrap_err().what.contains("0 workers"));
        for bad in ["../part.bin", "a/b", "", ".", "..", ".tmp-part", "x\\y"] {
            let mut m = sample();
            m.parts[0].file = bad.into();
            let e = Manifest::from_json(&m.to_json()).unwrap_err();
            assert!(e.what.contains("not a plain file name"), "{bad}: {e}");
        }
        let mut m = sample();
        m.parts[1].file = m.parts[0].file.clone();
        assert!(Manifest::from_json(&m.to_json()).unwrap_err().what.contains("twice"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn any_manifest_round_trips(id in any::<u64>(), boundary in any::<u64>(), processes in 1u32..8, workers in 1u32..8,
                                    names in proptest::collection::btree_set("[a-z0-9-]{1,12}\\.bin", 0..5),
                                    crc in any::<u32>(), script in ".{0,40}", text in ".{0,40}", out in any::<Option<u64>>()) {
            let m = Manifest {
                format: MANIFEST_FORMAT, id, boundary_ms: boundary, process: processes - 1, processes, workers,
                window_ms: boundary / 3, created_unix_ms: id ^ boundary,
                parts: names.into_iter().map(|file| PartEntry { file, bytes: id, crc32: crc }).collect(),
                output: out.map(|bytes| OutputMark { path: script.clone(), bytes }),
                dead_letters: out.map(|bytes| OutputMark { path: text.clone(), bytes: bytes / 2 }),
                script, requests: vec![LoggedRequest { fence_ms: boundary, text: text.clone(), id: None }],
                inputs: vec![text.clone()],
                output_offsets: out.map(|o| TopicOffsets { topic: text, offsets: vec![PartitionOffset { partition: processes as i32, offset: o as i64 }] }),
            };
            prop_assert_eq!(Manifest::from_json(&m.to_json()).unwrap(), m);
        }

        #[test]
        fn arbitrary_text_never_panics(text in ".{0,200}") {
            let _ = Manifest::from_json(&text);
        }
    }
}
