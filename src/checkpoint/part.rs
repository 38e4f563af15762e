//! One worker's share of a checkpoint and its binary encoding (layout in the module doc of
//! [`crate::checkpoint`]).

use std::fmt;

use crate::codec::{Reader, Writer};

use super::CheckpointError;

/// The four bytes every checkpoint part starts with.
pub const MAGIC: [u8; 4] = *b"SAMC";
/// The part format version this build writes. Version 2 added each state's window start
/// ([`SynopsisState::since`], [`SynopsisState::until`]) and closed sliding panes ([`StateRole::Pane`]); version 1 parts
/// (landmark synopses only) are still read, with no start. Version 3 added the monitoring
/// kind's sites and coordinators ([`MonitorState`]); parts of versions 1 and 2 are read with none.
/// Version 4 added the asks waiting for devices' answers ([`CheckpointPart::device_replies`]);
/// parts of versions 1 to 3 are read without (a job merging devices refuses to resume from them).
pub const PART_FORMAT_VERSION: u16 = 4;
/// The length of the smallest valid part this build writes (no synopses, sets, sources,
/// monitors or devices' replies).
pub const MIN_PART_BYTES: usize = 42 + 4 + 4 + 4 + 4 + 8 + 4;
/// The smallest valid part of any version read (versions 1 and 2 have no monitors count, and
/// versions 1 to 3 no devices' replies length).
const MIN_ANY_PART_BYTES: usize = MIN_PART_BYTES - 8;

/// Minimum encoded sizes of the vectors' items, so a count can be checked against the bytes
/// left before anything is allocated.
const MIN_SYNOPSIS_BYTES: u64 = 4 + 1 + 8 + 4 + 4;
/// A state's window start when it has none (nothing fed yet, or a version 1 part).
const NO_START: u64 = u64::MAX;
const MIN_SET_BYTES: u64 = 4 + 4;
const MIN_STRING_BYTES: u64 = 4;
const MIN_SOURCE_BYTES: u64 = 4 + 8 + 8 + 1 + 1;
const MIN_MONITOR_BYTES: u64 = 4 + 4 + 4;
/// The `site` a coordinator's [`MonitorState`] is written with.
const COORDINATOR_SITE: u32 = u32::MAX;

/// Where one input is: enough to reopen it and skip to the next unread record.
#[derive(Clone, Debug, PartialEq)]
pub struct SourcePosition {
    /// Which input: `"unit:3"`, `"generator:17"`, `"kafka:<topic>:<partition>"`.
    pub source: String,
    /// The byte offset of the next line, the generator index, or the next Kafka offset.
    pub offset: u64,
    /// The line number of that next line; for Kafka, the line within the record at `offset`
    /// (a batched record's lines before it were read); 0 when meaningless.
    pub line: u64,
    /// The newest event time read before it: lateness after a restart is judged from it.
    pub max_time: Option<i64>,
    /// The input had ended.
    pub done: bool,
}

/// How a worker holds a synopsis, which decides how a restore with another shape rebins it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateRole {
    /// The worker owns the synopsis' merged state (byte 0).
    Owned,
    /// A partial: the synopsis is spread over workers and this is one share (byte 1).
    Spread,
    /// The latest published copy (byte 2).
    Latest,
    /// A closed pane of a sliding synopsis, at its home (byte 3): kept until it leaves the
    /// window; [`SynopsisState::since`] is the pane's start.
    Pane,
}

impl StateRole {
    /// The byte this role is written as.
    pub fn byte(self) -> u8 {
        match self {
            StateRole::Owned => 0,
            StateRole::Spread => 1,
            StateRole::Latest => 2,
            StateRole::Pane => 3,
        }
    }
    /// The role written as `b`, if any.
    pub fn from_byte(b: u8) -> Option<StateRole> {
        match b {
            0 => Some(StateRole::Owned),
            1 => Some(StateRole::Spread),
            2 => Some(StateRole::Latest),
            3 => Some(StateRole::Pane),
            _ => None,
        }
    }
}

