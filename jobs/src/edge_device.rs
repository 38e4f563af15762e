//! `saams-edge`: the device side of a federated job. It reads its own tuples (files, standard
//! input), learns the synopses from the cloud job's requests (the same request file, or the
//! request topic read from its start), keeps the open job window's values per update group and
//! at each window's close ships the smaller of its partials and its raw values
//! ([`crate::edge::device`]) to the partials topic, one Kafka partition per device. It says hello when
//! it starts and goodbye when its input ends, and prints one summary line with its byte counts.
//!
//! Why apart from [`crate::edge`]: the cloud job's HTTP side reads the devices table there, and
//! the device's Kafka wiring here uses [`crate::kafka`], which uses the HTTP side's hub.

use std::io::BufRead;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use saams::api::Tuple;
use saams::api::request::{parse_requests, read_log};
use saams_datasets::{Format, LineContext};
use saams_operators::Plan;

use crate::control::intake::Intake;
use crate::duration::parse_duration_ms;
use crate::edge::control::Applied;
use crate::edge::device::{DeviceCounts, DeviceWindows};
use crate::edge::monitor_site::{DeviceSites, SiteCounts};
use crate::edge::shipment::{Body, Shipment};
use crate::edge::snapshots::{ShippedSnapshots, loads_kept_whole};
use crate::edge_follow::Follower;
use crate::edge_ship::{Batches, Shipper};
use crate::kafka::{KafkaBroadcastSource, KafkaOptions, parse_setting};

/// The command line of `saams-edge`.
#[derive(Clone, Debug, clap::Parser)]
#[command(name = "saams-edge", about = "Maintain partial synopses next to the data and ship them to a saams job")]
pub struct EdgeCli {
    /// This device's id (in every shipment, `GET /devices` and the answers' `devices`).
    #[arg(long)]
    pub device: String,
    /// Kafka bootstrap brokers `host:port[,…]`.
    #[arg(long)]
    pub brokers: String,
    /// The topic the cloud job reads partials from (`saams --partials-topic`).
    #[arg(long = "partials-topic")]
    pub partials_topic: String,
    /// The cloud job's request file (the same as its `--requests`).
    #[arg(long, conflicts_with_all = ["request_topic", "follow"])]
    pub requests: Option<String>,
    /// The cloud job's request topic, read from its start to its end at the start.
    #[arg(long = "request-topic", conflicts_with = "follow")]
    pub request_topic: Option<String>,
    /// Follow the cloud job's control topic (the partials topic's name with `.control`): its
    /// requests, and the live ones at their fences while both run. The device waits for the
    /// job before each window it reads.
    #[arg(long)]
    pub follow: bool,
    /// With --follow: how long the device waits for the cloud job (its start, or its routing
    /// of the window the device is about to read) before it gives up with an error; 0 waits
    /// for ever.
    #[arg(long = "cloud-timeout", default_value = "5m")]
    pub cloud_timeout: String,
    /// Tuple files, or `-` for standard input (repeatable; default: standard input).
    #[arg(long)]
    pub data: Vec<String>,
    /// Their format (json, stock-txt, stock-csv, ais-csv, piraeus-csv).
    #[arg(long, default_value = "json")]
    pub format: Format,
    /// The cloud job's `--window`: the windows shipped.
    #[arg(long, default_value = "60s")]
    pub window: String,
    /// Also ship the open window's values so far every so often of wall-clock time (e.g. 1s),
    /// each a shipment of its own; without it, once per window.
    #[arg(long = "ship-every")]
    pub ship_every: Option<String>,
    /// Keep the device's state in this file (written before every shipment), so a device killed
    /// and restarted over the same input ships every tuple exactly once, `--ship-every` included:
    /// it skips what it shipped and ships the batch it was producing again, the same. With
    /// --sole-reader, --resident, --follow or monitored streams it also keeps the states kept
    /// here and its monitoring sites' (as the window being shipped opened), and reads that
    /// window again.
    #[arg(long)]
    pub state: Option<std::path::PathBuf>,
    /// No other device reads the streams this one reads: keep their per-stream synopses whole
    /// here (DFT and the other order-dependent kinds included) and ship their states instead of
    /// raw values where smaller. The cloud refuses whole states of a stream another device ships.
    #[arg(long = "sole-reader")]
    pub sole_reader: bool,
    /// As `--sole-reader`, and keep those groups *resident*: their states never leave the
    /// device, which ships per window only their query views (what the continuous queries
    /// read, ~200 B per stream for the paper workload); the cloud answers continuous queries
    /// from them and refuses ad-hoc ones, SAVE and LOAD with 409 naming this device.
    #[arg(long)]
    pub resident: bool,
    /// With --follow: once the input has been quiet this long, an ad-hoc query or SAVE of a
    /// synopsis resident here waiting at a fence the device has not reached is answered: the
    /// device takes the fence as its watermark (it ships its open window and its position
    /// there; an older tuple read later is late). Default: it waits for a tuple at or after the
    /// fence, or its input's end.
    #[arg(long = "idle-after", requires = "follow")]
    pub idle_after: Option<String>,
    /// The partials topic's partition this device ships to (default: a hash of its id). Devices
    /// on one partition share its watermark: give each its own.
    #[arg(long)]
    pub partition: Option<i32>,
    /// The sites of the monitored streams (`synopsisID` 14) this device runs, each taken mod
    /// a monitor's number of sites (repeatable; default: all of them). It ships their messages,
    /// never the items; give each device its own sites.
    #[arg(long = "monitor-site")]
    pub monitor_sites: Vec<usize>,
    /// Partitions of the partials topic if this device creates it.
    #[arg(long, default_value_t = 4)]
    pub partitions: i32,
    /// A librdkafka setting `key=value` (repeatable).
    #[arg(short = 'X', value_parser = parse_setting)]
    pub extra: Vec<(String, String)>,
}

