//! Unit tests of a checkpoint part's byte layout: round trips, the exact bytes, and refusals of
//! truncated or inconsistent input.

use super::*;
use proptest::prelude::*;

fn sample() -> CheckpointPart {
    CheckpointPart {
        id: 12,
        boundary_ms: 120_000,
        process: 1,
        worker: 3,
        processes: 2,
        workers: 4,
        synopses: vec![
            SynopsisState {
                syn: 1,
                role: StateRole::Owned,
                items: 100,
                loads_merged: 0,
                since: Some(60_000),
                until: 0,
                bytes: b"SAMS-env".to_vec(),
            },
            SynopsisState {
                syn: 2,
                role: StateRole::Spread,
                items: 7,
                loads_merged: 2,
                since: None,
                until: 0,
                bytes: vec![],
            },
            SynopsisState {
                syn: 3,
                role: StateRole::Latest,
                items: 0,
                loads_merged: 1,
                since: Some(0),
                until: 0,
                bytes: vec![0xff; 3],
            },
        ],
        previous_sets: vec![(4, vec!["a".into(), "ünï".into()]), (5, vec![])],
        sources: vec![
            SourcePosition { source: "unit:3".into(), offset: 4096, line: 77, max_time: Some(-5), done: false },
            SourcePosition { source: "kafka:t:0".into(), offset: 9, line: 0, max_time: None, done: true },
        ],
        monitors: vec![
            MonitorState { group: 0, site: Some(2), bytes: vec![1, 2, 3] },
            MonitorState { group: 1, site: None, bytes: vec![] },
        ],
        device_replies: b"SADR-table".to_vec(),
        tuples: 1234,
    }
}

fn err(bytes: &[u8]) -> CheckpointError {
    CheckpointPart::decode(bytes).expect_err("corrupted part must not decode")
}

