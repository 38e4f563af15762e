//! `saams-netem-proxy`: a TCP relay that adds delay, jitter and loss, for the edge devices'
//! links (`scripts/edge-net.sh`). This kernel has no `netem` qdisc, so bandwidth is shaped by
//! `tc tbf` on the veth links and the rest is done here, at the TCP level:
//!
//! - **delay / jitter**: every chunk read from one side is written to the other side no sooner
//!   than `delay ± jitter` (uniform) after it was read, in each direction (so a round trip costs
//!   twice `--delay`). Chunks keep their order (TCP is in order): a chunk is never released
//!   before the one read ahead of it.
//! - **loss**: a TCP stream cannot lose bytes, it retransmits them. With probability `--loss` a
//!   chunk is held back one retransmission timeout more (Linux's minimum RTO, 200 ms, plus the
//!   delay), which is what a lost segment costs the application.
//!
//! `--listen-netns NAME` binds the listening socket inside the network namespace `NAME` (from
//! `ip netns add`) and connects to `--to` from the namespace the proxy was started in: the
//! cloud side of the links reaches the broker on the host's loopback without any address
//! outside the namespaces the script made.
//!
//! At each connection's end it prints `proxy conn=N up_bytes=… down_bytes=…` (up: from the
//! listening side to `--to`); with `--stats FILE` it also keeps the totals there.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use clap::Parser;
use saams_jobs::duration::parse_duration_ms;

/// A lost segment's cost: Linux's minimum retransmission timeout.
const MIN_RTO: Duration = Duration::from_millis(200);
/// The largest chunk relayed at once.
const CHUNK: usize = 16 * 1024;

#[derive(Parser, Debug, Clone)]
#[command(name = "saams-netem-proxy", about = "A TCP relay adding delay, jitter and loss (edge links)")]
struct Cli {
    /// Address to listen on (`host:port`).
    #[arg(long)]
    listen: SocketAddr,
    /// Address to relay to (`host:port`).
    #[arg(long)]
    to: SocketAddr,
    /// One-way delay added in each direction (`50ms`, `0`).
    #[arg(long, default_value = "0ms", value_parser = parse_duration)]
    delay: Duration,
    /// Uniform jitter around the delay (`5ms`): each chunk waits delay ± jitter.
    #[arg(long, default_value = "0ms", value_parser = parse_duration)]
    jitter: Duration,
    /// Probability that a chunk is "lost" and waits one retransmission timeout more (0–1).
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    loss: f64,
    /// Seed of the jitter and loss draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Bind the listening socket inside this network namespace (`/var/run/netns/NAME`).
    #[arg(long = "listen-netns")]
    listen_netns: Option<String>,
    /// Keep the byte totals in this file (`up_bytes=… down_bytes=… connections=…`).
    #[arg(long)]
    stats: Option<String>,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    match parse_duration_ms(s)? {
        ms if ms >= 0 => Ok(Duration::from_millis(ms as u64)),
        ms => Err(format!("{s:?}: a duration is not negative ({ms} ms)")),
    }
}

fn parse_probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("{s:?}: a probability between 0 and 1")),
    }
}

/// xorshift64*: the jitter and loss draws, reproducible from `--seed`.
struct Draws(u64);

