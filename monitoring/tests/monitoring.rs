//! Monitoring over a sliding window: the four ε guarantees at every sampled time, on
//! adversarial streams and real data, in order and out of order, for both protocols; turning
//! items off and on; the root's answers with no active site; logarithmic cost growth; the
//! message codec and the local counter's error bound.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use saams::hash::{SplitMix64, hash_u64};
use saams_monitoring::sim::{
    Arrival, SimOptions, SimReport, adversary, counting_memory_bound, quantile_blocks_bound, quantile_memory_bound,
    simulate,
};
use saams_monitoring::{Channel, Config, LocalStats, Message, Protocol, QuantileWindow, Root, Site, SlidingCounter};

/// The shared datasets folder, as the build script found it (`build/test_env.rs`); the tests
/// that read it are ignored where it is absent.
fn datasets_dir() -> PathBuf {
    PathBuf::from(env!("SAAMS_DATASETS_DIR"))
}

const ADVERSARIES: [&str; 8] = ["uniform", "burst", "expiry", "distinct", "late", "onoff", "wave", "mixed"];
const PROTOCOLS: [Protocol; 2] = [Protocol::Seed, Protocol::ForwardBackward];

fn run(name: &str, k: usize, w: i64, tau: i64, eps: f64, protocol: Protocol, rate: u64) -> SimReport {
    let cfg = Config::new(k, w, tau, eps, protocol).unwrap();
    let stream = adversary(name, k, w, tau, rate, 5, 11).unwrap();
    simulate(cfg, &stream, &SimOptions::default()).unwrap()
}

#[test]
fn adversarial_streams_meet_every_guarantee_in_order_and_out_of_order() {
    for protocol in PROTOCOLS {
        for name in ADVERSARIES {
            for tau in [0, 100] {
                let r = run(name, 5, 200, tau, 0.1, protocol, 2);
                assert!(r.queries >= 1000);
                assert_eq!(r.violations, 0, "{name} {protocol:?} tau={tau}: {:?}", r.examples);
                assert!(r.total().words > 0);
            }
        }
    }
}

#[test]
fn a_smaller_epsilon_and_more_sites_also_hold() {
    for protocol in PROTOCOLS {
        for (name, tau) in [("mixed", 0), ("late", 150), ("burst", 60), ("expiry", 270), ("onoff", 299)] {
            let r = run(name, 16, 300, tau, 0.03, protocol, 4);
            assert_eq!(r.violations, 0, "{name} {protocol:?} tau={tau}: {:?}", r.examples);
        }
    }
}

/// Real rows as arrivals: (group key, stamp in ms relative to the file's first day, item);
/// groups go to sites round-robin; with τ > 0 each row is delayed by a seeded amount ≤ τ.
fn to_arrivals(mut rows: Vec<(String, i64, u64)>, k: usize, tau: i64) -> Vec<Arrival> {
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    for (g, _, _) in &rows {
        groups.insert(g.clone(), 0);
    }
    for (i, v) in groups.values_mut().enumerate() {
        *v = i % k;
    }
    let mut out: Vec<Arrival> = rows
        .drain(..)
        .enumerate()
        .map(|(i, (g, stamp, item))| {
            let delay = if tau > 0 { (hash_u64(i as u64, 5) % (tau as u64 + 1)) as i64 } else { 0 };
            Arrival { site: groups[&g], stamp, arrival: stamp + delay, item }
        })
        .collect();
    out.sort_by_key(|a| (a.arrival, a.stamp));
    out
}

fn ais_rows() -> Vec<(String, i64, u64)> {
    let path = datasets_dir().join("ais/noaa_marinecadastre_AIS_2022-01-03_sample.csv");
    let text = std::fs::read_to_string(&path).expect("AIS sample");
    let mut rows = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (Ok(mmsi), Some(ts), Ok(lat), Ok(lon)) =
            (f[0].parse::<u64>(), saams::api::time::parse_timestamp(f[1]), f[2].parse::<f64>(), f[3].parse::<f64>())
        else {
            continue;
        };
        rows.push((format!("{}:{}", lat.floor(), lon.floor()), ts % 86_400_000, mmsi));
    }
    rows
}

