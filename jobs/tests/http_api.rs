//! The HTTP interface (`saams_jobs::control::http`) against a [`Hub`] whose job is a plain thread:
//! it drains the submitted bodies and replies one line per request (none to a request whose
//! `requestID` is `"silent"`). The client is a raw `TcpStream` speaking HTTP/1.1.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use saams::api::request::parse_requests;
use saams_jobs::control::ControlArgs;
use saams_jobs::control::http::{HttpLimits, serve, serve_with, start};
use saams_jobs::control::hub::Hub;
use serde_json::{Value, json};

const CONSTRUCT: &str = r#"{"requestID":1,"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.9,7]}"#;
const QUERY: &str =
    r#"{"requestID":2,"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["A","price","Queryable","Ad-hoc"]}"#;

/// A server on 127.0.0.1:0 with a job thread answering its hub.
struct Service {
    addr: SocketAddr,
    hub: Arc<Hub>,
    stop: Arc<AtomicBool>,
    server: Option<JoinHandle<()>>,
    job: Option<JoinHandle<()>>,
    /// Bodies the job drained.
    drained: Arc<AtomicUsize>,
}

impl Service {
    fn start(limits: Option<HttpLimits>) -> Service {
        let hub = Arc::new(Hub::new());
        hub.open();
        let stop = Arc::new(AtomicBool::new(false));
        let text: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(|| "saams_up 1\n# EOF\n".to_string());
        let (addr, server) = match limits {
            Some(l) => serve_with("127.0.0.1:0", l, hub.clone(), text, stop.clone()),
            None => serve("127.0.0.1:0", hub.clone(), text, stop.clone()),
        }
        .expect("serve");
        let drained = Arc::new(AtomicUsize::new(0));
        let job = {
            let (hub, stop, drained) = (hub.clone(), stop.clone(), drained.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for sub in hub.drain() {
                        drained.fetch_add(1, Ordering::Relaxed);
                        for (i, req) in sub.requests.into_iter().enumerate() {
                            let req = req.expect("the server queues only valid requests");
                            if req.request_id == Some(json!("silent")) {
                                continue;
                            }
                            let line = json!({"requestID": req.request_id, "n": i, "ticket": sub.ticket});
                            hub.reply(sub.ticket, line.to_string());
                        }
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        Service { addr, hub, stop, server: Some(server), job: Some(job), drained }
    }

    fn call(&self, method: &str, path: &str, body: &str) -> Reply {
        call(self.addr, method, path, body)
    }

    /// Stop the server; true when its thread ended within `within`.
    fn stop_within(&mut self, within: Duration) -> bool {
        self.stop.store(true, Ordering::Relaxed);
        let server = self.server.take().expect("running");
        let deadline = Instant::now() + within;
        while !server.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let done = server.is_finished();
        if done {
            server.join().expect("the server thread ends cleanly");
        }
        if let Some(job) = self.job.take() {
            job.join().expect("job thread");
        }
        done
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct Reply {
    status: u16,
    content_type: String,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }

    fn lines(&self) -> Vec<Value> {
        self.body.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
    }
}

fn call(addr: SocketAddr, method: &str, path: &str, body: &str) -> Reply {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).and_then(|_| s.write_all(body.as_bytes())).expect("send");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read the response");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no header end: {raw:?}"));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).expect("status code");
    let header = |name: &str| {
        head.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    assert_eq!(header("transfer-encoding"), None, "the answers are sent whole: {head}");
    assert_eq!(header("content-length").and_then(|n| n.parse().ok()), Some(body.len()), "{head}");
    Reply { status, content_type: header("content-type").unwrap_or_default(), body: body.to_string() }
}

#[test]
fn one_request_an_array_and_json_lines_get_one_reply_line_each() {
    let svc = Service::start(None);
    let one = svc.call("POST", "/requests", CONSTRUCT);
    assert_eq!(one.status, 200, "{one:?}");
    assert_eq!(one.content_type, "application/x-ndjson");
    let lines = one.lines();
    assert_eq!(lines.len(), 1, "{one:?}");
    assert_eq!(lines[0]["requestID"], 1);
    // A query of a synopsis the same body constructs first.
    let array = svc.call("POST", "/requests", &format!("[{CONSTRUCT},{QUERY}]"));
    assert_eq!(array.status, 200, "{array:?}");
    let lines = array.lines();
    assert_eq!(lines.iter().map(|l| l["requestID"].clone()).collect::<Vec<_>>(), vec![json!(1), json!(2)]);
    // Each body has its own ticket, and its replies come back to it alone.
    assert_ne!(lines[0]["ticket"], one.lines()[0]["ticket"]);
    let jsonl = svc.call("POST", "/requests", &format!("{CONSTRUCT}\n{QUERY}\n"));
    assert_eq!(jsonl.status, 200, "{jsonl:?}");
    assert_eq!(jsonl.lines().len(), 2);
    assert_eq!(svc.drained.load(Ordering::Relaxed), 3);
    assert_eq!(svc.hub.health()["waiting"], 0, "paid tickets are forgotten");
}

#[test]
fn refused_bodies_get_a_json_error_and_change_nothing() {
    let svc = Service::start(Some(HttpLimits {
        body_bytes: 2048,
        reply_timeout: Duration::from_secs(10),
        ..HttpLimits::default()
    }));
    let malformed = svc.call("POST", "/requests", &format!("[{CONSTRUCT}, {{\"streamID\": "));
    assert_eq!(malformed.status, 400, "{malformed:?}");
    assert_eq!(malformed.content_type, "application/json");
    assert!(malformed.json()["error"].as_str().expect("error text").contains("malformed JSON"), "{malformed:?}");
    let not_a_request = svc.call("POST", "/requests", r#"[{"synopsisID":1,"param":[]}]"#);
    assert_eq!(not_a_request.status, 400, "{not_a_request:?}");

    let unknown_kind = CONSTRUCT.replace("\"synopsisID\":1", "\"synopsisID\":99");
    let r = svc.call("POST", "/requests", &format!("[{CONSTRUCT},{unknown_kind}]"));
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.json()["error"], "request 2: unknown synopsis kind: unknown synopsisID 99");
    let bad_params = CONSTRUCT.replace("0.01,0.9", "5,0.9");
    let r = svc.call("POST", "/requests", &bad_params);
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.json()["error"].as_str().expect("error text").contains("bad parameter for CountMin"), "{r:?}");

