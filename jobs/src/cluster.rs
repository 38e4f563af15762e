//! The TCP connections between the processes of a `-n N` job, made before timely starts its
//! send and receive threads on them ([`build_cluster`]).
//!
//! Why not timely's own set-up (`Config::Cluster`): it prints its progress with `println!`, so a
//! multi-process job answering to standard output (the default) began its stream of JSON
//! estimations with lines such as `awaiting connections (at 0/1)` or `worker 1: error connecting
//! to worker 0: Connection refused (os error 111); retrying`, which a consumer of the stream cannot
//! parse; and it waits a whole second after every refused connection and every empty poll of its
//! listener, so processes started together (as every launcher starts them) spent one to two
//! seconds connecting. Here the listener is bound before any connection is tried, the listener
//! waits in `poll(2)` (it wakes as a connection arrives), refused connections are retried after
//! 100 µs, doubling to [`RETRY`], and what there is to say about waiting goes to standard error.
//! (With a fixed 5 ms retry and a 2 ms listener poll, a `-n 2` job whose processes started
//! together lost 3–7 ms at its start: the higher process was usually refused once, as the lower
//! one had not bound yet.)
//!
//! The handshake is timely's, byte for byte, so a process built from this code can join processes
//! connected by timely's: the process with the higher index connects to the lower one, sets
//! `TCP_NODELAY` and sends its index as a big-endian `u64`; the lower one accepts and reads it.
//!
//! Timely's send and receive threads are started here as well, scheduled as `--network-sched`
//! says ([`SpawnPolicy`]): with two processes on two cores, each message woke a network thread
//! that preempted a worker, ~4,000 times a second per process.

use std::any::Any;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use timely::communication::Hooks;
use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};

use crate::cli::NetworkSched;
use crate::spawn_policy::SpawnPolicy;

/// The longest pause between attempts to connect to a process that is not listening yet (the
/// first is [`FIRST_RETRY`], doubling up to this).
const RETRY: Duration = Duration::from_millis(5);

/// The first pause after a refused connection: processes started together are refused at most
/// for the few milliseconds the lower one takes to bind.
const FIRST_RETRY: Duration = Duration::from_micros(100);

/// The longest a listener waits in one `poll(2)` before it checks the deadline and reports.
const POLL: Duration = Duration::from_millis(100);

/// How often a process still waiting for another says so on standard error.
const REPORT_EVERY: Duration = Duration::from_secs(5);

/// The allocators of this process' `threads` workers in a job of `addresses.len()` processes,
/// this one being `process`, connected to every other process (waiting for them up to `timeout`),
/// and the guard of timely's send and receive threads (to be kept until the workers end).
///
/// `addresses[process]` is where this process listens (several addresses separated by spaces are
/// all listened on, as timely does); the others are where it connects.
///
/// # Errors
/// When this process' address cannot be bound, another process is not reached within `timeout`,
/// the connection to a lower process breaks while this one sends its index, or a connecting
/// process sends an index it should not (one that breaks off before sending any is ignored).
pub fn build_cluster(
    addresses: &[String],
    process: usize,
    threads: usize,
    hooks: Hooks,
    timeout: Duration,
    sched: NetworkSched,
) -> Result<(Vec<AllocatorBuilder>, Box<dyn Any + Send>), String> {
    let sockets = connect(addresses, process, timeout)?;
    let local = ProcessBuilder::new_typed_vector(threads, hooks.refill.clone(), hooks.spill.clone());
    // The network threads are spawned by this call, and a new thread takes its creator's policy.
    // Off Linux there is no SCHED_BATCH: `--network-sched` is ignored there, as it says.
    let policy = match sched {
        NetworkSched::Batch if cfg!(target_os = "linux") => {
            SpawnPolicy::batch().map_err(|e| eprintln!("timely's network threads keep the normal scheduling: {e}")).ok()
        }
        NetworkSched::Batch | NetworkSched::Normal => None,
    };
    let started = initialize_networking_from_sockets(local, sockets, process, threads, hooks);
    drop(policy);
    let (builders, guard) = started.map_err(|e| format!("starting the network threads: {e}"))?;
    Ok((builders.into_iter().map(AllocatorBuilder::Tcp).collect(), Box::new(guard)))
}