fn stock_rows() -> Vec<(String, i64, u64)> {
    let mut rows = Vec::new();
    for file in [
        "stocks/tick/future_comex_GC_201312_tick_trade.csv",
        "stocks/tick/forex_oanda_EURUSD_tick_quote.csv",
        "stocks/tick/forex_oanda_NZDUSD_tick_quote.csv",
        "stocks/tick/equity_usa_IBM_tick_trade.csv",
    ] {
        let text = std::fs::read_to_string(datasets_dir().join(file)).expect("stock sample");
        let mut day0 = None;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let (Some(d), Some(t), Ok(p)) =
                (saams::api::time::parse_date(f[0]), saams::api::time::parse_time_of_day(f[1]), f[2].parse::<f64>())
            else {
                continue;
            };
            let d0 = *day0.get_or_insert(d);
            let group = format!("{file}:{}", f.get(4).unwrap_or(&""));
            rows.push((group, (d - d0) * 86_400_000 + t, (p * 100.0).round() as u64));
        }
    }
    rows
}

#[test]
#[cfg_attr(saams_no_datasets, ignore = "needs the shared datasets: set SAAMS_DATASETS")]
fn real_stock_and_ais_data_meet_every_guarantee() {
    let w = 1_800_000; // 30 minutes
    for (label, rows) in [("ais", ais_rows()), ("stocks", stock_rows())] {
        assert!(rows.len() > 50_000, "{label}: {} rows", rows.len());
        let distinct = rows.iter().map(|r| r.2).collect::<std::collections::BTreeSet<u64>>().len() as u64;
        let mut seed_frequent = BTreeMap::new();
        for protocol in PROTOCOLS {
            for tau in [0, w / 2] {
                let k = 8;
                let cfg = Config::new(k, w, tau, 0.05, protocol).unwrap();
                let arrivals = to_arrivals(rows.clone(), k, tau);
                let opts = SimOptions { phi: 0.05, ..SimOptions::default() };
                let r = simulate(cfg, &arrivals, &opts).unwrap();
                assert!(r.queries >= 1000);
                assert_eq!(r.violations, 0, "{label} {protocol:?} tau={tau}: {:?}", r.examples);
                assert!(r.max_window_count > 1000, "{label}: the window is not trivially small");
                let mem_bound = counting_memory_bound(&cfg, r.max_site_window_count);
                assert!(
                    (r.max_site_counting_words as f64) < mem_bound,
                    "{label} {protocol:?} tau={tau}: counting memory {} words vs bound {mem_bound}",
                    r.max_site_counting_words
                );
                println!(
                    "{label} {protocol:?} tau={tau}: quantile memory {} words, counting {}, peak site window {}",
                    r.max_site_quantile_words, r.max_site_counting_words, r.max_site_window_count
                );
                // Packed blocks: below the site's own window even on AIS vessel ids, nearly all
                // distinct within a block (before packing: about 2 words per window item).
                assert!(
                    (r.max_site_quantile_words as u64) < r.max_site_window_count,
                    "{label} {protocol:?} tau={tau}: quantile memory {} words vs site window {}",
                    r.max_site_quantile_words,
                    r.max_site_window_count
                );
                if tau == 0 {
                    let q_bound = quantile_memory_bound(&cfg, r.max_site_window_count, distinct);
                    assert!(
                        (r.max_site_quantile_words as f64) < q_bound,
                        "{label} {protocol:?}: quantile memory {} words vs bound {q_bound}",
                        r.max_site_quantile_words
                    );
                }
                let quantile = r.channel(Channel::Quantiles).words;
                println!("{label} {protocol:?} tau={tau}: quantile words {quantile}, naive {}", r.naive_words);
                if protocol == Protocol::Seed && tau == 0 {
                    // The counting queries cost less than sending every item.
                    let counting = r.channel(Channel::Count).words + r.channel(Channel::Items).words;
                    assert!(counting * 2 < r.naive_words, "{label}: {counting} vs naive {}", r.naive_words);
                }
                if protocol == Protocol::Seed {
                    seed_frequent.insert(tau, r.frequent_words());
                } else {
                    let (seed, fb) = (seed_frequent[&tau], r.frequent_words());
                    println!("{label} tau={tau}: frequent-items words forward/backward {fb}, seed {seed}");
                    if label == "stocks" {
                        // Forward/backward's frequent items (ε/5 + 3ε/10, one word per level or
                        // step) cost about what the seed's ε/24 + 11ε/24 costs on the stock
                        // stream (measured 327k vs 329k words in order, 377k vs 373k at τ = W/2;
                        // the previous per-item step functions cost 1.7–5.9× the seed). On the
                        // AIS sample the seed is cheaper (vessels report at a steady rate, so its
                        // net counts barely move while forward/backward pays for every arrival
                        // and expiry).
                        assert!(
                            (fb as f64) < 1.1 * seed as f64,
                            "{label} tau={tau}: forward/backward FI {fb} words vs seed {seed}"
                        );
                    }
                }
            }
        }
    }
}

