//! Figure 11 across the continuum (`federated.tsv`, `fig11-federated.png`): the bytes edge devices
//! ship to the cloud job with synopses against the raw tuples, per device count, stream rate,
//! workload and shipping period.
//!
//! Each device is the edge runtime's own window logic ([`DeviceWindows`], what `saams-edge` runs):
//! it holds its share of the streams (stream `i` on device `i mod D`; the AIS vessels by a hash of
//! their id), is the only reader of its streams (`saams-edge --sole-reader`: their order-dependent
//! synopses, the paper workload's DFT, are kept whole on it) and at each period's close ships per
//! update group the smaller of its raw values and its partials or whole states. The `-resident`
//! rows' devices keep their groups resident (`saams-edge --resident`, [`DeviceWindows::resident`])
//! and ship per window and group the query view, the raw values or the whole state as the same
//! byte budget chooses (`saams_jobs::edge::budget`, called from `DeviceWindows::close`: the very
//! code `saams-edge` runs, not a copy; a window's last record names the window the device moved
//! on to, [`DeviceWindows::push_moving_on`], as `saams-edge`'s do); the TSV counts each form (`view_groups`, `raw_groups`,
//! `whole_groups`, adding up to `groups_shipped`, the groups in the records). So the bytes are the
//! records `saams-edge` produces, counted without a broker (CI has none when the experiments
//! run). The network side — the same devices as processes in their own network namespaces over
//! shaped links, bytes from the links' counters, `--resident` too — is `scripts/edge-net.sh` and
//! `scripts/edge-net-run.sh` (docs/figures.md).
//!
//! Rates: the generator gives about one tuple a second per stream; a denser stream is the same
//! tuples with event time divided by the rate (`rate` tuples a second). The paper's setting (§6,
//! the stock data): the median instrument has 9.6×10³ ticks a session and the synopses answer
//! continuous queries over it, so its shipping unit is one session's ticks per stream: here a
//! 1 h period at 2.67 tuples/s (9 600 tuples per stream and period).
//!
//! A wall-clock period (`wall-1s`, `wall-10s`) ships what arrived during it; with the devices
//! replaying at the stream's own rate that is the tuples of the same span of event time, so it is
//! measured as that period of event time at that rate.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use saams::api::Tuple;
use saams::api::request::parse_requests;
use saams_datasets::{Format, GeneratorSpec, LineContext};
use saams_jobs::edge::device::{DeviceCounts, DeviceWindows};
use saams_jobs::edge::shipment::{Body, Shipment};
use saams_operators::Plan;
use saams_operators::plan::SnapshotStore;

use crate::plots::chart;
use crate::requests::{federated_requests, per_stream_requests};
use crate::runner::{Runner, write};

/// The paper's landmark shipping unit: one session's ticks of the median instrument.
const PAPER_TUPLES_PER_SESSION: f64 = 9_600.0;
/// The paper's best ratio across the continuum, the target at its setting.
const PAPER_RATIO: f64 = 215.0;

/// Devices keep no snapshots (the cloud job does).
struct NoSnapshots;

impl SnapshotStore for NoSnapshots {
    fn load(&self, file: &str) -> Result<Vec<u8>, String> {
        Err(format!("{file}: the experiment's devices load no snapshots"))
    }
    fn save(&self, file: &str, _: &[u8]) -> Result<(), String> {
        Err(format!("{file}: the experiment's devices save no snapshots"))
    }
    fn check(&self, file: &str) -> Result<(), String> {
        Err(format!("{file}: the experiment's devices keep no snapshots"))
    }
}

/// One row of the figure.
struct Setting<'a> {
    /// `paper` (the paper's setting) or `sweep`, with `-resident` when the devices keep their
    /// groups resident and ship query views (`saams-edge --resident`).
    kind: &'a str,
    data: &'a str,
    workload: &'a str,
    requests: &'a str,
    devices: usize,
    rate: f64,
    /// `window-5s`, `wall-1s`, …
    period: String,
    period_ms: i64,
}

impl<'a> Setting<'a> {
    /// A row of the sweep: the generator's streams on 3 devices at `rate` tuples a second,
    /// shipped every `period` (its name and ms).
    fn sweep(kind: &'a str, (workload, requests): (&'a str, &'a str), rate: f64, period: (&str, i64)) -> Self {
        let (period, period_ms) = (period.0.to_string(), period.1);
        Setting { kind, data: "generator", workload, requests, devices: 3, rate, period, period_ms }
    }
}

