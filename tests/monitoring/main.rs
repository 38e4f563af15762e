//! Monitoring over a sliding window: the four ε guarantees at every sampled time, on
//! adversarial streams and real data, in order and out of order, for both protocols.

use saams::monitoring::sim::{SimOptions, SimReport, adversary, simulate};
use saams::monitoring::{Config, Protocol};

const ADVERSARIES: [&str; 8] = ["uniform", "burst", "expiry", "distinct", "late", "onoff", "wave", "mixed"];

fn run(name: &str, k: usize, w: i64, tau: i64, eps: f64, protocol: Protocol, rate: u64) -> SimReport {
    let cfg = Config::new(k, w, tau, eps, protocol).unwrap();
    let stream = adversary(name, k, w, tau, rate, 5, 11).unwrap();
    simulate(cfg, &stream, &SimOptions::default()).unwrap()
}

#[test]
fn adversarial_streams_meet_every_guarantee() {
    for protocol in [Protocol::Seed, Protocol::ForwardBackward] {
        for name in ADVERSARIES {
            for tau in [0, 100] {
                let r = run(name, 5, 200, tau, 0.1, protocol, 2);
                println!(
                    "{name} {protocol:?} tau={tau}: q={} v={:?} words={} naive={} items={}",
                    r.queries,
                    r.violations_by_query,
                    r.total().words,
                    r.naive_words,
                    r.items
                );
                assert!(r.queries >= 1000);
                assert_eq!(r.violations, 0, "{name} {protocol:?} tau={tau}: {:?}", r.examples);
            }
        }
    }
}