/// Drive sites and root step by step with an exact deque-per-site oracle.
struct Harness {
    cfg: Config,
    sites: Vec<Site>,
    root: Root,
    windows: Vec<VecDeque<(i64, u64)>>,
    sent: Vec<Message>,
}

impl Harness {
    fn new(cfg: Config) -> Self {
        Harness {
            cfg,
            sites: (0..cfg.sites).map(|_| Site::new(cfg).unwrap()).collect(),
            root: Root::new(cfg),
            windows: vec![VecDeque::new(); cfg.sites],
            sent: Vec::new(),
        }
    }

    fn step(&mut self, t: i64, arrivals: &[(usize, u64)]) {
        for &(s, item) in arrivals {
            self.sites[s].insert(t, t, item).unwrap();
            self.windows[s].push_back((t, item));
        }
        for (s, site) in self.sites.iter_mut().enumerate() {
            for m in site.advance(t).unwrap() {
                self.root.receive(s, t, &m).unwrap();
                self.sent.push(m);
            }
            while self.windows[s].front().is_some_and(|&(st, _)| st + self.cfg.window <= t) {
                self.windows[s].pop_front();
            }
        }
    }

    fn exact(&self) -> (u64, BTreeMap<u64, u64>) {
        let mut counts = BTreeMap::new();
        let mut total = 0;
        for w in &self.windows {
            for &(_, j) in w {
                *counts.entry(j).or_insert(0) += 1;
                total += 1;
            }
        }
        (total, counts)
    }

    fn check_items(&self, t: i64) {
        let (c, counts) = self.exact();
        let eps = self.cfg.epsilon;
        let est = self.root.count(t) as f64;
        assert!((est - c as f64).abs() <= eps * c as f64 + 1e-9, "t={t}: count {est} vs {c}");
        for j in 0..20u64 {
            let cj = counts.get(&j).copied().unwrap_or(0) as f64;
            let e = self.root.item_count(j, t) as f64;
            assert!((e - cj).abs() <= eps * c as f64 + 1e-9, "t={t}: item {j} estimate {e} vs {cj} (c = {c})");
        }
    }
}