/// What the devices of one setting shipped.
#[derive(Default)]
struct Shipped {
    counts: DeviceCounts,
    stream_windows: usize,
    /// The groups in the records the devices shipped, whatever their form (a window's group
    /// each): for resident devices, what their view, raw and whole counts add up to.
    groups_shipped: u64,
    /// Per kind: the states kept whole on the devices at the end (how many, their bytes as
    /// shipped): what a whole group's shipment is made of.
    whole_by_kind: std::collections::BTreeMap<&'static str, (u64, u64)>,
}

/// Run `setting`'s devices over `tuples` (event time already at the setting's rate).
fn ship(setting: &Setting, tuples: &[(usize, Tuple)]) -> Result<Shipped, String> {
    let plan = Plan::build(&parse_requests(setting.requests), 1, setting.period_ms, Arc::new(NoSnapshots));
    let resident = setting.kind.ends_with("-resident");
    let mut devices: Vec<DeviceWindows> = (0..setting.devices)
        .map(|d| DeviceWindows::new(&format!("device{d}")))
        .map(|d| if resident { d.resident() } else { d.sole_reader() })
        .collect();
    let (mut stream_windows, mut groups_shipped) = (HashSet::new(), 0);
    for (site, t) in tuples {
        let device = &mut devices[site % setting.devices];
        stream_windows.insert((*site, plan.window_of(t.time_ms.unwrap_or(0).max(0))));
        groups_shipped += groups_in(&device.push_moving_on(&plan, t));
    }
    let mut total = DeviceCounts::default();
    let mut whole_by_kind = std::collections::BTreeMap::new();
    for mut d in devices {
        groups_shipped += groups_in(&d.close(&plan));
        for (kind, (n, bytes)) in d.whole_state_bytes() {
            let e: &mut (u64, u64) = whole_by_kind.entry(kind).or_default();
            e.0 += n;
            e.1 += bytes;
        }
        total += d.counts;
    }
    if total.late > 0 {
        return Err(format!(
            "{} {}: {} tuples late on a device (input out of order)",
            setting.workload, setting.period, total.late
        ));
    }
    Ok(Shipped { counts: total, stream_windows: stream_windows.len(), groups_shipped, whole_by_kind })
}

/// The groups `shipments` carry, each a window's group of one device in whatever form.
fn groups_in(shipments: &[Shipment]) -> u64 {
    shipments.iter().map(|s| if let Body::Data { groups, .. } = &s.body { groups.len() as u64 } else { 0 }).sum()
}

/// The generator's `streams` stock streams, `per_stream` tuples each, at `rate` tuples a second
/// per stream, tagged with their stream's index.
fn generated(streams: usize, per_stream: u64, rate: f64) -> Result<Vec<(usize, Tuple)>, String> {
    let spec = GeneratorSpec::parse(&format!("stocks:{streams}:{per_stream}")).map_err(|e| e.0)?;
    let index: std::collections::HashMap<String, usize> = (0..streams).map(|i| (spec.stream_id(i), i)).collect();
    Ok(spec
        .interleaved(0, 1)
        .map(|mut t| {
            t.time_ms = t.time_ms.map(|ms| (ms as f64 / rate) as i64);
            (index.get(t.stream_id.as_str()).copied().unwrap_or(0), t)
        })
        .collect())
}

/// The AIS sample's reports, tagged with a hash of their vessel (devices split by vessel).
fn ais(file: &Path, limit: usize) -> Result<Vec<(usize, Tuple)>, String> {
    let name = file.display().to_string();
    let reader = std::io::BufReader::new(std::fs::File::open(file).map_err(|e| format!("{name}: {e}"))?);
    let mut lines = reader.lines();
    let header = lines.next().transpose().map_err(|e| format!("{name}: {e}"))?.unwrap_or_default();
    let ctx = LineContext::new(Format::AisCsv, &name, Some(&header)).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (n, line) in lines.enumerate() {
        let line = line.map_err(|e| format!("{name}: {e}"))?;
        if let Ok(Some(t)) = ctx.parse_line(n as u64 + 2, &line) {
            let site = saams::hash::hash_bytes(t.stream_id.as_bytes(), 0xA15) as usize;
            out.push((site, t));
            if out.len() >= limit {
                break;
            }
        }
    }
    Ok(out)
}

