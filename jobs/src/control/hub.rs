//! The hand-off between the threads that take requests while the job runs (HTTP, stdin, the
//! request topic) and the one worker per process that feeds them into the dataflow.
//!
//! Requests arrive here parsed ([`saams::api::request::parse_requests`] where they entered) and
//! are vetted here once ([`Intake`]: fields outside the reference's request class), so every
//! refusal of a live request has one source and one wording; from here on they travel typed.
//!
//! Everything sits behind one [`Mutex`]: the queue of request bodies, the tickets of the callers
//! that wait for replies, the intake, the live registry and the open/closed state. Every operation holds the
//! lock for a push, a swap or a map look-up, never while waiting, so neither side stalls the
//! other. Replies travel over a [`std::sync::mpsc`] channel per ticket, which a plain thread reads
//! with [`Ticket::wait`] and the HTTP server reads from tokio's blocking pool.

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use saams::api::registry::LiveSynopsis;
use saams::api::request::{Parsed, Request};
use saams_operators::introspection::Published;
use serde_json::{Value, json};

use crate::control::answers::AnswerRings;
use crate::control::intake::Intake;
use crate::control::request_log::TopicRecord;
use crate::control::rescale::{RescaleAck, RescaleBoard, RescaleError, read_reply};

/// Requests that arrive while the job runs (HTTP, stdin, request topic) and the replies owed to them.
///
/// ```
/// use saams_jobs::control::hub::Hub;
/// use saams::api::request::parse_requests;
/// let hub = Hub::new();
/// hub.open();
/// let body = parse_requests(r#"{"synopsisID":1,"param":["CountMin","price","NotQueryable"]}"#);
/// let ticket = hub.submit(body.clone(), 1);
/// // The job's feeding worker takes the body, typed as it was submitted, and answers it.
/// let taken = hub.drain();
/// assert_eq!(taken.len(), 1);
/// assert_eq!((taken[0].ticket, &taken[0].requests), (ticket.id, &body));
/// hub.reply(taken[0].ticket, r#"{"ack":1}"#.into());
/// let replies = ticket.wait(std::time::Duration::from_secs(1));
/// assert!(replies.complete);
/// assert_eq!(replies.lines, vec![r#"{"ack":1}"#.to_string()]);
/// ```
pub struct Hub {
    state: Mutex<State>,
    /// The recent continuous answers of the live synopses (`GET /synopses/{id}/answers`): a lock
    /// of their own, so the dataflow's pushes never wait on the request path.
    answers: AnswerRings,
    /// What the job adds to [`Hub::status`] (its counters), given once it starts.
    status: OnceLock<StatusSource>,
    /// The devices a job merging a partials topic hears from (`GET /devices`), given once.
    devices: OnceLock<StatusSource>,
    /// The figures the process' workers publish per synopsis ([`crate::control::introspection`]).
    published: Arc<Published>,
    /// The job's active workers and the rescale under way ([`Hub::submit_rescale`]).
    rescale: RescaleBoard,
}

/// The job's counters as `GET /status` shows them: called at every request of it.
pub type StatusSource = Arc<dyn Fn() -> Value + Send + Sync>;

/// A body of requests as submitted, for the worker that feeds the dataflow.
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    /// Where the replies go ([`Hub::reply`]; nobody waits on those of a detached body); never 0.
    pub ticket: u64,
    /// The requests, parsed and vetted (a refused one is its error, answered at its fence).
    pub requests: Parsed,
    /// The request topic's record they came from (logged with them).
    pub source: Option<TopicRecord>,
}

/// What the submitter of a body holds: the replies owed to it arrive on `replies`.
pub struct Ticket {
    /// The ticket's number (never 0).
    pub id: u64,
    /// How many reply lines are owed.
    pub expected: usize,
    /// The reply lines (JSON), in the order the job sent them.
    pub replies: mpsc::Receiver<String>,
}

