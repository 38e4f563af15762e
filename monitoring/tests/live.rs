//! Live sites and coordinator: driven by watermarks in any batching, they send exactly the
//! simulator's words and bytes and answer as its root does; bad input (a message from an
//! unknown site, a replayed or reordered message, bytes that are no envelope, an item older
//! than the site has processed) is refused and counted and changes no answer.

use saams_monitoring::fallback::{Envelope, FallbackPolicy, SiteMessage};
use saams_monitoring::live::{LiveCoordinator, LiveSite, site_of};
use saams_monitoring::sim::{Arrival, SimOptions, adversary, simulate};
use saams_monitoring::{Config, Protocol};

/// The stream as a live job sees it: (event time, arrival sequence, item), in sequence order.
fn live_input(stream: &[Arrival]) -> Vec<(i64, u64, u64)> {
    stream.iter().enumerate().map(|(seq, a)| (a.stamp, seq as u64, a.item)).collect()
}

/// The same items as the simulator's arrivals: each at site `seq mod k`, arriving at its stamp,
/// sorted by (time, sequence).
fn sim_input(input: &[(i64, u64, u64)], k: usize) -> Vec<Arrival> {
    let mut v: Vec<(i64, u64, u64)> = input.to_vec();
    v.sort_unstable();
    v.into_iter().map(|(t, seq, item)| Arrival { site: site_of(seq, k), stamp: t, arrival: t, item }).collect()
}

/// One query time's answers: time, count, frequent items, quantiles.
type Answers = (i64, u64, Vec<u64>, Vec<Option<u64>>);

struct Run {
    words: u64,
    bytes: u64,
    answers: Vec<Answers>,
}

/// Feed the sites in watermark steps of `step`, the coordinator every envelope a step sent (in
/// (time, site, sequence) order, as a stream processor releases them), and ask at `times`.
fn live(cfg: Config, policy: FallbackPolicy, input: &[(i64, u64, u64)], step: i64, times: &[i64], phi: f64) -> Run {
    let mut sites: Vec<LiveSite> = (0..cfg.sites).map(|s| LiveSite::new(cfg, policy, s).unwrap()).collect();
    let mut root = LiveCoordinator::new(cfg, policy);
    for &(t, seq, item) in input {
        sites[site_of(seq, cfg.sites)].push(t, seq, item).unwrap();
    }
    let mut answers = Vec::new();
    let mut watermark = input.iter().map(|i| i.0).min().unwrap();
    let mut pending_times = times.iter().copied().peekable();
    loop {
        let done = watermark == i64::MAX;
        let mut sent: Vec<Envelope> = Vec::new();
        for s in &mut sites {
            sent.extend(if done { s.finish().unwrap() } else { s.advance_to(watermark).unwrap() });
        }
        sent.sort_by_key(|e| (e.time, e.site, e.seq));
        // An answer at `t` is taken after every message sent by `t` and before any later one.
        let mut ask = |root: &mut LiveCoordinator, before: i64| {
            while let Some(t) = pending_times.next_if(|&t| t < before && t < watermark) {
                let c = root.coordinator();
                let q = [0.05, 0.25, 0.5, 0.75, 0.95].iter().map(|&p| c.quantile(p, t).unwrap()).collect();
                answers.push((t, c.count(t).unwrap(), c.frequent(phi, t).unwrap(), q));
            }
        };
        for e in &sent {
            ask(&mut root, e.time);
            root.receive(&e.encode()).unwrap();
        }
        ask(&mut root, i64::MAX);
        if done {
            break;
        }
        watermark = if sites.iter().all(|s| s.next_event().is_none()) { i64::MAX } else { watermark + step };
    }
    assert_eq!(root.refused(), 0);
    Run { words: root.received().words, bytes: root.received().bytes, answers }
}