#[test]
fn turning_items_off_and_on_keeps_the_ac_guarantee_and_an_empty_window_answers_zero() {
    for protocol in PROTOCOLS {
        let cfg = Config::new(2, 100, 0, 0.1, protocol).unwrap();
        let mut h = Harness::new(cfg);
        let mut rng = SplitMix64::new(3);
        // Item 1 is heavy on site 0 during [0, 150), absent during [150, 400), heavy again
        // during [400, 550); background items 10..20 on both sites throughout until 600.
        for t in 0..600 {
            let mut arrivals = vec![];
            if t < 150 || (400..550).contains(&t) {
                arrivals.push((0, 1));
                arrivals.push((0, 1));
            }
            for s in 0..2 {
                arrivals.push((s, 10 + rng.next_u64() % 10));
            }
            h.step(t, &arrivals);
            h.check_items(t);
        }
        if protocol == Protocol::Seed {
            let off = h.sent.iter().position(|m| matches!(m, Message::ItemOff { channel: Channel::Items, item: 1 }));
            let off = off.expect("item 1 was turned off while absent");
            let on_again =
                h.sent[off..].iter().any(|m| matches!(m, Message::ItemCount { channel: Channel::Items, item: 1, .. }));
            assert!(on_again, "item 1 was turned on again");
        }
        // Every item expires: with no active site every answer is zero.
        for t in 600..800 {
            h.step(t, &[]);
            h.check_items(t);
        }
        let t = 799;
        assert_eq!(h.exact().0, 0);
        assert_eq!(h.root.count(t), 0, "{protocol:?}");
        assert!(h.root.item_estimates(Channel::Items, t).is_empty(), "{protocol:?}");
        assert!(h.root.frequent(0.1, t).unwrap().is_empty());
        assert_eq!(h.root.quantile(0.5, t).unwrap(), None);
    }
}

#[test]
fn words_and_counting_memory_grow_like_log_n_not_n_when_the_rate_grows_tenfold() {
    for protocol in PROTOCOLS {
        for name in ["wave", "uniform"] {
            let low = run(name, 4, 200, 0, 0.1, protocol, 20);
            let high = run(name, 4, 200, 0, 0.1, protocol, 200);
            assert_eq!(low.violations + high.violations, 0);
            let naive_ratio = high.naive_words as f64 / low.naive_words as f64;
            assert!((9.0..11.0).contains(&naive_ratio));
            check_counting_memory(name, protocol, &low, &high);
            // log(10·N/k)/log(N/k) for N ≈ 8,000 items per window and k = 4 is about 1.3. The
            // counting channels must stay below 2.5; quantile patches saturate at the full summary
            // size (O(1/ε) entries, 2/θ_q times per window), so the total may reach 4 — far from 10.
            for (label, lo, hi, limit) in [
                ("count", low.channel(Channel::Count).words, high.channel(Channel::Count).words, 2.5),
                ("items", low.channel(Channel::Items).words, high.channel(Channel::Items).words, 2.5),
                ("frequent", low.frequent_words(), high.frequent_words(), 2.5),
                ("all", low.total().words, high.total().words, 4.0),
            ] {
                let ratio = hi as f64 / lo as f64;
                println!("{name} {protocol:?} {label}: words {lo} → {hi} (ratio {ratio:.2})");
                assert!(ratio < limit, "{name} {protocol:?} {label}: words {lo} → {hi} (ratio {ratio:.2})");
            }
        }
    }
}

#[test]
fn messages_round_trip_through_the_binary_codec_and_json() {
    let msgs = vec![
        Message::Count { channel: Channel::Count, value: 0 },
        Message::Count { channel: Channel::FrequentTotal, value: u64::MAX },
        Message::ItemCount { channel: Channel::Items, item: 366_748_260, value: 12 },
        Message::ItemOff { channel: Channel::FrequentItems, item: 9 },
        Message::Summary { entries: vec![(1, 5), (16_741, 3), (u64::MAX, 1)] },
        Message::SummaryPatch { entries: vec![(3, 0), (4, 9)] },
        Message::Backward { channel: Channel::Count, step: 3, ticks: vec![-5, 1_380_000_000_000, 1_380_000_000_000] },
        Message::BackwardItems {
            channel: Channel::Items,
            step: 2,
            forward_step: 4,
            items: vec![(2, vec![7]), (5, vec![1, 9, 9])],
        },
        Message::ForwardTick { channel: Channel::FrequentItems, item: 8 },
        Message::Forward { channel: Channel::FrequentTotal, value: 77 },
        Message::ForwardItem { channel: Channel::FrequentItems, item: 1, value: 2 },
    ];
    for m in msgs {
        let bytes = m.encode();
        assert_eq!(Message::decode(&bytes).unwrap(), m);
        assert!(Message::decode(&bytes[..bytes.len() - 1]).is_err(), "{m:?}: truncated bytes must fail");
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Message::decode(&longer).is_err(), "{m:?}: trailing bytes must fail");
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), m);
        assert!(m.words() >= 1);
    }
    assert!(Message::decode(&[0xff]).is_err());
    assert!(Message::decode(&[]).is_err());
}