fn row(tsv: &mut String, s: &Setting, shipped: &Shipped, streams: usize) -> f64 {
    let c = &shipped.counts;
    let ratio = if c.shipped_bytes > 0 { c.raw_bytes as f64 / c.shipped_bytes as f64 } else { 0.0 };
    let per_window = c.tuples as f64 / shipped.stream_windows.max(1) as f64;
    let target = if s.kind.starts_with("paper") { format!(">= {PAPER_RATIO}") } else { ">= 1".into() };
    // The forms the byte budget chose for resident groups; other devices' groups take no budget.
    let forms = if s.kind.ends_with("-resident") {
        format!("{}\t{}\t{}\t{}", c.view_groups, c.resident_raw_groups, c.whole_groups, shipped.groups_shipped)
    } else {
        "-\t-\t-\t-".into()
    };
    let _ = writeln!(
        tsv,
        "federated\t{}\t{}\t{}\t{}\t{streams}\t{:.2}\t{}\t{}\t{per_window:.1}\t{}\t{}\t{forms}\t{}\t{}\t-\t{ratio:.2}\t{target}",
        s.kind,
        s.data,
        s.workload,
        s.devices,
        s.rate,
        s.period,
        c.tuples,
        c.windows,
        c.partial_windows,
        c.raw_bytes,
        c.shipped_bytes
    );
    ratio
}

const HEADER: &str = "experiment\tsetting\tdata\tworkload\tdevices\tstreams\ttuples_per_s_per_stream\tperiod\ttuples\ttuples_per_stream_and_period\tshipments\tpartial_shipments\tview_groups\traw_groups\twhole_groups\tgroups_shipped\traw_bytes\tshipped_bytes\tlink_bytes\traw_over_shipped\ttarget\n";