/// What a device did, for its summary line.
#[derive(Clone, Copy, Debug)]
pub struct EdgeSummary {
    /// Its counters.
    pub counts: DeviceCounts,
    /// With `--follow`: what following the cloud job took.
    pub follow: FollowCounts,
    /// What its monitoring sites took and sent.
    pub sites: SiteCounts,
}

/// What following the cloud job's control topic took (`--follow`).
#[derive(Clone, Copy, Debug, Default)]
pub struct FollowCounts {
    /// Positions shipped (one per window read), and their bytes (not in `shipped_bytes`).
    pub positions: u64,
    /// See `positions`.
    pub position_bytes: u64,
    /// Live requests applied at their fences.
    pub requests: u64,
    /// Ad-hoc queries and SAVEs of synopses resident here answered ([`crate::edge::asks`]).
    pub answers: u64,
    /// Fences taken as the watermark of a quiet input, for the asks waiting there
    /// (`--idle-after`).
    pub idle_fences: u64,
}

impl EdgeSummary {
    /// `edge device=… tuples=… windows=… partial_windows=… raw_windows=… shipped_bytes=…
    /// raw_bytes=… whole_groups=… view_groups=… resident_raw_groups=… late=… positions=… position_bytes=… live_requests=…
    /// answers=… script_answers=… idle_fences=… monitor_items=… monitor_refused=… monitor_messages=… monitor_words=… monitor_bytes=…
    /// monitor_shipped_bytes=… monitor_raw_bytes=…`.
    pub fn line(&self, device: &str) -> String {
        let (c, f, m) = (&self.counts, &self.follow, &self.sites);
        format!(
            "edge device={device} tuples={} windows={} partial_windows={} raw_windows={} shipped_bytes={} raw_bytes={} whole_groups={} view_groups={} resident_raw_groups={} late={} positions={} position_bytes={} live_requests={} answers={} script_answers={} idle_fences={} monitor_items={} monitor_refused={} monitor_messages={} monitor_words={} monitor_bytes={} monitor_shipped_bytes={} monitor_raw_bytes={}",
            c.tuples,
            c.windows,
            c.partial_windows,
            c.raw_windows,
            c.shipped_bytes,
            c.raw_bytes,
            c.whole_groups,
            c.view_groups,
            c.resident_raw_groups,
            c.late,
            f.positions,
            f.position_bytes,
            f.requests,
            f.answers,
            c.script_answers,
            f.idle_fences,
            m.items,
            m.refused,
            m.messages,
            m.words,
            m.bytes,
            m.shipped_bytes,
            m.raw_bytes
        )
    }
}