#[test]
fn bad_parameters_and_inputs_are_errors() {
    assert!(Config::new(0, 100, 0, 0.1, Protocol::Seed).is_err());
    assert!(Config::new(2, 0, 0, 0.1, Protocol::Seed).is_err());
    assert!(Config::new(2, 100, 100, 0.1, Protocol::Seed).is_err());
    assert!(Config::new(2, 100, 0, 1.0, Protocol::Seed).is_err());
    let cfg = Config::new(2, 100, 10, 0.1, Protocol::Seed).unwrap();
    let mut site = Site::new(cfg).unwrap();
    site.insert(50, 45, 1).unwrap();
    assert!(site.insert(60, 30, 1).is_err(), "later than the tardiness");
    assert!(site.insert(60, 61, 1).is_err(), "from the future");
    assert!(site.insert(40, 40, 1).is_err(), "time ran backwards");
    let root = Root::new(cfg);
    assert!(root.frequent(0.01, 0).is_err(), "φ ≤ ε/2");
    assert!(root.quantile(1.5, 0).is_err());
    let bad = [Arrival { site: 0, stamp: 10, arrival: 30, item: 1 }];
    assert!(simulate(cfg, &bad, &SimOptions::default()).is_err());
    let bad = [Arrival { site: 5, stamp: 10, arrival: 10, item: 1 }];
    assert!(simulate(cfg, &bad, &SimOptions::default()).is_err());
}

#[test]
fn the_local_counter_is_within_delta_at_every_cut_with_late_items() {
    for (delta, tau) in [(0.1, 0), (0.05, 40), (0.01, 99)] {
        let w = 100;
        let mut c = SlidingCounter::new(w, tau, delta).unwrap();
        let mut rng = SplitMix64::new(9);
        let mut pending: Vec<i64> = Vec::new();
        let mut stamps: Vec<i64> = Vec::new();
        for now in 0..2000i64 {
            for _ in 0..rng.next_u64() % 20 {
                let late = if tau > 0 { (rng.next_u64() % (tau as u64 + 1)) as i64 } else { 0 };
                pending.push(now + late);
            }
            // Items stamped `s` scheduled to arrive now.
            let mut arriving: Vec<i64> = Vec::new();
            pending.retain(|&a| {
                if a == now {
                    arriving.push(a);
                    false
                } else {
                    true
                }
            });
            for a in arriving {
                let stamp = a - (rng.next_u64() % (tau as u64 + 1)) as i64;
                let stamp = stamp.max(0);
                c.insert(now, stamp).unwrap();
                stamps.push(stamp);
            }
            c.expire(now);
            if now % 7 == 0 {
                for cut in (now - w)..now {
                    let exact = stamps.iter().filter(|&&s| s > cut).count() as f64;
                    let est = c.suffix(cut) as f64;
                    assert!((est - exact).abs() <= delta * exact + 1e-9, "δ={delta} τ={tau} now={now} cut={cut}");
                }
            }
            stamps.retain(|&s| s + w > now);
        }
        assert!(c.buckets() < 2000, "memory stays small: {} buckets", c.buckets());
    }
}