/// One synopsis' state as a worker holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct SynopsisState {
    /// The synopsis (its uid in the registry).
    pub syn: u32,
    /// How this worker holds it.
    pub role: StateRole,
    /// Items summarized into this state.
    pub items: u64,
    /// Loaded snapshots merged into it.
    pub loads_merged: u32,
    /// The first event time (ms) the state covers: a landmark synopsis' first window, a
    /// tumbling synopsis' open window, a sliding synopsis' pane; `None` when nothing was fed
    /// yet, and in parts written before windows were recorded (version 1).
    pub since: Option<u64>,
    /// The end (ms) of the newest window the state has closed: a landmark answer's end (0 in
    /// version 1 parts).
    pub until: u64,
    /// An encoded synopsis envelope ([`crate::codec`]), stored opaque: the part decoder does
    /// not decode it (the registry does, when the state is restored).
    pub bytes: Vec<u8>,
}

/// One site's or one coordinator's state of a monitored stream (the monitoring kind,
/// `synopsisID` 14: not a synopsis, so not a [`SynopsisState`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorState {
    /// The monitored stream: its index among the job's monitored streams (the group its values
    /// travel with).
    pub group: u32,
    /// The site (`None`: the stream's coordinator). Keyed by site, not by worker: a job with
    /// another number of workers hosts each site where its own plan puts it.
    pub site: Option<u32>,
    /// The state, in the operators' encoding (opaque here, like a synopsis envelope).
    pub bytes: Vec<u8>,
}

/// One worker's share of checkpoint `id`, taken at window boundary `boundary_ms`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct CheckpointPart {
    /// The checkpoint.
    pub id: u64,
    /// The window boundary (event time, ms) the checkpoint was taken at.
    pub boundary_ms: u64,
    /// The process that wrote it.
    pub process: u32,
    /// The worker that wrote it.
    pub worker: u32,
    /// Processes of the job that wrote it.
    pub processes: u32,
    /// Workers of the job that wrote it.
    pub workers: u32,
    /// The worker's synopses.
    pub synopses: Vec<SynopsisState>,
    /// Per continuous set-valued query: its last answered members (the next answer is a diff).
    pub previous_sets: Vec<(u32, Vec<String>)>,
    /// The positions of the inputs this worker reads.
    pub sources: Vec<SourcePosition>,
    /// The monitoring kind's sites and coordinators this worker hosts (version 3).
    pub monitors: Vec<MonitorState>,
    /// A job merging devices' shipments: its process' table of asks waiting for devices'
    /// answers as this worker copied it (version 4; the operators' encoding, opaque here like a
    /// synopsis envelope). Empty for a job without devices, and in parts of versions 1 to 3.
    pub device_replies: Vec<u8>,
    /// Tuples this worker had routed when it wrote the part (values after the boundary
    /// included: a figure for people, not used to resume).
    pub tuples: u64,
}

/// A vector's length or a string's as the u32 the layout stores.
///
/// # Panics
/// When it exceeds `u32::MAX`: a 4 GiB synopsis or string is a bug upstream, and writing a
/// truncated length would make a checkpoint that cannot be read back.
fn len32(n: usize, what: &str) -> u32 {
    u32::try_from(n).unwrap_or_else(|_| panic!("checkpoint part: {what} has {n} entries, more than a u32 holds"))
}

fn put_str(w: &mut Writer, s: &str, what: &str) {
    w.u32(len32(s.len(), what));
    w.bytes(s.as_bytes());
}

