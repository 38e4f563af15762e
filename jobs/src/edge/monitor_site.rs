//! Monitoring sites on a device: a device that reads a stream monitored by the sliding-window
//! protocols (`synopsisID` 14, [`saams_operators::monitor`]) runs that monitor's *sites* itself
//! and ships only the protocol's messages — never the items — over the partials topic; the
//! cloud job relays them to the monitor's coordinator ([`saams_operators::monitor::relay`]),
//! which answers as it does for sites run in the job.
//!
//! # Which site sees which item
//! A device runs the sites `saams-edge --monitor-site` names (taken mod the monitor's `k`; all
//! `k` without the flag). Of its `m` sites, an item of input unit `u` (its `--data` in order)
//! and line `l` goes to the `((u << 40 | l) mod m)`-th: with all `k` sites that is the job's own
//! rule (`saams_monitoring::live::site_of` of the sequence number the job gives the line when
//! it reads the same file), and a device running one site sends it every item it reads.
//!
//! # Same messages as the job's sites
//! A site's messages depend only on the times it is advanced at
//! (`saams_monitoring::live`): the device advances its sites to each job window's start when
//! it closes the window before (every event before it is processed, in time order), and to
//! the end at the end of its input, so the same items at the same sites send the same envelopes,
//! words and bytes as in the job. Each envelope is shipped with the job window its send time
//! falls in (expiries in windows the device read nothing in, and after its last item, in
//! shipments of their own), so the coordinator has it before it answers at a later time.
//!
//! # What it costs
//! [`SiteCounts`] has the words and bytes sent against forwarding the items: one word an item
//! (the simulator's naive baseline) and the bytes the items take as raw values in a shipment.

use std::collections::{BTreeMap, HashMap};

use saams::Datum;
use saams::api::Tuple;
use saams::api::monitor::SLIDING_WINDOW_MONITOR_ID;
use saams_operators::monitor::hosted::{HostedSites, Refusals, hosted, refusal_reports};
use saams_operators::monitor::relay::{decode_relayed, encode_relayed, envelope_site_time};
use saams_operators::monitor::{MONITOR_GROUP, SiteOut};
use saams_operators::{Plan, Rec, Val};

use super::device::MAX_RECORD_BYTES;
use super::shipment::{Body, GroupData, GroupShip, RawValue, Shipment, SynId};

/// What a device's sites took and sent since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteCounts {
    /// Items taken by a site.
    pub items: u64,
    /// Values refused (no number, negative or too large once scaled, late).
    pub refused: u64,
    /// Protocol messages sent.
    pub messages: u64,
    /// Their words (`SiteMessage::words` of the monitoring crate): what the job's
    /// coordinator counts in an answer's `sent`.
    pub words: u64,
    /// Their payload bytes (as the simulator counts them).
    pub bytes: u64,
    /// The bytes of the shipped groups that carried them.
    pub shipped_bytes: u64,
    /// The bytes the same items take as raw values in a shipment (forwarding them).
    pub raw_bytes: u64,
}

/// The sites a device runs ([`crate::edge::monitor_site`]).
pub struct DeviceSites {
    /// `--monitor-site`: the site ids to run (mod each monitor's `k`); empty: all.
    chosen: Vec<usize>,
    /// Per (monitored stream, site).
    pub(super) sites: HostedSites,
    /// A restarted device's site copies whose monitored streams its plan has not had yet
    /// ([`super::site_state`]).
    pub(super) pending: Vec<saams::checkpoint::MonitorState>,
    /// Values refused since the last shipment, by event time (reported at it, as the job's
    /// sites do).
    refused: Refusals,
    /// The items taken since the last shipment, per (job window, monitored stream): what
    /// forwarding them would ship.
    forwarded: BTreeMap<(u64, u32), Vec<RawValue>>,
    /// Counters.
    pub counts: SiteCounts,
}

impl DeviceSites {
    /// Sites `chosen` of every monitored stream (empty: all of them).
    pub fn new(chosen: Vec<usize>) -> DeviceSites {
        DeviceSites {
            chosen,
            sites: HostedSites::new(),
            pending: Vec::new(),
            refused: Refusals::new(),
            forwarded: BTreeMap::new(),
            counts: SiteCounts::default(),
        }
    }

    /// True while no monitored stream has sent this device an item (nothing to ship).
    pub fn is_idle(&self) -> bool {
        self.sites.is_empty()
    }