    let r = svc.call(
        "POST",
        "/requests",
        &format!("[{CONSTRUCT},{}]", QUERY.replace("\"A\",\"synopsisID\"", "\"B\",\"synopsisID\"")),
    );
    assert_eq!(r.status, 404, "{r:?}");
    assert!(r.json()["error"].as_str().expect("error text").starts_with("request 2: unknown synopsis"), "{r:?}");
    let save = r#"{"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["SAVE_REQUEST","a.bin"]}"#;
    assert_eq!(svc.call("POST", "/requests", save).status, 404);

    let big = format!("[{}]", vec![CONSTRUCT; 20].join(","));
    assert!(big.len() > 2048);
    let r = svc.call("POST", "/requests", &big);
    assert_eq!(r.status, 413, "{r:?}");
    assert_eq!(r.json()["error"], "request body over the limit of 2048 bytes");
    let r = svc.call("POST", "/requests", "\n");
    assert_eq!(r.status, 400, "{r:?}");

    // Nothing reached the job.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(svc.drained.load(Ordering::Relaxed), 0);
    assert_eq!(svc.hub.health()["queued"], 0);
}

#[test]
fn the_live_registry_is_listed_and_lets_queries_through() {
    let svc = Service::start(None);
    let empty = svc.call("GET", "/synopses", "");
    assert_eq!((empty.status, empty.json()), (200, json!([])));
    assert_eq!(svc.call("POST", "/requests", QUERY).status, 404);
    let store = Arc::new(saams_jobs::sink::file::SnapshotDir::new(None));
    let rows = saams_operators::Plan::build(&parse_requests(CONSTRUCT), 1, 60_000, store).live_synopses();
    svc.hub.set_synopses(rows.clone());
    let listed = svc.call("GET", "/synopses", "");
    assert_eq!(listed.content_type, "application/json");
    // Each row with its live figures: none published yet (no window closed).
    let expected = saams_jobs::control::introspection::rows(&rows, &svc.hub.published());
    assert_eq!(listed.json(), expected);
    assert_eq!((listed.json()[0]["tuples"].as_u64(), listed.json()[0].get("lastWindow")), (Some(0), None));
    let one = svc.call("GET", "/synopses/0", "");
    assert_eq!((one.status, one.json()), (200, expected[0].clone()));
    assert_eq!(svc.call("GET", "/synopses/7", "").status, 404);
    assert_eq!(svc.call("GET", "/synopses/x", "").status, 404);
    assert_eq!(listed.json()[0]["kind"], "CountMin");
    assert_eq!(listed.json()[0]["params"], json!([0.01, 0.9, 7]));
    assert_eq!(listed.json()[0]["effectiveFrom"], "1970-01-01T00:00:00Z");
    let r = svc.call("POST", "/requests", QUERY);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.lines()[0]["requestID"], 2);
}