impl Draws {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The link's behaviour, shared by both directions of every connection.
#[derive(Clone, Copy)]
struct Shape {
    delay: Duration,
    jitter: Duration,
    loss: f64,
}

impl Shape {
    /// How long a chunk read now waits before it is written.
    fn hold(&self, draws: &mut Draws) -> Duration {
        let jitter = self.jitter.as_secs_f64() * (2.0 * draws.unit() - 1.0);
        let mut hold = Duration::from_secs_f64((self.delay.as_secs_f64() + jitter).max(0.0));
        if self.loss > 0.0 && draws.unit() < self.loss {
            hold += MIN_RTO + self.delay;
        }
        hold
    }
}

#[derive(Default)]
struct Totals {
    up: AtomicU64,
    down: AtomicU64,
    connections: AtomicU64,
}

impl Totals {
    fn line(&self) -> String {
        format!(
            "up_bytes={} down_bytes={} connections={}",
            self.up.load(Ordering::Relaxed),
            self.down.load(Ordering::Relaxed),
            self.connections.load(Ordering::Relaxed)
        )
    }
}

/// Relay `from` → `to` with `shape`: a reader stamps chunks with their release time, a writer
/// writes each at its time. Returns the bytes relayed.
fn relay(mut from: TcpStream, mut to: TcpStream, shape: Shape, seed: u64, counter: &AtomicU64) -> u64 {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::spawn(move || {
        let mut written = 0u64;
        for (at, chunk) in rx {
            let now = Instant::now();
            if at > now {
                std::thread::sleep(at - now);
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
            written += chunk.len() as u64;
        }
        let _ = to.shutdown(Shutdown::Write);
        written
    });
    let mut draws = Draws(seed.max(1));
    let mut last = Instant::now();
    let mut buf = vec![0u8; CHUNK];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                counter.fetch_add(n as u64, Ordering::Relaxed);
                let at = (Instant::now() + shape.hold(&mut draws)).max(last);
                last = at;
                if tx.send((at, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = from.shutdown(Shutdown::Read);
    writer.join().unwrap_or(0)
}

fn serve(client: TcpStream, cli: &Cli, n: u64, totals: Arc<Totals>) -> Result<(), String> {
    let server =
        TcpStream::connect_timeout(&cli.to, Duration::from_secs(10)).map_err(|e| format!("{}: {e}", cli.to))?;
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let shape = Shape { delay: cli.delay, jitter: cli.jitter, loss: cli.loss };
    let (c2, s2) = (client.try_clone().map_err(|e| e.to_string())?, server.try_clone().map_err(|e| e.to_string())?);
    let seed = cli.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(n);
    let t = Arc::clone(&totals);
    let down = std::thread::spawn(move || relay(s2, c2, shape, seed ^ 0xD0D0, &t.down));
    let up = relay(client, server, shape, seed, &totals.up);
    let down = down.join().unwrap_or(0);
    totals.connections.fetch_add(1, Ordering::Relaxed);
    eprintln!("proxy conn={n} up_bytes={up} down_bytes={down}");
    if let Some(file) = &cli.stats {
        let _ = std::fs::write(file, format!("{}\n", totals.line()));
    }
    Ok(())
}

/// Bind `addr`, inside network namespace `netns` when given (this thread enters it for the bind
/// and comes back: a socket stays in the namespace it was made in).
fn bind(addr: SocketAddr, netns: Option<&str>) -> Result<TcpListener, String> {
    let Some(name) = netns else { return TcpListener::bind(addr).map_err(|e| format!("{addr}: {e}")) };
    let home = std::fs::File::open("/proc/self/task/thread-self/ns/net")
        .or_else(|_| std::fs::File::open("/proc/thread-self/ns/net"))
        .map_err(|e| format!("this thread's network namespace: {e}"))?;
    let path = format!("/var/run/netns/{name}");
    let target = std::fs::File::open(&path).map_err(|e| format!("{path}: {e} (made by `ip netns add {name}`?)"))?;
    enter(&target).map_err(|e| format!("enter {path}: {e}"))?;
    let bound = TcpListener::bind(addr).map_err(|e| format!("{addr} in {name}: {e}"));
    enter(&home).map_err(|e| format!("back from {path}: {e}"))?;
    bound
}

fn enter(ns: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: setns on a namespace file descriptor we hold open; it changes only this thread's
    // network namespace.
    let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

fn main() {
    let cli = Cli::parse();
    let listener = match bind(cli.listen, cli.listen_netns.as_deref()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("saams-netem-proxy: {e}");
            std::process::exit(2);
        }
    };
    eprintln!(
        "proxy listening {} -> {} delay={:?} jitter={:?} loss={}",
        cli.listen, cli.to, cli.delay, cli.jitter, cli.loss
    );
    let totals = Arc::new(Totals::default());
    let cli = Arc::new(cli);
    for (n, conn) in listener.incoming().enumerate() {
        match conn {
            Ok(client) => {
                let (cli, totals) = (Arc::clone(&cli), Arc::clone(&totals));
                std::thread::spawn(move || {
                    if let Err(e) = serve(client, &cli, n as u64, totals) {
                        eprintln!("saams-netem-proxy: connection {n}: {e}");
                    }
                });
            }
            Err(e) => eprintln!("saams-netem-proxy: accept: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_is_the_delay_within_the_jitter_and_a_loss_adds_one_rto() {
        let shape = Shape { delay: Duration::from_millis(50), jitter: Duration::from_millis(5), loss: 0.0 };
        let mut draws = Draws(7);
        for _ in 0..1000 {
            let h = shape.hold(&mut draws);
            assert!(h >= Duration::from_millis(45) && h <= Duration::from_millis(55), "{h:?}");
        }
        let lossy = Shape { loss: 1.0, ..shape };
        let h = lossy.hold(&mut draws);
        assert!(h >= Duration::from_millis(45) + MIN_RTO + shape.delay, "{h:?}");
        assert!(parse_probability("1.5").is_err() && parse_duration("-5ms").is_err());
    }

    #[test]
    fn relayed_bytes_arrive_whole_and_in_order_both_ways() {
        // An echo server behind the proxy: what goes up comes back down, through two relays.
        let echo = TcpListener::bind("127.0.0.1:0").expect("bind echo");
        let echo_addr = echo.local_addr().expect("echo address");
        std::thread::spawn(move || {
            let (mut s, _) = echo.accept().expect("accept");
            let mut r = s.try_clone().expect("clone");
            std::io::copy(&mut r, &mut s).expect("echo");
            let _ = s.shutdown(Shutdown::Write);
        });
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let proxy_addr = listener.local_addr().expect("proxy address");
        let cli = Cli::parse_from([
            "saams-netem-proxy",
            "--listen",
            &proxy_addr.to_string(),
            "--to",
            &echo_addr.to_string(),
            "--delay",
            "2ms",
            "--jitter",
            "2ms",
            "--loss",
            "0.05",
        ]);
        let totals = Arc::new(Totals::default());
        let t = Arc::clone(&totals);
        let proxy = std::thread::spawn(move || {
            let (client, _) = listener.accept().expect("accept");
            serve(client, &cli, 0, t)
        });
        let sent: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let mut c = TcpStream::connect(proxy_addr).expect("connect");
        let writer = {
            let (mut w, sent) = (c.try_clone().expect("clone"), sent.clone());
            std::thread::spawn(move || {
                w.write_all(&sent).expect("write");
                w.shutdown(Shutdown::Write).expect("shutdown");
            })
        };
        let mut got = Vec::new();
        c.read_to_end(&mut got).expect("read");
        writer.join().expect("writer");
        proxy.join().expect("proxy").expect("serve");
        assert_eq!(got, sent);
        assert_eq!(totals.up.load(Ordering::Relaxed), sent.len() as u64);
        assert_eq!(totals.down.load(Ordering::Relaxed), sent.len() as u64);
    }
}