/// A device following the cloud job ([`crate::edge_follow`]): the window it has reached and
/// the next live request to apply.
struct Following {
    follower: Follower,
    /// Where the snapshot files of the control records go (the plan's store).
    store: Arc<ShippedSnapshots>,
    reached: Option<u64>,
    next_at: u64,
    /// A device restarted from its state file answers only asks at or after the window it
    /// resumed in: those before were answered before the kill, and its states are that window's.
    answers_from: u64,
    counts: FollowCounts,
}

impl Following {
    /// Before the device reads `tuple`: [`Following::advance`] to its window.
    fn before(&mut self, ctx: Ctx<'_>, ship: (&Shipper, &mut Batches), tuple: &Tuple) -> Result<(), String> {
        let window = ctx.0.window_of(tuple.time_ms.unwrap_or(0).max(0));
        self.advance(ctx, ship, window)
    }

    /// The device is about to read `window`: if it is a new window, ship the open one (read
    /// with the plan of its window), ship this device's position, wait until the cloud job has
    /// reached it, and apply the live requests whose fences have come.
    fn advance(
        &mut self,
        (plan, windows, sites): Ctx<'_>,
        (shipper, batches): (&Shipper, &mut Batches),
        window: u64,
    ) -> Result<(), String> {
        if self.reached.is_some_and(|w| window <= w) {
            return Ok(());
        }
        close_before((plan, windows, sites), (shipper, batches), window)?;
        let position = Body::Data { window, raw_bytes: 0, groups: Vec::new(), through: None };
        let position = Shipment { device: shipper.device.clone(), seq: 0, body: position };
        self.counts.positions += 1;
        self.counts.position_bytes += position.encode().len() as u64;
        shipper.ship(&position)?;
        for r in self.follower.reached(window, self.next_at)? {
            self.apply((plan, windows, sites), shipper, &r)?;
        }
        self.reached = Some(window);
        Ok(())
    }

    /// Apply the live request `r` at its fence, and answer its asks of synopses resident here
    /// from the state there ([`crate::edge::asks`]).
    fn apply(&mut self, (plan, windows, sites): Ctx<'_>, shipper: &Shipper, r: &Applied) -> Result<(), String> {
        let (requests, notes) = Intake::new(false).vet(read_log(&r.text));
        notes.iter().for_each(|n| eprintln!("saams-edge: {n}"));
        self.store.add(&r.snapshots)?;
        let asks = plan.extend(&requests, r.fence, None).asks;
        windows.install_restored(plan)?;
        sites.install_restored(plan)?;
        for ask in asks.iter().filter(|_| r.fence >= self.answers_from) {
            if let Some(body) = windows.answer(plan, ask, r.fence, &self.store) {
                shipper.ship(&Shipment { device: shipper.device.clone(), seq: 0, body })?;
                self.counts.answers += 1;
            }
        }
        self.next_at = r.at + 1;
        self.counts.requests += 1;
        Ok(())
    }

    /// The live requests heard and not applied yet, up to the last that asks this device (an
    /// ad-hoc query or SAVE of a synopsis resident here); none when none asks it.
    fn up_to_last_ask(&self, plan: &Plan, windows: &DeviceWindows) -> Vec<Applied> {
        let mut heard = self.follower.heard(self.next_at);
        let asks = heard.iter().rposition(|r| windows.answers_text(plan, &r.text)).map_or(0, |i| i + 1);
        heard.truncate(asks);
        heard
    }

    /// The input has been quiet for `--idle-after`: when an ask waits for this device at a
    /// fence it has not reached, take that fence as its watermark — ship the open window, refuse
    /// older values from now on ([`DeviceWindows::hold_below`]) — and apply the live requests
    /// heard up to the ask (fences follow the order requests are agreed in, so theirs are at or
    /// before it), answering it. No position is shipped: the cloud's input stays at the windows
    /// the device read, so the answer reaches the client at once; the next tuple (of the fence's
    /// window or later) ships the position as usual, and the requests agreed after the ask apply
    /// then.
    fn idle(&mut self, (plan, windows, sites): Ctx<'_>, ship: (&Shipper, &mut Batches)) -> Result<(), String> {
        let waiting = self.up_to_last_ask(plan, windows);
        let Some(ask) = waiting.iter().position(|r| windows.answers_text(plan, &r.text)) else { return Ok(()) };
        let fence = waiting[ask].fence;
        if self.reached.is_some_and(|w| fence <= w) {
            return Ok(());
        }
        close_before((plan, windows, sites), (ship.0, &mut *ship.1), fence)?;
        windows.hold_below(fence);
        ship.1.hold_below(fence, windows.read_count())?;
        self.counts.idle_fences += 1;
        for r in &waiting[..=ask] {
            self.apply((&mut *plan, &mut *windows, &mut *sites), ship.0, r)?;
        }
        Ok(())
    }

