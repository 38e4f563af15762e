//! Unit tests of the table's copies: the byte round trip, refusals of bytes that are not a copy,
//! and what a copy at a boundary keeps and a restored table does with it.

use super::*;
use crate::ask::AskWhat;
use crate::device_replies::Came;

fn ask(id: u64, syn: u32) -> Ask {
    Ask {
        id,
        syn,
        home: syn,
        spread: false,
        request_id: serde_json::json!(format!("q{id}")),
        uid: Some(serde_json::json!({"u": id})),
        what: AskWhat::Query(serde_json::json!([13.5, "ü"])),
        origin: Some((1, 40 + id)),
        device_answers: true,
    }
}

fn answer(line: &str) -> DeviceAnswer {
    DeviceAnswer { device: "dev0".into(), line: line.into(), saved: None }
}

fn sample() -> RepliesCopy {
    let saved = DeviceAnswer { saved: Some(("cm.bin".into(), vec![0, 1, 0xff])), ..answer("{\"saved\":1}") };
    RepliesCopy {
        taken: 9,
        waiting: vec![(ask(1, 0), 60_000), (ask(2, 1), 0)],
        early: vec![(3, 1, answer("{\"a\":3}")), (4, 0, saved.clone())],
        answered: vec![5, 6, u64::MAX],
        ready: vec![(120_000, ask(7, 0), 0, saved)],
        sent_before: vec![8, 1 << 63],
    }
}

#[test]
fn a_copy_round_trips_and_is_canonical() {
    for copy in [sample(), RepliesCopy::default()] {
        let bytes = copy.encode();
        assert_eq!(&bytes[..4], b"SADR");
        let back = RepliesCopy::decode(&bytes).expect("a copy");
        assert_eq!(back, copy);
        assert_eq!(back.encode(), bytes);
    }
}

#[test]
fn bytes_that_are_not_a_copy_are_refused_with_the_field() {
    let bytes = sample().encode();
    for n in 0..bytes.len() {
        let e = RepliesCopy::decode(&bytes[..n]).expect_err("a cut copy");
        assert!(e.contains("devices' replies"), "cut at {n}: {e}");
    }
    let e = RepliesCopy::decode(b"").unwrap_err();
    assert!(e.contains("not a copy"), "{e}");
    let mut b = bytes.clone();
    b[4] = 3;
    let e = RepliesCopy::decode(&b).unwrap_err();
    assert!(e.contains("version 3 is not supported"), "{e}");
    let mut b = bytes.clone();
    b.push(0);
    let e = RepliesCopy::decode(&b).unwrap_err();
    assert!(e.contains("1 trailing bytes"), "{e}");
    // A count of waiting asks the bytes left cannot hold (right after `taken`).
    let mut b = RepliesCopy::default().encode();
    b[14] = 100;
    let e = RepliesCopy::decode(&b).unwrap_err();
    assert!(e.contains("the count of waiting asks") && e.contains("exceeds"), "{e}");
}

#[test]
fn a_damaged_ask_answer_or_flag_names_what() {
    let one = |early: Vec<(u64, u32, DeviceAnswer)>| RepliesCopy { early, ..RepliesCopy::default() };
    // The saved flag is the last byte of an answer without a SAVE.
    let mut b = one(vec![(3, 1, answer("x"))]).encode();
    let flag = b.len() - 4; // then the empty counts of asks answered, ready asks and asks sent
    b[flag] = 2;
    let e = RepliesCopy::decode(&b).unwrap_err();
    assert!(e.contains("ask 3's saved flag is 2"), "{e}");
    let mut b = one(vec![(3, 1, answer("x"))]).encode();
    b[flag - 1] = 0xff; // the line "x"
    let e = RepliesCopy::decode(&b).unwrap_err();
    assert!(e.contains("ask 3's answer is not UTF-8"), "{e}");
    let waiting = RepliesCopy { waiting: vec![(ask(1, 0), 5)], ..RepliesCopy::default() };
    let mut b = waiting.encode();
    let brace = b.windows(5).position(|w| w == b"{\"id\"").expect("the ask's JSON");
    b[brace] = b'[';
    let e = RepliesCopy::decode(&b).unwrap_err();
    assert!(e.contains("ask 0 is not an ask"), "{e}");
}

/// A table with an ask waiting (made before the boundary), one of the script's end, an answer
/// that came first, asks answered, and pairs ready before and after the boundary.
fn table() -> DeviceReplies {
    let replies = DeviceReplies::default();
    replies.copied_by(2);
    replies.ask_made(&ask(1, 0), 50_000);
    replies.ask_made(&ask(2, 1), u64::MAX);
    assert_eq!(replies.answer_came(3, 1, answer("early")), Came::Kept);
    replies.ask_made(&ask(4, 0), 10_000);
    assert!(matches!(replies.answer_came(4, 0, answer("handed on")), Came::Ask(..)));
    for (id, made) in [(5, 20_000), (6, 70_000)] {
        assert_eq!(replies.answer_came(id, 0, answer("first")), Came::Kept);
        replies.ask_made(&ask(id, 0), made);
    }
    replies
}

