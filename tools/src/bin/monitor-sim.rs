//! `monitor-sim`: k sites → one root over a time-based sliding window, on the shared real data
//! (stock ticks: sites = instrument × exchange groups; AIS: sites = 1°×1° cells) or on
//! adversarial streams, checking the root's four answers against the exact window at ≥ 1,000
//! sampled times and counting what the protocol sent.
//!
//! ```text
//! monitor-sim --data "$SAAMS_DATASETS/stocks" --sites 16 --window 1h --epsilon 0.01 \
//!             --tardiness 0.5W --protocol forward-backward
//! monitor-sim --adversary burst --sites 8 --window 1000 --epsilon 0.05
//! ```
//!
//! Time units: milliseconds for real data, abstract ticks for adversarial streams. `--window`
//! and `--tardiness` take a number of units, a duration (`250ms`, `90s`, `10m`, `1h`), or for
//! the tardiness a fraction of the window (`0.5W`). The last line is
//! `monitor summary queries=… violations=… words=… bound=… naive_words=… periodic_words=… bytes=…`
//! (totals over the run; `bound` is [`saams_monitoring::sim::bound_per_window`], constant 1,
//! times the number of windows).
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use saams::api::time::{parse_date, parse_time_of_day, parse_timestamp};
use saams::hash::hash_u64;
use saams_monitoring::fallback::FallbackPolicy;
use saams_monitoring::sim::{Arrival, SimOptions, SimReport, adversary, simulate};
use saams_monitoring::{Channel, Config, Protocol};

/// Command-line options.
#[derive(Parser, Debug)]
#[command(name = "monitor-sim", about = "Sliding-window distributed monitoring simulator")]
struct Args {
    /// A CSV file or a directory of the shared stock / AIS files (without it: --adversary).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Adversarial stream when --data is absent: uniform, burst, expiry, distinct, late, onoff,
    /// wave, mixed.
    #[arg(long, default_value = "mixed")]
    adversary: String,
    /// Number of sites k.
    #[arg(long, default_value_t = 4)]
    sites: usize,
    /// Window W (default 1h for data, 1000 ticks for adversaries).
    #[arg(long)]
    window: Option<String>,
    /// Error ε of every query.
    #[arg(long, default_value_t = 0.1)]
    epsilon: f64,
    /// Frequent-items threshold φ.
    #[arg(long, default_value_t = 0.1)]
    phi: f64,
    /// Tardiness τ < W (units, a duration, or a fraction like 0.5W).
    #[arg(long, default_value = "0")]
    tardiness: String,
    /// Protocol for counts and frequent items: seed | forward-backward.
    #[arg(long, default_value = "seed")]
    protocol: String,
    /// Item field: stock price (cents) | volume; AIS mmsi | type | sog (tenths of a knot).
    #[arg(long)]
    field: Option<String>,
    /// Evenly spaced query times (at least 1000 are checked).
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Adversary: items per time unit.
    #[arg(long, default_value_t = 2)]
    rate: u64,
    /// Adversary: stream length in windows.
    #[arg(long, default_value_t = 10)]
    windows: i64,
    /// Seed of the adversary and of the late-arrival delays.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Count half of frequent items as a fraction of ε (default: 1/24 for seed, 1/4 for
    /// forward-backward; the item half gets 1/2 minus it).
    #[arg(long)]
    fi_count_fraction: Option<f64>,
    /// Period Δ of the periodic baseline (default ε·W).
    #[arg(long)]
    delta: Option<String>,
    /// Sites forward their items whenever that costs fewer words than the protocol (on), or
    /// always run the protocol (off).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    fallback: String,
    /// The fallback's margin m_on: a site starts the protocol when it cost 1 + m_on times less
    /// than forwarding over a full period.
    #[arg(long, default_value_t = 2.0)]
    fallback_margin: f64,
    /// The fallback's margin m_off: a site leaves the protocol when it cost 1 + m_off times more
    /// than forwarding over a full period.
    #[arg(long, default_value_t = 0.25)]
    fallback_margin_off: f64,
    /// The fallback's period (default W).
    #[arg(long)]
    fallback_period: Option<String>,
}