/// The counting part of the site memory of two runs whose rate differs tenfold grows like
/// `log n` and stays below [`counting_memory_bound`].
fn check_counting_memory(name: &str, protocol: Protocol, low: &SimReport, high: &SimReport) {
    let cfg = Config::new(4, 200, 0, 0.1, protocol).unwrap();
    let window_ratio = high.max_site_window_count as f64 / low.max_site_window_count as f64;
    assert!(window_ratio > 8.0, "{name}: the site window grew {window_ratio}×");
    let mem_ratio = high.max_site_counting_words as f64 / low.max_site_counting_words as f64;
    println!(
        "{name} {protocol:?}: counting memory {} → {} words ({mem_ratio:.2}×) while the site window grew {} → {} items",
        low.max_site_counting_words,
        high.max_site_counting_words,
        low.max_site_window_count,
        high.max_site_window_count
    );
    // log₂(2 + 10n)/log₂(2 + n) ≈ 1.33 for n ≈ 1,000; a linear structure would grow ≈ 10×.
    assert!(mem_ratio < 2.0, "{name} {protocol:?}: counting memory grew {mem_ratio:.2}× for a 10× window");
    for r in [low, high] {
        let bound = counting_memory_bound(&cfg, r.max_site_window_count);
        assert!((r.max_site_counting_words as f64) < bound, "{name}: {} vs {bound}", r.max_site_counting_words);
    }
}

#[test]
fn the_counting_memory_of_a_site_with_almost_only_distinct_items_grows_like_log_n() {
    for protocol in PROTOCOLS {
        let low = run("distinct", 4, 200, 0, 0.1, protocol, 20);
        let high = run("distinct", 4, 200, 0, 0.1, protocol, 200);
        assert_eq!(low.violations + high.violations, 0);
        check_counting_memory("distinct", protocol, &low, &high);
    }
}

#[test]
fn item_records_are_within_delta_of_the_site_count_and_rare_items_are_deleted() {
    for tau in [0i64, 40] {
        let (w, dt, di) = (400i64, 0.01, 0.05);
        let mut local = LocalStats::new(w, tau, dt, di).unwrap();
        let mut rng = SplitMix64::new(17);
        let mut window: VecDeque<(i64, u64)> = VecDeque::new();
        let mut pending: Vec<(i64, i64, u64)> = Vec::new();
        let mut max_records = 0;
        let mut next_rare = 1_000u64;
        for now in 0..4000i64 {
            // A heavy item, a few mid items, and a rare item that never repeats.
            for _ in 0..4 {
                let item = match rng.next_u64() % 8 {
                    0..=2 => 1,
                    3 | 4 => 2 + rng.next_u64() % 5,
                    _ => {
                        next_rare += 1;
                        next_rare
                    }
                };
                let delay = if tau > 0 { (rng.next_u64() % (tau as u64 + 1)) as i64 } else { 0 };
                pending.push((now + delay, now, item));
            }
            let (due, later): (Vec<_>, Vec<_>) = pending.iter().partition(|&&(a, _, _)| a == now);
            pending = later;
            for (_, stamp, item) in due {
                local.insert(now, stamp, item).unwrap();
                window.push_back((stamp, item));
            }
            local.advance(now);
            window.retain(|&(s, _)| s + w > now);
            max_records = max_records.max(local.distinct());
            if now % 13 == 0 {
                let c = window.len() as f64;
                let mut exact: BTreeMap<u64, u64> = BTreeMap::new();
                for &(_, j) in &window {
                    *exact.entry(j).or_insert(0) += 1;
                }
                for (&j, &cj) in &exact {
                    let e = local.item(j, now) as f64;
                    assert!((e - cj as f64).abs() <= di * c + 1e-9, "τ={tau} t={now} item {j}: {e} vs {cj} (c={c})");
                }
                for (j, counter) in local.item_counters() {
                    if !exact.contains_key(&j) {
                        assert!(
                            counter.estimate(now) as f64 <= di * c + 1e-9,
                            "τ={tau} t={now} item {j} not in window"
                        );
                    }
                }
            }
        }
        // The window holds ≈ 1,600 items, ≈ 1,000 of them distinct rare items; records of rare
        // items are deleted once about 2/δ_i of the site's items are newer.
        println!("τ={tau}: at most {max_records} item records");
        assert!(max_records < 400, "τ={tau}: {max_records} item records for a window of ≈ 1,600 items");
    }
}