#[test]
fn a_live_run_sends_and_answers_what_the_simulator_does() {
    for (name, protocol, adaptive) in [
        ("mixed", Protocol::Seed, true),
        ("wave", Protocol::ForwardBackward, true),
        ("burst", Protocol::Seed, false),
        ("onoff", Protocol::ForwardBackward, false),
    ] {
        let k = 4;
        let cfg = Config::new(k, 200, 0, 0.1, protocol).unwrap();
        let policy = if adaptive {
            FallbackPolicy { period: 50, margin: 0.0, margin_off: 0.0, ..FallbackPolicy::adaptive(&cfg) }
        } else {
            FallbackPolicy::protocol_only(&cfg)
        };
        let input = live_input(&adversary(name, k, 200, 0, 2, 8, 5).unwrap());
        let arrivals = sim_input(&input, k);
        let last = arrivals.last().unwrap().arrival;
        let times: Vec<i64> = (0..).map(|i| 99 + 100 * i).take_while(|&t| t <= last + 300).collect();
        let opts = SimOptions {
            fallback: Some(policy),
            extra_query_times: times.clone(),
            queries: 2,
            record_answers: true,
            ..SimOptions::default()
        };
        let sim = simulate(cfg, &arrivals, &opts).unwrap();
        assert_eq!(sim.violations, 0);
        let sim_answers: Vec<_> = sim
            .answers
            .iter()
            .filter(|a| times.contains(&a.time))
            .map(|a| (a.time, a.count, a.frequent.clone(), a.quantiles.clone()))
            .collect();
        for step in [1, 37, 100] {
            let run = live(cfg, policy, &input, step, &times, opts.phi);
            assert_eq!(run.words, sim.total().words, "{name} step {step}: words");
            assert_eq!(run.bytes, sim.total().bytes, "{name} step {step}: bytes");
            assert_eq!(run.answers, sim_answers, "{name} step {step}: answers");
        }
        assert!(sim.total().words > 0);
    }
}

fn item(site: u32, seq: u64, time: i64, item: u64) -> Envelope {
    Envelope { site, seq, time, message: SiteMessage::Item { item } }
}

#[test]
fn bad_messages_are_refused_counted_and_change_no_answer() {
    let cfg = Config::new(2, 100, 0, 0.1, Protocol::Seed).unwrap();
    let policy = FallbackPolicy::adaptive(&cfg);
    let mut clean = LiveCoordinator::new(cfg, policy);
    let mut attacked = LiveCoordinator::new(cfg, policy);
    let good = [item(0, 0, 10, 7), item(1, 0, 11, 8), item(0, 1, 20, 7), item(1, 1, 30, 9)];
    for e in &good {
        clean.receive(&e.encode()).unwrap();
    }
    let bad = [
        item(2, 0, 12, 7).encode(), // a site that does not exist
        item(0, 0, 21, 7).encode(), // a replay of site 0's first message
        item(1, 2, 25, 8).encode(), // site 1 sent later (30) already: reordered
        vec![0x01, 0x02],           // no envelope
    ];
    for (i, e) in good.iter().enumerate() {
        attacked.receive(&e.encode()).unwrap();
        if i == 3 {
            for b in &bad {
                assert!(attacked.receive(b).is_err());
            }
        }
    }
    assert_eq!(attacked.refused(), 4);
    let refused = attacked.coordinator().refused();
    assert_eq!((refused.unknown_site, refused.replayed, refused.reordered), (1, 1, 1));
    for t in [30, 60, 105, 125] {
        assert_eq!(attacked.coordinator().count(t).unwrap(), clean.coordinator().count(t).unwrap());
        assert_eq!(attacked.coordinator().frequent(0.4, t).unwrap(), clean.coordinator().frequent(0.4, t).unwrap());
        assert_eq!(attacked.coordinator().quantile(0.5, t).unwrap(), clean.coordinator().quantile(0.5, t).unwrap());
    }
    let (a, c) = (attacked.received(), clean.received());
    assert_eq!((a.messages, a.words, a.bytes, a.undecodable), (c.messages, c.words, c.bytes, 1));
}

#[test]
fn an_item_older_than_the_processed_time_is_refused_and_counted() {
    let cfg = Config::new(1, 100, 0, 0.1, Protocol::Seed).unwrap();
    let policy = FallbackPolicy::adaptive(&cfg);
    let mut site = LiveSite::new(cfg, policy, 0).unwrap();
    let mut root = LiveCoordinator::new(cfg, policy);
    for t in 0..50 {
        site.push(t, t as u64, 3).unwrap();
    }
    for e in site.advance_to(50).unwrap() {
        root.receive(&e.encode()).unwrap();
    }
    // Stamped before the watermark the site already passed: refused, not counted in any answer.
    assert!(site.push(10, 100, 3).is_err());
    assert!(site.push(49, 101, 3).is_err());
    assert_eq!(site.refused_late(), 2);
    for e in site.advance_to(60).unwrap() {
        root.receive(&e.encode()).unwrap();
    }
    assert_eq!(root.coordinator().count(59).unwrap(), 50);
    // A live site runs in event-time order only.
    assert!(LiveSite::new(Config::new(1, 100, 10, 0.1, Protocol::Seed).unwrap(), policy, 0).is_err());
}
