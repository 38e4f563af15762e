//! The forwarding fallback: the guarantees hold across switches (many forced switches on
//! adversarial streams, both protocols, in order and out of order), a site that would cost more
//! with the protocol forwards and then costs exactly the naive words, the wire codec round-trips,
//! and the root refuses bad input without giving a wrong answer.

use saams_monitoring::fallback::{Coordinator, Envelope, FallbackPolicy, FallbackSite, SiteMessage};
use saams_monitoring::sim::{SimOptions, adversary, simulate};
use saams_monitoring::{Channel, Config, Message, Protocol};

const ADVERSARIES: [&str; 8] = ["uniform", "burst", "expiry", "distinct", "late", "onoff", "wave", "mixed"];

#[test]
fn guarantees_hold_across_many_forced_switches() {
    let mut switches = 0;
    for protocol in [Protocol::Seed, Protocol::ForwardBackward] {
        for name in ADVERSARIES {
            for tau in [0, 100] {
                let cfg = Config::new(5, 200, tau, 0.1, protocol).unwrap();
                let stream = adversary(name, 5, 200, tau, 2, 8, 3).unwrap();
                // No margins and short periods: sites switch whenever the last period favoured
                // the other mode, so switches happen all the time.
                let policy =
                    FallbackPolicy { period: 40, margin: 0.0, margin_off: 0.0, ..FallbackPolicy::adaptive(&cfg) };
                let opts = SimOptions { fallback: Some(policy), ..SimOptions::default() };
                let r = simulate(cfg, &stream, &opts).unwrap();
                assert_eq!(r.violations, 0, "{name} {protocol:?} tau={tau}: {:?}", r.examples);
                assert!(r.queries >= 1000);
                let s = r.site_switches;
                assert!(s.to_protocol >= s.to_forwarding && s.to_protocol <= s.to_forwarding + 5);
                assert_eq!(s.forwarded_items + s.protocol_items, r.items);
                assert_eq!(r.switches.words, s.to_protocol + s.to_forwarding);
                switches += s.to_protocol + s.to_forwarding;
            }
        }
    }
    assert!(switches > 100, "the test forced only {switches} switches");
}

#[test]
fn where_the_protocol_costs_more_every_site_forwards_at_exactly_the_naive_cost() {
    for tau in [0, 100] {
        // ε = 0.01 at a low rate: the protocol would send more words than there are items.
        let cfg = Config::new(4, 200, tau, 0.01, Protocol::Seed).unwrap();
        let stream = adversary("uniform", 4, 200, tau, 1, 6, 5).unwrap();
        let alone = simulate(cfg, &stream, &SimOptions::default()).unwrap();
        assert!(alone.total().words > alone.naive_words, "the protocol alone should cost more here");
        let opts = SimOptions { fallback: Some(FallbackPolicy::adaptive(&cfg)), ..SimOptions::default() };
        let r = simulate(cfg, &stream, &opts).unwrap();
        assert_eq!(r.violations, 0, "{:?}", r.examples);
        assert_eq!(r.total().words, r.naive_words, "tau={tau}");
        assert_eq!(r.site_switches.protocol_items, 0);
        assert!(r.max_root_exact_items > 0);
    }
}

#[test]
fn where_the_protocol_is_cheap_sites_switch_to_it_and_cost_less_than_naive() {
    let cfg = Config::new(4, 1000, 0, 0.1, Protocol::Seed).unwrap();
    let stream = adversary("uniform", 4, 1000, 0, 10, 24, 9).unwrap();
    let opts = SimOptions { fallback: Some(FallbackPolicy::adaptive(&cfg)), ..SimOptions::default() };
    let r = simulate(cfg, &stream, &opts).unwrap();
    assert_eq!(r.violations, 0, "{:?}", r.examples);
    assert!(r.site_switches.to_protocol >= 4, "{:?}", r.site_switches);
    assert!((r.total().words as f64) < 0.6 * r.naive_words as f64, "{} vs {}", r.total().words, r.naive_words);
}

#[test]
fn fallback_messages_round_trip_and_garbage_is_refused() {
    let messages = [
        SiteMessage::Protocol(Message::ItemCount { channel: Channel::Items, item: 9, value: 3 }),
        SiteMessage::Item { item: u64::MAX },
        SiteMessage::StampedItem { stamp: i64::MIN, item: 0 },
        SiteMessage::StartProtocol,
        SiteMessage::StartForwarding,
    ];
    for m in messages {
        let e = Envelope { site: 7, seq: 1 << 40, time: -3, message: m.clone() };
        assert_eq!(Envelope::decode(&e.encode()).unwrap(), e);
        assert_eq!(SiteMessage::decode(&m.encode()).unwrap(), m);
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Envelope>(&json).unwrap(), e);
        let bytes = e.encode();
        for cut in 0..bytes.len() {
            assert!(Envelope::decode(&bytes[..cut]).is_err(), "{m:?} cut at {cut}");
        }
    }
    assert!(SiteMessage::decode(&[20 << 3]).is_err());
    assert!(SiteMessage::decode(&[(16 << 3) | 1, 5]).is_err());
    assert!(SiteMessage::decode(&[]).is_err());
}