impl CheckpointPart {
    /// The part's bytes (layout in [`crate::checkpoint`]).
    ///
    /// # Panics
    /// When a vector, string or synopsis is longer than a u32 can count.
    ///
    /// ```
    /// use saams::checkpoint::{CheckpointPart, StateRole, SynopsisState};
    /// let part = CheckpointPart {
    ///     id: 1,
    ///     synopses: vec![SynopsisState {
    ///         syn: 7, role: StateRole::Owned, items: 10, loads_merged: 0, since: Some(60_000), until: 120_000,
    ///         bytes: vec![1, 2, 3],
    ///     }],
    ///     ..CheckpointPart::default()
    /// };
    /// let bytes = part.encode();
    /// assert_eq!(bytes.len(), saams::checkpoint::MIN_PART_BYTES + 37 + 3);
    /// assert_eq!(&bytes[4..6], &[4, 0]); // format version 4
    /// assert_eq!(CheckpointPart::decode(&bytes).unwrap(), part);
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        let mut w =
            Writer::with_capacity(MIN_PART_BYTES + self.synopses.iter().map(|s| 37 + s.bytes.len()).sum::<usize>());
        w.bytes(&MAGIC);
        w.u16(PART_FORMAT_VERSION);
        w.u64(self.id);
        w.u64(self.boundary_ms);
        w.u32(self.process);
        w.u32(self.worker);
        w.u32(self.processes);
        w.u32(self.workers);
        w.u32(len32(self.synopses.len(), "synopses"));
        for s in &self.synopses {
            w.u32(s.syn);
            w.u8(s.role.byte());
            w.u64(s.items);
            w.u32(s.loads_merged);
            w.u64(s.since.unwrap_or(NO_START));
            w.u64(s.until);
            w.u32(len32(s.bytes.len(), "a synopsis' bytes"));
            w.bytes(&s.bytes);
        }
        w.u32(len32(self.previous_sets.len(), "previous_sets"));
        for (query, members) in &self.previous_sets {
            w.u32(*query);
            w.u32(len32(members.len(), "a previous set"));
            for m in members {
                put_str(&mut w, m, "a set member");
            }
        }
        w.u32(len32(self.sources.len(), "sources"));
        for p in &self.sources {
            put_str(&mut w, &p.source, "a source name");
            w.u64(p.offset);
            w.u64(p.line);
            match p.max_time {
                None => w.u8(0),
                Some(t) => {
                    w.u8(1);
                    w.i64(t);
                }
            }
            w.u8(u8::from(p.done));
        }
        w.u32(len32(self.monitors.len(), "monitors"));
        for m in &self.monitors {
            w.u32(m.group);
            w.u32(m.site.unwrap_or(COORDINATOR_SITE));
            w.u32(len32(m.bytes.len(), "a monitor's bytes"));
            w.bytes(&m.bytes);
        }
        w.u32(len32(self.device_replies.len(), "the devices' replies"));
        w.bytes(&self.device_replies);
        w.u64(self.tuples);
        let mut bytes = w.into_inner();
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        bytes
    }

    /// Check the bytes and rebuild the part. The synopses' bytes are returned as stored, not
    /// decoded.
    ///
    /// # Errors
    /// [`CheckpointError`] with the offset of the problem for truncated bytes, a wrong magic,
    /// an unknown format version, a count larger than the bytes left can hold, bad UTF-8, an
    /// unknown role or flag byte, trailing bytes, or a checksum mismatch.
    ///
    /// ```
    /// use saams::checkpoint::CheckpointPart;
    /// let bytes = CheckpointPart { id: 9, tuples: 5, ..CheckpointPart::default() }.encode();
    /// assert_eq!(CheckpointPart::decode(&bytes).unwrap().tuples, 5);
    /// let cut = CheckpointPart::decode(&bytes[..bytes.len() - 1]).unwrap_err();
    /// assert!(cut.to_string().contains("truncated"), "{cut}");
    /// let mut flipped = bytes.clone();
    /// flipped[10] ^= 1;
    /// assert!(CheckpointPart::decode(&flipped).unwrap_err().to_string().contains("checksum"));
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<CheckpointPart, CheckpointError> {
        let head = &bytes[..bytes.len().min(4)];
        if head != &MAGIC[..head.len()] {
            return Err(CheckpointError::at(
                0,
                format!("not a checkpoint part: it starts with {head:02x?}, a part with {:02x?} (\"SAMC\")", MAGIC),
            ));
        }
        if bytes.len() < MIN_ANY_PART_BYTES {
            return Err(CheckpointError::at(
                bytes.len() as u64,
                format!("checkpoint part truncated: {} bytes, the smallest part has {MIN_ANY_PART_BYTES}", bytes.len()),
            ));
        }
        let (body, crc_bytes) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_le_bytes([crc_bytes[0], crc_bytes[1], crc_bytes[2], crc_bytes[3]]);
        let computed = crc32fast::hash(body);
        let crc_note = |e: CheckpointError| {
            if stored == computed {
                e
            } else {
                CheckpointError { what: format!("{}; the checksum does not match either", e.what), ..e }
            }
        };
        let mut c = Cursor { r: Reader::new(body), len: body.len() };
        let part = c.part().map_err(crc_note)?;
        if !c.r.is_empty() {
            return Err(crc_note(CheckpointError::at(
                c.at(),
                format!("{} trailing bytes after the last field of the checkpoint part", c.r.remaining()),
            )));
        }
        if stored != computed {
            return Err(CheckpointError::at(
                body.len() as u64,
                format!(
                    "checkpoint part checksum mismatch: stored {stored:#010x}, computed {computed:#010x}: the bytes are corrupted"
                ),
            ));
        }
        Ok(part)
    }
}