/// Exact ranks `#≤x` and `#<x` of a multiset given as sorted values.
fn exact_ranks(sorted: &[u64], x: u64) -> (u64, u64) {
    (sorted.partition_point(|&v| v <= x) as u64, sorted.partition_point(|&v| v < x) as u64)
}

#[test]
fn the_quantile_window_is_within_delta_of_every_rank_with_late_items_and_bursts() {
    // (δ_q, τ, value domain): few values, many values with late items, nearly all distinct.
    for (delta, tau, domain) in [(0.05, 0i64, 40u64), (0.02, 40, 2_000), (0.1, 99, 1 << 40), (0.015, 0, 1 << 40)] {
        let w = 100i64;
        let mut q = QuantileWindow::new(w, tau, delta).unwrap();
        let mut rng = SplitMix64::new(23);
        let mut pending: Vec<(i64, i64, u64)> = Vec::new();
        let mut window: Vec<(i64, u64)> = Vec::new();
        let mut checked = 0;
        for now in 0..3000i64 {
            // A steady rate with bursts every 250 steps and a silent stretch, so the window
            // count swings and whole blocks expire at once.
            let n = match now % 1000 {
                0..=99 => 0,
                t if t % 250 == 7 => 400,
                _ => rng.next_u64() % 12,
            };
            for _ in 0..n {
                let delay = if tau > 0 { (rng.next_u64() % (tau as u64 + 1)) as i64 } else { 0 };
                pending.push((now + delay, now, rng.next_u64() % domain));
            }
            let (due, later): (Vec<_>, Vec<_>) = pending.iter().partition(|&&(a, _, _)| a == now);
            pending = later;
            q.expire(now);
            for (_, stamp, v) in due {
                q.insert(now, stamp, v).unwrap();
                window.push((stamp, v));
            }
            window.retain(|&(s, _)| s + w > now);
            if now % 7 == 0 {
                let mut sorted: Vec<u64> = window.iter().map(|&(_, v)| v).collect();
                sorted.sort_unstable();
                let c = sorted.len() as f64;
                // R̂₂ steps at the values of `weights`: prefix sums give every rank.
                let weights = q.weights(..);
                let mut prefix = vec![0u64];
                for &(_, wt) in &weights {
                    prefix.push(prefix.last().unwrap() + wt);
                }
                let est = |x: u64, strict: bool| {
                    let i = if strict {
                        weights.partition_point(|&(v, _)| v < x)
                    } else {
                        weights.partition_point(|&(v, _)| v <= x)
                    };
                    prefix[i] as f64 / 2.0
                };
                let mut xs: Vec<u64> = sorted.clone();
                xs.extend(sorted.iter().map(|&v| v.saturating_sub(1)));
                xs.extend([0, u64::MAX]);
                for x in xs {
                    let (le, lt) = exact_ranks(&sorted, x);
                    for (e, truth, strict) in [(est(x, false), le, "≤"), (est(x, true), lt, "<")] {
                        assert!(
                            (e - truth as f64).abs() <= delta * c + 1e-9,
                            "δ={delta} τ={tau} t={now}: #{strict}{x} estimated {e}, true {truth} (c = {c})"
                        );
                    }
                }
                checked += 1;
            }
        }
        assert!(checked > 400);
    }
}