    /// The input ended and its last window is shipped: advance to `through` (the window after
    /// it) as to any window — ship the position, wait for the cloud job to route it and for the
    /// live requests it had agreed then, one round trip — so an ask agreed after the device's
    /// last window but before its end is heard; then answer the asks heard, whatever their
    /// fences (no value of their windows can come any more), applying the live requests before
    /// them in order, from the device's final state.
    fn finish(
        &mut self,
        (plan, windows, sites): Ctx<'_>,
        ship: (&Shipper, &mut Batches),
        through: u64,
    ) -> Result<(), String> {
        if self.reached.is_some() {
            self.advance((plan, windows, sites), (ship.0, &mut *ship.1), through)?;
        }
        for r in self.up_to_last_ask(plan, windows) {
            self.apply((&mut *plan, &mut *windows, &mut *sites), ship.0, &r)?;
        }
        Ok(())
    }
}

/// Ship the open window if `window` is after it (read with the plan of its window), closing it
/// with the sites' messages sent before `window`.
fn close_before(
    (plan, windows, sites): Ctx<'_>,
    (shipper, batches): (&Shipper, &mut Batches),
    window: u64,
) -> Result<(), String> {
    if windows.open_end(plan).is_some_and(|end| window >= end) {
        let upto = windows.read_count();
        let watermark = i64::try_from(window).unwrap_or(i64::MAX);
        let ships = close_window(plan, (windows, sites), &shipper.device, watermark);
        batches.send((shipper, windows), ships, (upto, false))?;
    }
    Ok(())
}

/// What a following device changes as it advances: its plan, its windows and its sites.
type Ctx<'a> = (&'a mut Plan, &'a mut DeviceWindows, &'a mut DeviceSites);

/// The request text: the file, or the request topic from its start to its end.
fn request_text(cli: &EdgeCli, opts: &KafkaOptions) -> Result<String, String> {
    if let Some(file) = &cli.requests {
        return std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"));
    }
    let Some(topic) = &cli.request_topic else { return Err("--requests FILE or --request-topic T is needed".into()) };
    let mut source = KafkaBroadcastSource::new(opts, topic, 0).map_err(|e| e.to_string())?;
    let mut text = String::new();
    while !source.at_end() {
        for r in source.poll_batch(1024, Duration::from_millis(100)).map_err(|e| e.to_string())? {
            text.push_str(&String::from_utf8_lossy(&r.payload));
            text.push('\n');
        }
    }
    Ok(text)
}

/// A line of the device's input, read on a thread of its own (so the device ships on time
/// while its input is quiet), with the parser of its file.
enum Line {
    /// A line: its input's parser, the input's index (its unit), the line number, the text.
    Tuple(Arc<LineContext>, u64, u64, String),
    Failed(String),
}

/// Read the inputs, one after the other, on a thread that hands their lines over.
fn read_lines(cli: &EdgeCli) -> Result<Receiver<Line>, String> {
    let inputs = if cli.data.is_empty() { vec!["-".to_string()] } else { cli.data.clone() };
    let mut contexts = Vec::with_capacity(inputs.len());
    for input in &inputs {
        contexts.push(Arc::new(LineContext::new(cli.format, input, None).map_err(|e| e.to_string())?));
    }
    let (tx, rx) = sync_channel(4096);
    std::thread::Builder::new()
        .name("saams-edge-input".into())
        .spawn(move || {
            for (unit, (input, ctx)) in inputs.iter().zip(contexts).enumerate() {
                let reader: Box<dyn BufRead> = if input == "-" {
                    Box::new(std::io::stdin().lock())
                } else {
                    match std::fs::File::open(input) {
                        Ok(f) => Box::new(std::io::BufReader::new(f)),
                        Err(e) => return drop(tx.send(Line::Failed(format!("{input}: {e}")))),
                    }
                };
                for (n, line) in reader.lines().enumerate() {
                    let sent = match line {
                        Ok(line) => tx.send(Line::Tuple(ctx.clone(), unit as u64, n as u64 + 1, line)),
                        Err(e) => return drop(tx.send(Line::Failed(format!("{input}: {e}")))),
                    };
                    if sent.is_err() {
                        return;
                    }
                }
            }
        })
        .map_err(|e| format!("cannot start the input thread: {e}"))?;
    Ok(rx)
}