/// The figure: the paper's setting on 2–5 devices, then the sweep over rates and periods on 3.
pub fn federated(r: &Runner, quick: bool, datasets: &Path) -> Result<(), String> {
    let (streams_paper, budget) = if quick { (20, 120_000u64) } else { (100, 1_000_000u64) };
    let workloads = [("CM+HLL", federated_requests(100)), ("CM+HLL+DFT", per_stream_requests(100))];
    let mut tsv = String::from(HEADER);
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut worst = f64::MAX;
    // The paper's setting: one session's median ticks per stream and 1 h period.
    let paper_rate = PAPER_TUPLES_PER_SESSION / 3600.0;
    let tuples = generated(streams_paper, PAPER_TUPLES_PER_SESSION as u64, paper_rate)?;
    let paper_runs =
        workloads.iter().map(|(w, r)| ("paper", w, r)).chain([("paper-resident", &workloads[1].0, &workloads[1].1)]);
    for (kind, workload, requests) in paper_runs {
        for devices in 2..=5 {
            let s = Setting {
                kind,
                data: "generator",
                workload,
                requests,
                devices,
                rate: paper_rate,
                period: "window-1h".into(),
                period_ms: 3_600_000,
            };
            let shipped = ship(&s, &tuples)?;
            let ratio = row(&mut tsv, &s, &shipped, streams_paper);
            println!("federated: {kind} setting {workload} on {devices} devices: raw/shipped {ratio:.1}");
            let c = &shipped.counts;
            let per_stream = |bytes: u64| bytes as f64 / shipped.stream_windows.max(1) as f64;
            let kinds: Vec<String> = shipped
                .whole_by_kind
                .iter()
                .map(|(kind, (n, bytes))| format!("{kind} {:.0} B", *bytes as f64 / (*n).max(1) as f64))
                .collect();
            println!(
                "federated:   per stream and period: raw {:.0} B, shipped {:.0} B ({} whole groups, {} view groups, {} resident groups raw; a whole state: {})",
                per_stream(c.raw_bytes),
                per_stream(c.shipped_bytes),
                c.whole_groups,
                c.view_groups,
                c.resident_raw_groups,
                if kinds.is_empty() { "none".to_string() } else { kinds.join(", ") }
            );
        }
    }
    // The sweep: 3 devices, each rate and period.
    let periods: [(&str, i64); 6] = [
        ("window-1s", 1_000),
        ("window-5s", 5_000),
        ("window-60s", 60_000),
        ("window-1h", 3_600_000),
        ("wall-1s", 1_000),
        ("wall-10s", 10_000),
    ];
    let mut resident_worst = f64::MAX;
    let sweeps =
        workloads.iter().map(|(w, r)| ("sweep", w, r)).chain([("sweep-resident", &workloads[1].0, &workloads[1].1)]);
    for (kind, workload, requests) in sweeps {
        let mut pts = Vec::new();
        for (rate, streams) in [(1.0, 100usize), (10.0, 20), (100.0, 10)] {
            let tuples = generated(streams, budget / streams as u64, rate)?;
            for &(period, period_ms) in &periods {
                let s = Setting::sweep(kind, (workload, requests.as_str()), rate, (period, period_ms));
                let shipped = ship(&s, &tuples)?;
                let ratio = row(&mut tsv, &s, &shipped, streams);
                if kind == "sweep" {
                    worst = worst.min(ratio);
                } else {
                    resident_worst = resident_worst.min(ratio);
                }
                if period.starts_with("window") {
                    pts.push((shipped.counts.tuples as f64 / shipped.stream_windows.max(1) as f64, ratio));
                }
            }
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let how = if kind == "sweep" { "" } else { ", resident (byte budget)" };
        series.push((format!("{workload} per stream, 3 devices{how}"), pts));
    }
    ais_rows(&mut tsv, datasets, budget as usize)?;
    println!("federated: smallest raw/shipped over the sweep {worst:.2} (never below 1 by construction)");
    println!(
        "federated: smallest raw/shipped of resident devices over the sweep {resident_worst:.2} (per window and group the view, the raw values or the whole state, as the byte budget chooses)"
    );
    if worst < 1.0 || resident_worst < 1.0 {
        return Err(format!(
            "federated: the devices shipped more than the raw tuples somewhere (raw/shipped {worst:.3}, resident {resident_worst:.3})"
        ));
    }
    write(&r.dir.join("federated.tsv"), &tsv)?;
    chart(
        &r.dir.join("fig11-federated.png"),
        "Federated: raw bytes / bytes shipped by the edge devices",
        "tuples per stream and shipping period (log)",
        "raw / shipped (log)",
        &series,
        true,
    )
}

/// The AIS sample by vessel on 3 devices (dataset-wide synopses), or a visible skip.
fn ais_rows(tsv: &mut String, datasets: &Path, limit: usize) -> Result<(), String> {
    let file = datasets.join("ais/noaa_marinecadastre_AIS_2022-01-03_sample.csv");
    let requests_file = Path::new("datasets/requests/ais-workload.json");
    if !file.is_file() || !requests_file.is_file() {
        println!("federated: AIS rows skipped: {} or {} absent", file.display(), requests_file.display());
        let _ = writeln!(tsv, "# AIS rows skipped: {} absent ($SAAMS_DATASETS)", file.display());
        return Ok(());
    }
    let requests = std::fs::read_to_string(requests_file).map_err(|e| format!("{}: {e}", requests_file.display()))?;
    let tuples = ais(&file, limit)?;
    for (period, period_ms) in [("window-60s", 60_000), ("window-1h", 3_600_000)] {
        let s = Setting {
            kind: "sweep",
            data: "ais-by-vessel",
            workload: "ais-workload",
            requests: &requests,
            devices: 3,
            rate: 0.0,
            period: period.into(),
            period_ms,
        };
        let shipped = ship(&s, &tuples)?;
        let ratio = row(tsv, &s, &shipped, 0);
        println!("federated: AIS by vessel {period}: raw/shipped {ratio:.1}");
    }
    Ok(())
}

/// `--netns`: 2–5 `saams-edge` processes in their own network namespaces behind 1 Mbit/s, 50 ms
/// links (`scripts/edge-net-run.sh`, which fails unless the cloud job's answers equal the raw
/// run), one row per device count appended to `federated.tsv` with the links' transmitted bytes;
/// then the same devices `--resident` (rows `netns-resident-…`, with the forms their byte
/// budgets chose).
pub fn netns_rows(r: &Runner, brokers: &str) -> Result<(), String> {
    let path = r.dir.join("federated.tsv");
    let mut tsv = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    for resident in [false, true] {
        for devices in 2..=5usize {
            netns_row(&mut tsv, brokers, devices, resident)?;
        }
    }
    write(&path, &tsv)
}

/// One `--netns` row: `devices` devices (`resident` or not) over shaped links.
fn netns_row(tsv: &mut String, brokers: &str, devices: usize, resident: bool) -> Result<(), String> {
    let (streams, per_stream) = (10usize, 3000u64);
    let mut cmd = std::process::Command::new("scripts/edge-net-run.sh");
    cmd.args(["--devices", &devices.to_string(), "--broker", brokers, "--streams", &streams.to_string()]).args([
        "--tuples",
        &per_stream.to_string(),
        "--window",
        "600s",
        "--rate",
        "1mbit",
        "--delay",
        "50ms",
    ]);
    if resident {
        cmd.arg("--resident");
    }
    let out = cmd.output().map_err(|e| format!("scripts/edge-net-run.sh: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("scripts/edge-net-run.sh --devices {devices}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    // Columns: device link windows shipped_bytes raw_bytes link_tx_bytes … ms_per_shipment_link
    // ms_per_shipment_loopback view_groups resident_raw_groups whole_groups.
    let rows: Vec<Vec<&str>> = text.lines().filter(|l| l.starts_with("dev")).map(|l| l.split('\t').collect()).collect();
    let sum = |k: usize| rows.iter().filter_map(|c| c.get(k)?.parse::<f64>().ok()).sum::<f64>();
    let (windows, shipped, raw, link) = (sum(2), sum(3), sum(4), sum(5));
    let lag = sum(9) / rows.len().max(1) as f64;
    let ratio = if shipped > 0.0 { raw / shipped } else { 0.0 };
    let (kind, forms) = if resident {
        ("netns-resident-1mbit-50ms", format!("{}\t{}\t{}\t-", sum(11), sum(12), sum(13)))
    } else {
        ("netns-1mbit-50ms", "-\t-\t-\t-".to_string())
    };
    let _ = writeln!(
        tsv,
        "federated\t{kind}\tgenerator\tCM+HLL\t{devices}\t{streams}\t1.00\twindow-600s\t{}\t-\t{windows}\t-\t{forms}\t{raw:.0}\t{shipped:.0}\t{link:.0}\t{ratio:.2}\t>= 1 (answers equal the raw run; {lag:.0} ms per shipment)",
        streams as u64 * per_stream
    );
    println!(
        "federated: {kind}: {devices} devices in namespaces: raw/shipped {ratio:.2}, link bytes {link:.0}, {lag:.0} ms per shipment"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The resident sweep's rows at one tuple a second per stream and 1 s and 5 s windows (30
    /// streams of 300 tuples on 3 devices), each as the TSV has it, by column name.
    fn slow_resident_rows() -> Vec<std::collections::HashMap<String, String>> {
        let requests = per_stream_requests(100);
        let tuples = generated(30, 300, 1.0).expect("the generator's tuples");
        let mut tsv = String::new();
        for (period, period_ms) in [("window-1s", 1_000), ("window-5s", 5_000)] {
            let s = Setting::sweep("sweep-resident", ("CM+HLL+DFT", &requests), 1.0, (period, period_ms));
            row(&mut tsv, &s, &ship(&s, &tuples).expect("the devices ship"), 30);
        }
        let names: Vec<&str> = HEADER.trim_end().split('\t').collect();
        tsv.lines()
            .map(|l| names.iter().map(|n| n.to_string()).zip(l.split('\t').map(String::from)).collect())
            .collect()
    }

    fn number(row: &std::collections::HashMap<String, String>, column: &str) -> u64 {
        row[column].parse().unwrap_or_else(|_| panic!("{column}: {:?} is not a count", row[column]))
    }

    #[test]
    fn resident_devices_ship_no_more_than_raw_at_one_tuple_a_second() {
        for r in slow_resident_rows() {
            let (raw, shipped) = (number(&r, "raw_bytes"), number(&r, "shipped_bytes"));
            assert!(shipped > 0 && shipped <= raw, "{}: shipped {shipped} B of {raw} B raw", r["period"]);
        }
    }

    #[test]
    fn resident_forms_add_up_to_the_groups_shipped() {
        let rows = slow_resident_rows();
        for r in &rows {
            let forms = number(r, "view_groups") + number(r, "raw_groups") + number(r, "whole_groups");
            assert_eq!(forms, number(r, "groups_shipped"), "{}: view + raw + whole", r["period"]);
        }
        // Both kinds of choice happen in these rows: raw values, and a summary (view or whole).
        assert!(rows.iter().any(|r| number(r, "raw_groups") > 0), "no group shipped raw");
        assert!(rows.iter().any(|r| number(r, "view_groups") + number(r, "whole_groups") > 0), "no summary shipped");
    }
}