/// The replies a [`Ticket`] received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replies {
    /// The lines received, in order.
    pub lines: Vec<String>,
    /// All `expected` lines arrived.
    pub complete: bool,
    /// The hub let go of the ticket before every line arrived ([`Hub::close`] or [`Hub::cancel`]):
    /// no more lines can come.
    pub abandoned: bool,
}

struct Waiting {
    sender: mpsc::Sender<String>,
    owed: usize,
}

struct State {
    open: bool,
    next_ticket: u64,
    queue: Vec<Submission>,
    waiting: HashMap<u64, Waiting>,
    intake: Intake,
    synopses: Vec<LiveSynopsis>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl Hub {
    /// An empty hub, closed until the job [opens](Hub::open) it, vetting leniently.
    pub fn new() -> Hub {
        Hub::with_intake(Intake::new(false))
    }

    /// An empty hub that vets requests with `intake` (`--strict-requests` refuses unknown fields).
    pub fn with_intake(intake: Intake) -> Hub {
        Hub {
            state: Mutex::new(State {
                open: false,
                next_ticket: 1,
                queue: Vec::new(),
                waiting: HashMap::new(),
                intake,
                synopses: Vec::new(),
            }),
            answers: AnswerRings::default(),
            status: OnceLock::new(),
            devices: OnceLock::new(),
            published: Arc::default(),
            rescale: RescaleBoard::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A thread that panicked while holding the lock left the state consistent (every
        // operation is a single push, swap or map change), so go on with it.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The job takes requests from now on: called once its feeding worker runs.
    pub fn open(&self) {
        self.lock().open = true;
    }

    /// The job takes no more requests (its dataflow ended): queued bodies are dropped and every
    /// waiting ticket is let go, so its holder stops waiting at once ([`Replies::abandoned`]).
    pub fn close(&self) {
        let mut s = self.lock();
        s.open = false;
        s.queue.clear();
        s.waiting.clear();
    }

    /// Take no new requests, but answer those already taken (a job handing off to another:
    /// the new job takes them).
    pub fn stop_taking(&self) {
        self.lock().open = false;
    }

    /// Number the tickets from `first` on, if that is past the next (a job that has taken over
    /// another's request log continues its numbers).
    pub fn continue_tickets(&self, first: u64) {
        let mut s = self.lock();
        s.next_ticket = s.next_ticket.max(first);
    }

    /// Whether the job takes requests (between [`Hub::open`] and [`Hub::close`]).
    pub fn is_open(&self) -> bool {
        self.lock().open
    }

    /// Queue a body of requests, vetted here; `expected` replies are owed.
    pub fn submit(&self, requests: Parsed, expected: usize) -> Ticket {
        let (sender, replies) = mpsc::channel();
        let mut s = self.lock();
        let id = s.next_ticket;
        s.next_ticket += 1;
        let requests = s.vet(requests);
        s.queue.push(Submission { ticket: id, requests, source: None });
        if expected > 0 {
            s.waiting.insert(id, Waiting { sender, owed: expected });
        }
        Ticket { id, expected, replies }
    }

    /// Number the tickets from `first` on (a job with a request log continues its numbers: a
    /// ticket is a logged request's id, see [`crate::control::request_log`]).
    pub fn with_first_ticket(self, first: u64) -> Hub {
        self.lock().next_ticket = first.max(1);
        self
    }

    /// Queue requests nobody waits a reply for (stdin, request topic), vetted here. They get a
    /// ticket all the same (their id in the request log); no replies are held for it.
    pub fn submit_detached(&self, requests: Parsed) {
        self.lock().queue_detached(requests, None);
    }

    /// Queue requests as [`Hub::submit_detached`] does (`source`: the request topic's record
    /// they came from), if the hub takes requests now; false (nothing queued) if not. A record
    /// of the request topic then waits in the topic for the job that takes requests (this one
    /// once it does again, or the job taking over from it), which reads on from the position
    /// the request log holds; a request on stdin is refused with a message.
    pub fn submit_detached_if_open(&self, requests: Parsed, source: Option<TopicRecord>) -> bool {
        let mut s = self.lock();
        if s.open {
            s.queue_detached(requests, source);
        }
        s.open
    }

    /// Unknown request fields the hub's intake has seen (every occurrence counts).
    pub fn warnings(&self) -> u64 {
        self.lock().intake.warnings()
    }

    /// Taken by the one worker per process that feeds requests into the dataflow: every body
    /// queued since the last call, oldest first.
    pub fn drain(&self) -> Vec<Submission> {
        std::mem::take(&mut self.lock().queue)
    }

    /// One reply line (JSON) owed to `ticket` (dropped if the ticket is unknown or gone). The
    /// ticket is forgotten after its last owed line or once its holder stopped listening.
    pub fn reply(&self, ticket: u64, line: String) {
        let mut s = self.lock();
        let Some(w) = s.waiting.get_mut(&ticket) else { return };
        let delivered = w.sender.send(line).is_ok();
        w.owed = w.owed.saturating_sub(1);
        if !delivered || w.owed == 0 {
            s.waiting.remove(&ticket);
        }
    }

    /// Stop holding replies for `ticket` (its holder gave up waiting).
    pub fn cancel(&self, ticket: u64) {
        self.lock().waiting.remove(&ticket);
    }

    /// The live registry, the plan's own view of it, replaced by the job after each change
    /// (the HTTP server lists it and checks requests against it).
    pub fn set_synopses(&self, rows: Vec<LiveSynopsis>) {
        self.answers.set_live(&rows);
        // Deleted synopses' figures go with their rows.
        self.published.keep(|id| rows.iter().any(|r| r.id == id));
        self.lock().synopses = rows;
    }

    /// The recent continuous answers of the live synopses, kept once the HTTP server enables them.
    pub fn answers(&self) -> &AnswerRings {
        &self.answers
    }

    /// The table the process' workers publish their synopses' figures into (the plans share it).
    pub fn published(&self) -> Arc<Published> {
        self.published.clone()
    }

    /// The rows last given to [`Hub::set_synopses`].
    pub fn synopses(&self) -> Vec<LiveSynopsis> {
        self.lock().synopses.clone()
    }

    /// What the hub can say about the service: `status`, whether the job takes requests
    /// (`accepting`), bodies `queued` and not yet drained, tickets `waiting` for replies, and
    /// the number of live `synopses`.
    ///
    /// ```
    /// let hub = saams_jobs::control::hub::Hub::new();
    /// hub.submit_detached(Vec::new());
    /// let h = hub.health();
    /// assert_eq!(h["status"], "ok");
    /// assert_eq!(h["accepting"], false);
    /// assert_eq!(h["queued"], 1);
    /// ```
    pub fn health(&self) -> Value {
        let s = self.lock();
        json!({
            "status": "ok",
            "accepting": s.open,
            "queued": s.queue.len(),
            "waiting": s.waiting.len(),
            "synopses": s.synopses.len(),
        })
    }
}

impl Hub {
    /// Give the job's counters to [`Hub::status`] (once; a second source is ignored).
    pub fn set_status_source(&self, source: StatusSource) {
        let _ = self.status.set(source);
    }

    /// Give the devices' table to [`Hub::devices`] (once; a second source is ignored).
    pub fn set_devices_source(&self, source: StatusSource) {
        let _ = self.devices.set(source);
    }

    /// `GET /devices`: the devices of a job reading a partials topic; `None` for other jobs.
    pub fn devices(&self) -> Option<Value> {
        self.devices.get().map(|source| source())
    }

    /// `GET /status`: [`Hub::health`] and the job's counters (ingest, lag, answers), as the
    /// page shows them.
    ///
    /// ```
    /// let hub = saams_jobs::control::hub::Hub::new();
    /// hub.set_status_source(std::sync::Arc::new(|| serde_json::json!({"tuples": 7})));
    /// let s = hub.status();
    /// assert_eq!((s["status"].as_str(), s["tuples"].as_u64()), (Some("ok"), Some(7)));
    /// ```
    pub fn status(&self) -> Value {
        let mut status = self.health();
        if let (Some(source), Value::Object(into)) = (self.status.get(), &mut status)
            && let Value::Object(counters) = source()
        {
            into.extend(counters);
        }
        if let (Value::Object(into), Value::Object(rescale)) = (&mut status, self.rescale.status()) {
            into.extend(rescale);
        }
        status
    }

    /// The job's active workers and the rescale under way, as this process knows them.
    pub fn rescale_board(&self) -> &RescaleBoard {
        &self.rescale
    }

    /// Run the job's synopses on its first `active_workers` workers, their owned state moving
    /// `bins_per_fence` bins a window (`None`: the job's `--rescale-batch`): the typed rescale request
    /// queued like a body of `POST /requests` (logged, agreed at a fence), and its reply, which
    /// comes once the new bin map is applied at the fence. `POST /rescale` calls this, and so
    /// may an autoscaler thread holding the hub.
    ///
    /// # Errors
    /// 0 workers or more than the job has, another rescale still moving or waiting for its fence
    /// (nothing moves then), a job that takes no requests, or no reply within `timeout`.
    pub fn submit_rescale_within(
        &self,
        (active_workers, bins_per_fence): (usize, Option<u32>),
        timeout: Duration,
    ) -> Result<RescaleAck, RescaleError> {
        self.rescale.check(active_workers)?;
        if !self.is_open() {
            self.rescale.settle();
            return Err(RescaleError::Unavailable("this process takes no requests now".into()));
        }
        let request = match bins_per_fence {
            Some(b) => Request::rescale_batched(active_workers, b),
            None => Request::rescale(active_workers),
        };
        let ticket = self.submit(vec![Ok(request)], 1);
        let replies = ticket.wait(timeout);
        let Some(line) = replies.lines.first() else {
            self.cancel(ticket.id);
            self.rescale.settle();
            return Err(if replies.abandoned {
                RescaleError::Unavailable("the job stopped before answering".into())
            } else {
                RescaleError::Timeout(format!("no reply within {timeout:?}; the rescale may still take effect"))
            });
        };
        let ack = read_reply(line);
        self.rescale.settle();
        ack
    }

    /// [`Hub::submit_rescale_within`] ten seconds.
    ///
    /// # Errors
    /// As [`Hub::submit_rescale_within`].
    pub fn submit_rescale(&self, active_workers: usize) -> Result<RescaleAck, RescaleError> {
        self.submit_rescale_within((active_workers, None), Duration::from_secs(10))
    }
}

impl State {
    /// Queue a body nobody waits on, under the next ticket.
    fn queue_detached(&mut self, requests: Parsed, source: Option<TopicRecord>) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let requests = self.vet(requests);
        self.queue.push(Submission { ticket, requests, source });
    }

    /// The intake's verdict on a body; its notes (an unknown field, the first time) on stderr.
    fn vet(&mut self, requests: Parsed) -> Parsed {
        let (requests, notes) = self.intake.vet(requests);
        notes.iter().for_each(|n| eprintln!("{n}"));
        requests
    }
}

impl Ticket {
    /// Wait up to `timeout` for the lines owed (from a plain thread; the HTTP server calls it on
    /// tokio's blocking pool).
    pub fn wait(&self, timeout: Duration) -> Replies {
        let deadline = Instant::now() + timeout;
        let mut lines = Vec::with_capacity(self.expected);
        let mut abandoned = false;
        while lines.len() < self.expected {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.replies.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    abandoned = true;
                    break;
                }
            }
        }
        let complete = lines.len() == self.expected;
        Replies { lines, complete, abandoned: abandoned && !complete }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use saams::api::request::parse_requests;

    fn body(stream: &str) -> Parsed {
        parse_requests(&format!(
            r#"{{"streamID":"{stream}","synopsisID":2,"param":["HLL","price","NotQueryable",0.02]}}"#
        ))
    }

    #[test]
    fn replies_reach_their_own_ticket_only_and_the_ticket_is_forgotten_when_paid() {
        let hub = Hub::new();
        let a = hub.submit(body("a"), 2);
        let b = hub.submit(body("b"), 1);
        hub.submit_detached(body("c"));
        let taken = hub.drain();
        assert_eq!(
            taken,
            vec![
                Submission { ticket: a.id, requests: body("a"), source: None },
                Submission { ticket: b.id, requests: body("b"), source: None },
                Submission { ticket: b.id + 1, requests: body("c"), source: None },
            ]
        );
        assert!(hub.drain().is_empty());
        hub.reply(b.id, "b1".into());
        hub.reply(a.id, "a1".into());
        hub.reply(0, "nobody".into());
        hub.reply(999, "unknown".into());
        assert_eq!(hub.health()["waiting"], 1);
        hub.reply(a.id, "a2".into());
        assert_eq!(hub.health()["waiting"], 0);
        // A line beyond those owed finds no ticket.
        hub.reply(a.id, "a3".into());
        let ra = a.wait(Duration::from_millis(10));
        assert_eq!(ra, Replies { lines: vec!["a1".into(), "a2".into()], complete: true, abandoned: false });
        assert_eq!(b.wait(Duration::from_millis(10)).lines, vec!["b1".to_string()]);
    }

    #[test]
    fn a_wait_ends_at_the_timeout_with_the_lines_received() {
        let hub = Hub::new();
        let t = hub.submit(body("x"), 3);
        hub.reply(t.id, "one".into());
        let r = t.wait(Duration::from_millis(20));
        assert_eq!(r, Replies { lines: vec!["one".into()], complete: false, abandoned: false });
        hub.cancel(t.id);
        assert_eq!(hub.health()["waiting"], 0);
    }

    #[test]
    fn closing_drops_the_queue_and_releases_every_waiting_ticket() {
        let hub = Hub::new();
        hub.open();
        assert!(hub.is_open());
        let t = hub.submit(body("x"), 2);
        hub.reply(t.id, "one".into());
        let waiter = std::thread::spawn(move || t.wait(Duration::from_secs(30)));
        hub.close();
        let r = waiter.join().expect("waiter");
        assert_eq!(r, Replies { lines: vec!["one".into()], complete: false, abandoned: true });
        assert!(!hub.is_open());
        assert!(hub.drain().is_empty());
    }

    #[test]
    fn a_reply_to_a_holder_that_stopped_listening_forgets_the_ticket() {
        let hub = Hub::new();
        let t = hub.submit(body("x"), 2);
        let id = t.id;
        drop(t);
        hub.reply(id, "late".into());
        assert_eq!(hub.health()["waiting"], 0);
    }

    #[test]
    fn the_intake_vets_every_body_once_as_it_is_queued() {
        let strict = Hub::with_intake(Intake::new(true));
        let tenant = parse_requests(r#"{"synopsisID":2,"param":["HLL","price","NotQueryable",0.02],"tenant":"a"}"#);
        strict.submit_detached(tenant.clone());
        let refused = &strict.drain()[0].requests[0];
        assert!(refused.as_ref().unwrap_err().0.contains("`tenant`"), "{refused:?}");
        let lenient = Hub::new();
        lenient.submit(tenant.clone(), 1);
        lenient.submit_detached(tenant.clone());
        assert_eq!(lenient.warnings(), 2);
        assert!(lenient.drain().iter().all(|s| s.requests == tenant));
    }

    #[test]
    fn the_registry_rows_are_replaced_whole() {
        let store = std::sync::Arc::new(crate::sink::file::SnapshotDir::new(None));
        let plan =
            saams_operators::Plan::build(&body("A").into_iter().chain(body("B")).collect::<Vec<_>>(), 1, 1000, store);
        let rows = plan.live_synopses();
        let hub = Hub::new();
        hub.set_synopses(rows.clone());
        hub.set_synopses(rows[1..].to_vec());
        assert_eq!(hub.synopses(), rows[1..].to_vec());
        assert_eq!(hub.health()["synopses"], 1);
    }
}