/// With `--follow`, the device's follower of the cloud job's control topic (waiting for the
/// job up to `--cloud-timeout`, `0`: for ever).
fn following(cli: &EdgeCli, opts: &KafkaOptions, store: &Arc<ShippedSnapshots>) -> Result<Option<Following>, String> {
    // Checked with or without `--follow`: a bad value is an error either way.
    let cloud_timeout = match parse_duration_ms(&cli.cloud_timeout)? {
        0 => None,
        ms => Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
    };
    if !cli.follow {
        return Ok(None);
    }
    Ok(Some(Following {
        follower: Follower::start(opts, &cli.partials_topic, cloud_timeout)?,
        store: store.clone(),
        reached: None,
        next_at: 0,
        answers_from: 0,
        counts: FollowCounts::default(),
    }))
}

/// The device's plan, from the request script it reads or (`--follow`) the cloud's start
/// record, with the snapshots that record ships; the follower, if it follows; the script.
fn device_plan(cli: &EdgeCli, opts: &KafkaOptions, window_ms: i64) -> Result<DevicePlan, String> {
    let store = Arc::new(ShippedSnapshots::default());
    let following = following(cli, opts, &store)?;
    let script = match &following {
        Some(f) => {
            let (script, snapshots) = f.follower.script()?;
            store.add(&snapshots)?;
            script
        }
        None => request_text(cli, opts)?,
    };
    let plan = Plan::build(&parse_requests(&script), 1, window_ms, store.clone());
    // The script's synopses registered from the start, as the cloud's registry has them. A
    // device joins no registry dataflow, so its plan took every synopsis as live until the
    // first live request (`--follow`) registered one: from then on only that one was, and the
    // states kept whole or resident here froze at its fence (their views with them).
    for ((_, syn), at, diff) in plan.registry_updates() {
        plan.live.apply(syn, at, diff);
    }
    Ok((plan, following, script, store))
}

/// A device's plan, its follower (`--follow`), its request script, and its plan's store.
type DevicePlan = (Plan, Option<Following>, String, Arc<ShippedSnapshots>);