#[test]
fn metrics_health_and_unknown_paths() {
    let svc = Service::start(None);
    let m = svc.call("GET", "/metrics", "");
    assert_eq!(m.status, 200);
    assert_eq!(m.body, "saams_up 1\n# EOF\n");
    assert!(m.content_type.starts_with("application/openmetrics-text"), "{m:?}");
    let h = svc.call("GET", "/health", "");
    assert_eq!(h.status, 200);
    let h = h.json();
    assert_eq!(
        (h["status"].clone(), h["accepting"].clone(), h["queued"].clone()),
        (json!("ok"), json!(true), json!(0))
    );
    let nowhere = svc.call("GET", "/nowhere", "");
    assert_eq!(nowhere.status, 404);
    assert!(nowhere.json()["error"].as_str().expect("error text").contains("POST /requests"));
    let wrong_method = svc.call("GET", "/requests", "");
    assert_eq!(wrong_method.status, 405);
    assert!(wrong_method.json()["error"].is_string());
}

#[test]
fn missing_replies_end_in_504_with_the_lines_received_and_a_closed_job_in_503() {
    let svc = Service::start(Some(HttpLimits {
        body_bytes: 1 << 20,
        reply_timeout: Duration::from_millis(300),
        ..HttpLimits::default()
    }));
    let silent = QUERY.replace("\"requestID\":2", "\"requestID\":\"silent\"");
    let r = svc.call("POST", "/requests", &format!("[{CONSTRUCT},{silent}]"));
    assert_eq!(r.status, 504, "{r:?}");
    let lines = r.lines();
    assert_eq!(lines.len(), 2, "{r:?}");
    assert_eq!(lines[0]["requestID"], 1);
    assert!(lines[1]["error"].as_str().expect("error line").ends_with("1 of 2 replies"), "{r:?}");
    assert_eq!(svc.hub.health()["waiting"], 0, "the timed-out ticket is let go");

    svc.hub.close();
    let r = svc.call("POST", "/requests", CONSTRUCT);
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.json()["error"].is_string());
    assert_eq!(svc.call("GET", "/health", "").json()["accepting"], false);
}

#[test]
fn setting_stop_shuts_the_server_down() {
    let mut svc = Service::start(None);
    assert_eq!(svc.call("GET", "/health", "").status, 200);
    // An idle open connection does not hold the shutdown up.
    let idle = TcpStream::connect(svc.addr).expect("connect");
    let addr = svc.addr;
    assert!(svc.stop_within(Duration::from_secs(5)), "the server thread did not end");
    drop(idle);
    assert!(TcpStream::connect(addr).is_err(), "still listening on {addr}");
}

#[test]
fn start_serves_only_when_asked_and_with_the_flags_limits() {
    let text: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(String::new);
    let hub = Arc::new(Hub::new());
    let none =
        start(&ControlArgs::default(), hub.clone(), text.clone(), Default::default()).expect("no server, no error");
    assert!(none.is_none());
    let args = ControlArgs { http: Some("127.0.0.1:0".into()), http_body_limit: 16, ..ControlArgs::default() };
    let (addr, stop, handle) = start(&args, hub, text, Default::default()).expect("start").expect("a server");
    let r = call(addr, "POST", "/requests", CONSTRUCT);
    assert_eq!(r.status, 413, "{r:?}");
    stop.store(true, Ordering::Relaxed);
    handle.join().expect("the server thread ends cleanly");
    let taken = ControlArgs { http: Some(addr.to_string()), ..ControlArgs::default() };
    let _listener = std::net::TcpListener::bind(addr).expect("the port is free again");
    let err = start(&taken, Arc::new(Hub::new()), Arc::new(String::new), Default::default())
        .expect_err("a bound port is an error");
    assert!(err.starts_with(&format!("--http {addr}: ")), "{err}");
}