/// A copy of version 1 (no ids sent before the boundary) still reads.
#[test]
fn a_copy_of_version_1_reads_without_asks_sent_before() {
    let copy = RepliesCopy { sent_before: Vec::new(), ..sample() };
    let mut b = copy.encode();
    b[4] = 1;
    b.pop(); // the empty count of asks sent before the boundary
    assert_eq!(RepliesCopy::decode(&b).expect("a version 1 copy"), copy);
}

#[test]
fn a_copy_keeps_what_a_resumed_job_needs() {
    let copy = table().copy_at(0, 60_000);
    assert_eq!(copy.waiting, vec![(ask(1, 0), 50_000)], "the script's end asks are made again");
    assert_eq!(copy.early, vec![(3, 1, answer("early"))]);
    assert_eq!(copy.answered, vec![4, 5, 6]);
    // Pair 5, met before the boundary and not handed on yet, goes after the cut (and is handed
    // on there from now on); a restart that left it out lost it.
    assert_eq!(copy.ready, vec![(60_000, ask(5, 0), 0, answer("first")), (70_000, ask(6, 0), 0, answer("first"))]);
}

/// A pair met before the boundary and handed on after a worker's copy at it: its line goes
/// after the cut, and the process' later copy carries it to hand on again. (The later copy
/// held only its id answered, and a restart lost the line.)
#[test]
fn an_answer_handed_on_after_a_copy_is_handed_on_again_after_a_restart() {
    let replies = table();
    let first = replies.copy_at(0, 60_000);
    assert!(first.ready.iter().any(|r| r.1.id == 5));
    assert_eq!(replies.take_ready().iter().map(|r| (r.0, r.1.id)).collect::<Vec<_>>(), vec![(60_000, 5), (70_000, 6)]);
    // The reader hands on the answer to ask 1 (made at 50 000): at the boundary too.
    match replies.answer_came(1, 0, answer("now")) {
        Came::Ask(_, at) => assert_eq!(at, 60_000, "after the cut"),
        other => panic!("ask 1 waited: {other:?}"),
    }
    let last = replies.copy_at(1, 60_000);
    let again: Vec<(u64, u64)> = last.ready.iter().map(|r| (r.0, r.1.id)).collect();
    assert_eq!(again, vec![(60_000, 1), (60_000, 5), (70_000, 6)]);
    assert!(!last.ready.iter().any(|r| r.1.id == 4), "handed on before any copy: its line is before the cut");
    let restored = DeviceReplies::default();
    restored.restore(&last, |_| true);
    assert_eq!(restored.take_ready().len(), 3, "handed on again");
    assert_eq!(restored.answer_came(1, 0, answer("now")), Came::Replayed, "the answer read again");
    restored.ask_made(&ask(5, 0), 20_000); // its request applied again
    assert_eq!((restored.waiting(5), restored.take_ready().len()), (None, 0), "made again, it waits for nothing");
}

/// An ask given up on after a copy: its error line is after the cut too, and handed on again.
#[test]
fn an_error_given_after_a_copy_is_handed_on_again() {
    let replies = table();
    replies.copy_at(0, 60_000);
    let instead = |_: &Ask, why: &&str| answer(why);
    let given = replies.give_up(|a| (a.id == 1).then_some("gone"), instead);
    assert_eq!(given.iter().map(|(r, _)| (r.0, r.1.id)).collect::<Vec<_>>(), vec![(60_000, 1)]);
    assert!(replies.copy_at(1, 60_000).ready.iter().any(|r| r.1.id == 1 && r.3 == answer("gone")));
}

#[test]
fn a_restored_table_hands_each_answer_on_once() {
    let copy = RepliesCopy::decode(&table().copy_at(0, 60_000).encode()).expect("a copy");
    let replies = DeviceReplies::default();
    replies.restore(&copy, |_| true);
    // The device answers the ask that waited at the checkpoint after the restart.
    match replies.answer_came(1, 0, answer("late")) {
        Came::Ask(both, made) => assert_eq!((both.0.id, made), (1, 50_000)),
        other => panic!("the ask did not wait: {other:?}"),
    }
    assert_eq!(replies.answer_came(1, 0, answer("late")), Came::Replayed);
    // An answer handed on before the checkpoint, sent again.
    assert_eq!(replies.answer_came(4, 0, answer("handed on")), Came::Replayed);
    // The pairs ready after the cut are handed on; the answer that came first meets its ask.
    assert_eq!(
        replies.take_ready(),
        vec![(60_000, ask(5, 0), 0, answer("first")), (70_000, ask(6, 0), 0, answer("first"))]
    );
    replies.ask_made(&ask(3, 1), 80_000);
    assert_eq!(replies.take_ready(), vec![(80_000, ask(3, 1), 1, answer("early"))]);
}