/// Rewrite the trailing CRC so a deliberately malformed body reaches the field checks.
fn with_crc(mut body: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

fn body(part: &CheckpointPart) -> Vec<u8> {
    let b = part.encode();
    b[..b.len() - 4].to_vec()
}

/// The layout table of the module doc, field by field: a change of the encoding fails here
/// (and then needs a new format version).
#[test]
fn bytes_follow_the_documented_layout() {
    let part = CheckpointPart {
        id: 0x0102,
        boundary_ms: 10_000,
        process: 1,
        worker: 2,
        processes: 3,
        workers: 4,
        synopses: vec![SynopsisState {
            syn: 5,
            role: StateRole::Latest,
            items: 6,
            loads_merged: 7,
            since: Some(0x0304),
            until: 0x0506,
            bytes: vec![0xAA],
        }],
        previous_sets: vec![(8, vec!["é".into()])],
        sources: vec![SourcePosition { source: "g".into(), offset: 9, line: 10, max_time: Some(-2), done: true }],
        monitors: vec![
            MonitorState { group: 12, site: Some(13), bytes: vec![0xBB] },
            MonitorState { group: 14, site: None, bytes: vec![] },
        ],
        device_replies: vec![0xCC, 0xDD],
        tuples: 11,
    };
    let mut want: Vec<u8> = b"SAMC".to_vec();
    let fields: [&[u8]; 8] = [
        &4u16.to_le_bytes(),
        &0x0102u64.to_le_bytes(),
        &10_000u64.to_le_bytes(),
        &1u32.to_le_bytes(),
        &2u32.to_le_bytes(),
        &3u32.to_le_bytes(),
        &4u32.to_le_bytes(),
        &1u32.to_le_bytes(), // one synopsis state
    ];
    fields.iter().for_each(|f| want.extend_from_slice(f));
    assert_eq!(want.len(), 42);
    want.extend_from_slice(&5u32.to_le_bytes());
    want.push(2); // latest
    want.extend_from_slice(&6u64.to_le_bytes());
    want.extend_from_slice(&7u32.to_le_bytes());
    want.extend_from_slice(&0x0304u64.to_le_bytes()); // the window start
    want.extend_from_slice(&0x0506u64.to_le_bytes()); // the window end
    want.extend_from_slice(&[1, 0, 0, 0, 0xAA]);
    want.extend_from_slice(&[1, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0xC3, 0xA9]); // one set: query 8, ["é"]
    want.extend_from_slice(&[1, 0, 0, 0, 1, 0, 0, 0, b'g']); // one source named "g"
    want.extend_from_slice(&9u64.to_le_bytes());
    want.extend_from_slice(&10u64.to_le_bytes());
    want.push(1);
    want.extend_from_slice(&(-2i64).to_le_bytes());
    want.push(1);
    want.extend_from_slice(&2u32.to_le_bytes()); // two monitor states
    want.extend_from_slice(&[12, 0, 0, 0, 13, 0, 0, 0, 1, 0, 0, 0, 0xBB]); // group 12's site 13
    want.extend_from_slice(&[14, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]); // group 14's coordinator
    want.extend_from_slice(&[2, 0, 0, 0, 0xCC, 0xDD]); // the devices' replies
    want.extend_from_slice(&11u64.to_le_bytes());
    let crc = crc32fast::hash(&want);
    want.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(part.encode(), want);
    assert_eq!(CheckpointPart::decode(&want).unwrap(), part);
}

#[test]
fn sample_round_trips_and_is_canonical() {
    let p = sample();
    let bytes = p.encode();
    let back = CheckpointPart::decode(&bytes).unwrap();
    assert_eq!(back, p);
    assert_eq!(back.encode(), bytes);
    let empty = CheckpointPart::default().encode();
    assert_eq!(empty.len(), MIN_PART_BYTES);
    assert_eq!(CheckpointPart::decode(&empty).unwrap(), CheckpointPart::default());
}

#[test]
fn every_truncation_is_an_error_that_never_panics() {
    let bytes = sample().encode();
    for n in 0..bytes.len() {
        let e = err(&bytes[..n]);
        assert!(e.offset.is_some(), "cut at {n}: {e}");
        assert!(e.offset.unwrap() <= n as u64, "cut at {n}: offset past the end: {e}");
        if n >= 4 {
            assert!(e.what.contains("truncated") || e.what.contains(" says ") || e.what.contains("checksum"), "{e}");
        }
    }
    // Cut inside the last field: the parser sees too few bytes for `tuples`.
    let e = err(&bytes[..bytes.len() - 1]);
    assert!(e.what.contains("truncated reading tuples"), "{e}");
}

#[test]
fn every_single_bit_flip_is_an_error() {
    let bytes = sample().encode();
    for i in 0..bytes.len() {
        for bit in [0, 3, 7] {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            err(&b);
        }
    }
}

#[test]
fn wrong_magic() {
    let mut b = sample().encode();
    b[0] = b'X';
    let e = err(&b);
    assert_eq!(e.offset, Some(0));
    assert!(e.what.contains("not a checkpoint part"), "{e}");
    assert!(err(b"SAM").what.contains("truncated"));
    assert!(err(b"SAMC\x01\x00").what.contains("truncated"));
    // A synopsis envelope is not a part.
    assert!(err(b"SAMS\x01\x00").what.contains("not a checkpoint part"));
    assert!(err(b"XY").what.contains("not a checkpoint part"));
    assert!(err(b"").what.contains("truncated"));
}

#[test]
fn unknown_version() {
    let mut b = body(&sample());
    b[4] = 5;
    let e = err(&with_crc(b));
    assert_eq!(e.offset, Some(4));
    assert!(e.what.contains("format version 5 is not supported"), "{e}");
}

/// Version 3 is version 4 without the devices' replies (their length sits before the 8 bytes
/// of `tuples`).
fn version_3_body(part: &CheckpointPart) -> Vec<u8> {
    assert!(part.device_replies.is_empty(), "version 3 has no devices' replies");
    without_last_count(body(part), 3)
}

/// `newer` (a part's body) without the 4-byte count or length before its last 8 bytes
/// (`tuples`), as format `version`: how each format so far added its field.
fn without_last_count(newer: Vec<u8>, version: u8) -> Vec<u8> {
    let mut older = newer[..newer.len() - 12].to_vec();
    older[4] = version;
    older.extend_from_slice(&newer[newer.len() - 8..]);
    older
}

/// A part written before the asks waiting for devices were checkpointed (version 3) is read,
/// with none.
#[test]
fn version_3_parts_are_still_read() {
    let mut part = sample();
    part.device_replies.clear();
    let back = CheckpointPart::decode(&with_crc(version_3_body(&part))).expect("a version 3 part");
    assert_eq!(back, part);
}

/// Version 2 is version 3 without the monitors (their count sits before the 8 bytes of `tuples`).
fn version_2_body(part: &CheckpointPart) -> Vec<u8> {
    assert!(part.monitors.is_empty(), "version 2 has no monitors");
    without_last_count(version_3_body(part), 2)
}

/// A part written before monitors were checkpointed (version 2) is read, with none.
#[test]
fn version_2_parts_are_still_read() {
    let mut part = sample();
    part.monitors.clear();
    part.device_replies.clear();
    let back = CheckpointPart::decode(&with_crc(version_2_body(&part))).expect("a version 2 part");
    assert_eq!(back, part);
    let empty = CheckpointPart::default();
    assert_eq!(CheckpointPart::decode(&with_crc(version_2_body(&empty))).unwrap(), empty);
}

/// A part written before windows were recorded (version 1: no window start per state) is read,
/// its states without a start.
#[test]
fn version_1_parts_are_still_read() {
    let mut part = sample();
    part.synopses.retain(|s| s.role != StateRole::Pane);
    part.monitors.clear();
    part.device_replies.clear();
    let v2 = version_2_body(&part);
    // Version 1 is version 2 without the 16 bytes of each state's start and end (after
    // loads_merged).
    let mut v1 = v2[..42].to_vec();
    v1[4] = 1;
    let mut at = 42;
    for s in &part.synopses {
        v1.extend_from_slice(&v2[at..at + 4 + 1 + 8 + 4]);
        at += 4 + 1 + 8 + 4 + 16;
        v1.extend_from_slice(&v2[at..at + 4 + s.bytes.len()]);
        at += 4 + s.bytes.len();
    }
    v1.extend_from_slice(&v2[at..]);
    let back = CheckpointPart::decode(&with_crc(v1)).expect("a version 1 part");
    for s in &mut part.synopses {
        (s.since, s.until) = (None, 0);
    }
    assert_eq!(back, part);
}

#[test]
fn bad_crc_names_both_values() {
    let mut b = sample().encode();
    let n = b.len();
    b[n - 1] ^= 0x80;
    let e = err(&b);
    assert!(e.what.contains("checksum mismatch"), "{e}");
    assert_eq!(e.offset, Some(n as u64 - 4));
}

#[test]
fn trailing_bytes() {
    let mut b = body(&sample());
    b.extend_from_slice(&[0, 0]);
    let e = err(&with_crc(b));
    assert!(e.what.contains("2 trailing bytes"), "{e}");
    // Bytes appended after a valid CRC are seen as a wrong checksum and trailing bytes.
    let mut b = sample().encode();
    b.push(0);
    err(&b);
}

#[test]
fn bad_utf8_names_the_field_and_offset() {
    let p = CheckpointPart {
        sources: vec![SourcePosition { source: "ab".into(), offset: 0, line: 0, max_time: None, done: false }],
        ..CheckpointPart::default()
    };
    let mut b = body(&p);
    // The sources count at 46, then the name's length (4 bytes) at 50, then "ab" at 54.
    assert_eq!(&b[54..56], b"ab");
    b[55] = 0xff;
    let e = err(&with_crc(b));
    assert_eq!(e.offset, Some(55));
    assert!(e.what.contains("source 0's name is not UTF-8"), "{e}");
}

#[test]
fn bad_role_and_flag_bytes() {
    let p = CheckpointPart {
        synopses: vec![SynopsisState {
            syn: 1,
            role: StateRole::Owned,
            items: 0,
            loads_merged: 0,
            since: None,
            until: 0,
            bytes: vec![],
        }],
        sources: vec![SourcePosition { source: String::new(), offset: 0, line: 0, max_time: None, done: false }],
        ..CheckpointPart::default()
    };
    let mut b = body(&p);
    b[46] = 4; // the role, after the synopses count (38..42) and syn (42..46)
    let e = err(&with_crc(b));
    assert_eq!(e.offset, Some(46));
    assert!(e.what.contains("role byte 4"), "{e}");

    let good = body(&p);
    let flag_at = good.len() - 8 - 4 - 4 - 2; // max_time flag, done, then the monitors count, the replies' length and tuples
    for (at, name) in [(flag_at, "max_time flag"), (flag_at + 1, "done flag")] {
        let mut b = good.clone();
        b[at] = 2;
        let e = err(&with_crc(b));
        assert_eq!(e.offset, Some(at as u64));
        assert!(e.what.contains(name) && e.what.contains("not 0 or 1"), "{e}");
    }
}

#[test]
fn huge_counts_are_refused_before_allocating() {
    for at in [38usize, 42, 46, 50, 54] {
        let mut b = body(&CheckpointPart::default());
        b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = err(&with_crc(b));
        assert_eq!(e.offset, Some(at as u64));
        assert!(e.what.contains("4294967295"), "{e}");
    }
    // A synopsis whose byte length runs past the end.
    let p = CheckpointPart {
        synopses: vec![SynopsisState {
            syn: 1,
            role: StateRole::Owned,
            items: 0,
            loads_merged: 0,
            since: None,
            until: 0,
            bytes: vec![1],
        }],
        ..CheckpointPart::default()
    };
    let mut b = body(&p);
    b[75..79].copy_from_slice(&1000u32.to_le_bytes());
    let e = err(&with_crc(b));
    // What follows: its 1 byte, the sets, sources and monitors counts and the replies' length
    // (4 each), `tuples` (8).
    assert!(e.what.contains("byte length says 1000 bytes, but only 25 are left"), "{e}");
    // A monitor whose byte length runs past the end.
    let p = CheckpointPart {
        monitors: vec![MonitorState { group: 1, site: None, bytes: vec![1] }],
        ..CheckpointPart::default()
    };
    let mut b = body(&p);
    b[62..66].copy_from_slice(&1000u32.to_le_bytes()); // after the counts (to 54), group and site
    let e = err(&with_crc(b));
    assert!(e.what.contains("monitor 0's byte length says 1000 bytes, but only 13 are left"), "{e}");
    // Devices' replies whose byte length runs past the end.
    let p = CheckpointPart { device_replies: vec![1, 2], ..CheckpointPart::default() };
    let mut b = body(&p);
    b[54..58].copy_from_slice(&1000u32.to_le_bytes()); // after the four counts
    let e = err(&with_crc(b));
    assert!(e.what.contains("the devices' replies' byte length says 1000 bytes, but only 10 are left"), "{e}");
}

#[test]
fn corruption_with_a_parse_error_also_reports_the_checksum() {
    let mut b = sample().encode();
    b[4] = 9; // the version, without fixing the CRC
    let e = err(&b);
    assert!(e.what.contains("format version 9") && e.what.contains("checksum does not match"), "{e}");
}

fn arb_role() -> impl Strategy<Value = StateRole> {
    prop_oneof![Just(StateRole::Owned), Just(StateRole::Spread), Just(StateRole::Latest), Just(StateRole::Pane)]
}

fn arb_part() -> impl Strategy<Value = CheckpointPart> {
    let since = any::<Option<u64>>().prop_map(|t| t.filter(|&t| t != u64::MAX));
    let syn = (
        any::<u32>(),
        arb_role(),
        any::<u64>(),
        any::<u32>(),
        (since, any::<u64>()),
        proptest::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(syn, role, items, loads_merged, (since, until), bytes)| SynopsisState {
            syn,
            role,
            items,
            loads_merged,
            since,
            until,
            bytes,
        });
    let set = (any::<u32>(), proptest::collection::vec(".{0,8}", 0..5));
    let src = (".{0,12}", any::<u64>(), any::<u64>(), any::<Option<i64>>(), any::<bool>())
        .prop_map(|(source, offset, line, max_time, done)| SourcePosition { source, offset, line, max_time, done });
    let monitor = (any::<u32>(), any::<Option<u32>>(), proptest::collection::vec(any::<u8>(), 0..40))
        .prop_map(|(group, site, bytes)| MonitorState { group, site: site.filter(|&s| s != u32::MAX), bytes });
    (
        (any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()),
        proptest::collection::vec(syn, 0..4),
        proptest::collection::vec(set, 0..4),
        proptest::collection::vec(src, 0..4),
        (proptest::collection::vec(monitor, 0..3), proptest::collection::vec(any::<u8>(), 0..40), any::<u64>()),
    )
        .prop_map(
            |(
                (id, boundary_ms, process, worker, processes, workers),
                synopses,
                previous_sets,
                sources,
                (monitors, device_replies, tuples),
            )| {
                CheckpointPart {
                    id,
                    boundary_ms,
                    process,
                    worker,
                    processes,
                    workers,
                    synopses,
                    previous_sets,
                    sources,
                    monitors,
                    device_replies,
                    tuples,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn any_part_round_trips(p in arb_part()) {
        let bytes = p.encode();
        let back = CheckpointPart::decode(&bytes).unwrap();
        prop_assert_eq!(back.encode(), bytes);
        prop_assert_eq!(back, p);
    }

    #[test]
    fn arbitrary_bytes_after_the_magic_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..200), fix_crc in any::<bool>()) {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&PART_FORMAT_VERSION.to_le_bytes());
        b.extend_from_slice(&tail);
        let b = if fix_crc { with_crc(b) } else { b };
        if let Ok(p) = CheckpointPart::decode(&b) {
            prop_assert_eq!(p.encode(), b);
        }
    }
}