#[test]
fn quantile_memory_grows_like_log_n_on_a_bounded_domain_and_stays_below_its_bound() {
    // A window of ≈ 4,000 and ≈ 40,000 items over 20 values: the blocks hold at most 20
    // entries each, so memory follows the block count, O((1/δ_q)·log n).
    let cfg = Config::new(1, 200, 0, 0.1, Protocol::Seed).unwrap();
    let mut peaks = Vec::new();
    for rate in [20u64, 200] {
        let mut q = QuantileWindow::new(cfg.window, 0, cfg.delta_quantile()).unwrap();
        let mut rng = SplitMix64::new(5);
        let (mut peak, mut peak_blocks) = (0usize, 0usize);
        for now in 0..2000i64 {
            q.expire(now);
            for _ in 0..rate {
                q.insert(now, now, rng.next_u64() % 20).unwrap();
            }
            peak = peak.max(q.memory_words());
            peak_blocks = peak_blocks.max(q.blocks());
        }
        let n = rate * cfg.window as u64;
        let blocks_bound = quantile_blocks_bound(&cfg, n);
        let bound = quantile_memory_bound(&cfg, n, 20);
        println!("rate {rate}: window {n} items, peak {peak} words (bound {bound:.0}), {peak_blocks} blocks");
        assert!((peak_blocks as f64) < blocks_bound, "{peak_blocks} blocks vs bound {blocks_bound}");
        assert!((peak as f64) < bound, "{peak} words vs bound {bound}");
        if rate == 200 {
            assert!(peak < n as usize / 4, "memory {peak} not below a quarter of the window {n}");
        }
        peaks.push(peak);
    }
    let ratio = peaks[1] as f64 / peaks[0] as f64;
    // log₂(2 + 40,000)/log₂(2 + 4,000) ≈ 1.3; a linear structure would grow ≈ 10×.
    assert!(ratio < 2.0, "quantile memory grew {ratio:.2}× for a 10× window");
}

#[test]
fn quantile_memory_on_all_distinct_values_stays_well_below_the_window() {
    // 10⁵ items in the window, every value distinct (fixed-point decimals, as prices or
    // coordinates are: an odd multiplier permutes [0, 2²¹), so no value repeats over the run).
    // The blocks hold one entry per item, but packed (value gaps as varints) they cost about
    // 3 bytes each instead of 16.
    let cfg = Config::new(1, 200, 0, 0.1, Protocol::Seed).unwrap();
    let delta = cfg.delta_quantile();
    let mut q = QuantileWindow::new(cfg.window, 0, delta).unwrap();
    let (rate, mut i) = (500u64, 0u64);
    let mut window: std::collections::VecDeque<(i64, u64)> = std::collections::VecDeque::new();
    let (mut peak, mut peak_window, mut checked) = (0usize, 0usize, 0);
    for now in 0..800i64 {
        q.expire(now);
        while window.front().is_some_and(|&(s, _)| s + cfg.window <= now) {
            window.pop_front();
        }
        for _ in 0..rate {
            let v = i.wrapping_mul(611_953) & ((1 << 21) - 1);
            i += 1;
            q.insert(now, now, v).unwrap();
            window.push_back((now, v));
        }
        peak = peak.max(q.memory_words());
        peak_window = peak_window.max(window.len());
        if now % 50 == 49 {
            let mut sorted: Vec<u64> = window.iter().map(|&(_, v)| v).collect();
            sorted.sort_unstable();
            let c = sorted.len() as f64;
            for k in 0..=40u64 {
                let x = sorted[((sorted.len() - 1) as u64 * k / 40) as usize];
                let (le, _) = exact_ranks(&sorted, x);
                let est = q.rank2(x) as f64 / 2.0;
                assert!((est - le as f64).abs() <= delta * c, "t={now}: #≤{x} estimated {est}, true {le} (c = {c})");
            }
            checked += 1;
        }
    }
    assert_eq!(peak_window, 100_000);
    assert!(checked >= 16);
    println!("all-distinct window of {peak_window} items: quantile structure peak {peak} words");
    assert!(peak * 2 < peak_window, "quantile memory {peak} words is not below half the window {peak_window}");
}