/// One connected socket per other process, in process order, `None` at `process`.
///
/// ```
/// use std::net::TcpListener;
/// use std::time::Duration;
/// use saams_jobs::cluster::connect;
/// let port = |_| TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
/// let addresses: Vec<String> = (0..3).map(|p| format!("127.0.0.1:{}", port(p))).collect();
/// let wait = Duration::from_secs(30);
/// let sockets = std::thread::scope(|s| {
///     let handles: Vec<_> = (0..3).map(|p| s.spawn({ let a = &addresses; move || connect(a, p, wait) })).collect();
///     handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect::<Vec<_>>()
/// });
/// for (p, mine) in sockets.iter().enumerate() {
///     assert_eq!(mine.len(), 3);
///     for (q, socket) in mine.iter().enumerate() {
///         assert_eq!(socket.is_none(), p == q); // a socket to every other process
///     }
/// }
/// ```
///
/// # Errors
/// As [`build_cluster`].
pub fn connect(addresses: &[String], process: usize, timeout: Duration) -> Result<Vec<Option<TcpStream>>, String> {
    let processes = addresses.len();
    if process >= processes {
        return Err(format!("process {process} of a job of {processes}"));
    }
    let deadline = Instant::now() + timeout;
    // Bound first: a process that starts connecting out before it listens keeps the others
    // waiting for nothing.
    let listeners = addresses[process]
        .split_whitespace()
        .map(|a| {
            let l = TcpListener::bind(a).map_err(|e| format!("listening on {a}: {e}"))?;
            l.set_nonblocking(true).map_err(|e| format!("listening on {a}: {e}"))?;
            Ok(l)
        })
        .collect::<Result<Vec<_>, String>>()?;
    if listeners.is_empty() {
        return Err(format!("no address to listen on for process {process}"));
    }
    let (lower, higher) = std::thread::scope(|s| {
        let outgoing = s.spawn(|| {
            (0..process).map(|to| connect_to(&addresses[to], process, to, deadline)).collect::<Result<Vec<_>, _>>()
        });
        let incoming = accept_from(&listeners, process, processes, deadline);
        (outgoing.join().unwrap_or_else(|_| Err("the connecting thread panicked".into())), incoming)
    });
    let mut sockets: Vec<Option<TcpStream>> = lower?.into_iter().map(Some).collect();
    sockets.push(None);
    sockets.extend(higher?.into_iter().map(Some));
    Ok(sockets)
}

/// Connect to process `to` at `address` and say who this is (`process`), retrying while it does
/// not listen yet.
fn connect_to(address: &str, process: usize, to: usize, deadline: Instant) -> Result<TcpStream, String> {
    let mut reported = Instant::now();
    let mut retry = FIRST_RETRY;
    loop {
        match TcpStream::connect(address) {
            Ok(mut stream) => {
                let handshake =
                    stream.set_nodelay(true).and_then(|()| stream.write_all(&(process as u64).to_be_bytes()));
                return handshake
                    .map(|()| stream)
                    .map_err(|e| format!("handshake with process {to} at {address}: {e}"));
            }
            Err(e) if Instant::now() >= deadline => {
                return Err(format!("process {to} at {address} not reached: {e}"));
            }
            Err(e) => {
                if reported.elapsed() >= REPORT_EVERY {
                    eprintln!("saams: process {process}: waiting for process {to} at {address} ({e})");
                    reported = Instant::now();
                }
                std::thread::sleep(retry);
                retry = (retry * 2).min(RETRY);
            }
        }
    }
}

/// Accept a connection from every process above `process`, each placed by the index it sends.
fn accept_from(
    listeners: &[TcpListener],
    process: usize,
    processes: usize,
    deadline: Instant,
) -> Result<Vec<TcpStream>, String> {
    let mut accepted: Vec<Option<TcpStream>> = (process + 1..processes).map(|_| None).collect();
    let mut reported = Instant::now();
    while accepted.iter().any(Option::is_none) {
        let mut any = false;
        for listener in listeners {
            match listener.accept() {
                Ok((stream, from)) => {
                    // A connection that breaks off before saying who it is (a peer that died
                    // while starting, a port probe) is dropped; its process may connect again.
                    let (index, stream) = match handshake_from(stream) {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            eprintln!("saams: process {process}: ignored a connection from {from}: {e}");
                            continue;
                        }
                    };
                    let slot = index.checked_sub(process + 1).and_then(|i| accepted.get_mut(i)).ok_or_else(|| {
                        format!("{from} says it is process {index}, not one above {process} of {processes}")
                    })?;
                    if slot.is_some() {
                        return Err(format!("process {index} connected twice (again from {from})"));
                    }
                    *slot = Some(stream);
                    any = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(format!("accepting connections: {e}")),
            }
        }
        if any {
            continue;
        }
        let missing: Vec<usize> =
            accepted.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(i, _)| process + 1 + i).collect();
        if Instant::now() >= deadline {
            return Err(format!("processes {missing:?} did not connect"));
        }
        if reported.elapsed() >= REPORT_EVERY {
            eprintln!("saams: process {process}: waiting for processes {missing:?} to connect");
            reported = Instant::now();
        }
        wait_for_connections(listeners, POLL.min(deadline.saturating_duration_since(Instant::now())));
    }
    Ok(accepted.into_iter().flatten().collect())
}