    /// The site of a monitored stream of `k` sites an item of sequence `seq` goes to.
    fn site_for(&self, k: usize, seq: u64) -> usize {
        let k = k.max(1);
        if self.chosen.is_empty() {
            return (seq % k as u64) as usize;
        }
        let mut mine: Vec<usize> = self.chosen.iter().map(|s| s % k).collect();
        mine.sort_unstable();
        mine.dedup();
        mine[(seq % mine.len() as u64) as usize]
    }

    /// Take tuple `t`, line `seq` (`unit << 40 | line`) of the device's input, in the device's
    /// open window `window`: its values of monitored streams go to their sites.
    pub fn push(&mut self, plan: &Plan, t: &Tuple, (seq, window): (u64, u64)) {
        let time = t.time_ms.unwrap_or(0);
        for (i, field) in plan.monitor.routes(&t.dataset_key, &t.stream_id, time) {
            let m = &plan.monitor.monitored[i as usize];
            let val = match t.field(field) {
                None => continue,
                Some(Datum::Num(x)) => Val::Num(x),
                Some(Datum::Str(s)) => Val::Str(s.into()),
            };
            let key = (i, self.site_for(m.spec.sites, seq));
            let Some(h) = hosted(&mut self.sites, key, m) else { continue };
            if h.take((&m.spec, i), (time, seq), &val, &mut self.refused) {
                self.counts.items += 1;
                self.forwarded.entry((window, i)).or_default().push(RawValue { time, seq, val });
            } else {
                self.counts.refused += 1;
            }
        }
    }

    /// Advance every site to `watermark` (`i64::MAX`: the end of the input, every message
    /// still due) and ship what they sent: per job window of the messages' send times, one
    /// shipment (or more, each under [`MAX_RECORD_BYTES`]) numbered after `shipped` (the
    /// device's shipments of those windows so far) and after `open` (the window open until
    /// now and its next sequence number). Refusals are reported in the window of their items'
    /// time (the open window: a device's late values reach no site).
    pub fn ship(
        &mut self,
        plan: &Plan,
        device: &str,
        watermark: i64,
        (shipped, open): (&[Shipment], Option<(u64, u64)>),
    ) -> Vec<Shipment> {
        let mut by_window: BTreeMap<u64, BTreeMap<u32, Vec<Vec<u8>>>> = BTreeMap::new();
        for (&(i, _), h) in self.sites.iter_mut() {
            let sent = h.advance(watermark);
            for e in sent {
                let c = &mut self.counts;
                (c.messages, c.words) = (c.messages + 1, c.words + e.message.words());
                c.bytes += e.message.encode().len() as u64;
                let window = plan.window_of(e.time.max(0));
                let relayed = encode_relayed(e.time, &SiteOut::Envelope(e.encode()));
                by_window.entry(window).or_default().entry(i).or_default().push(relayed);
            }
        }
        for (t, i, stats) in refusal_reports(std::mem::take(&mut self.refused)) {
            let at = i64::try_from(t).unwrap_or(i64::MAX);
            by_window.entry(plan.window_of(at)).or_default().entry(i).or_default().push(encode_relayed(at, &stats));
        }
        let mut raw_of: HashMap<u64, u64> = HashMap::new();
        for ((window, i), values) in std::mem::take(&mut self.forwarded) {
            let raw = GroupShip { synopses: vec![monitor_id(plan, i)], data: GroupData::Raw(values) };
            let len = raw.encoded_len(window) as u64;
            self.counts.raw_bytes += len;
            *raw_of.entry(window).or_default() += len;
        }
        let mut out = Vec::new();
        for (window, monitors) in by_window {
            let after = shipped.iter().filter(|s| matches!(s.body, Body::Data { window: w, .. } if w == window));
            let seq = after.map(|s| s.seq + 1).chain(open.filter(|o| o.0 == window).map(|o| o.1)).max().unwrap_or(0);
            let raw_bytes = raw_of.remove(&window).unwrap_or(0);
            self.records(plan, (device, window, seq, raw_bytes), monitors, &mut out);
        }
        out
    }