#[test]
fn a_process_takes_only_the_asks_of_the_synopses_it_homes() {
    let copy = table().copy_at(0, 60_000);
    let replies = DeviceReplies::default();
    replies.restore(&copy, |syn| syn == 1);
    assert_eq!(replies.waiting(1), None, "synopsis 0 is homed in another process");
    assert!(replies.take_ready().is_empty());
    let again = replies.copy_at(0, 0);
    assert_eq!(again.early, vec![(3, 1, answer("early"))]);
    assert_eq!(again.answered, vec![4, 5, 6], "every process knows every id answered");
}

#[test]
fn the_last_copy_of_each_process_is_the_one() {
    let replies = table();
    let first = replies.copy_at(0, 60_000);
    assert!(matches!(replies.answer_came(1, 0, answer("now")), Came::Ask(..)));
    let second = replies.copy_at(1, 60_000);
    let other = RepliesCopy { waiting: vec![(ask(9, 2), 1)], ..RepliesCopy::default() };
    let joined = RepliesCopy::join(vec![(0, second), (1, other), (0, first)]);
    assert!(joined.waiting.iter().all(|(a, _)| a.id != 1), "ask 1 was answered by the last copy");
    assert!(joined.waiting.iter().any(|(a, _)| a.id == 9), "the other process' ask");
    assert!(joined.answered.contains(&1));
}

#[test]
fn a_checkpoint_without_a_table_is_refused_and_one_with_is_installed_once() {
    let restored = RestoredReplies::new(4, Some(table().copy_at(0, 60_000)));
    let replies = DeviceReplies::default();
    restored.install(&replies, |_| true).expect("installed");
    assert!(replies.waiting(1).is_some());
    assert_eq!(replies.take_ready().len(), 2);
    restored.install(&replies, |_| true).expect("a second worker");
    assert!(replies.take_ready().is_empty(), "the ready pair is handed on once");
    let e = RestoredReplies::new(4, None).install(&replies, |_| true).unwrap_err();
    assert!(e.contains("--checkpoints"), "{e}");
}

/// Answer `n` asks from `first` on, made at input time `made`: half answered after their asks,
/// half before (then handed on by the relay), and the last one given up on.
fn answer_many(replies: &DeviceReplies, first: u64, n: u64, made: u64) {
    for id in first..first + n - 1 {
        if id % 2 == 0 {
            replies.ask_made(&ask(id, 0), made);
            assert!(matches!(replies.answer_came(id, 0, answer("now")), Came::Ask(..)));
        } else {
            assert_eq!(replies.answer_came(id, 0, answer("first")), Came::Kept);
            replies.ask_made(&ask(id, 0), made);
        }
    }
    replies.take_ready();
    let last = first + n - 1;
    replies.ask_made(&ask(last, 0), made);
    assert_eq!(replies.give_up(|a| (a.id == last).then_some("gone"), |_: &Ask, why: &&str| answer(why)).len(), 1);
}

/// A job without checkpoints never copies the table: no answer handed on is kept for a copy.
/// (The table kept the last 1024 of them.)
#[test]
fn without_checkpoints_no_answer_handed_on_is_kept() {
    let replies = DeviceReplies::default();
    answer_many(&replies, 1, 3000, 10_000);
    assert_eq!(replies.kept_handed(), 0);
    assert!(replies.take_ready().is_empty() && replies.waiting_synopses().is_empty());
}

/// With checkpoints, an answer handed on stays until every worker of the process has copied the
/// table at a boundary after its line, however many there are: a copy at a boundary before
/// their lines carries them all (the table kept the last 1024, and the copy lost the others).
#[test]
fn with_checkpoints_an_answer_handed_on_goes_once_every_worker_copied_past_it() {
    let replies = DeviceReplies::default();
    replies.copied_by(2);
    answer_many(&replies, 1, 10, 10_000);
    answer_many(&replies, 100, 2000, 70_000);
    assert_eq!(replies.kept_handed(), 2010);
    let first = replies.copy_at(0, 60_000);
    assert_eq!(first.ready.len(), 2000, "every line after the boundary");
    assert_eq!(replies.kept_handed(), 2010, "worker 1 has not copied yet");
    replies.copy_at(1, 60_000);
    assert_eq!(replies.kept_handed(), 2000, "both copied past the lines at 10 000");
    replies.copy_at(1, 120_000);
    assert_eq!(replies.kept_handed(), 2000, "worker 0 may still copy at a boundary before 70 000");
    assert_eq!(replies.copy_at(0, 120_000).ready.len(), 0);
    assert_eq!(replies.kept_handed(), 0);
    // Handed on after the copies: its line is at the newest boundary, kept for the next copy.
    answer_many(&replies, 5000, 2, 100_000);
    assert_eq!(replies.kept_handed(), 2);
    assert_eq!(replies.copy_at(0, 180_000).ready.iter().map(|r| r.0).collect::<Vec<_>>(), Vec::<u64>::new());
    assert_eq!(replies.kept_handed(), 2, "worker 1's next copy may be at 120 001");
}