/// Run a device until its input ends.
///
/// # Errors
/// Bad flags, unreadable inputs or requests, brokers that do not take the shipments.
pub fn run(cli: &EdgeCli) -> Result<EdgeSummary, String> {
    let mut opts = KafkaOptions::new(cli.brokers.clone(), format!("saams-edge-{}", cli.device));
    opts.extra = cli.extra.clone();
    let window_ms = parse_duration_ms(&cli.window)?;
    let (plan, following, script, store) = device_plan(cli, &opts, window_ms)?;
    let shipper = Shipper::open(&opts, (&cli.partials_topic, cli.partitions, cli.partition), &cli.device)?;
    shipper.ship(&Shipment { device: cli.device.clone(), seq: 0, body: Body::Hello { resident: cli.resident } })?;
    // The sites' state, like the states kept whole, is made of tuples a restarted device skips:
    // recorded too (a following device may be sent a monitor live).
    let keeps = cli.sole_reader || cli.resident || cli.follow || !plan.monitor.monitored.is_empty();
    let (batches, mut windows) = Batches::open(cli.state.as_deref(), &cli.device, keeps)?;
    let mut sites = DeviceSites::new(cli.monitor_sites.clone()).restored(windows.take_restored_sites());
    sites.install_restored(&plan)?;
    if cli.resident {
        windows = windows.resident();
    } else if cli.sole_reader {
        windows = windows.sole_reader();
    }
    windows.install_restored(&plan)?;
    let mut following = following;
    if let (Some(f), Some((resumed_in, _))) = (following.as_mut(), windows.open_seq()) {
        f.answers_from = resumed_in;
    }
    if following.is_none() {
        loads_kept_whole(&script, &plan, &windows)?;
    }
    let every = optional_duration(cli.ship_every.as_deref())?;
    let idle_after = optional_duration(cli.idle_after.as_deref())?;
    let mut device = Device { plan, following, shipper, batches, windows, sites, store };
    let lines = read_lines(cli)?;
    let mut next_ship = every.map(|e| Instant::now() + e);
    let mut last_line = Instant::now();
    loop {
        let mut wait = next_ship.map_or(Duration::from_secs(3600), |t| t.saturating_duration_since(Instant::now()));
        if idle_after.is_some() {
            wait = wait.min(IDLE_LOOK);
        }
        match lines.recv_timeout(wait) {
            Ok(Line::Tuple(ctx, unit, n, line)) => {
                last_line = Instant::now();
                match ctx.parse_line(n, &line) {
                    Ok(Some(_)) if device.batches.skip > 0 => device.batches.skip -= 1,
                    Ok(Some(tuple)) => device.take(&tuple, ((unit << 40) | n, &cli.device))?,
                    Ok(None) => {}
                    Err(e) => eprintln!("saams-edge: {e}"),
                }
            }
            Ok(Line::Failed(e)) => return Err(e),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        // Due whether the input is quiet or busy.
        if next_ship.is_some_and(|t| Instant::now() >= t) && !device.batches.replaying {
            let upto = device.windows.read_count();
            let ships = device.windows.ship_open(&device.plan);
            device.batches.send((&device.shipper, &device.windows), ships, (upto, true))?;
            next_ship = every.map(|e| Instant::now() + e);
        }
        if idle_after.is_some_and(|quiet| last_line.elapsed() >= quiet)
            && let Some(f) = device.following.as_mut()
        {
            f.idle((&mut device.plan, &mut device.windows, &mut device.sites), (&device.shipper, &mut device.batches))?;
        }
    }
    device.end(&cli.device, window_ms)
}

/// How often a device with `--idle-after` looks whether an ask waits for it.
const IDLE_LOOK: Duration = Duration::from_millis(100);

/// A duration flag's value, if given (at least 1 ms).
fn optional_duration(flag: Option<&str>) -> Result<Option<Duration>, String> {
    match flag {
        Some(d) => Ok(Some(Duration::from_millis(u64::try_from(parse_duration_ms(d)?).unwrap_or(0).max(1)))),
        None => Ok(None),
    }
}

/// A running device: its plan, its follower of the cloud job, where it ships, its batches, its
/// windows and its monitoring sites.
struct Device {
    plan: Plan,
    following: Option<Following>,
    shipper: Shipper,
    batches: Batches,
    windows: DeviceWindows,
    sites: DeviceSites,
    /// The plan's store: the states its SAVEs took, shipped with their answers.
    store: Arc<ShippedSnapshots>,
}

impl Device {
    /// Take one tuple (`at`: its unit and line, and this device's id).
    fn take(&mut self, tuple: &Tuple, (seq, device): (u64, &str)) -> Result<(), String> {
        self.batches.before_tuple(&self.shipper, (&self.plan, &mut self.windows))?;
        self.hold_again()?;
        if let Some(f) = self.following.as_mut() {
            let ctx = (&mut self.plan, &mut self.windows, &mut self.sites);
            f.before(ctx, (&self.shipper, &mut self.batches), tuple)?;
        }
        let upto = self.windows.read_count();
        let ships = push(&self.plan, (&mut self.windows, &mut self.sites), tuple, (seq, device));
        self.batches.send((&self.shipper, &self.windows), ships, (upto, false))
    }

    /// A restarted device that took an idle fence before the kill ([`Batches::hold_due`]) has
    /// read again the tuples it had read then: close the windows before the fence (the batch
    /// shipped then, again) and hold below it, as it did.
    fn hold_again(&mut self) -> Result<(), String> {
        let Some(fence) = self.batches.hold_due(self.windows.read_count()) else { return Ok(()) };
        let ctx = (&mut self.plan, &mut self.windows, &mut self.sites);
        close_before(ctx, (&self.shipper, &mut self.batches), fence)?;
        // Recorded already: every batch from here on carries it.
        self.windows.hold_below(fence);
        Ok(())
    }

    /// The input ended: ship the last window, answer the asks heard (`--follow`), say goodbye.
    fn end(mut self, device: &str, window_ms: i64) -> Result<EdgeSummary, String> {
        self.batches.before_tuple(&self.shipper, (&self.plan, &mut self.windows))?;
        self.hold_again()?;
        let upto = self.windows.read_count();
        let open_end = self.windows.open_end(&self.plan).unwrap_or(0);
        let last = close_window(&self.plan, (&mut self.windows, &mut self.sites), device, i64::MAX);
        // The sites' last messages (expiries) may fall in windows after the last item's.
        let through = last.iter().fold(open_end, |end, s| match s.body {
            Body::Data { window, .. } => end.max(window.saturating_add(window_ms as u64)),
            _ => end,
        });
        self.batches.send((&self.shipper, &self.windows), last, (upto, false))?;
        if let Some(f) = self.following.as_mut() {
            let ctx = (&mut self.plan, &mut self.windows, &mut self.sites);
            f.finish(ctx, (&self.shipper, &mut self.batches), through)?;
        }
        // The script's ad-hoc queries and SAVEs of synopses resident here (`edge::asks`).
        let answers = self.windows.end_answers(&self.plan, &self.store);
        self.windows.counts.script_answers += answers.len() as u64;
        for body in answers {
            self.shipper.ship(&Shipment { device: device.to_string(), seq: 0, body })?;
        }
        self.shipper.ship(&Shipment { device: device.to_string(), seq: 0, body: Body::Goodbye { through } })?;
        let follow = self.following.map_or_else(FollowCounts::default, |f| {
            if f.follower.unreadable() > 0 {
                eprintln!(
                    "saams-edge: {} records of the control topic were not control records",
                    f.follower.unreadable()
                );
            }
            f.counts
        });
        Ok(EdgeSummary { counts: self.windows.counts, follow, sites: self.sites.counts })
    }
}

/// Take one tuple (`seq`: its unit and line, [`crate::edge::monitor_site`]): its values to the
/// open window and the monitored streams' sites. When it opens a later window, the shipments
/// of the window it closed, then the sites' messages sent before the new one, the last of them
/// naming the new window ([`DeviceWindows::moved_on`]).
fn push(
    plan: &Plan,
    (windows, sites): (&mut DeviceWindows, &mut DeviceSites),
    t: &Tuple,
    (seq, device): (u64, &str),
) -> Vec<Shipment> {
    let (open, late) = (windows.open_seq(), windows.counts.late);
    let mut ships = windows.push(plan, t);
    if windows.counts.late > late {
        return ships;
    }
    let Some((now, _)) = windows.open_seq() else { return ships };
    if open.is_some_and(|(w, _)| w != now) {
        let watermark = i64::try_from(now).unwrap_or(i64::MAX);
        if !sites.is_idle() {
            let more = sites.ship(plan, device, watermark, (&ships, open));
            ships.extend(more);
        }
        record_sites(plan, (windows, sites), watermark);
        if let Some(added) = windows.moved_on(&mut ships, now) {
            sites.counts.shipped_bytes += added;
            sites.counts.raw_bytes += added;
        }
    }
    sites.push(plan, t, (seq, now));
    ships
}

/// Close the open window: its shipments, then the sites' messages sent before `watermark`
/// (`i64::MAX`: the end of the input, every message still due).
fn close_window(
    plan: &Plan,
    (windows, sites): (&mut DeviceWindows, &mut DeviceSites),
    device: &str,
    watermark: i64,
) -> Vec<Shipment> {
    let open = windows.open_seq();
    let mut ships = windows.close(plan);
    let more = sites.ship(plan, device, watermark, (&ships, open));
    ships.extend(more);
    record_sites(plan, (windows, sites), watermark);
    ships
}

/// The sites were advanced to `watermark`, the start of the next window read: with a state
/// file, their copies there are what that window's batches record ([`crate::edge::site_state`]).
/// None at the end of the input (no window opens after it).
fn record_sites(plan: &Plan, (windows, sites): (&mut DeviceWindows, &DeviceSites), watermark: i64) {
    if windows.keeps_points() && watermark != i64::MAX {
        windows.sites_opened(sites.copies_at(plan, watermark));
    }
}