fn parse_duration(s: &str, window: Option<i64>) -> Result<i64, String> {
    let s = s.trim();
    let bad = || format!("cannot read {s:?} as a duration (e.g. 500, 250ms, 90s, 10m, 1h, 0.5W)");
    if let Some(f) = s.strip_suffix('W') {
        let w = window.ok_or_else(|| format!("{s:?}: a fraction of W is only allowed for the tardiness"))?;
        let f: f64 = f.parse().map_err(|_| bad())?;
        if !(0.0..1.0).contains(&f) {
            return Err(format!("{s:?}: the fraction of W must be in [0, 1)"));
        }
        return Ok((f * w as f64) as i64);
    }
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1000)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60_000)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3_600_000)
    } else {
        (s, 1)
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    if !(n >= 0.0 && n.is_finite()) {
        return Err(bad());
    }
    Ok((n * mult as f64) as i64)
}

/// Split one CSV line, honouring double quotes.
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// One row of real data before sites are assigned: group key, stamp (ms), item.
struct Row {
    group: String,
    stamp: i64,
    item: u64,
}

fn csv_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let entries = std::fs::read_dir(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    for entry in entries {
        let p = entry.map_err(|e| format!("read {}: {e}", path.display()))?.path();
        if p.is_dir() {
            out.extend(csv_files(&p)?);
        } else if p.extension().is_some_and(|x| x == "csv") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn read_file(path: &Path, field: Option<&str>, rows: &mut Vec<Row>) -> Result<&'static str, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header = split_csv(lines.next().ok_or_else(|| format!("{}: empty file", path.display()))?);
    let col = |name: &str| header.iter().position(|h| h == name);
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if let (Some(mmsi), Some(time), Some(lat), Some(lon)) = (col("MMSI"), col("BaseDateTime"), col("LAT"), col("LON")) {
        let field = field.unwrap_or("mmsi");
        let fcol = match field {
            "mmsi" => mmsi,
            "type" => col("VesselType").ok_or("no VesselType column")?,
            "sog" => col("SOG").ok_or("no SOG column")?,
            other => return Err(format!("field {other:?} does not apply to AIS (mmsi | type | sog)")),
        };
        let mut day0: Option<i64> = None;
        for (i, line) in lines.enumerate() {
            let f = split_csv(line);
            let get = |c: usize| f.get(c).map(String::as_str).unwrap_or("");
            let Some(ts) = parse_timestamp(get(time)) else {
                return Err(format!("{} row {}: bad BaseDateTime {:?}", path.display(), i + 2, get(time)));
            };
            let d0 = *day0.get_or_insert(ts.div_euclid(86_400_000) * 86_400_000);
            let (Ok(la), Ok(lo)) = (get(lat).parse::<f64>(), get(lon).parse::<f64>()) else { continue };
            let raw = get(fcol);
            let item = match field {
                "sog" => match raw.parse::<f64>() {
                    Ok(v) if (0.0..102.3).contains(&v) => (v * 10.0).round() as u64,
                    _ => continue,
                },
                _ => raw.parse::<u64>().unwrap_or(0),
            };
            let group = format!("ais:{}:{}", la.floor() as i64, lo.floor() as i64);
            rows.push(Row { group, stamp: ts - d0, item });
        }
        return Ok("ais");
    }
    if let (Some(date), Some(time), Some(price)) = (col("Date"), col("Time"), col("Price")) {
        let field = field.unwrap_or("price");
        let fcol = match field {
            "price" => price,
            "volume" => col("Volume").ok_or("no Volume column")?,
            other => return Err(format!("field {other:?} does not apply to stock data (price | volume)")),
        };
        let exchange = col("Exchange");
        let mut day0: Option<i64> = None;
        for (i, line) in lines.enumerate() {
            let f = split_csv(line);
            let get = |c: usize| f.get(c).map(String::as_str).unwrap_or("");
            let (Some(d), Some(tod)) = (parse_date(get(date)), parse_time_of_day(get(time))) else {
                return Err(format!("{} row {}: bad Date/Time {:?} {:?}", path.display(), i + 2, get(date), get(time)));
            };
            let d0 = *day0.get_or_insert(d);
            let Ok(v) = get(fcol).parse::<f64>() else { continue };
            if !(v >= 0.0 && v.is_finite()) {
                continue;
            }
            let item = if field == "price" { (v * 100.0).round() as u64 } else { v.round() as u64 };
            let group = match exchange {
                Some(e) => format!("{name}:{}", get(e)),
                None => name.clone(),
            };
            rows.push(Row { group, stamp: (d - d0) * 86_400_000 + tod, item });
        }
        return Ok("stock");
    }
    Err(format!("{}: neither a stock (Date,Time,Price) nor an AIS (MMSI,BaseDateTime,LAT,LON) file", path.display()))
}

/// Real data as arrivals: each file's days are aligned to its own first date (so instruments
/// recorded on different days replay side by side); groups are assigned to sites round-robin in
/// sorted order; with τ > 0 each row arrives a seeded pseudo-random delay in `[0, τ]` late.
fn load(path: &Path, field: Option<&str>, k: usize, tau: i64, seed: u64) -> Result<(Vec<Arrival>, usize), String> {
    let mut rows = Vec::new();
    for f in csv_files(path)? {
        read_file(&f, field, &mut rows)?;
    }
    if rows.is_empty() {
        return Err(format!("{}: no rows", path.display()));
    }
    let mut groups: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        groups.insert(&r.group, 0);
    }
    for (i, v) in groups.values_mut().enumerate() {
        *v = i % k;
    }
    let n_groups = groups.len();
    let mut arrivals: Vec<Arrival> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let delay = if tau > 0 { (hash_u64(i as u64, seed) % (tau as u64 + 1)) as i64 } else { 0 };
            Arrival { site: groups[r.group.as_str()], stamp: r.stamp, arrival: r.stamp + delay, item: r.item }
        })
        .collect();
    arrivals.sort_by_key(|a| (a.arrival, a.stamp));
    Ok((arrivals, n_groups))
}