    /// The shipments of `window`'s messages, from sequence number `seq`: one per
    /// [`MAX_RECORD_BYTES`] of them.
    fn records(
        &mut self,
        plan: &Plan,
        (device, window, mut seq, raw_bytes): (&str, u64, u64, u64),
        monitors: BTreeMap<u32, Vec<Vec<u8>>>,
        out: &mut Vec<Shipment>,
    ) {
        let (mut groups, mut size) = (Vec::new(), 0);
        for (i, messages) in monitors {
            let mut current: Vec<Vec<u8>> = Vec::new();
            for message in messages {
                if size + message.len() as u64 > MAX_RECORD_BYTES && size > 0 {
                    if !current.is_empty() {
                        let data = GroupData::Sites(std::mem::take(&mut current));
                        groups.push(GroupShip { synopses: vec![monitor_id(plan, i)], data });
                    }
                    out.push(self.record(device, (window, seq, raw_bytes), std::mem::take(&mut groups)));
                    (seq, size) = (seq + 1, 0);
                }
                size += message.len() as u64 + 2;
                current.push(message);
            }
            if !current.is_empty() {
                groups.push(GroupShip { synopses: vec![monitor_id(plan, i)], data: GroupData::Sites(current) });
            }
        }
        if !groups.is_empty() {
            out.push(self.record(device, (window, seq, raw_bytes), groups));
        }
    }

    fn record(&mut self, device: &str, (window, seq, raw_bytes): (u64, u64, u64), groups: Vec<GroupShip>) -> Shipment {
        self.counts.shipped_bytes += groups.iter().map(|g| g.encoded_len(window) as u64).sum::<u64>();
        Shipment { device: device.to_string(), seq, body: Body::Data { window, raw_bytes, groups, through: None } }
    }
}

/// Monitored stream `i` named by what it is (the cloud finds it whatever its own index).
fn monitor_id(plan: &Plan, i: u32) -> SynId {
    let m = &plan.monitor.monitored[i as usize];
    SynId {
        dataset: m.dataset.clone(),
        stream: m.stream.clone(),
        field: m.field.clone(),
        synopsis_id: SLIDING_WINDOW_MONITOR_ID,
        params: plan.monitor.params_text(i),
    }
}

/// Which device runs each site of a monitored stream, as one worker of the cloud job has
/// seen them: a site's messages from a second device are refused (two devices running one
/// site would interleave two sequences the coordinator cannot tell apart).
#[derive(Default)]
pub struct SiteOwners(HashMap<(u32, u32), String>);