/// A [`Reader`] that knows where it is, so every error names its offset and field.
struct Cursor<'a> {
    r: Reader<'a>,
    len: usize,
}

impl<'a> Cursor<'a> {
    fn at(&self) -> u64 {
        (self.len - self.r.remaining()) as u64
    }

    fn take(&mut self, n: usize, field: fmt::Arguments<'_>) -> Result<&'a [u8], CheckpointError> {
        let at = self.at();
        let left = self.r.remaining();
        self.r.take(n).map_err(|_| {
            CheckpointError::at(
                at,
                format!("checkpoint part truncated reading {field}: needs {n} bytes, {left} left before the checksum"),
            )
        })
    }

    fn array<const N: usize>(&mut self, field: fmt::Arguments<'_>) -> Result<[u8; N], CheckpointError> {
        let b = self.take(N, field)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    fn u8(&mut self, field: fmt::Arguments<'_>) -> Result<u8, CheckpointError> {
        Ok(self.array::<1>(field)?[0])
    }
    fn u16(&mut self, field: fmt::Arguments<'_>) -> Result<u16, CheckpointError> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    fn u32(&mut self, field: fmt::Arguments<'_>) -> Result<u32, CheckpointError> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }
    fn u64(&mut self, field: fmt::Arguments<'_>) -> Result<u64, CheckpointError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }
    fn i64(&mut self, field: fmt::Arguments<'_>) -> Result<i64, CheckpointError> {
        Ok(i64::from_le_bytes(self.array(field)?))
    }

    fn flag(&mut self, field: fmt::Arguments<'_>) -> Result<bool, CheckpointError> {
        let at = self.at();
        match self.u8(field)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(CheckpointError::at(at, format!("{field} is byte {b}, not 0 or 1"))),
        }
    }

    /// A u32 count of items of at least `min_item` bytes each, refused when the bytes left
    /// cannot hold that many (so no allocation follows from a corrupted count).
    fn count(&mut self, min_item: u64, field: fmt::Arguments<'_>) -> Result<usize, CheckpointError> {
        let at = self.at();
        let n = self.u32(field)?;
        let left = self.r.remaining() as u64;
        if u64::from(n) * min_item > left {
            let needs = if min_item == 1 {
                format!("{n} bytes")
            } else {
                format!("{n}, which needs at least {} bytes", u64::from(n) * min_item)
            };
            return Err(CheckpointError::at(at, format!("{field} says {needs}, but only {left} are left")));
        }
        Ok(n as usize)
    }

    fn string(&mut self, field: fmt::Arguments<'_>) -> Result<String, CheckpointError> {
        let n = self.count(1, format_args!("the length of {field}"))?;
        let at = self.at();
        let b = self.take(n, field)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => Err(CheckpointError::at(at + e.valid_up_to() as u64, format!("{field} is not UTF-8"))),
        }
    }