fn run(args: Args) -> Result<(), String> {
    let protocol = Protocol::parse(&args.protocol).map_err(|e| e.to_string())?;
    let default_window = if args.data.is_some() { "1h" } else { "1000" };
    let window = parse_duration(args.window.as_deref().unwrap_or(default_window), None)?;
    let tau = parse_duration(&args.tardiness, Some(window))?;
    let mut cfg = Config::new(args.sites, window, tau, args.epsilon, protocol).map_err(|e| e.to_string())?;
    if let Some(f) = args.fi_count_fraction {
        cfg.frequent_count_epsilon = f * args.epsilon;
        cfg.validate().map_err(|e| e.to_string())?;
    }
    let (arrivals, source) = match &args.data {
        Some(path) => {
            let (a, groups) = load(path, args.field.as_deref(), args.sites, tau, args.seed)?;
            (a, format!("{} ({groups} site groups)", path.display()))
        }
        None => {
            let a = adversary(&args.adversary, args.sites, window, tau, args.rate, args.windows, args.seed)
                .map_err(|e| e.to_string())?;
            (a, format!("adversary {}", args.adversary))
        }
    };
    let delta = args.delta.as_deref().map(|d| parse_duration(d, None)).transpose()?;
    let fallback = if args.fallback == "on" {
        let mut policy = FallbackPolicy::adaptive(&cfg);
        policy.margin = args.fallback_margin;
        policy.margin_off = args.fallback_margin_off;
        if let Some(p) = args.fallback_period.as_deref() {
            policy.period = parse_duration(p, None)?;
        }
        policy.validate(&cfg).map_err(|e| e.to_string())?;
        Some(policy)
    } else {
        None
    };
    let opts = SimOptions {
        queries: args.queries.max(1000),
        phi: args.phi,
        periodic_delta: delta,
        fallback,
        ..SimOptions::default()
    };
    let r = simulate(cfg, &arrivals, &opts).map_err(|e| e.to_string())?;
    report(&cfg, args.phi, &source, &r);
    Ok(())
}