/// The cloud's side: the records of a device's site messages for monitored stream group `g`
/// (appended to `recs`, each relayed at `time`, the window's start, with sequence number
/// `seq`); its group ([`MONITOR_GROUP`] and the monitored stream's index).
///
/// # Errors
/// A monitored stream this job has not, a message that is none, a message taken at a time
/// (an envelope: sent) outside `[window, window_end)`, a site another device runs.
pub fn site_recs(
    plan: &Plan,
    (window, seq): (u64, u64),
    (g, messages): (&GroupShip, &[Vec<u8>]),
    (device, owners): (&str, &mut SiteOwners),
    recs: &mut Vec<Rec>,
) -> Result<u32, String> {
    let [id] = &g.synopses[..] else { return Err("site messages name one monitored stream".into()) };
    let i = plan
        .monitor
        .index_named((&id.dataset, &id.stream, &id.field), &id.params)
        .filter(|_| id.synopsis_id == SLIDING_WINDOW_MONITOR_ID)
        .ok_or_else(|| format!("unknown monitored stream: {}/{}/{} {}", id.dataset, id.stream, id.field, id.params))?;
    let end = window.saturating_add(plan.routing.window_ms as u64);
    let time = i64::try_from(window).unwrap_or(i64::MAX);
    let mut mine = Vec::with_capacity(messages.len());
    for message in messages {
        let (at, out) = decode_relayed(message)?;
        if at < time || at as u64 >= end {
            return Err(format!("a site message sent at {at} outside its window"));
        }
        if let SiteOut::Envelope(bytes) = out {
            let (site, _) = envelope_site_time(&bytes)?;
            let owner = owners.0.entry((i, site)).or_insert_with(|| device.to_string());
            if owner != device {
                return Err(format!("site {site} of monitored stream {i} is run by {owner} and {device}"));
            }
        }
        mine.push(Rec { group: MONITOR_GROUP | i, time, seq, val: Val::Part(message.clone().into_boxed_slice()) });
    }
    recs.append(&mut mine);
    Ok(MONITOR_GROUP | i)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use saams::api::request::parse_requests;

    use crate::edge::snapshots::ShippedSnapshots;

    use super::*;

    /// A monitor of D/S over 2 sites, W 2 s, in job windows of 1 s.
    fn plan() -> Plan {
        let script = r#"{"streamID":"S","synopsisID":14,"dataSetKey":"D","param":["SlidingWindowMonitor","v","NotQueryable","2s",0.1,0.2,2]}"#;
        Plan::build(&parse_requests(script), 1, 1000, Arc::new(ShippedSnapshots::default()))
    }

    const T0: i64 = 1_600_000_000_000;

    fn tuple(time: i64, v: &str) -> Tuple {
        let ts = saams::api::time::format_timestamp(T0 + time);
        Tuple::from_json(&format!(r#"{{"streamID":"S","dataSetKey":"D","timestamp":"{ts}","v":{v}}}"#)).unwrap()
    }

    fn windows_of(ships: &[Shipment]) -> Vec<(u64, u64)> {
        let of = |s: &Shipment| match s.body {
            Body::Data { window, .. } => Some((window - T0 as u64, s.seq)),
            _ => None,
        };
        ships.iter().filter_map(of).collect()
    }

    /// Site 1 of 2 (given as 3, mod k) takes every item and sends its messages in the windows of
    /// their send times, numbered after the window's own shipments; the cloud takes them from
    /// this device, refuses them from a second one, and refuses a message outside its window.
    #[test]
    fn a_device_site_ships_its_messages_in_their_windows_and_the_cloud_checks_them() {
        let plan = plan();
        let mut sites = DeviceSites::new(vec![3]);
        let w0 = T0 as u64;
        for (line, t) in (1..).zip([100, 300, 900]) {
            sites.push(&plan, &tuple(t, "7"), (line, w0));
        }
        sites.push(&plan, &tuple(950, "\"x\""), (4, w0));
        assert_eq!((sites.counts.items, sites.counts.refused), (3, 1));
        // Window 0 closes with two data shipments of its own (0 and 1): the sites' come after.
        let data = |seq| Shipment {
            device: "d".into(),
            seq,
            body: Body::Data { window: w0, raw_bytes: 0, groups: vec![], through: None },
        };
        let mut ships = sites.ship(&plan, "d", T0 + 1000, (&[data(0), data(1)], Some((w0, 0))));
        assert_eq!(windows_of(&ships), [(0, 2)]);
        // An item in window 2 (nothing read in window 1), shipped when window 3 opens.
        sites.push(&plan, &tuple(2500, "8"), (5, w0 + 2000));
        let later = sites.ship(&plan, "d", T0 + 3000, (&[], Some((w0 + 2000, 0))));
        assert_eq!(windows_of(&later), [(2000, 0)]);
        ships.extend(later);
        ships.extend(sites.ship(&plan, "d", i64::MAX, (&[], None)));
        let mut owners = SiteOwners::default();
        let (mut recs, mut envelopes) = (Vec::new(), 0);
        for ship in &ships {
            let Body::Data { window, groups, .. } = &ship.body else { panic!("data") };
            let GroupData::Sites(m) = &groups[0].data else { panic!("site messages") };
            for message in m {
                if let (_, SiteOut::Envelope(bytes)) = decode_relayed(message).unwrap() {
                    let (site, sent) = envelope_site_time(&bytes).unwrap();
                    assert_eq!(site, 1);
                    assert_eq!(plan.window_of(sent), *window, "shipped with its send time's window");
                    envelopes += 1;
                }
            }
            let group = site_recs(&plan, (*window, 9), (&groups[0], m), ("d", &mut owners), &mut recs).unwrap();
            assert_eq!(group, MONITOR_GROUP);
            let again = site_recs(&plan, (*window, 9), (&groups[0], m), ("e", &mut owners), &mut recs);
            assert!(again.unwrap_err().contains("run by d and e"));
            let elsewhere = site_recs(&plan, (*window + 1000, 9), (&groups[0], m), ("d", &mut owners), &mut recs);
            assert!(elsewhere.unwrap_err().contains("outside its window"));
        }
        assert_eq!(sites.counts.messages, envelopes, "every message sent was shipped");
        assert!(envelopes >= 4, "each item forwarded at least: {envelopes}");
        assert!(recs.iter().all(|r| r.group == MONITOR_GROUP && matches!(r.val, Val::Part(_))));
    }
}