#[test]
fn the_root_refuses_bad_input_and_never_answers_wrong() {
    let cfg = Config::new(2, 100, 10, 0.1, Protocol::Seed).unwrap();
    let policy = FallbackPolicy::adaptive(&cfg);
    let mut root = Coordinator::new(cfg, policy);
    let env = |site, seq, time, message| Envelope { site, seq, time, message };
    let item = |stamp, item| SiteMessage::StampedItem { stamp, item };
    root.receive(&env(0, 0, 50, item(45, 1))).unwrap();
    root.receive(&env(0, 1, 52, item(52, 1))).unwrap();
    // Unknown site, replay, reordered, an item older than the tardiness, an unstamped item with
    // tardiness, a protocol message from a forwarding site with no instance, a switch to the
    // mode the site is in: each refused and counted, nothing applied.
    assert!(root.receive(&env(2, 0, 53, item(53, 1))).is_err());
    assert!(root.receive(&env(0, 1, 52, item(52, 1))).is_err());
    assert!(root.receive(&env(0, 2, 51, item(51, 1))).is_err());
    assert!(root.receive(&env(0, 2, 60, item(49, 1))).is_err());
    assert!(root.receive(&env(0, 2, 60, SiteMessage::Item { item: 1 })).is_err());
    let count = SiteMessage::Protocol(Message::Count { channel: Channel::Count, value: 1000 });
    assert!(root.receive(&env(1, 0, 60, count.clone())).is_err());
    assert!(root.receive(&env(1, 0, 60, SiteMessage::StartForwarding)).is_err());
    let refused = root.refused();
    assert_eq!(
        (refused.unknown_site, refused.replayed, refused.reordered, refused.stale_items, refused.out_of_mode),
        (1, 1, 1, 1, 3)
    );
    assert_eq!(root.count(60).unwrap(), 2);
    assert_eq!(root.item_count(1, 60).unwrap(), 2);
    assert_eq!(root.count(146).unwrap(), 1);
    // A gap (message 2 of site 0 never came): the root refuses to answer from then on.
    assert!(root.receive(&env(0, 3, 150, item(150, 4))).is_err());
    assert_eq!(root.refused().gaps, 1);
    assert!(root.count(150).is_err());
    assert!(root.frequent(0.5, 150).is_err());
}

#[test]
fn a_live_pair_of_site_and_root_matches_the_simulator_words() {
    // Drive sites and the root by hand, through the byte encoding, and compare with simulate().
    let cfg = Config::new(3, 300, 0, 0.1, Protocol::Seed).unwrap();
    let policy = FallbackPolicy { period: 60, margin: 0.0, margin_off: 0.0, ..FallbackPolicy::adaptive(&cfg) };
    let stream = adversary("wave", 3, 300, 0, 3, 6, 2).unwrap();
    let opts = SimOptions { fallback: Some(policy), ..SimOptions::default() };
    let r = simulate(cfg, &stream, &opts).unwrap();
    let mut sites: Vec<FallbackSite> = (0..3).map(|s| FallbackSite::new(cfg, policy, s).unwrap()).collect();
    let mut root = Coordinator::new(cfg, policy);
    let (mut words, mut bytes) = (0u64, 0u64);
    let mut feed = |e: Envelope, root: &mut Coordinator| {
        words += e.message.words();
        bytes += e.message.encode().len() as u64;
        root.receive(&Envelope::decode(&e.encode()).unwrap()).unwrap();
    };
    let end = stream.last().unwrap().arrival + cfg.window;
    let mut i = 0;
    for t in stream[0].arrival..=end {
        // As the simulator does: advance the sites that had arrivals or asked to be woken now.
        let mut touched: Vec<bool> = sites.iter().map(|s| s.next_due() == Some(t)).collect();
        while i < stream.len() && stream[i].arrival == t {
            sites[stream[i].site].insert(t, stream[i].stamp, stream[i].item).unwrap();
            touched[stream[i].site] = true;
            i += 1;
        }
        for (s, _) in sites.iter_mut().zip(&touched).filter(|(_, t)| **t) {
            for e in s.advance(t).unwrap() {
                feed(e, &mut root);
            }
        }
    }
    assert_eq!(words, r.total().words);
    assert_eq!(bytes, r.total().bytes);
    assert_eq!(root.count(end).unwrap(), 0);
}