/// Prints the run's `monitor` lines: the run, each channel, per window, violations, memory and
/// the summary.
fn report(cfg: &Config, phi: f64, source: &str, r: &SimReport) {
    let total = r.total();
    let per = |x: f64| x / r.windows.max(1e-9);
    // The seed's approximate-counting / frequent-items term alone: (k/ε)·log₂(2 + N/k)·W/(W − τ).
    let k = cfg.sites as f64;
    let bound_items =
        (k / cfg.epsilon) * (2.0 + r.n_per_window / k).log2() * cfg.window as f64 / (cfg.window - cfg.tardiness) as f64;
    println!(
        "monitor run source={source} protocol={} k={} W={} tau={} eps={} fi_count_eps={} phi={} items={} windows={:.2} \
         n_per_window={:.0} max_window_count={} max_site_memory_words={}",
        cfg.protocol.name(),
        cfg.sites,
        cfg.window,
        cfg.tardiness,
        cfg.epsilon,
        cfg.frequent_count_epsilon,
        phi,
        r.items,
        r.windows,
        r.n_per_window,
        r.max_window_count,
        r.max_site_memory_words
    );
    for ch in Channel::ALL {
        let c = r.channel(ch);
        println!(
            "monitor channel={} messages={} words={} bytes={} words_per_window={:.1}",
            ch.name(),
            c.messages,
            c.words,
            c.bytes,
            per(c.words as f64)
        );
    }
    for (name, c) in [("forward", r.forward), ("switches", r.switches)] {
        println!(
            "monitor channel={name} messages={} words={} bytes={} words_per_window={:.1}",
            c.messages,
            c.words,
            c.bytes,
            per(c.words as f64)
        );
    }
    let s = r.site_switches;
    println!(
        "monitor fallback to_protocol={} to_forwarding={} forwarded_items={} protocol_items={} \
         protocol_share={:.3} max_root_exact_items={}",
        s.to_protocol,
        s.to_forwarding,
        s.forwarded_items,
        s.protocol_items,
        s.protocol_items as f64 / (s.forwarded_items + s.protocol_items).max(1) as f64,
        r.max_root_exact_items
    );
    println!(
        "monitor per_window words={:.1} count={:.1} items={:.1} frequent={:.1} quantiles={:.1} forward={:.1} \
         switches={:.1} bound={:.1} bound_items={:.1} naive={:.1} periodic={:.1} violations_by_query={:?}",
        per(total.words as f64),
        per(r.channel(Channel::Count).words as f64),
        per(r.channel(Channel::Items).words as f64),
        per(r.frequent_words() as f64),
        per(r.channel(Channel::Quantiles).words as f64),
        per(r.forward.words as f64),
        per(r.switches.words as f64),
        per(r.bound),
        bound_items,
        per(r.naive_words as f64),
        per(r.periodic_words as f64),
        r.violations_by_query
    );
    for v in &r.examples {
        println!("monitor violation time={} query={} {}", v.time, v.query, v.detail);
    }
    println!(
        "monitor memory max_site_words={} counting_words={} quantile_words={} max_site_window={} max_window={} \
         counting_bound={:.0} counting_parts=total:{},items:{},schedule:{},senders:{} \
         quantile_parts=window:{},sender:{}",
        r.max_site_memory_words,
        r.max_site_counting_words,
        r.max_site_quantile_words,
        r.max_site_window_count,
        r.max_window_count,
        saams_monitoring::sim::counting_memory_bound(cfg, r.max_site_window_count),
        r.max_counting_parts.local.total,
        r.max_counting_parts.local.items,
        r.max_counting_parts.local.schedule,
        r.max_counting_parts.senders,
        r.max_quantile_parts.quantile_window,
        r.max_quantile_parts.quantile_sender,
    );
    println!(
        "monitor summary queries={} violations={} words={} bound={:.0} naive_words={} periodic_words={} bytes={}",
        r.queries, r.violations, total.words, r.bound, r.naive_words, r.periodic_words, total.bytes
    );
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("monitor-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