/// Wait until a connection arrives at one of `listeners` or `wait` passes (woken at once by a
/// connection, where a sleep between polls added up to its length to every start). An error of
/// `poll(2)` (a signal) ends the wait early: the caller accepts what there is and waits again.
fn wait_for_connections(listeners: &[TcpListener], wait: Duration) {
    let mut fds: Vec<libc::pollfd> =
        listeners.iter().map(|l| libc::pollfd { fd: l.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX).max(1);
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd records that outlives the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}

/// The index a connecting process sends, read from a blocking, `TCP_NODELAY` stream (the accepted
/// stream inherits the listener's non-blocking mode on some systems), waiting at most 10 s for
/// its eight bytes.
fn handshake_from(mut stream: TcpStream) -> io::Result<(usize, TcpStream)> {
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut index = [0u8; 8];
    stream.read_exact(&mut index)?;
    stream.set_read_timeout(None)?;
    let index =
        usize::try_from(u64::from_be_bytes(index)).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok((index, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Connect to `address` once it listens and send `bytes` (then hang up).
    fn send_when_listening(address: &str, bytes: &[u8]) {
        loop {
            if let Ok(mut c) = TcpStream::connect(address) {
                c.write_all(bytes).expect("write");
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn free_address() -> String {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a port");
        format!("127.0.0.1:{port}")
    }

    /// Names and ids of this process' timely network threads (other tests may run workers).
    #[cfg(target_os = "linux")]
    fn network_threads() -> Vec<(String, i32)> {
        let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
        tasks
            .flatten()
            .filter_map(|t| {
                let name = std::fs::read_to_string(t.path().join("comm")).ok()?.trim_end().to_string();
                let tid = t.file_name().to_str()?.parse().ok()?;
                (name.starts_with("timely:send") || name.starts_with("timely:recv")).then_some((name, tid))
            })
            .collect()
    }

    /// A two-process cluster's send and receive threads (one of each per process) are born
    /// SCHED_BATCH, `--network-sched`'s default, and the threads that started them have their
    /// own policy back. (No other test of this binary starts network threads.)
    #[cfg(target_os = "linux")]
    #[test]
    fn network_threads_are_sched_batch_and_the_caller_keeps_its_policy() {
        let addresses = vec![free_address(), free_address()];
        let policy = |tid: i32| {
            // SAFETY: a read of a thread's scheduling policy.
            unsafe { libc::sched_getscheduler(tid) }
        };
        let clusters = std::thread::scope(|s| {
            let started: Vec<_> = (0..2)
                .map(|p| {
                    let addresses = &addresses;
                    s.spawn(move || {
                        let wait = Duration::from_secs(30);
                        let cluster = build_cluster(addresses, p, 1, Hooks::default(), wait, NetworkSched::Batch)
                            .expect("a cluster");
                        (cluster, policy(0))
                    })
                })
                .collect();
            started.into_iter().map(|h| h.join().expect("a process' thread")).collect::<Vec<_>>()
        });
        for (_, caller) in &clusters {
            assert_eq!(*caller, libc::SCHED_OTHER);
        }
        // Threads name themselves once running.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut network = network_threads();
        while network.len() < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
            network = network_threads();
        }
        let mut names: Vec<_> = network.iter().map(|(name, _)| name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["timely:recv-0", "timely:recv-1", "timely:send-0", "timely:send-1"]);
        for (name, tid) in &network {
            assert_eq!(policy(*tid), libc::SCHED_BATCH, "{name}");
        }
        // Workers that do nothing and end close the channels: the send threads say goodbye, the
        // receive threads end on it, and each process' guard joins its two.
        let workers: Vec<_> = clusters
            .into_iter()
            .map(|((builders, others), _)| {
                timely::execute::execute_from(builders, others, Default::default(), |_| ()).expect("workers")
            })
            .collect();
        for w in workers {
            w.join().into_iter().for_each(|r| r.expect("a worker"));
        }
        // A joined thread can still be listed for a moment while the kernel reaps it.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !network_threads().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(network_threads(), []);
    }

    /// Connections that end before the handshake's eight bytes (none, or three) are dropped and
    /// the process keeps waiting for its peer, which then connects as usual; an index no process
    /// has is refused as the misconfiguration it is.
    #[test]
    fn broken_off_connections_are_ignored_and_foreign_indices_refused() {
        let addresses = vec![free_address(), free_address()];
        let wait = Duration::from_secs(30);
        std::thread::scope(|s| {
            let first = s.spawn(|| connect(&addresses, 0, wait));
            send_when_listening(&addresses[0], b"");
            send_when_listening(&addresses[0], b"abc");
            let second = connect(&addresses, 1, wait).expect("process 1 connects");
            let first = first.join().expect("process 0's thread").expect("process 0 connects");
            assert!(first[0].is_none() && first[1].is_some());
            assert!(second[0].is_some() && second[1].is_none());
        });
        let addresses = vec![free_address(), free_address()];
        std::thread::scope(|s| {
            let first = s.spawn(|| connect(&addresses, 0, Duration::from_secs(30)));
            send_when_listening(&addresses[0], &7u64.to_be_bytes());
            let err = first.join().expect("process 0's thread").expect_err("index 7 refused");
            assert!(err.contains("says it is process 7"), "{err}");
        });
    }
}