    fn part(&mut self) -> Result<CheckpointPart, CheckpointError> {
        self.take(4, format_args!("the magic"))?;
        let at = self.at();
        let version = self.u16(format_args!("the format version"))?;
        if !(1..=PART_FORMAT_VERSION).contains(&version) {
            return Err(CheckpointError::at(
                at,
                format!(
                    "checkpoint part format version {version} is not supported (this build reads {PART_FORMAT_VERSION})"
                ),
            ));
        }
        let id = self.u64(format_args!("id"))?;
        let boundary_ms = self.u64(format_args!("boundary_ms"))?;
        let process = self.u32(format_args!("process"))?;
        let worker = self.u32(format_args!("worker"))?;
        let processes = self.u32(format_args!("processes"))?;
        let workers = self.u32(format_args!("workers"))?;
        let n = self.count(MIN_SYNOPSIS_BYTES, format_args!("the synopses count"))?;
        let mut synopses = Vec::with_capacity(n);
        for i in 0..n {
            let syn = self.u32(format_args!("synopsis state {i}'s syn"))?;
            let at = self.at();
            let role_byte = self.u8(format_args!("synopsis state {i}'s role"))?;
            let role = StateRole::from_byte(role_byte).ok_or_else(|| {
                CheckpointError::at(
                    at,
                    format!("synopsis state {i} has role byte {role_byte} (0 owned, 1 spread, 2 latest, 3 pane)"),
                )
            })?;
            let items = self.u64(format_args!("synopsis state {i}'s items"))?;
            let loads_merged = self.u32(format_args!("synopsis state {i}'s loads_merged"))?;
            let (since, until) = match version {
                1 => (None, 0),
                _ => (
                    Some(self.u64(format_args!("synopsis state {i}'s window start"))?).filter(|&t| t != NO_START),
                    self.u64(format_args!("synopsis state {i}'s window end"))?,
                ),
            };
            let len = self.count(1, format_args!("synopsis state {i}'s byte length"))?;
            let bytes = self.take(len, format_args!("synopsis state {i}'s bytes"))?.to_vec();
            synopses.push(SynopsisState { syn, role, items, loads_merged, since, until, bytes });
        }
        let n = self.count(MIN_SET_BYTES, format_args!("the previous_sets count"))?;
        let mut previous_sets = Vec::with_capacity(n);
        for i in 0..n {
            let query = self.u32(format_args!("previous set {i}'s query"))?;
            let m = self.count(MIN_STRING_BYTES, format_args!("previous set {i}'s member count"))?;
            let mut members = Vec::with_capacity(m);
            for j in 0..m {
                members.push(self.string(format_args!("previous set {i}'s member {j}"))?);
            }
            previous_sets.push((query, members));
        }
        let n = self.count(MIN_SOURCE_BYTES, format_args!("the sources count"))?;
        let mut sources = Vec::with_capacity(n);
        for i in 0..n {
            let source = self.string(format_args!("source {i}'s name"))?;
            let offset = self.u64(format_args!("source {i}'s offset"))?;
            let line = self.u64(format_args!("source {i}'s line"))?;
            let max_time = if self.flag(format_args!("source {i}'s max_time flag"))? {
                Some(self.i64(format_args!("source {i}'s max_time"))?)
            } else {
                None
            };
            let done = self.flag(format_args!("source {i}'s done flag"))?;
            sources.push(SourcePosition { source, offset, line, max_time, done });
        }
        let monitors = if version >= 3 { self.monitors()? } else { Vec::new() };
        let device_replies = if version >= 4 {
            let len = self.count(1, format_args!("the devices' replies' byte length"))?;
            self.take(len, format_args!("the devices' replies"))?.to_vec()
        } else {
            Vec::new()
        };
        let tuples = self.u64(format_args!("tuples"))?;
        Ok(CheckpointPart {
            id,
            boundary_ms,
            process,
            worker,
            processes,
            workers,
            synopses,
            previous_sets,
            sources,
            monitors,
            device_replies,
            tuples,
        })
    }

    fn monitors(&mut self) -> Result<Vec<MonitorState>, CheckpointError> {
        let n = self.count(MIN_MONITOR_BYTES, format_args!("the monitors count"))?;
        let mut monitors = Vec::with_capacity(n);
        for i in 0..n {
            let group = self.u32(format_args!("monitor {i}'s group"))?;
            let site = Some(self.u32(format_args!("monitor {i}'s site"))?).filter(|&s| s != COORDINATOR_SITE);
            let len = self.count(1, format_args!("monitor {i}'s byte length"))?;
            let bytes = self.take(len, format_args!("monitor {i}'s bytes"))?.to_vec();
            monitors.push(MonitorState { group, site, bytes });
        }
        Ok(monitors)
    }
}

#[cfg(test)]
mod tests;
