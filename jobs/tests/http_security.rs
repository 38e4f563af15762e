//! The HTTP edge under a token, TLS and a flood (`saams_jobs::control::{auth, tls}` and the
//! bounded queue of `http`): the server against a [`Hub`] a test thread answers, then the real
//! binary with `--http-token` and `--snapshots`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use saams_jobs::control::ControlArgs;
use saams_jobs::control::auth::{Access, Refusals};
use saams_jobs::control::http::{HttpLimits, HttpOptions, serve_guarded};
use saams_jobs::control::hub::Hub;

const CONSTRUCT: &str = r#"{"requestID":1,"streamID":"A","synopsisID":1,"dataSetKey":"F","param":["CountMin","price","NotQueryable",0.01,0.9,7]}"#;
const TOKEN: &str = "tok-3f9a_c2.e~81";

/// The metrics text the test servers serve: only the refusals.
fn refusals_text(refused: &Refusals) -> Arc<dyn Fn() -> String + Send + Sync> {
    let refused = refused.clone();
    Arc::new(move || {
        let mut registry = prometheus_client::registry::Registry::with_prefix("saams");
        registry.register("http_refused", "refused", refused.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        text
    })
}

/// A server with `options` and a hub; `answering` starts the thread that replies one line per
/// request (otherwise [`Edge::answer`] starts it later).
struct Edge {
    addr: SocketAddr,
    hub: Arc<Hub>,
    stop: Arc<AtomicBool>,
}

impl Edge {
    fn start(options: HttpOptions, answering: bool) -> Edge {
        let hub = Arc::new(Hub::new());
        hub.open();
        let stop = Arc::new(AtomicBool::new(false));
        let text = refusals_text(&options.refused);
        let (addr, _server) = serve_guarded("127.0.0.1:0", options, hub.clone(), text, stop.clone()).expect("serve");
        let edge = Edge { addr, hub, stop };
        if answering {
            edge.answer();
        }
        edge
    }

    /// Start answering the hub.
    fn answer(&self) {
        let (hub, stop) = (self.hub.clone(), self.stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for sub in hub.drain() {
                    for req in sub.requests {
                        let id = req.expect("valid").request_id;
                        hub.reply(sub.ticket, serde_json::json!({ "requestID": id }).to_string());
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
    }
}

impl Drop for Edge {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Send raw request bytes; the whole response as text (lossy), empty when the connection gave
/// nothing back.
fn exchange(stream: &mut impl ReadWrite, request: &[u8]) -> String {
    stream.write_all(request).expect("send");
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    String::from_utf8_lossy(&raw).into_owned()
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A request with `headers` (each `Name: value\r\n`) and `body`.
fn request(method: &str, path: &str, headers: &[u8], body: &str) -> Vec<u8> {
    let mut r =
        format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n", body.len())
            .into_bytes();
    r.extend_from_slice(headers);
    r.extend_from_slice(b"\r\n");
    r.extend_from_slice(body.as_bytes());
    r
}

fn status(response: &str) -> u16 {
    response.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next()?;
    head.lines().filter_map(|l| l.split_once(':')).find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim())
}

fn plain(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    exchange(&mut s, request)
}

fn bearer(token: &str) -> Vec<u8> {
    format!("Authorization: Bearer {token}\r\n").into_bytes()
}

#[test]
fn writes_need_the_token_reads_are_open_unless_asked_and_every_refusal_is_a_counted_bare_401() {
    let refused = Refusals::default();
    let access = Access::with_token(TOKEN, false).expect("token");
    let edge = Edge::start(HttpOptions { access, refused: refused.clone(), ..HttpOptions::default() }, true);
    let post = |headers: &[u8]| plain(edge.addr, &request("POST", "/requests", headers, CONSTRUCT));
    let refusals: Vec<(&str, Vec<u8>)> = vec![
        ("no token", Vec::new()),
        ("a wrong token", bearer("tok-3f9a_c2.e~8")),
        ("a longer wrong token", bearer(&format!("{TOKEN}x"))),
        ("another scheme", format!("Authorization: Basic {TOKEN}\r\n").into_bytes()),
        ("no token after the scheme", b"Authorization: Bearer\r\n".to_vec()),
        ("only spaces after the scheme", b"Authorization: Bearer    \r\n".to_vec()),
        ("no space after the scheme", format!("Authorization: Bearer{TOKEN}\r\n").into_bytes()),
        ("bytes that are not ASCII", b"Authorization: Bearer \xff\xfe\r\n".to_vec()),
    ];
    for (what, headers) in &refusals {
        let r = post(headers);
        assert_eq!(status(&r), 401, "{what}: {r}");
        assert_eq!(header(&r, "www-authenticate"), Some("Bearer"), "{what}: {r}");
        assert!(r.ends_with(r#"{"error":"unauthorized"}"#), "no detail: {what}: {r}");
    }
    let ok = post(&bearer(TOKEN));
    assert_eq!(status(&ok), 200, "{ok}");
    assert!(ok.contains(r#"{"requestID":1}"#), "{ok}");
    let lower = post(&format!("authorization: bearer {TOKEN}\r\n").into_bytes());
    assert_eq!(status(&lower), 200, "the scheme in any case: {lower}");
    // Every non-read needs it, also on paths that do not exist (yet).
    assert_eq!(status(&plain(edge.addr, &request("POST", "/rescale", b"", ""))), 401);
    assert_eq!(status(&plain(edge.addr, &request("DELETE", "/requests", b"", ""))), 401);
    assert_eq!(status(&plain(edge.addr, &request("POST", "/not-yet", b"", ""))), 401);
    assert_eq!(status(&plain(edge.addr, &request("POST", "/not-yet", &bearer(TOKEN), ""))), 404);
    // With the token, a rescale without a body gets past the guard and is refused for its body.
    assert_eq!(status(&plain(edge.addr, &request("POST", "/rescale", &bearer(TOKEN), ""))), 400);
    // Reads are open without --http-token-reads.
    for path in ["/synopses", "/health", "/metrics"] {
        assert_eq!(status(&plain(edge.addr, &request("GET", path, b"", ""))), 200, "{path}");
    }
    let metrics = plain(edge.addr, &request("GET", "/metrics", b"", ""));
    let expected = refusals.len() + 3;
    assert!(metrics.contains(&format!("saams_http_refused_total{{reason=\"unauthorized\"}} {expected}")), "{metrics}");
}

#[test]
fn with_token_reads_every_read_but_health_and_the_page_needs_the_token() {
    let access = Access::with_token(TOKEN, true).expect("token");
    let edge = Edge::start(HttpOptions { access, ..HttpOptions::default() }, true);
    for path in ["/synopses", "/metrics", "/status", "/synopses/1/answers", "/anything"] {
        let r = plain(edge.addr, &request("GET", path, b"", ""));
        assert_eq!(status(&r), 401, "{path}: {r}");
    }
    assert_eq!(status(&plain(edge.addr, &request("GET", "/synopses", &bearer(TOKEN), ""))), 200);
    assert_eq!(status(&plain(edge.addr, &request("GET", "/health", b"", ""))), 200, "health checks stay open");
    // The page's HTML carries no data (a browser cannot send a bearer header when it opens a
    // page); the calls it makes send the token typed into it.
    assert_eq!(status(&plain(edge.addr, &request("GET", "/", b"", ""))), 200, "the page stays open");
}

#[test]
fn the_token_comes_from_its_file_or_the_environment_and_bad_ones_are_refused_at_start() {
    let dir = std::env::temp_dir().join(format!("saams-http-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).expect("token file");
    let from_file = Access::from_flags(Some(&file), Some("other".into()), false).expect("file");
    let header = axum::http::HeaderValue::from_str(&format!("Bearer {TOKEN}")).expect("header");
    assert!(from_file.allows(&axum::http::Method::POST, "/requests", Some(&header)), "the file wins");
    let from_env = Access::from_flags(None, Some(TOKEN.into()), false).expect("env");
    assert!(from_env.allows(&axum::http::Method::POST, "/requests", Some(&header)));
    assert!(!Access::from_flags(None, None, false).expect("none").has_token());
    std::fs::write(&file, "two words\n").expect("token file");
    assert!(Access::from_flags(Some(&file), None, false).is_err());
    std::fs::write(&file, "\n").expect("token file");
    assert!(Access::from_flags(Some(&file), None, false).is_err());
    assert!(Access::from_flags(Some(&dir.join("missing")), None, false).unwrap_err().contains("missing"));
    assert!(Access::from_flags(None, None, true).unwrap_err().contains("--http-token-reads needs a token"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_flood_beyond_the_queue_gets_503_with_retry_after_and_the_job_answers_on() {
    let (bound, flood) = (3, 10);
    let refused = Refusals::default();
    let limits = HttpLimits { pending: bound, reply_timeout: Duration::from_secs(120), ..HttpLimits::default() };
    // Nobody answers yet: the first `bound` bodies hold their places until the job answers.
    let edge = Edge::start(HttpOptions { limits, refused: refused.clone(), ..HttpOptions::default() }, false);
    let (tx, rx) = mpsc::channel();
    for i in 0..flood {
        let (tx, addr) = (tx.clone(), edge.addr);
        std::thread::spawn(move || {
            let body = CONSTRUCT.replace(r#""requestID":1"#, &format!(r#""requestID":{i}"#));
            let _ = tx.send(plain(addr, &request("POST", "/requests", b"", &body)));
        });
    }
    let busy: Vec<String> =
        (0..flood - bound).map(|_| rx.recv_timeout(Duration::from_secs(120)).expect("a reply")).collect();
    for r in &busy {
        assert_eq!(status(r), 503, "{r}");
        assert_eq!(header(r, "retry-after"), Some("1"), "{r}");
        assert!(r.contains("busy"), "{r}");
    }
    edge.answer();
    for _ in 0..bound {
        let r = rx.recv_timeout(Duration::from_secs(120)).expect("a reply");
        assert_eq!(status(&r), 200, "the bodies taken are answered: {r}");
    }
    let after = plain(edge.addr, &request("POST", "/requests", b"", CONSTRUCT));
    assert_eq!(status(&after), 200, "the job answers on: {after}");
    let metrics = plain(edge.addr, &request("GET", "/metrics", b"", ""));
    assert!(metrics.contains(&format!("saams_http_refused_total{{reason=\"busy\"}} {}", flood - bound)), "{metrics}");
}

/// A self-signed certificate for `localhost` and its key, as PEM files in `dir`.
fn self_signed(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, Vec<u8>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("rcgen");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).expect("cert");
    std::fs::write(&key, certified.key_pair.serialize_pem()).expect("key");
    (cert, key, certified.cert.der().to_vec())
}

/// One exchange over TLS with a client that trusts only `der` and checks the name `localhost`.
fn https(addr: SocketAddr, der: &[u8], request: &[u8]) -> String {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from(der.to_vec())).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let connection = rustls::ClientConnection::new(Arc::new(config), name).expect("client");
    let tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    exchange(&mut rustls::StreamOwned::new(connection, tcp), request)
}

#[test]
fn https_with_a_self_signed_certificate_answers_and_plain_http_to_its_port_does_not() {
    let dir = std::env::temp_dir().join(format!("saams-http-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (cert, key, der) = self_signed(&dir);
    let args = ControlArgs { tls_cert: Some(cert.clone()), tls_key: Some(key.clone()), ..ControlArgs::default() };
    let edge = Edge::start(args.options(Refusals::default()).expect("the flags' options"), true);
    let r = https(edge.addr, &der, &request("POST", "/requests", b"", CONSTRUCT));
    assert_eq!(status(&r), 200, "{r}");
    assert!(r.contains(r#"{"requestID":1}"#), "{r}");
    let r = plain(edge.addr, &request("GET", "/health", b"", ""));
    assert!(!r.starts_with("HTTP/"), "plain HTTP to the TLS port was answered: {r}");
    // The failed handshake closed that connection only.
    assert_eq!(status(&https(edge.addr, &der, &request("GET", "/health", b"", ""))), 200);

    // A key that is not one, or a certificate file without a certificate: clear errors.
    let bad = ControlArgs { tls_cert: Some(key.clone()), tls_key: Some(key), ..ControlArgs::default() };
    assert!(bad.options(Refusals::default()).unwrap_err().contains("--tls-cert"));
    let bad = ControlArgs { tls_cert: Some(cert.clone()), tls_key: Some(cert), ..ControlArgs::default() };
    assert!(bad.options(Refusals::default()).unwrap_err().contains("--tls-key"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_binary_takes_its_token_from_a_file_and_keeps_load_inside_snapshots() {
    let dir = std::env::temp_dir().join(format!("saams-http-binary-{}", std::process::id()));
    let snapshots = dir.join("snaps");
    std::fs::create_dir_all(&snapshots).expect("dir");
    std::fs::write(dir.join("secret.bin"), b"not for requests").expect("outside");
    let token = dir.join("token");
    std::fs::write(&token, TOKEN).expect("token");
    let mut child = Command::new(env!("CARGO_BIN_EXE_saams"))
        .args(["--generate", "stocks:1", "--rate", "2000", "--window", "1s", "--progress", "0"])
        .args(["--http", "127.0.0.1:0", "--http-token"])
        .arg(&token)
        .arg("--snapshots")
        .arg(&snapshots)
        .env_remove("SAAMS_HTTP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("saams");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("saams: http on http://") {
                let _ = tx.send(addr.parse::<SocketAddr>().expect("address"));
            }
            eprintln!("[saams] {line}");
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(60)).expect("the job listens");
    let stock = saams_datasets::GeneratorSpec::parse("stocks:1").expect("spec");
    let (stream, dataset) = (stock.stream_id(0), stock.dataset_key(0).to_string());
    let construct = format!(
        r#"{{"requestID":"c","streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":["CountMin","price","NotQueryable",0.01,0.9,7]}}"#
    );
    let r = plain(addr, &request("POST", "/requests", b"", &construct));
    assert_eq!(status(&r), 401, "{r}");
    let r = plain(addr, &request("POST", "/requests", &bearer(TOKEN), &construct));
    assert_eq!(status(&r), 200, "{r}");
    assert!(r.contains(r#""accepted":"construct""#), "{r}");
    let load = format!(
        r#"{{"requestID":"l","streamID":"{stream}","synopsisID":1,"dataSetKey":"{dataset}","param":["LOAD_REQUEST","../secret.bin"]}}"#
    );
    let r = plain(addr, &request("POST", "/requests", &bearer(TOKEN), &load));
    assert!(r.contains("outside the snapshot directory"), "a LOAD outside --snapshots is refused: {r}");
    let metrics = plain(addr, &request("GET", "/metrics", b"", ""));
    assert!(metrics.contains("saams_http_refused_total{reason=\"unauthorized\"} 1"), "{metrics}");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
